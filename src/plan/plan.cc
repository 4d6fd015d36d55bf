#include "suanli/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>

#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli {

Result<Objective> ParseObjective(std::string_view s) {
  if (s == "time") return Objective::kTime;
  if (s == "cost") return Objective::kCost;
  if (s == "tokens-per-dollar") return Objective::kTokensPerDollar;
  return InvalidArgument(fmt::format("unknown objective '{}' (valid: time, cost, tokens-per-dollar){}", s,
                                     DidYouMean(s, {"time", "cost", "tokens-per-dollar"})));
}

namespace {

struct Outer {
  int tp, cp, pp, dp;
};

struct Shared {
  const PlanRequest* req;
  int gpus;
  double price;
};

std::string LayoutText(const Parallelism& p, int64_t mb, Recompute rc, const RecomputeModules& mods = {}) {
  std::string s = fmt::format("TP={} PP={} DP={}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" CP={}", p.cp);
  if (p.ep > 1) s += fmt::format(" EP={}", p.ep);
  if (p.etp > 0 && p.etp != p.tp) s += fmt::format(" ETP={}", p.etp);
  if (p.zero > 0) s += fmt::format(" ZeRO-{}", p.zero);
  if (p.sequence_parallel) s += " SP";
  if (p.interleave > 1) s += fmt::format(" interleave={}", p.interleave);
  if (p.embedding_loss_in_split) s += " embedding+loss-in-split";
  std::string words = RecomputeWords(rc, 0, EffectiveRecomputeModules(rc, mods));
  for (auto& ch : words)
    if (ch == ' ') ch = '_';
  return s + fmt::format(" micro-batch={} recompute={}", mb, words);
}

double Score(const TrainResult& r, int gpus, double price, Objective o, double tokens_per_step) {
  switch (o) {
    case Objective::kTime: return r.step_time_s;
    case Objective::kCost: return r.step_time_s * gpus * price / 3600;
    case Objective::kTokensPerDollar: return r.step_time_s * gpus * price / 3600 / tokens_per_step;
  }
  return r.step_time_s;
}

// Strict order: score, then the simpler layout (fewer CP, EP, PP, TP ranks, lower ZeRO stage, no interleaving,
// smaller micro-batch, less recompute, experts not folded, no embedding/loss in the split), so that ties never
// depend on which thread found a configuration.
bool Better(const PlanCandidate& a, const PlanCandidate& b) {
  if (a.score != b.score) return a.score < b.score;
  const auto key = [](const PlanCandidate& c) {
    const RecomputeModules& r = c.recompute_modules;
    const int mods = r.core_attn | r.layernorm << 1 | r.mlp << 2 | r.moe_act << 3 | r.moe << 4 | r.shared_experts << 5 |
                     r.mla_up_proj << 6;
    return std::make_tuple(c.par.cp, c.par.ep, c.par.pp, c.par.tp, c.par.zero, c.par.interleave, c.micro_batch,
                           static_cast<int>(c.recompute), mods, c.recompute_layers, c.par.sequence_parallel, c.par.etp,
                           c.par.embedding_loss_in_split);
  };
  return key(a) < key(b);
}

// Keeps the k best.
void Offer(std::vector<PlanCandidate>& top, int k, PlanCandidate&& c) {
  if (static_cast<int>(top.size()) >= k && !Better(c, top.back())) return;
  auto it = std::upper_bound(top.begin(), top.end(), c, Better);
  top.insert(it, std::move(c));
  if (static_cast<int>(top.size()) > k) top.pop_back();
}

struct WorkerOut {
  std::vector<PlanCandidate> top;
  int64_t evaluated = 0, valid = 0;
  double miss_shortfall = -1;
  std::string miss;
  std::string refused;  // the first layout the estimate refused, and why (reported when nothing was valid)
};

void SearchOuter(const Shared& sh, const Outer& o, WorkerOut& out) {
  const PlanRequest& req = *sh.req;
  const ModelSpec& m = *req.model;
  // Expert layouts (EP, ETP): experts over DP x CP with ETP = TP (0), and for TP > 1 also folded, ETP = 1 with EP
  // over TP x DP x CP (Megatron-Core's MoE parallel folding).
  struct Expert {
    int ep, etp;
  };
  std::vector<Expert> eps = {{1, 0}};
  if (req.fixed_ep > 0) {
    // A pinned EP is tried as given (an invalid one is reported by the estimate), folded too where it could be.
    eps = {{req.fixed_ep, 0}};
    if (m.moe && o.tp > 1 && req.fixed_ep > 1 && (o.tp * o.dp * o.cp) % req.fixed_ep == 0)
      eps.push_back({req.fixed_ep, 1});
  } else if (m.moe) {
    eps.clear();
    for (int e = 1; e <= std::min(m.moe->num_experts, 64); ++e) {
      if (m.moe->num_experts % e != 0) continue;
      if ((o.dp * o.cp) % e == 0) eps.push_back({e, 0});
      if (o.tp > 1 && e > 1 && (o.tp * o.dp * o.cp) % e == 0) eps.push_back({e, 1});
    }
  }
  std::vector<int> zeros = o.dp * o.cp == 1 ? std::vector<int>{0} : std::vector<int>{0, 1, 2, 3};
  if (req.fixed_zero >= 0) zeros = {req.fixed_zero};
  if (req.deepspeed_runnable) std::erase_if(zeros, [&](int z) { return !DeepSpeedRuns(o.pp, z); });
  std::vector<bool> sps = o.tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false};
  // Interleaving needs the layers divisible by PP x v, or, as Megatron-Core can, the layers plus the embedding
  // and the loss counted as one layer each (LLaMA-3.1 405B: 126 + 2).
  struct Interleave {
    int v;
    bool embedding_loss_in_split;
  };
  // Every depth that divides a stage is tried, down to one layer per virtual stage: deep pipelines need deep
  // interleaving (the Megatron-LM README's 462B ran PP 16 with 7 layers per stage), and the model charges each extra
  // chunk boundary its point-to-point transfer.
  std::vector<Interleave> vs = {{1, false}};
  if (o.pp > 1)
    for (int v = 2; v <= (m.layers + 2) / o.pp; ++v) {
      if (m.layers % (o.pp * v) == 0) vs.push_back({v, false});
      else if ((m.layers + 2) % (o.pp * v) == 0) vs.push_back({v, true});
    }
  std::vector<int64_t> mbs;
  const int64_t per_rank = req.global_batch / o.dp;
  for (int64_t b = 1; b <= std::min<int64_t>(per_rank, req.max_micro_batch); b *= 2)
    if (per_rank % b == 0) mbs.push_back(b);
  const double tokens_per_step = double(req.global_batch) * double(req.seq);
  auto offer = [&](const TrainConfig& c, TrainResult&& r) {
    ++out.valid;
    PlanCandidate pc;
    pc.par = c.fit.par;
    pc.micro_batch = c.fit.micro_batch;
    pc.recompute = c.fit.recompute;
    pc.recompute_layers = r.recompute_layers;
    pc.recompute_modules = r.recompute_modules;
    pc.offload_layers = r.offload_layers;
    pc.tp_overlap = c.tp_overlap;
    pc.ep_overlap = c.ep_overlap;
    pc.dp_overlap = c.dp_overlap;
    pc.moe_dispatcher = c.moe_dispatcher;
    pc.cp_comm = c.cp_comm;
    pc.score = Score(r, sh.gpus, sh.price, req.objective, tokens_per_step);
    pc.result = std::move(r);
    Offer(out.top, req.top_k, std::move(pc));
  };
  // Recompute settings in order: none; selective of the attention core (unfused attention only: with
  // FlashAttention it reruns the attention forward to drop only its log-sum-exp); selective of the module ladder
  // (where none does not fit); full, with block recompute searched where none does not fit.
  struct RecomputeOption {
    Recompute rc;
    RecomputeModules mods;
  };
  std::vector<RecomputeOption> rc_options = {{Recompute::kNone, {}}};
  if (req.attention == AttentionImpl::kUnfused) rc_options.push_back({Recompute::kSelective, {}});
  for (const RecomputeModules& mods : RecomputeModuleLadder(m, req.attention, req.dtype, req.fp8_recipe))
    rc_options.push_back({Recompute::kSelective, mods});
  rc_options.push_back({Recompute::kFull, {}});
  for (const Expert& ex : eps)
    for (int zero : zeros)
      for (bool sp : sps)
        for (const Interleave& iv : vs) {
          // Micro-batches at which no recompute fits: block recompute is only worth trying where it does not.
          std::vector<bool> none_fits(mbs.size(), false);
          // Micro-batches at which a setting earlier in rc_options (so cheaper than the module sets after it) fits.
          std::vector<bool> cheaper_fits(mbs.size(), false);
          // The score without recompute where that did not fit: a lower bound on any block recompute's score
          // (recomputing layers only adds time), used to skip searches that cannot enter the top k.
          std::vector<double> none_score(mbs.size(), -1.0);
          for (const RecomputeOption& opt : rc_options) {
            const Recompute rc = opt.rc;
            for (size_t mi = 0; mi < mbs.size(); ++mi) {
              const int64_t mb = mbs[mi];
              // Module recompute only adds time to a cheaper setting: worth trying where none of those fits, and not
              // where no recompute's score (a lower bound) already cannot enter the top k.
              if (opt.mods.any() &&
                  (cheaper_fits[mi] || (none_score[mi] >= 0 && static_cast<int>(out.top.size()) >= req.top_k &&
                                        none_score[mi] > out.top.back().score)))
                continue;
              TrainConfig c;
              c.detail = false;
              c.fit.par = Parallelism{o.tp, o.pp, o.dp, o.cp, ex.ep, zero, sp, iv.v, iv.embedding_loss_in_split, ex.etp};
              c.fit.batch = req.global_batch;
              c.fit.seq = req.seq;
              c.fit.micro_batch = mb;
              c.fit.recompute = rc;
              c.fit.recompute_modules = opt.mods;
              c.fit.flash_attention = req.attention != AttentionImpl::kUnfused;
              c.fit.host_memory_per_gpu_bytes = req.host_memory_per_gpu_bytes;
              c.dtype = req.dtype;
              c.fp8_recipe = req.fp8_recipe;
              if (req.fp8_params) c.fit.weights = *ParseWeightFormat("fp8");
              c.attention = req.attention;
              c.cross_entropy = req.cross_entropy;
              c.fit.mtp_layers = req.mtp_layers;
              c.eager = req.eager;
              c.fit.master = req.master;
              c.fit.moments = req.moments;
              c.dp_overlap = req.dp_overlap;
              c.dp_bucket_bytes = req.dp_bucket_bytes;
              c.tp_overlap = req.tp_overlap && sp;
              c.ep_overlap = req.ep_overlap && CheckEpOverlap(m, c.fit.par, rc).ok();
              c.moe_dispatcher = req.moe_dispatcher;
              c.cp_comm = o.cp > 1 ? req.cp_comm : CpComm::kP2P;
              c.cuda_graphs = req.cuda_graphs;
              c.tokens = req.tokens;
              c.price_per_gpu_hour = sh.price;
              ++out.evaluated;
              auto r = EstimateTraining(m, req.cluster, c, req.eff);
              if (!r.ok()) {  // invalid for every larger micro-batch too (layout constraint)
                if (out.refused.empty()) out.refused = std::string(r.status().message());
                break;
              }
              if (!r->fits) {
                if (rc == Recompute::kNone) none_score[mi] = Score(*r, sh.gpus, sh.price, req.objective, tokens_per_step);
                // CPU offloading (PP 1, no recompute) of the fewest layers that fit; it only adds time to this
                // estimate, so its score is a lower bound that skips searches that cannot enter the top k.
                const bool offload_hopeless = static_cast<int>(out.top.size()) >= req.top_k &&
                                              none_score[mi] > out.top.back().score;
                if (rc == Recompute::kNone && req.allow_offload && o.pp == 1 && !offload_hopeless) {
                  if (auto off = FewestOffloadLayersThatFit(m, req.cluster, c, req.eff, &out.evaluated))
                    offer(c, std::move(*off));
                }
                if (out.miss_shortfall < 0 || r->shortfall_bytes < out.miss_shortfall) {
                  out.miss_shortfall = r->shortfall_bytes;
                  out.miss = LayoutText(c.fit.par, mb, rc, opt.mods);
                }
                break;  // a larger micro-batch needs more memory still
              }
              if (rc == Recompute::kNone) none_fits[mi] = true;
              cheaper_fits[mi] = true;
              // Full recompute fits where none does not: the fewest block-recomputed layers per chunk that fit is
              // faster still (memory falls and time rises with each layer; a binary search finds it).
              const bool block_hopeless = none_score[mi] >= 0 && static_cast<int>(out.top.size()) >= req.top_k &&
                                          none_score[mi] > out.top.back().score;
              if (rc == Recompute::kFull && !none_fits[mi] && !block_hopeless) {
                if (auto block = FewestBlockRecomputeThatFits(m, req.cluster, c, req.eff, &out.evaluated))
                  offer(c, std::move(*block));
              }
              offer(c, std::move(r).value());
            }
          }
        }
}

std::string WhyLoses(const PlanCandidate& loser, const PlanCandidate& winner) {
  const TrainBreakdown& a = loser.result.breakdown_s;
  const TrainBreakdown& w = winner.result.breakdown_s;
  const BreakdownTerm* worst = &kBreakdownTerms[0];
  for (const auto& term : kBreakdownTerms)
    if (a.*term.value - w.*term.value > a.*worst->value - w.*worst->value) worst = &term;
  const double slower = loser.result.step_time_s / winner.result.step_time_s - 1;
  if (slower < 1e-6) return "ties with #1 on step time; listed after it as the more complex layout";
  return fmt::format("{:+.1f}% step time; loses most on {} ({:+.3g} s per step)", 100 * slower, worst->words,
                     a.*worst->value - w.*worst->value);
}

}  // namespace

