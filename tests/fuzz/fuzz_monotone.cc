// libFuzzer target for the performance and memory models' monotonicity. The bytes choose a catalog model and GPU, a
// training or serving configuration (layout, precision, batch, lengths, features) and one of:
// - a hardware or efficiency improvement (HBM bandwidth, peaks, links, latencies, a measured fraction): an estimate
//   that succeeds must not get slower;
// - twice the work (training: the global batch; serving: the batch or the prompt): no shorter step, no lower
//   throughput;
// - for the training memory model, more work or more sharding: no less, or no more, memory per GPU.
// It reaches far more combinations than the grids of PerfProperties (src/perf/perf_properties_test.cc). Serving: no
// tolerance. Training time: 1%, where the grids allow 0.1%. Each overlap (TP and EP collectives under the layers, CP's
// exchange under attention, DP traffic under a pass, offload copies under the layers) is priced against the same
// compute on its own, so where several kinds of communication bind one micro-batch at once a faster part can lengthen
// the step a little: up to 0.7% in the configurations this target found (TP 8 over two PCIe nodes with CP and TP
// overlap; a 1B model with offloading, ZeRO-2 and one micro-batch), left as they are (docs/methodology.md §10).
// Beyond 1% it is a bug: in the thirty-ninth session it found (or would have found) ZeRO-3 under a pipeline (+1.8%),
// FSDP with offloading (+4.7%), offload waits left out of the DP window (+2.3%) and of the copies' own schedule
// (+6.5%), and ZeRO-3's weight-gradient reads (-1.7% tokens/s at twice the batch).
// A violation prints the configuration and aborts.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_catalogs.h"
#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"
#include "suanli/perf.h"

using suanli_fuzz::Hw;
using suanli_fuzz::Models;

