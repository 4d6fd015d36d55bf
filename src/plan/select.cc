#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "suanli/plan.h"
#include "suanli/units.h"

namespace suanli {

namespace {

double Price(const GpuSpec& g) { return g.price_on_demand_usd_per_hour ? g.price_on_demand_usd_per_hour->value : 0; }

double Peak16(const GpuSpec& g) {
  return g.PeakFlops(Precision::kBf16).value_or(g.PeakFlops(Precision::kFp16).value_or(0));
}

SelectRow NewRow(const GpuSpec& g) {
  SelectRow row;
  row.gpu = g.id;
  row.price_per_gpu_hour = Price(g);
  row.memory_bandwidth_bytes_per_s = g.memory_bandwidth_bytes_per_s.value;
  row.peak_flops = Peak16(g);
  return row;
}

// Eligible first; then by cost per unit of work (rows without a price after priced ones), then by time.
void Rank(std::vector<SelectRow>& rows, bool serving) {
  std::stable_sort(rows.begin(), rows.end(), [serving](const SelectRow& a, const SelectRow& b) {
    if (a.eligible != b.eligible) return a.eligible;
    if (!a.eligible) return a.gpu < b.gpu;
    const bool pa = a.price_per_gpu_hour > 0, pb = b.price_per_gpu_hour > 0;
    if (pa != pb) return pa;
    if (pa) {
      const double ca = serving ? a.cost_per_million_tokens_usd : a.cost_usd;
      const double cb = serving ? b.cost_per_million_tokens_usd : b.cost_usd;
      if (ca != cb) return ca < cb;
    }
    return serving ? a.tpot_s < b.tpot_s : a.train_time_s < b.train_time_s;
  });
}

}  // namespace

Result<std::vector<SelectRow>> SelectForServing(const HardwareCatalog& hw, const ServeTarget& t) {
  if (!t.model) return InvalidArgument("select needs a model");
  if (t.concurrent_users < 1 || t.concurrent_users > 1000000)
    return InvalidArgument("--users must be between 1 and 1,000,000");
  if (t.requests_per_s < 0 || t.ttft_slo_s < 0 || t.tpot_slo_s < 0)
    return InvalidArgument("--rps and the latency objectives must not be negative");
  const ModelSpec& m = *t.model;
  {
    // Speculative-decoding settings wrong on every GPU (ranges, the draft's vocabulary) are the request's error.
    InferConfig one;
    one.spec = t.spec;
    one.decode_attention = t.decode_attention;
    SUANLI_RETURN_IF_ERROR(CheckSpeculation(m, one));
  }
  WeightFormat wf = t.weights.id.empty() ? *ParseWeightFormat("bf16") : t.weights;
  const Precision compute = ServingComputePrecision(wf);
  std::vector<SelectRow> rows;
  for (const GpuSpec& g : hw.gpus()) {
    SelectRow row = NewRow(g);
    if (compute == Precision::kFp8 && !g.Supports(Precision::kFp8)) {
      row.exclusion = "no FP8 support (FP8 needs Ada, Hopper or newer)";
      rows.push_back(row);
      continue;
    }
    if (compute == Precision::kFp4 && !g.Supports(Precision::kFp4)) {
      row.exclusion = "no FP4 tensor cores (NVFP4 needs Blackwell)";
      rows.push_back(row);
      continue;
    }
    if (row.peak_flops <= 0) {
      row.exclusion = "no 16-bit tensor rate in the catalog";
      rows.push_back(row);
      continue;
    }
    if (t.decode_attention == DecodeAttention::kPerHead && !InstructionIssueRate(g).ok()) {
      row.exclusion = "per-head decode attention is modelled for NVIDIA GPUs only";
      rows.push_back(row);
      continue;
    }
    auto eff = LoadEfficiency(g.id);
    const int per_node = t.gpus_per_node != 0 ? t.gpus_per_node : HardwareCatalog::DefaultGpusPerNode(g);
    auto cl = MakeCluster(hw, g, per_node, hw.DefaultFabric(g));
    if (!eff.ok() || !cl.ok()) return eff.ok() ? cl.status() : eff.status();
    FitRequest fr;
    fr.weights = wf;
    fr.kv_bytes_per_elem = t.kv_bytes_per_elem;
    fr.batch = 1;
    fr.seq = t.input_len + t.output_len;
    fr.explain = false;
    // 1. Memory: the smallest replica (TP within a node, then PP) that holds one sequence.
    MinGpus mg = FindMinGpus(m, fr, g, 64);
    if (mg.gpus == 0) {
      row.exclusion = "does not fit on up to 64 GPUs: " + mg.reason;
      rows.push_back(row);
      continue;
    }
    // Speculative decoding is modelled without pipeline parallelism: where the smallest replica pipelines, the
    // smallest tensor-parallel one inside a node instead (CheckSpeculation excludes the GPU if there is none).
    bool tp_only = false;
    if (t.spec.tokens > 0 && mg.layout.pp > 1) {
      for (int tp = 2; tp <= per_node; tp *= 2) {
        FitRequest f = fr;
        f.par.tp = tp;
        f.par.pp = 1;
        auto e = EstimateMemory(m, f);
        if (!e.ok() || e->per_gpu_peak_bytes > g.memory_bytes.value) continue;
        mg.gpus = tp;
        mg.layout = f.par;
        tp_only = true;
        break;
      }
    }
    const double weights_bytes = [&] {
      auto one = EstimateMemory(m, fr);
      return one.ok() ? one->breakdown.weights : 0.0;
    }();
    if (mg.gpus > 1) {
      row.memory_note = fmt::format(
          "one copy per GPU does not fit: {} of weights on a {} GPU; each replica needs {} GPUs (TP={} PP={}){}",
          FormatBytes(weights_bytes), FormatBytes(g.memory_bytes.value), mg.gpus, mg.layout.tp, mg.layout.pp,
          tp_only ? ", tensor-parallel only: speculative decoding is modelled without pipeline parallelism" : "");
    } else {
      row.memory_note = fmt::format("one copy per GPU fits ({} of weights on {})", FormatBytes(weights_bytes),
                                    FormatBytes(g.memory_bytes.value));
    }
    // 2-3. Replicas and batch for one replica layout: as few replicas as memory allows, more when the latency
    // objective or the request rate asks for it. Sets `out` to the row for that layout (eligible, or with its
    // exclusion).
    SelectRow out;
    const auto serve = [&](SelectRow row, const Parallelism& layout) -> Status {
      row.tp = layout.tp;
      row.pp = layout.pp;
      fr.par = layout;
      const int64_t max_batch = MaxBatchThatFits(m, fr, g);
      int64_t users = t.concurrent_users;
      bool ok = false, any_fit = false;
      double draft_bytes = 0;  // with speculation: the draft's share of a GPU, for the exclusion below
      for (int iter = 0; iter < 3 && !ok; ++iter) {
        for (int64_t replicas = std::max<int64_t>(1, (users + max_batch - 1) / std::max<int64_t>(1, max_batch));
             replicas * mg.gpus <= 4096; replicas = replicas < 4 ? replicas + 1 : replicas * 2) {
          InferConfig ic;
          ic.fit = fr;
          ic.fit.batch = (users + replicas - 1) / replicas;
          ic.input_len = t.input_len;
          ic.output_len = t.output_len;
          ic.decode_attention = t.decode_attention;
          ic.request_overhead_s = t.request_overhead_s;
          ic.step_overhead_s = t.step_overhead_s;
          ic.spec = t.spec;
          // Speculation this GPU's layout cannot run as modelled (PP, a TP the draft's heads do not divide).
          if (auto st = CheckSpeculation(m, ic); !st.ok()) {
            row.exclusion = fmt::format("a replica needs TP={} PP={}: {}", ic.fit.par.tp, ic.fit.par.pp, st.message());
            break;
          }
          auto r = EstimateInference(m, *cl, ic, *eff);
          if (!r.ok()) return r.status();
          draft_bytes = r->draft_bytes_per_gpu;
          if (!r->fits) continue;
          any_fit = true;
          const bool ttft_ok = t.ttft_slo_s <= 0 || r->ttft_s <= t.ttft_slo_s;
          const bool tpot_ok = t.tpot_slo_s <= 0 || r->tpot_s <= t.tpot_slo_s;
          row.replicas = static_cast<int>(replicas);
          row.batch_per_replica = ic.fit.batch;
          row.ttft_s = r->ttft_s;
          row.tpot_s = r->tpot_s;
          row.output_tokens_per_s = replicas * double(ic.fit.batch) * double(t.output_len) / r->e2e_latency_s;
          row.replica = ic;
          row.replica_result = *r;
          if (ttft_ok && tpot_ok) {
            ok = true;
            // Little's law: the concurrency a request rate implies at this latency.
            if (t.requests_per_s > 0) {
              const int64_t need = static_cast<int64_t>(std::ceil(t.requests_per_s * r->e2e_latency_s));
              if (need > users) {
                users = need;
                ok = false;
              }
            }
            break;
          }
          if (ic.fit.batch == 1) {
            // The engine's host time, when given, is part of the figure and can be what misses.
            const double ttft_host = t.request_overhead_s + t.step_overhead_s;
            const std::string host =
                (!tpot_ok ? t.step_overhead_s : ttft_host) > 0
                    ? fmt::format("; {} of it is the given engine host time",
                                  FormatSeconds(!tpot_ok ? t.step_overhead_s : ttft_host))
                    : "";
            // Against the physical bound (methodology §9.5): an objective under it no engine can meet on this replica.
            const double bound = !tpot_ok ? r->decode_step_bound_s : r->ttft_bound_s;
            const double slo = !tpot_ok ? t.tpot_slo_s : t.ttft_slo_s;
            const std::string physics =
                bound <= 0 ? ""
                : slo < bound
                    ? fmt::format("; no engine can meet it on this replica: the physical bound is {}", FormatSeconds(bound))
                    : fmt::format("; the physical bound, {}, would allow it to an engine faster than modelled",
                                  FormatSeconds(bound));
            row.exclusion = !tpot_ok ? fmt::format("time per output token {} misses the {} objective even at batch 1 "
                                                   "(decode is {}-bound, {}{}{})",
                                                   FormatSeconds(r->tpot_s), FormatSeconds(t.tpot_slo_s),
                                                   r->decode_bound, FormatBandwidth(g.memory_bandwidth_bytes_per_s.value),
                                                   host, physics)
                                     : fmt::format("time to first token {} misses the {} objective even at batch 1 "
                                                   "(prefill is {}-bound{}{})",
                                                   FormatSeconds(r->ttft_s), FormatSeconds(t.ttft_slo_s),
                                                   r->prefill_bound, host, physics);
            break;
          }
        }
        if (!row.exclusion.empty()) break;
      }
      if (!ok) {
        if (row.exclusion.empty() && !any_fit && draft_bytes > 0)
          row.exclusion = fmt::format("the draft's weights and KV cache ({} per GPU) do not fit beside the target on its "
                                      "smallest replica (TP={} PP={})",
                                      FormatBytes(draft_bytes), mg.layout.tp, mg.layout.pp);
        if (row.exclusion.empty()) row.exclusion = "no replica count up to 4096 GPUs meets the objectives";
        out = row;
        return Status::Ok();
      }
      row.eligible = true;
      row.gpus = row.replicas * mg.gpus;
      row.layout = layout;
      row.cost_per_hour_usd = row.gpus * row.price_per_gpu_hour;
      if (row.price_per_gpu_hour > 0 && row.output_tokens_per_s > 0)
        row.cost_per_million_tokens_usd = row.cost_per_hour_usd / (row.output_tokens_per_s * 3600 / 1e6);
      out = row;
      return Status::Ok();
    };
    SUANLI_RETURN_IF_ERROR(serve(row, mg.layout));
    // An MoE model on a tensor-parallel replica can also run attention data-parallel over its GPUs (methodology §9.7:
    // each GPU attends for its own share of the sequences and holds only their KV cache): taken where it serves the
    // users on fewer GPUs, or as many at a higher throughput.
    if (m.moe && mg.layout.tp > 1 && mg.layout.pp == 1) {
      const SelectRow plain = out;
      Parallelism adp = mg.layout;
      adp.attention_dp = adp.tp;
      SUANLI_RETURN_IF_ERROR(serve(row, adp));
      const bool better =
          out.eligible && (!plain.eligible || out.gpus < plain.gpus ||
                           (out.gpus == plain.gpus && out.output_tokens_per_s > plain.output_tokens_per_s));
      if (better)
        out.memory_note += fmt::format("; attention data-parallel over the {} GPUs (each holds its own sequences' KV "
                                       "cache): {} GPUs where TP alone needs {}",
                                       adp.tp, out.gpus, plain.eligible ? std::to_string(plain.gpus) : "more than 4096");
      else
        out = plain;
    }
    rows.push_back(out);
  }
  Rank(rows, true);
  return rows;
}

Result<std::vector<SelectRow>> SelectForTraining(const HardwareCatalog& hw, const TrainTarget& t) {
  if (!t.model) return InvalidArgument("select needs a model");
  if (t.tokens <= 0) return InvalidArgument("--tokens must be positive for a training selection");
  if (t.deadline_s < 0 || t.budget_usd < 0) return InvalidArgument("--deadline-days and --budget must not be negative");
  const ModelSpec& m = *t.model;
  std::vector<SelectRow> rows;
  for (const GpuSpec& g : hw.gpus()) {
    SelectRow row = NewRow(g);
    if (row.peak_flops <= 0) {
      row.exclusion = "no 16-bit tensor rate in the catalog";
      rows.push_back(row);
      continue;
    }
    FitRequest fr;
    fr.mode = Mode::kTrain;
    fr.seq = t.seq;
    fr.micro_batch = 1;
    fr.recompute = Recompute::kFull;
    fr.explain = false;
    const MinGpus mg = FindMinGpus(m, fr, g, t.max_gpus);
    if (mg.gpus == 0) {
      row.exclusion = "does not fit on up to " + std::to_string(t.max_gpus) + " GPUs: " + mg.reason;
      rows.push_back(row);
      continue;
    }
    row.memory_note = fmt::format("needs at least {} GPU{} to hold the training state ({})", mg.gpus,
                                  mg.gpus == 1 ? "" : "s",
                                  fmt::format("TP={} PP={} DP={} ZeRO-{}", mg.layout.tp, mg.layout.pp, mg.layout.dp,
                                              mg.layout.zero));
    auto eff = LoadEfficiency(g.id);
    const int per_node = t.gpus_per_node != 0 ? t.gpus_per_node : HardwareCatalog::DefaultGpusPerNode(g);
    auto cl = MakeCluster(hw, g, per_node, t.inter_node.empty() ? hw.DefaultFabric(g) : t.inter_node);
    if (!eff.ok() || !cl.ok()) return eff.ok() ? cl.status() : eff.status();
    // GPU counts in whole hosts (a GB200 compute tray of 4; elsewhere the node), the unit one rents or buys.
    const int unit = t.gpus_per_node > 0 ? t.gpus_per_node : HardwareCatalog::GpusPerHost(g, per_node);
    int n = std::max(unit, (mg.gpus + unit - 1) / unit * unit);
    std::optional<PlanCandidate> best;
    for (; n <= t.max_gpus; n *= 2) {
      PlanRequest pr;
      pr.model = &m;
      pr.cluster = *cl;
      pr.eff = *eff;
      pr.gpu_counts = {n};
      pr.global_batch = t.global_batch;
      pr.seq = t.seq;
      pr.tokens = t.tokens;
      pr.top_k = 1;
      pr.fixed_cp = 1;
      pr.max_micro_batch = 8;
      pr.threads = 1;
      auto p = Plan(pr);
      if (!p.ok()) return p.status();
      if (!p->counts[0].top.empty()) {
        best = p->counts[0].top[0];
        if (t.deadline_s <= 0 || best->result.train_time_s <= t.deadline_s) break;
      }
    }
    if (!best) {
      row.exclusion = fmt::format("no layout fits with a global batch of {} on up to {} GPUs", t.global_batch, t.max_gpus);
      rows.push_back(row);
      continue;
    }
    row.gpus = best->par.gpus();
    row.layout = best->par;
    row.tp = best->par.tp;
    row.pp = best->par.pp;
    row.train_time_s = best->result.train_time_s;
    row.gpu_hours = best->result.gpu_hours;
    row.output_tokens_per_s = best->result.tokens_per_s;
    row.cost_per_hour_usd = row.gpus * row.price_per_gpu_hour;
    row.cost_usd = row.gpu_hours * row.price_per_gpu_hour;
    if (row.price_per_gpu_hour > 0) row.cost_per_million_tokens_usd = row.cost_usd / (t.tokens / 1e6);
    if (t.deadline_s > 0 && row.train_time_s > t.deadline_s) {
      row.exclusion = fmt::format("misses the deadline: {} at {} GPUs", FormatSeconds(row.train_time_s), row.gpus);
    } else if (t.budget_usd > 0 && row.price_per_gpu_hour > 0 && row.cost_usd > t.budget_usd) {
      row.exclusion = fmt::format("over budget: ${:.0f}", row.cost_usd);
    } else {
      row.eligible = true;
    }
    rows.push_back(row);
  }
  Rank(rows, false);
  return rows;
}

}  // namespace suanli