Result<PlanResult> Plan(const PlanRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!req.model || !req.cluster.gpu) return InvalidArgument("plan needs a model and a GPU");
  const ModelSpec& m = *req.model;
  if (req.gpu_counts.empty()) return InvalidArgument("plan needs at least one GPU count");
  if (req.global_batch < 1) return InvalidArgument("--global-batch must be at least 1");
  if (req.seq < 1) return InvalidArgument("--seq must be at least 1");
  if (req.dtype == Precision::kFp8) SUANLI_RETURN_IF_ERROR(CheckFp8Training(*req.cluster.gpu, req.fp8_recipe));
  if (req.dtype == Precision::kFp4) SUANLI_RETURN_IF_ERROR(CheckFp8Training(*req.cluster.gpu, Fp8Recipe::kNvfp4));
  if (req.fp8_params && req.dtype != Precision::kFp8)
    return InvalidArgument("--fp8-params keeps the weights as FP8 tensors, which FP8 GEMMs read: it needs --dtype fp8");
  if (req.top_k < 1 || req.top_k > 1000) return InvalidArgument("--top must be between 1 and 1000");
  if (req.mtp_layers < 0 || req.mtp_layers > 16)
    return InvalidArgument(fmt::format("--mtp-layers must be between 0 and 16, got {}", req.mtp_layers));
  for (const auto& [flag, v] : {std::pair{"--tp", req.fixed_tp}, std::pair{"--pp", req.fixed_pp},
                                std::pair{"--cp", req.fixed_cp}, std::pair{"--ep", req.fixed_ep}})
    if (v < 0) return InvalidArgument(fmt::format("{} must be at least 1 (omit it to search), got {}", flag, v));
  if (req.fixed_zero < -1 || req.fixed_zero > 3)
    return InvalidArgument(fmt::format("--zero must be 0, 1, 2 or 3 (omit it to search), got {}", req.fixed_zero));
  if (req.threads < 0 || req.threads > kMaxPlanThreads)
    return InvalidArgument(
        fmt::format("--threads must be between 1 and {} (omit it for all cores), got {}", kMaxPlanThreads, req.threads));
  SUANLI_RETURN_IF_ERROR(CheckTokensAndPrice(req.tokens, req.price_per_gpu_hour));  // 0 price: the catalog's
  double price = req.price_per_gpu_hour;
  if (price <= 0 && req.objective != Objective::kTime) {
    if (req.cluster.gpu->price_on_demand_usd_per_hour) price = req.cluster.gpu->price_on_demand_usd_per_hour->value;
    else
      return InvalidArgument(fmt::format("objective '{}' needs a price: give --price-per-gpu-hour ({} has no price in "
                                         "the catalog)",
                                         req.objective == Objective::kCost ? "cost" : "tokens-per-dollar",
                                         req.cluster.gpu->id));
  }
  PlanResult res;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  res.threads = req.threads > 0 ? req.threads : static_cast<int>(hw);
  for (int n : req.gpu_counts) {
    if (n < 1 || n > (1 << 20)) return InvalidArgument(fmt::format("GPU count {} is out of range", n));
    std::vector<Outer> outers;
    for (int tp = 1; tp <= req.cluster.gpus_per_node; tp *= 2) {
      if (req.fixed_tp > 0 && tp != req.fixed_tp) continue;
      if (m.heads % tp != 0 || (!m.mla && m.kv_heads % tp != 0 && tp % m.kv_heads != 0)) continue;
      for (int cp : {1, 2, 4, 8}) {
        if (req.fixed_cp > 0 && cp != req.fixed_cp) continue;
        if (req.seq % cp != 0 || (cp > 1 && req.seq / cp < 1024)) continue;
        for (int pp = 1; pp <= m.layers; ++pp) {
          if (req.fixed_pp > 0 && pp != req.fixed_pp) continue;
          if (n % (tp * cp * pp) != 0) continue;
          const int dp = n / (tp * cp * pp);
          if (req.global_batch % dp != 0) continue;
          outers.push_back({tp, cp, pp, dp});
        }
      }
    }
    Shared sh{&req, n, price};
    std::vector<WorkerOut> outs(res.threads);
    std::atomic<size_t> next{0};
    auto work = [&](int id) {
      for (size_t i = next++; i < outers.size(); i = next++) SearchOuter(sh, outers[i], outs[id]);
    };
    // No more threads than layouts to share out; a thread the system refuses is one fewer worker, not a crash (the
    // workers take layouts from one counter, so any number of them covers every layout).
    std::vector<std::thread> pool;
    const int workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(res.threads), std::max<size_t>(1, outers.size())));
    for (int i = 1; i < workers; ++i) {
      try {
        pool.emplace_back(work, i);
      } catch (const std::system_error&) {
        break;
      }
    }
    work(0);
    for (auto& t : pool) t.join();
    PlanForCount pc;
    pc.gpus = n;
    double miss = -1;
    for (auto& o : outs) {
      pc.configs_evaluated += o.evaluated;
      pc.configs_valid += o.valid;
      for (auto& c : o.top) Offer(pc.top, req.top_k, std::move(c));
      if (o.miss_shortfall >= 0 && (miss < 0 || o.miss_shortfall < miss)) {
        miss = o.miss_shortfall;
        pc.nearest_miss = fmt::format("{} needs {} more per GPU", o.miss, FormatBytes(o.miss_shortfall));
      }
    }
    if (pc.top.empty()) {
      if (outers.empty()) {
        pc.nearest_miss = fmt::format(
            "no layout divides {} GPUs with a global batch of {} (DP must divide the batch; TP must divide the {} heads)",
            n, req.global_batch, m.heads);
      } else if (!pc.nearest_miss.empty()) {
        pc.nearest_miss += "; try ZeRO-3, more pipeline stages (PP), full recompute, or more GPUs";
      } else {
        for (const auto& o : outs)
          if (!o.refused.empty()) {
            pc.nearest_miss = "every layout searched was refused, for example: " + o.refused;
            break;
          }
      }
    }
    // Full detail for the reported candidates, and why each loses to the winner.
    for (auto& c : pc.top) {
      TrainConfig tc;
      tc.fit.par = c.par;
      tc.fit.batch = req.global_batch;
      tc.fit.seq = req.seq;
      tc.fit.micro_batch = c.micro_batch;
      tc.fit.recompute = c.recompute;
      tc.fit.recompute_layers = c.recompute_layers;
      tc.fit.recompute_modules = c.recompute_modules;
      tc.fit.offload_layers = c.offload_layers;
      tc.fit.flash_attention = req.attention != AttentionImpl::kUnfused;
      tc.fit.host_memory_per_gpu_bytes = req.host_memory_per_gpu_bytes;
      tc.dtype = req.dtype;
      tc.fp8_recipe = req.fp8_recipe;
      if (req.fp8_params) tc.fit.weights = *ParseWeightFormat("fp8");
      tc.attention = req.attention;
      tc.cross_entropy = req.cross_entropy;
      tc.fit.mtp_layers = req.mtp_layers;
      tc.eager = req.eager;
      tc.fit.master = req.master;
      tc.fit.moments = req.moments;
      tc.dp_overlap = req.dp_overlap;
      tc.dp_bucket_bytes = req.dp_bucket_bytes;
      tc.tp_overlap = c.tp_overlap;
      tc.ep_overlap = c.ep_overlap;
      tc.moe_dispatcher = c.moe_dispatcher;
      tc.cp_comm = c.cp_comm;
      tc.cuda_graphs = req.cuda_graphs;
      tc.tokens = req.tokens;
      tc.price_per_gpu_hour = price;
      auto r = EstimateTraining(m, req.cluster, tc, req.eff);
      if (r.ok()) c.result = std::move(r).value();
    }
    for (size_t i = 1; i < pc.top.size(); ++i) pc.top[i].why = WhyLoses(pc.top[i], pc.top[0]);
    if (!pc.top.empty()) pc.top[0].why = fmt::format("fastest: dominant term {}", pc.top[0].result.dominant);
    res.configs_evaluated += pc.configs_evaluated;
    res.configs_valid += pc.configs_valid;
    res.counts.push_back(std::move(pc));
  }
  // Scaling efficiency against the smallest count that has a result.
  double base = 0;
  for (auto& c : res.counts) {
    if (c.top.empty()) continue;
    const double per_gpu = c.top[0].result.tokens_per_s_per_gpu;
    if (base == 0) base = per_gpu;
    c.scaling_efficiency = per_gpu / base;
  }
  res.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace suanli