namespace {

template <typename T, size_t N>
T Pick(FuzzedDataProvider& in, const T (&choices)[N]) {
  return choices[in.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

// One improvement, by a factor in [1, 3]: returns what it was, for the report.
std::string Improve(FuzzedDataProvider& in, suanli::GpuSpec& g, suanli::Cluster& c, suanli::Efficiency& e) {
  const double f = 1.0 + 2.0 * in.ConsumeProbability<double>();
  const auto up = [f](double& x, double cap) { x = std::min(cap, x * f); };
  switch (in.ConsumeIntegralInRange<int>(0, 8)) {
    case 0:
      g.memory_bandwidth_bytes_per_s.value *= f;
      return "HBM bandwidth";
    case 1:
      for (auto& [precision, peak] : g.dense_peak) peak.value *= f;
      return "every peak";
    case 2:
      c.intra_bw_per_dir *= f;
      c.inter_bw_per_gpu *= f;
      c.nic_bw_per_dir *= f;
      c.host_bw_per_dir *= f;
      return "links";
    case 3:
      c.intra_latency_s /= f;
      c.inter_latency_s /= f;
      e.kernel_launch_s /= f;
      return "latencies";
    case 4:
      up(e.gemm, 1.0);
      up(e.gemm_fp8, 1.0);
      up(e.gemm_fp4, 1.0);
      return "GEMM fraction";
    case 5:
      up(e.memory, 1.0);
      return "HBM fraction";
    case 6:
      up(e.attention, 1.0);
      up(e.attention_fp8, 3.0);  // FP8 attention's speed-up over the 16-bit kernel, and its curve by length
      for (auto& point : e.attention_fp8_by_seq) up(point.second, 3.0);
      return "attention fraction and FP8 speed-up";
    case 7:
      up(e.link, 1.0);
      up(e.link_allreduce, 2.0);
      up(e.network, 1.0);
      return "link fractions";
    default:
      e.overlap_slowdown /= f;
      e.moe_layer_time_eager = 1 + (e.moe_layer_time_eager - 1) / f;
      e.moe_layer_time_full_graph = 1 + (e.moe_layer_time_full_graph - 1) / f;
      return "overlap contention and MoE multiple";
  }
}

// The training configuration in words, for a report.
std::string Describe(const suanli::ModelSpec& m, const suanli::GpuSpec& gpu, int per_node, const suanli::Cluster& c,
                     const suanli::TrainConfig& t) {
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "%s on %s (%d per node, %s), TP%d PP%d VP%d CP%d DP%d EP%d ZeRO-%d SP%d, batch %lld, seq %lld, "
      "micro-batch %lld%s, recompute %s%s, %s (%s), overlap TP%d EP%d DP%d, eager %d, %s, graphs %s, %s, "
      "offload %d, CP %s, FP8 attention %d",
      m.id.c_str(), gpu.id.c_str(), per_node, c.inter_id.c_str(), t.fit.par.tp, t.fit.par.pp, t.fit.par.interleave,
      t.fit.par.cp, t.fit.par.dp, t.fit.par.ep, t.fit.par.zero, t.fit.par.sequence_parallel,
      static_cast<long long>(t.fit.batch), static_cast<long long>(t.fit.seq), static_cast<long long>(t.fit.micro_batch),
      t.micro_batch_auto ? " (auto)" : "", suanli::RecomputeName(t.fit.recompute), t.recompute_auto ? " (auto)" : "",
      suanli::PrecisionKey(t.dtype), suanli::Fp8RecipeName(t.fp8_recipe), t.tp_overlap, t.ep_overlap, t.dp_overlap,
      t.eager, suanli::MoeDispatcherName(t.moe_dispatcher), suanli::CudaGraphsName(t.cuda_graphs),
      t.fit.mode == suanli::Mode::kLora ? "LoRA" : "full", t.fit.offload_layers, suanli::CpCommName(t.cp_comm),
      t.fp8_attention);
  return buf;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const auto& models = Models().models();
  const auto& gpus = Hw().gpus();
  const suanli::ModelSpec& m = models[in.ConsumeIntegralInRange<size_t>(0, models.size() - 1)].spec;
  const suanli::GpuSpec& gpu = gpus[in.ConsumeIntegralInRange<size_t>(0, gpus.size() - 1)];
  const int per_node = Pick(in, {8, 8, 4, 72});
  auto cluster = suanli::MakeCluster(Hw(), gpu, per_node, Pick(in, {"ib-ndr", "ib-hdr", "roce-200g", "eth-100g"}));
  auto eff = suanli::LoadEfficiency(gpu.id);
  if (!cluster.ok() || !eff.ok()) return 0;
  const int kind = in.ConsumeIntegralInRange<int>(0, 2);  // training, serving, or training memory
  const bool train = kind != 1;

  suanli::TrainConfig t;
  suanli::InferConfig s;
  if (train) {
    auto& p = t.fit.par;
    p.tp = Pick(in, {1, 2, 4, 8});
    p.pp = Pick(in, {1, 1, 2, 4});
    p.cp = Pick(in, {1, 1, 2});
    p.dp = in.ConsumeIntegralInRange<int>(1, 16);
    p.ep = Pick(in, {1, 1, 2, 4, 8});
    p.zero = in.ConsumeIntegralInRange<int>(0, 3);
    p.sequence_parallel = p.tp > 1 && in.ConsumeBool();
    p.interleave = p.pp > 1 ? Pick(in, {1, 2}) : 1;
    t.fit.micro_batch = Pick(in, {1, 2, 4});
    t.fit.batch = t.fit.micro_batch * p.dp * in.ConsumeIntegralInRange<int64_t>(1, 32);
    t.fit.seq = Pick(in, {512, 2048, 4096, 8192, 16384});
    t.dtype = Pick(in, {suanli::Precision::kBf16, suanli::Precision::kFp8, suanli::Precision::kFp4});
    if (t.dtype == suanli::Precision::kFp4) t.nvfp4_rht = in.ConsumeBool();
    t.fp8_recipe = Pick(in, {suanli::Fp8Recipe::kDelayed, suanli::Fp8Recipe::kCurrent, suanli::Fp8Recipe::kMxfp8});
    t.fit.recompute = Pick(in, {suanli::Recompute::kNone, suanli::Recompute::kSelective, suanli::Recompute::kFull});
    t.micro_batch_auto = in.ConsumeBool();
    t.recompute_auto = in.ConsumeBool();
    t.tp_overlap = p.sequence_parallel && in.ConsumeBool();
    t.ep_overlap = p.ep > 1 && in.ConsumeBool();
    t.dp_overlap = in.ConsumeIntegralInRange<int>(0, 3) != 0;
    t.eager = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    t.moe_dispatcher = in.ConsumeBool() ? suanli::MoeDispatcher::kFlex : suanli::MoeDispatcher::kAllToAll;
    t.cuda_graphs = Pick(in, {suanli::CudaGraphs::kNone, suanli::CudaGraphs::kPartial, suanli::CudaGraphs::kFull});
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) t.fit.mode = suanli::Mode::kLora;
    if (p.pp == 1 && in.ConsumeIntegralInRange<int>(0, 3) == 0) t.fit.offload_layers = m.layers / 2;
    t.detail = false;
    if (p.cp > 1 && in.ConsumeIntegralInRange<int>(0, 3) == 0) t.cp_comm = suanli::CpComm::kAllToAll;
    t.fp8_attention = t.dtype != suanli::Precision::kBf16 && !t.eager && in.ConsumeBool();
  } else {
    s.fit.par.tp = Pick(in, {1, 2, 4, 8});
    s.fit.par.pp = Pick(in, {1, 1, 2});
    s.fit.par.ep = Pick(in, {1, 1, 2, 8});
    s.fit.weights = *suanli::ParseWeightFormat(Pick(in, {"bf16", "fp8", "int8", "int4", "nf4", "nvfp4", "q4_k_m"}));
    s.fit.kv_bytes_per_elem = Pick(in, {2.0, 1.0});
    s.fit.batch = in.ConsumeIntegralInRange<int64_t>(1, 256);
    s.input_len = in.ConsumeIntegralInRange<int64_t>(1, 32768);
    s.output_len = in.ConsumeIntegralInRange<int64_t>(1, 4096);
    s.batch_max = in.ConsumeIntegralInRange<int>(0, 3) == 0;
    s.decode_attention = in.ConsumeBool() ? suanli::DecodeAttention::kGrouped : suanli::DecodeAttention::kPerHead;
    s.moe_imbalance = 1.0 + in.ConsumeProbability<double>();
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
      s.spec.tokens = in.ConsumeIntegralInRange<int>(1, 6);
      s.spec.acceptance_length = 1.0 + s.spec.tokens * in.ConsumeProbability<double>();
      s.spec.topk = Pick(in, {1, 1, 4});
    }
    s.request_overhead_s = in.ConsumeBool() ? 1e-3 : 0.0;
    s.step_overhead_s = in.ConsumeBool() ? 2e-4 : 0.0;
    // Attention DP over the TP GPUs (MoE models only; the estimate refuses it elsewhere), with or without a draft head.
    if (m.moe && in.ConsumeIntegralInRange<int>(0, 2) == 0)
      s.fit.par.attention_dp = Pick(in, {s.fit.par.tp, std::max(1, s.fit.par.tp / 2)});
  }

  if (kind == 2) {
    // Memory: a larger micro-batch (with the batch) or sequence never needs less per GPU; more ZeRO sharding, more
    // recompute, more data parallelism (from DP 2), or more offloaded layers never more. Pipeline splits are left out
    // (an uneven one may rightly need more: memory_test.cc).
    suanli::FitRequest r = t.fit;
    r.mode = t.fit.mode == suanli::Mode::kLora ? suanli::Mode::kLora : suanli::Mode::kTrain;
    r.fp8_activations = suanli::QuantizedTraining(t.dtype);
    r.explain = false;
    auto base = suanli::EstimateMemory(m, r);
    if (!base.ok()) return 0;
    suanli::FitRequest q = r;
    bool more = true;
    const char* what = "";
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0:
        q.micro_batch *= 2, q.batch *= 2, what = "micro-batch x2";
        break;
      case 1:
        q.seq *= 2, what = "sequence x2";
        break;
      case 2:
        q.par.zero = std::min(3, q.par.zero + 1), more = false, what = "ZeRO stage + 1";
        break;
      case 3:
        q.recompute =
            q.recompute == suanli::Recompute::kNone ? suanli::Recompute::kSelective : suanli::Recompute::kFull;
        more = false, what = "more recompute";
        break;
      case 4:  // from DP 2 up: the first data-parallel group brings its communicators' buffers (overhead)
        if (q.par.dp < 2) return 0;
        q.par.dp *= 2, q.batch *= 2, more = false, what = "DP x2";
        break;
      default:
        q.offload_layers = std::min(m.layers - 1, q.offload_layers + 4), more = false, what = "4 more offloaded";
    }
    auto after = suanli::EstimateMemory(m, q);
    if (!after.ok()) return 0;
    const double a = base->per_gpu_peak_bytes, b = after->per_gpu_peak_bytes;
    if (more ? b < a * (1 - 1e-9) : b > a * (1 + 1e-9)) {
      std::fprintf(stderr, "%s: %s took the memory per GPU %.6g -> %.6g GB\n",
                   Describe(m, gpu, per_node, *cluster, t).c_str(), what, a / 1e9, b / 1e9);
      std::abort();
    }
    return 0;
  }

  suanli::GpuSpec g2 = gpu;
  suanli::Cluster c2 = *cluster;
  c2.gpu = &g2;
  suanli::Efficiency e2 = *eff;
  const std::string what = Improve(in, g2, c2, e2);

  const bool more_work = in.ConsumeBool();
  if (train) {
    auto base = suanli::EstimateTraining(m, *cluster, t, *eff);
    if (!base.ok() || !base->fits) return 0;
    if (more_work) {
      // Twice the global batch at the same micro-batch and recompute never lowers tokens/s. The automatic choice
      // may rightly pick a smaller micro-batch there: an interleaved schedule holds more micro-batches in flight when
      // there are more of them.
      suanli::TrainConfig t2 = t;
      t2.fit.batch *= 2;
      t2.micro_batch_auto = t2.recompute_auto = false;
      t2.fit.micro_batch = base->micro_batch;
      t2.fit.recompute = base->recompute;
      t2.fit.recompute_layers = base->recompute_layers;
      t2.fit.recompute_modules = base->recompute_modules;
      auto twice = suanli::EstimateTraining(m, *cluster, t2, *eff);
      if (twice.ok() && twice->fits && twice->tokens_per_s < base->tokens_per_s * (1 - 1e-9)) {
        std::fprintf(stderr,
                     "%s: twice the batch made %.6g -> %.6g tokens/s (micro-batch %lld -> %lld, recompute %s -> %s)\n",
                     Describe(m, gpu, per_node, *cluster, t).c_str(), base->tokens_per_s, twice->tokens_per_s,
                     static_cast<long long>(base->micro_batch), static_cast<long long>(twice->micro_batch),
                     suanli::RecomputeName(base->recompute), suanli::RecomputeName(twice->recompute));
        std::abort();
      }
      return 0;
    }
    auto better = suanli::EstimateTraining(m, c2, t, e2);
    if (better.ok() && better->step_time_s > base->step_time_s * 1.01) {
      std::fprintf(stderr, "%s: %s made the step %.6g s -> %.6g s (micro-batch %lld -> %lld, recompute %s -> %s)\n",
                   Describe(m, gpu, per_node, *cluster, t).c_str(), what.c_str(), base->step_time_s,
                   better->step_time_s, static_cast<long long>(base->micro_batch),
                   static_cast<long long>(better->micro_batch), suanli::RecomputeName(base->recompute),
                   suanli::RecomputeName(better->recompute));
      std::abort();
    }
  } else {
    auto base = suanli::EstimateInference(m, *cluster, s, *eff);
    if (!base.ok() || !base->fits) return 0;
    if (more_work && !s.batch_max) {
      // Twice the batch never shortens the prefill or a decode step, nor lowers decode tokens/s; twice the prompt
      // never shortens either, except a decode step of chunked attention (Llama 4): its chunked layers attend within
      // the current chunk, so a longer prompt can put the decode positions early in a chunk, with fewer keys (the
      // model's C/2 past the first chunk; methodology §6.3).
      suanli::InferConfig s2 = s;
      const bool batch = in.ConsumeBool();
      (batch ? s2.fit.batch : s2.input_len) *= 2;
      const bool chunked_decode_may_shorten = !batch && m.chunked_window;
      auto more = suanli::EstimateInference(m, *cluster, s2, *eff);
      if (more.ok() && more->fits &&
          (more->ttft_s < base->ttft_s * (1 - 1e-9) ||
           (!chunked_decode_may_shorten && more->tpot_s < base->tpot_s * (1 - 1e-9)) ||
           (batch && more->decode_tokens_per_s < base->decode_tokens_per_s * (1 - 1e-9)))) {
        std::fprintf(stderr,
                     "%s on %s, TP%d PP%d EP%d attention DP %d %s, batch %lld, %lld/%lld tokens, speculation %d: "
                     "twice the %s made TTFT %.6g -> %.6g s, TPOT %.6g -> %.6g s, %.6g -> %.6g tokens/s\n",
                     m.id.c_str(), gpu.id.c_str(), s.fit.par.tp, s.fit.par.pp, s.fit.par.ep, s.fit.par.attention_dp,
                     s.fit.weights.id.c_str(),
                     static_cast<long long>(s.fit.batch), static_cast<long long>(s.input_len),
                     static_cast<long long>(s.output_len), s.spec.tokens, batch ? "batch" : "prompt", base->ttft_s,
                     more->ttft_s, base->tpot_s, more->tpot_s, base->decode_tokens_per_s, more->decode_tokens_per_s);
        std::abort();
      }
      return 0;
    }
    auto better = suanli::EstimateInference(m, c2, s, e2);
    if (better.ok() && (better->ttft_s > base->ttft_s * (1 + 1e-9) || better->tpot_s > base->tpot_s * (1 + 1e-9))) {
      std::fprintf(stderr,
                   "%s on %s, TP%d PP%d EP%d %s, batch %lld, %lld/%lld tokens: %s made TTFT %.6g -> %.6g s, "
                   "TPOT %.6g -> %.6g s\n",
                   m.id.c_str(), gpu.id.c_str(), s.fit.par.tp, s.fit.par.pp, s.fit.par.ep, s.fit.weights.id.c_str(),
                   static_cast<long long>(s.fit.batch), static_cast<long long>(s.input_len),
                   static_cast<long long>(s.output_len), what.c_str(), base->ttft_s, better->ttft_s, base->tpot_s,
                   better->tpot_s);
      std::abort();
    }
  }
  return 0;
}
