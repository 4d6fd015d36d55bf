#include "suanli/perf.h"
#include "suanli/plan.h"
#include "suanli/units.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_catalogs.h"
#include "perf/internal.h"

#include <cmath>
#include <numeric>
#include <random>
#include <string_view>
#include <tuple>

namespace suanli {
namespace {

class Perf : public testing::CatalogTest {
 protected:
  static Cluster C(const GpuSpec& g, const char* net = "ib-ndr") { return *MakeCluster(*hw_, g, 8, net); }
  static Efficiency E(const GpuSpec& g) { return *LoadEfficiency(g.id); }
  static TrainConfig Train(int gpus, int tp, int pp, int64_t gbs, int64_t seq = 4096, int64_t mb = 1) {
    TrainConfig c;
    c.fit.par.tp = tp;
    c.fit.par.pp = pp;
    c.fit.par.dp = gpus / (tp * pp);
    c.fit.par.zero = 1;
    c.fit.batch = gbs;
    c.fit.seq = seq;
    c.fit.micro_batch = mb;
    return c;
  }
  // Mixtral 8x7B served on TP 8 over H100 SXMs, 128 tokens in and out, with expert parallelism `ep` inside it.
  static Result<InferResult> MixtralOnEightH100(int64_t batch, int ep, double moe_imbalance = 1.0) {
    const GpuSpec& g = G("h100-sxm");
    InferConfig c;
    c.fit.batch = batch;
    c.fit.par.tp = 8;
    c.fit.par.ep = ep;
    c.moe_imbalance = moe_imbalance;
    c.input_len = 128;
    c.output_len = 128;
    return EstimateInference(M("mixtral-8x7b"), C(g), c, E(g));
  }
  // The operator named `name` in an operator table, or nullptr.
  static const OpCost* FindOp(const std::vector<OpCost>& ops, std::string_view name) {
    for (const auto& o : ops)
      if (o.name == name) return &o;
    return nullptr;
  }
};

// Volta and Turing have FP16 tensor cores and no BF16: a BF16 estimate there is priced at the FP16 rate (the same
// time as in FP16) and says so, in serving and in training; a GPU with BF16 and an FP16 run carry no such note.
TEST_F(Perf, Bf16WhereTheGpuHasNoneIsPricedAtFp16AndSaysSo) {
  const ModelSpec m = M("llama-3.1-8b");
  auto has_note = [](const std::vector<std::string>& notes) {
    return std::any_of(notes.begin(), notes.end(),
                       [](const std::string& n) { return n.find("has no BF16 tensor cores") != std::string::npos; });
  };
  for (const char* id : {"t4", "v100-sxm-32gb", "a100-sxm-80gb"}) {
    const GpuSpec& g = G(id);
    const bool none = std::string_view(id) != "a100-sxm-80gb";
    InferConfig c;
    auto bf = EstimateInference(m, C(g), c, E(g));
    c.fit.weights = *ParseWeightFormat("fp16");
    auto fp = EstimateInference(m, C(g), c, E(g));
    ASSERT_TRUE(bf.ok() && fp.ok()) << id;
    EXPECT_EQ(has_note(bf->notes), none) << id;
    EXPECT_FALSE(has_note(fp->notes)) << id;
    if (none) {
      EXPECT_DOUBLE_EQ(bf->ttft_s, fp->ttft_s) << id;
    }
    TrainConfig t = Train(8, 8, 1, 64, 2048, 1);
    t.fit.recompute = Recompute::kFull;
    auto tb = EstimateTraining(m, C(g), t, E(g));
    t.dtype = Precision::kFp16;
    auto tf = EstimateTraining(m, C(g), t, E(g));
    ASSERT_TRUE(tb.ok() && tf.ok()) << id;
    EXPECT_EQ(has_note(tb->notes), none) << id;
    EXPECT_FALSE(has_note(tf->notes)) << id;
  }
}

// --explain's operator table accounts for the step: time x count summed over the computing operators is no more
// than the step (the bubble and exposed communication are outside it; collectives are listed at their full time,
// overlapped or not), for a dense model and two MoE models. An MoE model's table lists its attention twice, once
// per layer kind; each counts by its share of the layers, so an all-MoE model's dense rows count zero.
TEST_F(Perf, OperatorTableSharesDoNotExceedTheStep) {
  const GpuSpec& g = G("h100-sxm");
  for (const char* id : {"llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b"}) {
    TrainConfig c = Train(8, 1, 1, 64, 4096);
    c.detail = true;
    if (std::string_view(id) != "llama-3.1-8b") c.fit.par.ep = 8;
    auto r = EstimateTraining(M(id), C(g), c, E(g));
    ASSERT_TRUE(r.ok()) << id << ": " << r.status().message();
    double sum = 0;
    for (const auto& o : r->ops)
      if (o.bound != Bound::kCommunication) sum += o.time_s * o.count;
    EXPECT_LE(sum, r->step_time_s * 1.0001) << id;
    EXPECT_GT(sum, 0.5 * r->step_time_s) << id;
  }
}

// Folded experts (ETP 1 under TP 2) do the same expert FLOPs as experts split over TP, on GEMMs twice as wide with
// half the tokens. Either way each rank dispatches only its own sequence-parallel tokens (Megatron-Core's alltoall
// dispatcher); split over TP the experts then all-gather the group's dispatched copies (4096 tokens x 8 x 2048 x 2 B)
// and reduce-scatter their outputs over TP, which folded experts do not, so a folded layer's TP traffic is the
// attention block's alone.
TEST_F(Perf, FoldedExpertsKeepTheFlopsAndDropTheMoeBlocksTpCollective) {
  const ModelSpec m = M("qwen3-30b-a3b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 2, 1, 64, 4096);
  c.detail = true;
  c.fit.par.sequence_parallel = true;
  c.moe_imbalance = 1.0;
  c.fit.par.ep = 4;  // ETP = TP = 2: EP over the 4 DP ranks
  auto split = EstimateTraining(m, C(g), c, E(g));
  c.fit.par.ep = 8;
  c.fit.par.etp = 1;  // folded: EP over TP x DP
  auto folded = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(split.ok()) << split.status().message();
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  auto op = [](const TrainResult& r, std::string_view name) {
    for (const auto& o : r.ops)
      if (o.name == name) return o;
    ADD_FAILURE() << name;
    return OpCost{};
  };
  for (const char* name : {"[moe] experts up/gate", "[moe] experts down"})
    EXPECT_NEAR(op(*folded, name).flops, op(*split, name).flops, 1e-6 * op(*split, name).flops) << name;
  const double tp_split = op(*split, "[moe] TP all-gather + reduce-scatter (x2)").time_s;
  const double tp_folded = op(*folded, "[moe] TP all-gather + reduce-scatter (x2)").time_s;
  const auto ag_rs = [&](double bytes) {
    return GroupCollectiveTime(C(g), E(g), NcclOp::kAllGather, bytes, 2, 1) +
           GroupCollectiveTime(C(g), E(g), NcclOp::kReduceScatter, bytes, 2, 1);
  };
  EXPECT_NEAR(tp_folded, ag_rs(4096.0 * 2048 * 2), 1e-12);
  EXPECT_NEAR(tp_split - tp_folded, ag_rs(4096.0 * 8 * 2048 * 2), 1e-12);
  // Each rank dispatches its own sequence-parallel share: 4096 / 2 tokens x 8 experts x 2048 x 2 B, there and back.
  EXPECT_DOUBLE_EQ(op(*folded, "[moe] expert all-to-all (x2)").bytes, 2.0 * 2048 * 8 * 2048 * 2);
  EXPECT_DOUBLE_EQ(op(*split, "[moe] expert all-to-all (x2)").bytes, 2.0 * 2048 * 8 * 2048 * 2);
}

// The slowest pipeline stage sets the step. LLaMA-3.1 405B at PP 8: the plain split of 126 layers is
// 16 16 16 16 16 16 15 15+head; with the embedding and the loss counted as layers (128 units) it is
// 15 16 16 16 16 16 16 15+head. Either way the slowest stage computes 16 layers (the head is lighter than a
// layer here), so the compute on the critical path is equal; looking only at the first and the last stage would
// miss the middle ones. The counted split is no slower overall: its first stage no longer holds the embedding
// on top of 16 layers, so the largest per-GPU parameter share (optimizer step, gradient reduction) is smaller.
TEST_F(Perf, SlowestPipelineStageSetsTheStep) {
  const ModelSpec m = M("llama-3.1-405b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(512, 8, 8, 64, 8192);
  c.fit.par.sequence_parallel = true;
  auto plain = EstimateTraining(m, C(g), c, E(g));
  c.fit.par.embedding_loss_in_split = true;
  auto counted = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(counted.ok()) << counted.status().message();
  EXPECT_LE(counted->step_time_s, plain->step_time_s);
  EXPECT_LT(counted->memory.params_per_gpu, plain->memory.params_per_gpu);
  EXPECT_NEAR(counted->breakdown_s.compute, plain->breakdown_s.compute, 1e-9 * plain->breakdown_s.compute);
}

// NCCL's tuning model (tuning.cc @01afd20a), hand-computed for one node of 8 NVLink GPUs at 370 GB/s busbw.
TEST(Collectives, NcclModelPicksTheFastestAlgorithmAndProtocolPerSize) {
  NcclGroup g;
  g.ranks = 8;
  g.busbw = 370e9;
  const auto at = [&](NcclOp op, double bytes) { return NcclCollective(op, bytes, g); };
  // Large: ring Simple, base 8.4 us + 14 NVLink hops x 3.4 us, then 2(n-1)/n x S at the bus bandwidth.
  auto big = at(NcclOp::kAllReduce, 1e9);
  EXPECT_STREQ(big.algorithm, "ring");
  EXPECT_STREQ(big.protocol, "Simple");
  EXPECT_NEAR(big.time_s, (8.4 + 14 * 3.4) * 1e-6 + 2.0 * 7 / 8 * 1e9 / 370e9, 1e-12);
  // 16 MiB: LL128 (base 10 + 14 x 1.9 us) at 0.92 of the bus bandwidth.
  const double mib16 = 16.0 * 1024 * 1024;
  auto mid = at(NcclOp::kAllReduce, mib16);
  EXPECT_STREQ(mid.protocol, "LL128");
  EXPECT_NEAR(mid.time_s, (10.0 + 14 * 1.9) * 1e-6 + 2.0 * 7 / 8 * mib16 / (0.92 * 370e9), 1e-12);
  // 8 KiB (a decode step's activation): LL (3.6 + 14 x 0.47 us) at a quarter of the bus bandwidth.
  auto small = at(NcclOp::kAllReduce, 8192);
  EXPECT_STREQ(small.protocol, "LL");
  EXPECT_STREQ(small.algorithm, "ring");
  EXPECT_NEAR(small.time_s, (3.6 + 14 * 0.47) * 1e-6 + 2.0 * 7 / 8 * 8192 / (370e9 / 4), 1e-12);
  // All-gather: n-1 steps, and LL at a third of the bus bandwidth inside one node.
  auto ag = at(NcclOp::kAllGather, 8192);
  EXPECT_NEAR(ag.time_s, (3.6 + 7 * 0.47) * 1e-6 + 7.0 / 8 * 8192 / (370e9 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(at(NcclOp::kReduceScatter, 8192).time_s, ag.time_s);
  // One rank, or nothing to move: no time.
  g.ranks = 1;
  EXPECT_EQ(at(NcclOp::kAllReduce, 1e9).time_s, 0);
  g.ranks = 8;
  EXPECT_EQ(at(NcclOp::kAllReduce, 0).time_s, 0);
  // No bus bandwidth: the collective cannot finish, never "free".
  g.busbw = 0;
  EXPECT_TRUE(std::isinf(at(NcclOp::kAllReduce, 8192).time_s));
}

TEST(Collectives, NcclModelOverPcieAndAcrossNodes) {
  // PCIe: no LL128; 16 MiB over 8 GPUs runs Simple (8.4 + 14 x 5.7 us) at the bus bandwidth.
  NcclGroup pci;
  pci.ranks = 8;
  pci.nvlink = false;
  pci.busbw = 20e9;
  const double mib16 = 16.0 * 1024 * 1024;
  auto p = NcclCollective(NcclOp::kAllReduce, mib16, pci);
  EXPECT_STREQ(p.protocol, "Simple");
  EXPECT_NEAR(p.time_s, (8.4 + 14 * 5.7) * 1e-6 + 2.0 * 7 / 8 * mib16 / 20e9, 1e-12);
  // 16 nodes x 8: a ring's 254 steps make a 1 MiB all-reduce latency-bound; the tree's chain inside the node and
  // log2(16) network levels win. A 4 GiB one is bandwidth-bound: the ring at the full bus bandwidth wins (trees
  // are capped at 80 GB/s beyond two nodes), and pays NCCL's 1.9x plateau on its latency.
  NcclGroup nodes;
  nodes.ranks = 128;
  nodes.nodes = 16;
  nodes.busbw = 170e9;
  EXPECT_STREQ(NcclCollective(NcclOp::kAllReduce, 1 << 20, nodes).algorithm, "tree");
  auto huge = NcclCollective(NcclOp::kAllReduce, 4.0 * (1ull << 30), nodes);
  EXPECT_STREQ(huge.algorithm, "ring");
  const double ring_lat = (8.4 + (254 - 30) * 3.4 + 30 * 9.6) * 1.9;
  EXPECT_NEAR(huge.time_s, ring_lat * 1e-6 + 2.0 * 127 / 128 * 4.0 * (1ull << 30) / 170e9, 1e-9);
}

TEST(Collectives, NcclTimesGrowWithBytesAndShrinkWithBandwidth) {
  // Properties over sizes 1 B .. 8 GiB and groups inside and across nodes, NVLink and PCIe, with NVLS or not.
  for (int ranks : {2, 4, 8, 16, 64}) {
    for (bool nvlink : {true, false}) {
      for (double nvls : {0.0, 480e9}) {
        NcclGroup g;
        g.ranks = ranks;
        g.nodes = ranks > 8 ? ranks / 8 : 1;
        g.nvlink = nvlink;
        g.busbw = 300e9;
        g.nvls_busbw = ranks > 8 ? 0 : nvls;
        NcclGroup faster = g;
        faster.busbw = 400e9;
        for (NcclOp op : {NcclOp::kAllReduce, NcclOp::kAllGather}) {
          double prev = 0;
          for (double bytes = 1; bytes <= 8.0 * (1ull << 30); bytes *= 2) {
            const double t = NcclCollective(op, bytes, g).time_s;
            EXPECT_GE(t, prev * (1 - 1e-12)) << ranks << " ranks, " << bytes << " B";
            EXPECT_LE(NcclCollective(op, bytes, faster).time_s, t) << ranks << " ranks, " << bytes << " B";
            prev = t;
          }
        }
      }
    }
  }
}

TEST(Collectives, NvlsRunsLargeAllReducesThroughTheSwitch) {
  NcclGroup g;
  g.ranks = 8;
  g.busbw = 370e9;
  g.nvls_busbw = 480e9;
  auto big = NcclCollective(NcclOp::kAllReduce, 1e9, g);
  EXPECT_STREQ(big.algorithm, "nvls");
  EXPECT_NEAR(big.time_s, (8.4 + 14 * 3.4) * 1e-6 + 2.0 * 7 / 8 * 1e9 / 480e9, 1e-12);
  // Never for all-gather, and a small all-reduce still takes LL.
  EXPECT_STREQ(NcclCollective(NcclOp::kAllGather, 1e9, g).algorithm, "ring");
  EXPECT_STREQ(NcclCollective(NcclOp::kAllReduce, 8192, g).protocol, "LL");
}

TEST(Collectives, OverlapCostIsTheUnhiddenPartPlusTheContention) {
  // Communication shorter than the compute: hidden, but the compute runs slower while it runs.
  EXPECT_NEAR(OverlapCost(10, 4, 0.2), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(OverlapCost(10, 4, 0), 0);
  // Longer: the communication sets the pace, unless the slowed compute is longer still.
  EXPECT_NEAR(OverlapCost(10, 15, 0.2), 5, 1e-12);
  EXPECT_NEAR(OverlapCost(10, 11, 0.2), 2, 1e-12);
  // Nothing to hide under: all of it is exposed.
  EXPECT_DOUBLE_EQ(OverlapCost(0, 3, 0.2), 3);
  // Never negative, never more than running the two one after the other, monotone in the traffic.
  double prev = 0;
  for (double comm = 0; comm <= 30; comm += 0.5) {
    const double cost = OverlapCost(10, comm, 0.189);
    EXPECT_GE(cost, prev);
    EXPECT_LE(cost, comm);
    prev = cost;
  }
}

// Data-parallel traffic issued chunk by chunk (interleaved pipelines): part k may start `window` before chunk k's
// compute ends, chunks end `gap` apart, parts run one after another; what is left after the last chunk, or the
// slowdown of the overlapped part.
TEST(Collectives, ChunkedOverlapHidesEarlierChunksUnderLaterOnes) {
  // One chunk, or all chunks ending together: the plain overlap.
  for (double comm : {0.0, 4.0, 11.0, 15.0})
    for (double s : {0.0, 0.2}) {
      EXPECT_NEAR(ChunkedOverlapCost(10, 7, 1, comm, s), OverlapCost(10, comm, s), 1e-12) << comm << " " << s;
      EXPECT_NEAR(ChunkedOverlapCost(10, 0, 4, comm, s), OverlapCost(10, comm, s), 1e-12) << comm << " " << s;
    }
  // Four parts of 2 under chunks ending 10 apart, each with 1 of its own compute to hide under: only the last
  // part's excess over its own chunk is left (2 - 1), or the contention on the 7 overlapped if that is more.
  EXPECT_NEAR(ChunkedOverlapCost(1, 10, 4, 8, 0), 1, 1e-12);
  EXPECT_NEAR(ChunkedOverlapCost(1, 10, 4, 8, 0.2), 1.4, 1e-12);
  // Parts that queue: 4 parts of 5, chunks ending 2 apart with 1 each: the comm stream starts at -1 and runs 20,
  // the compute ends at 6, so 13 is left.
  EXPECT_NEAR(ChunkedOverlapCost(1, 2, 4, 20, 0), 13, 1e-12);
  // More chunks over the same compute never leave more, and never less than nothing.
  for (double comm : {1.0, 8.0, 40.0}) {
    double prev = OverlapCost(8, comm, 0.189);
    for (int v : {2, 4, 8}) {
      const double cost = ChunkedOverlapCost(8.0 / v, 4 * 8.0 / v, v, comm, 0.189);  // PP 4: gap = 4 chunks
      EXPECT_LE(cost, prev + 1e-12) << comm << " " << v;
      EXPECT_GE(cost, 0);
      prev = cost;
    }
  }
}

TEST_F(Perf, OverlappedDataParallelTrafficCostsTheMeasuredContention) {
  // The same job with and without the contention term: the difference is overlap_slowdown times the
  // overlapped communication (here all of the all-reduce hides under the backward pass).
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  Efficiency e = E(g);
  // data/efficiency.toml: Lee et al. 2025's worst measured slowdown (their mean 0.189), refitted on the training
  // calibration rows in the twenty-fifth session.
  EXPECT_NEAR(e.overlap_slowdown, 0.40, 1e-12);
  const TrainConfig c = Train(16, 1, 1, 64, 4096, 2);
  auto with = EstimateTraining(m, C(g), c, e);
  e.overlap_slowdown = 0;
  auto without = EstimateTraining(m, C(g), c, e);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_NEAR(without->breakdown_s.communication_exposed, 0, 1e-12);
  const double dp_comm = with->communication_total_s;
  EXPECT_GT(dp_comm, 0);
  EXPECT_NEAR(with->step_time_s - without->step_time_s, 0.40 * dp_comm, 1e-9);
}

// Speculative decoding (methodology §9.4): TPOT is one round (K draft passes and a verification pass over K + 1
// tokens) over the acceptance length; the verification at batch 1 reads the weights once, so it costs little more
// than a plain step; at acceptance length 1 speculation only costs; the draft's weights and KV cache take memory;
// what cannot be estimated is refused with the reason.
TEST_F(Perf, SpeculativeDecodingIsARoundOverTheAcceptanceLength) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-70b");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.fit.par.tp = 4;
  c.input_len = 512;
  c.output_len = 256;
  auto plain = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  InferConfig s = c;
  s.spec.tokens = 4;
  s.spec.acceptance_length = 3;
  s.spec.draft_model = M("llama-3.2-1b");
  auto spec = EstimateInference(m, C(g), s, E(g));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_NEAR(spec->spec_round_s, 4 * spec->spec_draft_step_s + spec->spec_verify_s, 1e-12);
  EXPECT_NEAR(spec->tpot_s, spec->spec_round_s / 3, 1e-12);
  EXPECT_GT(spec->spec_verify_s, plain->tpot_s);         // five tokens cost more than one
  EXPECT_LT(spec->spec_verify_s, 1.15 * plain->tpot_s);  // but the weights are read once
  EXPECT_LT(spec->spec_draft_step_s, 0.2 * plain->tpot_s);  // a 1B draft against a 70B target
  EXPECT_LT(spec->tpot_s, plain->tpot_s);
  EXPECT_GT(spec->ttft_s, plain->ttft_s);  // the draft prefills the prompt too
  EXPECT_GT(spec->draft_bytes_per_gpu, 0);
  EXPECT_NEAR(spec->per_gpu_peak_bytes, plain->per_gpu_peak_bytes + spec->draft_bytes_per_gpu, 1);
  EXPECT_LT(spec->max_batch, plain->max_batch);
  EXPECT_NEAR(spec->e2e_latency_s, spec->ttft_s + 255 * spec->tpot_s, 1e-9);
  EXPECT_EQ(spec->decode_error.cases, 0);  // the decode group ran without speculation
  // Nothing accepted: every round emits the target's token alone, so speculation only adds the draft's passes.
  s.spec.acceptance_length = 1;
  auto none = EstimateInference(m, C(g), s, E(g));
  ASSERT_TRUE(none.ok());
  EXPECT_GT(none->tpot_s, plain->tpot_s);
  // A draft head: one layer of the target's shape; with its own smaller vocabulary it is cheaper and smaller.
  InferConfig h = c;
  h.spec.tokens = 4;
  h.spec.acceptance_length = 3;
  auto head = EstimateInference(m, C(g), h, E(g));
  h.spec.draft_vocab = 32000;
  auto small = EstimateInference(m, C(g), h, E(g));
  ASSERT_TRUE(head.ok() && small.ok());
  EXPECT_LT(small->spec_draft_step_s, head->spec_draft_step_s);
  EXPECT_GT(small->draft_bytes_per_gpu, 0);
  EXPECT_NE(head->draft.find("the target's output head"), std::string::npos) << head->draft;
  // A draft tree: wider draft passes and a longer verification cost more per round than the chain.
  InferConfig tree = h;
  tree.spec.topk = 4;
  tree.spec.verify_tokens = 8;
  auto wide = EstimateInference(m, C(g), tree, E(g));
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_GT(wide->spec_verify_s, small->spec_verify_s);
  EXPECT_GT(wide->spec_round_s, small->spec_round_s);
  EXPECT_NEAR(wide->spec_round_s, 4 * wide->spec_draft_step_s + wide->spec_verify_s, 1e-12);
  // Refused: an acceptance length above K + 1, a draft with another vocabulary, pipeline parallelism.
  auto bad = [&](auto edit, const char* want) {
    InferConfig b = s;
    b.spec.acceptance_length = 3;
    edit(b);
    auto r = EstimateInference(m, C(g), b, E(g));
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  bad([](InferConfig& b) { b.spec.acceptance_length = 5.5; }, "must be between 1 and 5");
  // Not given at all: say that it is needed, not that "0" is out of range.
  bad([](InferConfig& b) { b.spec.acceptance_length = 0; }, "--speculative-tokens 4 needs --acceptance-length");
  bad([&](InferConfig& b) { b.spec.draft_model = M("llama-2-7b"); }, "vocabulary");
  bad([](InferConfig& b) { b.fit.par.pp = 2; }, "pipeline parallelism (PP=2)");
  bad([](InferConfig& b) { b.spec.draft_vocab = 32000; }, "a --draft-model brings its own");
  bad([](InferConfig& b) { b.spec.tokens = 0; }, "give --speculative-tokens");
  bad([](InferConfig& b) { b.spec.verify_tokens = 6; }, "--verify-tokens 6 is outside 2..5");
  bad([](InferConfig& b) {
    b.spec.tokens = 0;
    b.spec.acceptance_length = 0;
    b.spec.draft_model.reset();
    b.spec.topk = 4;
  }, "give --speculative-tokens");
}

// Regression: the serving element-wise row was always labelled latency-bound; a 32k-token prefill streams
// gigabytes through it (memory-bound), a batch-1 decode step pays mostly its kernels' fixed cost (latency).
// The serving context is the prompt plus the output: each within 1..16M tokens, and their sum too, an error that
// names the two flags the user gave (it named --seq, which perf infer does not have).
TEST_F(Perf, ServingLengthsOutOfRangeNameTheirFlags) {
  const GpuSpec& g = G("h100-sxm");
  for (auto [in, out] : {std::pair<int64_t, int64_t>{0, 16}, {16, 0}, {int64_t{1} << 25, 16}, {int64_t{1} << 24, 5}}) {
    InferConfig c;
    c.input_len = in;
    c.output_len = out;
    auto r = EstimateInference(M("llama-3.2-1b"), C(g), c, E(g));
    ASSERT_FALSE(r.ok()) << in << " + " << out;
    EXPECT_EQ(r.status().message().rfind("--input-len", 0), 0u) << r.status().message();
  }
  InferConfig edge;
  edge.input_len = (int64_t{1} << 24) - 16;
  edge.output_len = 16;
  EXPECT_TRUE(EstimateInference(M("llama-3.2-1b"), C(g), edge, E(g)).ok());
}

TEST_F(Perf, ServingElementwiseRowIsMemoryBoundInALongPrefillAndLatencyBoundInDecode) {
  const GpuSpec& g = G("h100-sxm");
  InferConfig c;
  c.fit.batch = 16;
  c.input_len = 2048;
  c.output_len = 16;
  auto r = EstimateInference(M("llama-3.1-8b"), C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const OpCost* pre = FindOp(r->prefill_ops, "norms, residuals, activation");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->bound, Bound::kMemory);
  c.fit.batch = 1;
  auto d = EstimateInference(M("llama-3.1-8b"), C(g), c, E(g));
  ASSERT_TRUE(d.ok());
  const OpCost* dec = FindOp(d->decode_ops, "norms, residuals, activation");
  ASSERT_NE(dec, nullptr);
  EXPECT_EQ(dec->bound, Bound::kLatency);
}

// --explain lists context parallelism's ring exchange (it was in the step but missing from the table): CP - 1 steps
// of this rank's K and V block, at the full time whether hidden under attention or not, once forward and twice
// backward per layer and micro-batch.
TEST_F(Perf, ExplainListsTheContextParallelRing) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(16, 1, 1, 16, 32768);
  c.fit.par.cp = 2;
  c.fit.par.dp = 8;
  c.detail = true;
  auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const OpCost* ring = FindOp(r->ops, "CP K/V ring exchange");
  ASSERT_NE(ring, nullptr);
  const double tokens = 32768 / 2, kv_dim = 8 * 128;
  EXPECT_DOUBLE_EQ(ring->bytes, tokens * 2 * kv_dim * 2);  // K and V, 16-bit, one step (CP - 1 = 1)
  EXPECT_EQ(ring->bound, Bound::kCommunication);
  EXPECT_DOUBLE_EQ(ring->count, r->num_micro_batches * 32 * 3.0);
  c.fit.par.cp = 1;
  c.fit.par.dp = 16;
  auto no_cp = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(no_cp.ok());
  EXPECT_EQ(FindOp(no_cp->ops, "CP K/V ring exchange"), nullptr);
}

// perf infer and perf train say so when the context runs past the model's max_position_embeddings (rotary models;
// learned position tables are an error, Memory.ContextPastTheModelMaximum...).
TEST_F(Perf, EstimatesPastTheModelsMaximumContextCarryANote) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  auto noted = [](const std::vector<std::string>& notes) {
    for (const auto& n : notes)
      if (n.find("max_position_embeddings") != std::string::npos) return true;
    return false;
  };
  InferConfig ic;
  ic.input_len = 200000;
  ic.output_len = 10;
  auto in = EstimateInference(m, C(g), ic, E(g));
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_TRUE(noted(in->notes));
  ic.input_len = 2000;
  auto in_short = EstimateInference(m, C(g), ic, E(g));
  ASSERT_TRUE(in_short.ok());
  EXPECT_FALSE(noted(in_short->notes));
  TrainConfig tc = Train(64, 8, 1, 64, 262144);
  tc.fit.par.cp = 8;
  tc.fit.par.dp = 1;
  auto tr = EstimateTraining(m, C(g), tc, E(g));
  ASSERT_TRUE(tr.ok()) << tr.status().message();
  EXPECT_TRUE(noted(tr->notes));
}

// Regression: with --fp32-grads the distributed optimizer reduce-scatters 4-byte gradients but all-gathers the
// updated 16-bit parameters; the all-gather used to be charged at the gradients' 4 bytes too.
TEST_F(Perf, ZeroOneGathersSixteenBitParametersWhateverTheGradientWidth) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const Cluster cl = C(g);
  const Efficiency e = E(g);
  for (bool fp32 : {false, true}) {
    TrainConfig c = Train(16, 1, 1, 64, 4096, 2);  // DP 16 over two nodes; PP 1 and TP 1: only DP traffic
    c.fit.fp32_grads = fp32;
    auto r = EstimateTraining(m, cl, c, e);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double p = r->memory.params_per_gpu;
    // In Megatron-Core's buckets of max(40M, 1M x DP) parameters, one collective each.
    const double buckets = std::ceil(p / 40e6);
    const double expected =
        buckets * (GroupCollectiveTime(cl, e, NcclOp::kReduceScatter, p * (fp32 ? 4 : 2) / buckets, 16, 1) +
                   GroupCollectiveTime(cl, e, NcclOp::kAllGather, p * 2 / buckets, 16, 1));
    EXPECT_NEAR(r->communication_total_s, expected, 1e-12 * expected) << "fp32 grads " << fp32;
  }
}

// FSDP gathers and reduce-scatters per wrapped transformer block: per micro-batch two all-gathers and one
// reduce-scatter of each block's parameters, each a collective of its own (the ring latency paid L times over).
TEST_F(Perf, FsdpMovesEachBlockInItsOwnCollectives) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const Cluster cl = C(g);
  const Efficiency e = E(g);
  TrainConfig c = Train(64, 1, 1, 128, 4096, 1);
  c.fit.par.zero = 3;
  auto r = EstimateTraining(m, cl, c, e);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double p = r->memory.params_per_gpu, units = m.layers;
  const double per_mb = units * (2 * GroupCollectiveTime(cl, e, NcclOp::kAllGather, 2 * p / units, 64, 1) +
                                 GroupCollectiveTime(cl, e, NcclOp::kReduceScatter, 2 * p / units, 64, 1));
  EXPECT_NEAR(r->communication_total_s, r->num_micro_batches * per_mb, 1e-9);
  EXPECT_GT(per_mb, 2 * GroupCollectiveTime(cl, e, NcclOp::kAllGather, 2 * p, 64, 1) +
                        GroupCollectiveTime(cl, e, NcclOp::kReduceScatter, 2 * p, 64, 1));
}

// Megatron-Core's DDP overlaps its data-parallel traffic bucket by bucket, max(40M, 1M x DP) parameters each
// (distributed_data_parallel.py), and each bucket's collective pays the ring latency: at DP 512 a bucket holds 512M
// parameters. Without overlap (--no-dp-overlap) Megatron-Core makes one bucket of everything.
TEST_F(Perf, DataParallelTrafficMovesInMegatronCoresBuckets) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("h100-sxm");
  const Cluster cl = C(g);
  const Efficiency e = E(g);
  for (int dp : {4, 512}) {
    TrainConfig c = Train(8 * dp, 8, 1, 4 * dp, 4096, 1);
    c.fit.par.sequence_parallel = true;
    auto r = EstimateTraining(m, cl, c, e);
    c.dp_overlap = false;
    auto one = EstimateTraining(m, cl, c, e);
    ASSERT_TRUE(r.ok() && one.ok());
    const double p = r->memory.params_per_gpu;
    const double buckets = std::ceil(p / std::max(40e6, 1e6 * dp));
    auto bucketed = [&](NcclOp op, double bytes) {
      return buckets * GroupCollectiveTime(cl, e, op, bytes / buckets, dp, 8);
    };
    const double dp_comm = bucketed(NcclOp::kReduceScatter, 2 * p) + bucketed(NcclOp::kAllGather, 2 * p);
    const double single = GroupCollectiveTime(cl, e, NcclOp::kReduceScatter, 2 * p, dp, 8) +
                          GroupCollectiveTime(cl, e, NcclOp::kAllGather, 2 * p, dp, 8);
    EXPECT_GT(dp_comm, single) << dp;  // each bucket pays the latency again
    EXPECT_NEAR(r->communication_total_s - one->communication_total_s, dp_comm - single, 1e-9) << dp;
  }
}

// Apex's DistributedFusedAdam (NeMo 1.x) and PyTorch DDP bucket a fixed number of gradient bytes
// (bucket_cap_mb x 2^20 bytes of the gradient sync dtype): --dp-bucket-mb. At DP 512 a 100 MB bucket holds 52M
// parameters, ten times fewer than Megatron-Core's 512M, so the step pays ten times the rings' latencies; at DP 4 it
// holds more than Megatron-Core's 40M. A bucket as large as the whole gradient is one collective.
TEST_F(Perf, FixedDataParallelBucketsAreBytesOfGradients) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("h100-sxm");
  const Cluster cl = C(g);
  const Efficiency e = E(g);
  for (int dp : {4, 512})
    for (bool fp32 : {false, true}) {
      TrainConfig c = Train(8 * dp, 8, 1, 4 * dp, 4096, 1);
      c.fit.par.sequence_parallel = true;
      c.fit.fp32_grads = fp32;
      auto mcore = EstimateTraining(m, cl, c, e);
      c.dp_bucket_bytes = 100 * kMiB;
      auto fixed = EstimateTraining(m, cl, c, e);
      c.dp_bucket_bytes = 1e12;  // larger than every gradient here: one bucket
      auto whole = EstimateTraining(m, cl, c, e);
      ASSERT_TRUE(mcore.ok() && fixed.ok() && whole.ok());
      const double p = fixed->memory.params_per_gpu;
      const double width = fp32 ? 4 : 2;
      auto dp_comm = [&](double buckets) {
        return buckets * (GroupCollectiveTime(cl, e, NcclOp::kReduceScatter, width * p / buckets, dp, 8) +
                          GroupCollectiveTime(cl, e, NcclOp::kAllGather, 2 * p / buckets, dp, 8));
      };
      const double n_fixed = std::ceil(p * width / (100 * kMiB));
      const double n_mcore = std::ceil(p / std::max(40e6, 1e6 * dp));
      EXPECT_NEAR(fixed->communication_total_s - mcore->communication_total_s, dp_comm(n_fixed) - dp_comm(n_mcore),
                  1e-9) << dp << " fp32 " << fp32;
      EXPECT_NEAR(whole->communication_total_s - mcore->communication_total_s, dp_comm(1) - dp_comm(n_mcore), 1e-9)
          << dp << " fp32 " << fp32;
      // More buckets than Megatron-Core's where 100 MB holds fewer parameters than its max(40M, 1M x DP) (DP 512; DP 4
      // with 4-byte gradients), fewer where it holds more (DP 4, 2-byte); the step follows.
      if (100 * kMiB / width < std::max(40e6, 1e6 * dp)) {
        EXPECT_GT(n_fixed, n_mcore) << dp << " fp32 " << fp32;
        EXPECT_GT(fixed->step_time_s, mcore->step_time_s) << dp << " fp32 " << fp32;
      } else {
        EXPECT_LT(n_fixed, n_mcore) << dp << " fp32 " << fp32;
        EXPECT_LE(fixed->step_time_s, mcore->step_time_s) << dp << " fp32 " << fp32;
      }
    }
  TrainConfig bad = Train(32, 8, 1, 16, 4096, 1);
  bad.dp_bucket_bytes = -1;
  auto r = EstimateTraining(m, cl, bad, e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("--dp-bucket-mb"), std::string::npos) << r.status().message();
}

// Megatron-Core DDP passes over the whole local gradient buffer every step (core_v0.8.0 param_and_grad_buffer.py):
// zero_() writes each gradient once; with DP > 1 the 1/DP scale reads and writes it again. The optimizer term is the
// Adam step plus these passes at the achievable bandwidth; eager PyTorch and ZeRO-3 have no such buffer.
TEST_F(Perf, MegatronGradientBufferIsZeroedAndScaledEveryStep) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  const double bw = g.memory_bandwidth_bytes_per_s.value * e.memory;
  const char* kName = "gradient buffer: zero + 1/DP scale (Megatron-Core DDP)";
  for (int gpus : {1, 16})
    for (bool fp32 : {false, true}) {
      TrainConfig c = Train(gpus, 1, 1, 32, 4096, 2);
      c.fit.fp32_grads = fp32;
      c.detail = true;
      auto r = EstimateTraining(m, C(g), c, e);
      ASSERT_TRUE(r.ok()) << r.status().message();
      const OpCost* buffer = FindOp(r->ops, kName);
      const OpCost* adam = FindOp(r->ops, "optimizer step (Adam)");
      ASSERT_NE(buffer, nullptr) << gpus;
      ASSERT_NE(adam, nullptr);
      const double widths = gpus > 1 ? 3 : 1;  // zero; and the scale's read and write when DP > 1
      EXPECT_DOUBLE_EQ(buffer->bytes, r->memory.params_per_gpu * (fp32 ? 4 : 2) * widths) << gpus << " " << fp32;
      EXPECT_NEAR(buffer->time_s, buffer->bytes / bw + e.kernel_launch_s, 1e-12) << gpus << " " << fp32;
      EXPECT_NEAR(r->breakdown_s.optimizer, adam->time_s + buffer->time_s, 1e-12);
    }
  TrainConfig c = Train(16, 1, 1, 32, 4096, 2);
  c.detail = true;
  c.fit.par.zero = 3;
  auto fsdp = EstimateTraining(m, C(g), c, e);
  ASSERT_TRUE(fsdp.ok()) << fsdp.status().message();
  EXPECT_EQ(FindOp(fsdp->ops, kName), nullptr);
  c.fit.par.zero = 1;
  c.eager = true;
  auto eager = EstimateTraining(m, C(g), c, e);
  ASSERT_TRUE(eager.ok()) << eager.status().message();
  EXPECT_EQ(FindOp(eager->ops, kName), nullptr);
}

// The Adam step reads and writes every optimizer-state byte, reads the gradient and writes the 16-bit weight (28 B per
// local parameter by default); with 16-bit remainders it also reads the weight to rebuild the FP32 value (2 x 10 + 2
// + 2 x 2 = 26 B), and with Apex's bf16 states it moves 2 x 6 + 2 + 2 = 16 B.
TEST_F(Perf, OptimizerStepMovesTheStateBytesItKeeps) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  const double bw = g.memory_bandwidth_bytes_per_s.value * e.memory;
  struct Case {
    MasterCopy master;
    MomentsDtype moments;
    double bytes_per_param;
  };
  for (const Case& k : {Case{MasterCopy::kFp32, MomentsDtype::kFp32, 28}, Case{MasterCopy::kRemainder, MomentsDtype::kFp32, 26},
                        Case{MasterCopy::kBf16, MomentsDtype::kBf16, 16}, Case{MasterCopy::kFp32, MomentsDtype::kBf16, 20}}) {
    TrainConfig c = Train(16, 1, 1, 32, 4096, 2);
    c.fit.master = k.master;
    c.fit.moments = k.moments;
    c.detail = true;
    auto r = EstimateTraining(m, C(g), c, e);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const OpCost* adam = FindOp(r->ops, "optimizer step (Adam)");
    ASSERT_NE(adam, nullptr);
    const double local = r->memory.params_per_gpu / 16;  // ZeRO-1 over DP 16
    EXPECT_NEAR(adam->bytes, local * k.bytes_per_param, 1e-9 * adam->bytes) << k.bytes_per_param;
    EXPECT_NEAR(adam->time_s, adam->bytes / bw + 10 * e.kernel_launch_s, 1e-12);
  }
  // 8-bit Adam (FP32 master + two 1-byte moments: 2 x 6 + 2 + 2) and SGD with momentum (2 x 8 + 2 + 2), named as such.
  for (const auto& [opt, bytes, name] : {std::tuple{Optimizer::kAdam8bit, 16.0, "optimizer step (adam8bit)"},
                                         std::tuple{Optimizer::kSgd, 20.0, "optimizer step (sgd)"}}) {
    TrainConfig c = Train(16, 1, 1, 32, 4096, 2);
    c.fit.optimizer = opt;
    c.detail = true;
    auto r = EstimateTraining(m, C(g), c, e);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const OpCost* step = FindOp(r->ops, name);
    ASSERT_NE(step, nullptr) << name;
    EXPECT_NEAR(step->bytes, r->memory.params_per_gpu / 16 * bytes, 1e-9 * step->bytes) << name;
  }
}

// Megatron-Core's interleaved schedule runs the micro-batches in groups of PP (core_v0.8.0 raised an error otherwise):
// a layout whose micro-batches per pipeline are not a multiple of PP is refused with the micro-batch sizes that work,
// and the automatic micro-batch choice only considers those.
TEST_F(Perf, InterleavedScheduleNeedsMicroBatchesInGroupsOfPipelineStages) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 4, 16, 4096, 4);  // DP 2, 8 sequences per replica, micro-batch 4: 2 per pipeline
  c.fit.par.interleave = 2;
  auto bad = EstimateTraining(m, C(g), c, E(g));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("groups of PP = 4"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("valid micro-batch sizes: 1, 2 (or --interleave 1)"), std::string::npos)
      << bad.status().message();
  c.fit.par.interleave = 1;  // plain 1F1B takes any count
  EXPECT_TRUE(EstimateTraining(m, C(g), c, E(g)).ok());
  c.fit.par.interleave = 2;
  c.fit.micro_batch = 2;  // 4 per pipeline
  EXPECT_TRUE(EstimateTraining(m, C(g), c, E(g)).ok());
  c.fit.batch = 12;  // 6 per replica: no micro-batch size gives a multiple of 4
  c.fit.micro_batch = 1;
  auto none = EstimateTraining(m, C(g), c, E(g));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("a multiple of DP x PP = 8, or --interleave 1"), std::string::npos)
      << none.status().message();
  c.fit.batch = 16;
  c.micro_batch_auto = true;
  auto chosen = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->num_micro_batches % 4, 0) << "micro-batch " << chosen->micro_batch;
}

// LoRA (Mode::kLora): the frozen matmuls and the head run forward and data gradient only (2 passes, not 3); the
// adapters (rank r, 16-bit) add x A and (x A) B and the add of their output to the layer's; data-parallel traffic
// and the optimizer carry the adapters alone; the model FLOPs are 4N + attention + 6 per adapter parameter.
TEST_F(Perf, LoraRunsTheFrozenMatmulsForwardAndDataGradientOnly) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig full = Train(8, 1, 1, 32, 4096, 1);
  full.fit.recompute = Recompute::kNone;
  TrainConfig lora = full;
  lora.fit.mode = Mode::kLora;
  lora.fit.lora_rank = 32;
  lora.fit.lora_targets = {"q", "k", "v", "o"};
  auto f = EstimateTraining(m, C(g), full, E(g));
  auto l = EstimateTraining(m, C(g), lora, E(g));
  ASSERT_TRUE(f.ok() && l.ok()) << (f.ok() ? l.status().message() : f.status().message());
  const double layers_x_mb = 32.0 * 4;  // 32 layers, 32 / DP 8 = 4 micro-batches
  for (const char* op : {"qkv projection", "output projection", "mlp up/gate", "mlp down"}) {
    EXPECT_DOUBLE_EQ(FindOp(f->ops, op)->count, layers_x_mb * 3) << op;
    EXPECT_DOUBLE_EQ(FindOp(l->ops, op)->count, layers_x_mb * 2) << op;
  }
  EXPECT_DOUBLE_EQ(FindOp(l->ops, "logits (output head)")->count, 4 * 2.0);
  // Adapters: rank 32 on q, k, v, o of a 4096-wide MHA model, 4096 tokens per micro-batch.
  const OpCost* adapters = FindOp(l->ops, "LoRA adapters (rank 32, 4 per layer)");
  ASSERT_NE(adapters, nullptr);
  const double T = 4096, h = 4096, r = 32;
  EXPECT_DOUBLE_EQ(adapters->flops, 4 * (2 * T * r * h + 2 * T * h * r));
  // Each adapter: its two GEMMs, run again twice in the backward; one element-wise pass each way (forward: the scale
  // by alpha / r and the sum with the frozen output, 10 B per output element; backward: the scale's gradient and the
  // input gradient summed with the frozen layer's, 10 B per input element, here of the same width).
  const Efficiency e = E(g);
  const double peak16 = perf_detail::PeakFor(g, Precision::kBf16);
  const double gemms = EstimateGemm(T, r, h, 1, 2, peak16, e.gemm, g, e).time_s +
                       EstimateGemm(T, h, r, 1, 2, peak16, e.gemm, g, e).time_s;
  const double pass = 10 * T * h / (g.memory_bandwidth_bytes_per_s.value * e.memory) + 2 * e.kernel_launch_s;
  EXPECT_NEAR(adapters->time_s, 4 * (gemms + pass), 1e-12);
  EXPECT_NEAR(adapters->count, layers_x_mb * (1 + (2 * gemms + pass) / (gemms + pass)), 1e-9);
  EXPECT_EQ(FindOp(f->ops, "LoRA adapters (rank 32, 4 per layer)"), nullptr);
  // Trainable: r x (in + out) per matrix per layer; DP traffic is that, not the 6.7B frozen parameters.
  EXPECT_DOUBLE_EQ(l->memory.trainable_params, 32 * r * (h + h) * 4);
  EXPECT_LT(l->communication_total_s, 0.01 * f->communication_total_s);
  EXPECT_LT(l->step_time_s, f->step_time_s);
  EXPECT_NEAR(l->model_flops_per_step, LoraFlopsPerToken(m, 4096, l->memory.trainable_params) * 32 * 4096, 1);
  const ParamCounts pc = CountParams(m);
  EXPECT_NEAR(LoraFlopsPerToken(m, 4096, 0) - ModelFlopsPerToken(m, 4096, FlopConvention::k6N),
              -2 * (pc.active - pc.embedding), 1);
  // What LoRA does not combine with, and QLoRA, say so.
  auto err = [&](TrainConfig c, const char* part) {
    auto r = EstimateTraining(m, C(g), c, E(g));
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
  };
  TrainConfig z3 = lora;
  z3.fit.par.zero = 3;
  err(z3, "--zero 3");
  TrainConfig meg = lora;
  meg.convention = FlopConvention::kMegatron;
  err(meg, "--flops megatron");
  TrainConfig q = lora;
  q.fit.mode = Mode::kQlora;
  err(q, "QLoRA");
  // The note quotes the published LoRA runs; FP8 compute over 16-bit frozen weights without the FP8 copy kept between
  // micro-batches (MLPerf v6.0's GB300 runs) adds what those runs showed, and only that setting does.
  const auto v60_clause = [](const TrainResult& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.find("published LoRA runs") != std::string::npos &&
             n.find("MLPerf v6.0's five GB300 runs") != std::string::npos;
    });
  };
  EXPECT_FALSE(v60_clause(*l));
  TrainConfig fp8_lora = lora;
  fp8_lora.dtype = Precision::kFp8;
  auto cached = EstimateTraining(m, C(g), fp8_lora, E(g));
  fp8_lora.fp8_weight_cache = false;
  auto uncached = EstimateTraining(m, C(g), fp8_lora, E(g));
  ASSERT_TRUE(cached.ok() && uncached.ok());
  EXPECT_FALSE(v60_clause(*cached));
  EXPECT_TRUE(v60_clause(*uncached));
  TrainConfig bad_target = lora;
  bad_target.fit.lora_targets = {"qq"};
  err(bad_target, "did you mean");
  bad_target.fit.lora_targets = {"q", "v", "q"};
  err(bad_target, "'q' is given twice");
  bad_target.fit.lora_targets = {"all", "gate"};
  err(bad_target, "'all' stands alone");
  TrainConfig moe = lora;
  auto moe_r = EstimateTraining(M("mixtral-8x7b"), C(g), moe, E(g));
  ASSERT_FALSE(moe_r.ok());
  EXPECT_NE(moe_r.status().message().find("mixture-of-experts"), std::string::npos);
  // FP8 base weights (Transformer Engine's fp8_model_init, NeMo's fp8_params): the frozen linear layers take 1 byte
  // per parameter, the embedding and the output head stay 16-bit; the step time changes by the weights' cast alone
  // (the FP8 GEMMs read FP8 either way; FP8 weights are only transposed once per step on Hopper). They need FP8
  // GEMMs; quantised formats are refused, and in full training only FP8 parameters are taken
  // (Perf.Fp8ParametersHalveTheLayerWeightsAndTheirAllGather).
  TrainConfig fp8 = lora;
  fp8.dtype = Precision::kFp8;
  fp8.detail = true;
  auto w16 = EstimateTraining(m, C(g), fp8, E(g));
  fp8.fit.weights = *ParseWeightFormat("fp8");
  auto w8 = EstimateTraining(m, C(g), fp8, E(g));
  ASSERT_TRUE(w16.ok() && w8.ok());
  // The transformer layers' parameters, 1 byte less each (their norms, a few hundred thousand, with them).
  EXPECT_NEAR(w16->memory.breakdown.weights - w8->memory.breakdown.weights, pc.attention + pc.mlp_dense,
              1e-4 * pc.active);
  const char* cast = "FP8 weight casts, first micro-batch (cached for the step)";
  ASSERT_TRUE(FindOp(w16->ops, cast) && FindOp(w8->ops, cast));
  EXPECT_NEAR(w16->step_time_s - w8->step_time_s, FindOp(w16->ops, cast)->time_s - FindOp(w8->ops, cast)->time_s,
              1e-9);
  EXPECT_GT(w16->step_time_s, w8->step_time_s);
  TrainConfig w8_bf16 = lora;
  w8_bf16.fit.weights = *ParseWeightFormat("fp8");
  err(w8_bf16, "needs --dtype fp8");
  TrainConfig int4 = fp8;
  int4.fit.weights = *ParseWeightFormat("int4");
  err(int4, "not modelled");
  TrainConfig full_int8 = full;
  full_int8.dtype = Precision::kFp8;
  full_int8.fit.weights = *ParseWeightFormat("int8");
  err(full_int8, "quantised base weights are for --mode lora");
}

// Packed sequences: attention works over documents of the given length (causal within each), the rest of the step
// over the whole sequence; a document as long as the sequence is the unpacked case.
TEST_F(Perf, PackedSequencesAttendWithinEachDocument) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 32, 4096, 1);
  c.fit.recompute = Recompute::kNone;
  auto whole = EstimateTraining(m, C(g), c, E(g));
  c.packed_doc_tokens = 4096;
  auto same = EstimateTraining(m, C(g), c, E(g));
  c.packed_doc_tokens = 512;
  auto packed = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(whole.ok() && same.ok() && packed.ok());
  EXPECT_DOUBLE_EQ(same->step_time_s, whole->step_time_s);
  const double q_dim = 4096, T = 4096;
  EXPECT_DOUBLE_EQ(FindOp(packed->ops, "attention (flash)")->flops, 4.0 * T * (512 / 2.0) * q_dim);
  EXPECT_LT(packed->step_time_s, whole->step_time_s);
  EXPECT_DOUBLE_EQ(FindOp(packed->ops, "mlp down")->time_s, FindOp(whole->ops, "mlp down")->time_s);
  for (int64_t bad : {int64_t{-1}, int64_t{8192}}) {
    c.packed_doc_tokens = bad;
    auto r = EstimateTraining(m, C(g), c, E(g));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("outside 1..4096"), std::string::npos) << r.status().message();
  }
  c.packed_doc_tokens = 512;
  c.attention = AttentionImpl::kUnfused;
  auto unfused = EstimateTraining(m, C(g), c, E(g));
  ASSERT_FALSE(unfused.ok());
  EXPECT_NE(unfused.status().message().find("variable-length"), std::string::npos);
}

TEST_F(Perf, AttentionKernelNamesAndFlashAttentionOneIsHalfAsFast) {
  EXPECT_EQ(*ParseAttentionImpl("flash"), AttentionImpl::kFlash);
  EXPECT_EQ(*ParseAttentionImpl("triton"), AttentionImpl::kFlash1);
  EXPECT_EQ(*ParseAttentionImpl("fa1"), AttentionImpl::kFlash1);
  EXPECT_EQ(*ParseAttentionImpl("unfused"), AttentionImpl::kUnfused);
  auto bad = ParseAttentionImpl("flash3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("flash1"), std::string::npos);
  // Long sequences make attention compute-bound: its kernel time (less the launch floor) doubles.
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("a100-sxm-80gb");
  TrainConfig c = Train(8, 1, 1, 8, 16384);
  c.fit.recompute = Recompute::kFull;
  auto kernel_time = [&](AttentionImpl a, const char* name) {
    c.attention = a;
    auto r = EstimateTraining(m, C(g), c, E(g));
    EXPECT_TRUE(r.ok());
    for (const auto& o : r->ops)
      if (o.name == name) return std::make_pair(o.time_s - E(g).kernel_launch_s, r->step_time_s);
    ADD_FAILURE() << name;
    return std::make_pair(0.0, 0.0);
  };
  const auto fa2 = kernel_time(AttentionImpl::kFlash, "attention (flash)");
  const auto fa1 = kernel_time(AttentionImpl::kFlash1, "attention (flash1)");
  EXPECT_NEAR(fa1.first, fa2.first / kFlash1RelativeSpeed, 1e-9);
  EXPECT_GT(fa1.second, fa2.second);
}

TEST_F(Perf, KnownWeakSpotsCarryANoteWithTheValidationFigures) {
  auto note_with = [](const std::vector<std::string>& notes, const char* part) {
    for (const auto& n : notes)
      if (n.find(part) != std::string::npos) return true;
    return false;
  };
  // Training: eager FSDP quotes the held-out H100 runs its host cost was checked on; FSDP without --eager says
  // what it assumes; DDP-style ZeRO-1 says neither.
  const ModelSpec m8 = M("llama-3.1-8b");
  const GpuSpec& h100 = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 16, 4096);
  c.fit.par.zero = 3;
  c.fit.recompute = Recompute::kNone;
  c.eager = true;
  auto fsdp = EstimateTraining(m8, C(h100), c, E(h100));
  ASSERT_TRUE(fsdp.ok());
  EXPECT_TRUE(note_with(fsdp->notes, "uncertain: eager FSDP's host cost (6.5 ms per layer per micro-batch)"));
  EXPECT_TRUE(note_with(fsdp->notes, "on its 50 held-out H100 runs"));
  c.eager = false;
  auto fused = EstimateTraining(m8, C(h100), c, E(h100));
  ASSERT_TRUE(fused.ok());
  EXPECT_TRUE(note_with(fused->notes, "pass --eager"));
  // A fused 16-bit stack on H100 carries the held-out H100 runs' figures; eager, FP8 and other GPUs do not.
  const char* h100_note = "uncertain: on 43 published 16-bit runs of fused stacks on H100 (NVIDIA's NeMo recipes for "
                          "LLaMA 3.1, GPT-3 and Nemotron-4, Megatron-Core r0.8.0 GPT 1.7B-462B, the Llama 3 paper's "
                          "405B, NeMo AutoModel's compiled FSDP2 LLaMA 3.1 70B) this model was -16% to +21% off (mean "
                          "+5%; "
                          "positive: too fast)";
  EXPECT_TRUE(note_with(fused->notes, h100_note));
  EXPECT_FALSE(note_with(fsdp->notes, "fused stacks on H100"));
  c.fit.par.zero = 1;
  auto ddp = EstimateTraining(m8, C(h100), c, E(h100));
  ASSERT_TRUE(ddp.ok());
  EXPECT_FALSE(note_with(ddp->notes, "--eager"));
  EXPECT_FALSE(note_with(ddp->notes, "MoE training"));
  EXPECT_TRUE(note_with(ddp->notes, h100_note));
  const GpuSpec& a100_80 = G("a100-sxm-80gb");
  auto on_a100 = EstimateTraining(m8, C(a100_80), c, E(a100_80));
  ASSERT_TRUE(on_a100.ok());
  EXPECT_FALSE(note_with(on_a100->notes, "fused stacks on H100"));
  TrainConfig fp8 = c;
  fp8.dtype = Precision::kFp8;
  auto in_fp8 = EstimateTraining(m8, C(h100), fp8, E(h100));
  ASSERT_TRUE(in_fp8.ok());
  EXPECT_FALSE(note_with(in_fp8->notes, "fused stacks on H100"));
  // Dense training on B200 or GB200 carries the held-out Blackwell runs' figures; H100 and MoE models do not.
  const char* blackwell_note = "uncertain: on 44 published dense-model training runs on B200 and GB200";
  const GpuSpec& b200 = G("b200");
  auto on_b200 = EstimateTraining(m8, C(b200), c, E(b200));
  ASSERT_TRUE(on_b200.ok()) << on_b200.status().message();
  EXPECT_TRUE(note_with(on_b200->notes, blackwell_note));
  EXPECT_TRUE(note_with(on_b200->notes, "-15% to +38% off (mean +7%"));
  EXPECT_FALSE(note_with(on_b200->notes, "fused stacks on H100"));
  EXPECT_FALSE(note_with(ddp->notes, blackwell_note));
  // GB300 (Blackwell Ultra): its own held-out runs, not the B200/GB200 note (on which the model is too fast).
  const char* ultra_note = "published dense-model training runs on GB300";
  const GpuSpec& gb300 = G("gb300");
  auto on_gb300 = EstimateTraining(m8, C(gb300), c, E(gb300));
  ASSERT_TRUE(on_gb300.ok()) << on_gb300.status().message();
  EXPECT_TRUE(note_with(on_gb300->notes, ultra_note));
  EXPECT_TRUE(note_with(on_gb300->notes, "-40% to +31% off (mean -2%"));
  EXPECT_FALSE(note_with(on_gb300->notes, blackwell_note));
  EXPECT_FALSE(note_with(on_b200->notes, ultra_note));
  // B300: its own runs (all too fast), neither the GB300 note nor the B200/GB200 one.
  const GpuSpec& b300 = G("b300");
  auto on_b300 = EstimateTraining(m8, C(b300), c, E(b300));
  ASSERT_TRUE(on_b300.ok()) << on_b300.status().message();
  EXPECT_TRUE(note_with(on_b300->notes, "uncertain: on 7 published dense-model training runs on B300"));
  EXPECT_TRUE(note_with(on_b300->notes, "+7% to +12% off (mean +10%"));
  EXPECT_TRUE(note_with(on_b300->notes, "expect the step to take longer"));
  EXPECT_FALSE(note_with(on_b300->notes, ultra_note));
  EXPECT_FALSE(note_with(on_b300->notes, blackwell_note));
  EXPECT_FALSE(note_with(on_gb300->notes, "runs on B300"));
  // A step the model puts under 0.7 s carries the short-step runs' figures (they were on average 8% slower than
  // predicted); these steps of several seconds do not.
  const char* short_note = "published dense-model runs whose step this model puts under 0.7 s";
  EXPECT_FALSE(note_with(ddp->notes, short_note));
  ASSERT_GE(ddp->step_time_s, evidence::kShortStepSeconds);
  TrainConfig tiny = Train(64, 1, 1, 64, 2048);
  auto short_step = EstimateTraining(M("llama-3.2-1b"), C(h100), tiny, E(h100));
  ASSERT_TRUE(short_step.ok()) << short_step.status().message();
  ASSERT_LT(short_step->step_time_s, evidence::kShortStepSeconds);
  EXPECT_TRUE(note_with(short_step->notes, short_note));
  EXPECT_TRUE(note_with(short_step->notes, "-40% to +38% off (mean +2%"));
  // AMD Instinct: two MI300X runs say how far off the model is there even with that GPU's measured rates; the note
  // names them on every Instinct GPU (MI325X takes MI300X's fractions), and on no NVIDIA GPU.
  const char* amd_note = "published dense-model training runs on MI300X";
  for (const char* id : {"mi300x", "mi325x"}) {
    const GpuSpec& amd = G(id);
    auto on_amd = EstimateTraining(m8, C(amd), c, E(amd));
    ASSERT_TRUE(on_amd.ok()) << id << ": " << on_amd.status().message();
    EXPECT_TRUE(note_with(on_amd->notes, amd_note)) << id;
    EXPECT_TRUE(note_with(on_amd->notes, "+55% to +73% off (mean +64%")) << id;
    EXPECT_TRUE(note_with(on_amd->notes, "+70% and +112% with default rates); the rest is the ROCm stack; expect the step "
                                         "to take longer"))
        << id;
  }
  EXPECT_FALSE(note_with(on_b200->notes, amd_note));
  EXPECT_FALSE(note_with(ddp->notes, amd_note));
  // Where attention is a tenth of the step or more, a fused stack on Hopper or Blackwell carries the cuDNN kernel
  // runs' figures (`validate --group attention`): at 2,048 tokens LLaMA 3.1 8B's attention is 6% of the step, at 4,096
  // 13% and at 32,768 more; eager stacks (FlashAttention 2 itself) and A100 (no cuDNN evidence) do not.
  const char* attention_note =
      "80 held-out kernel runs on H200, GB200 and GB300 (LLaMA 3.1's, DeepSeek-V3's and Kimi's MLA and Qwen3.5's shapes, "
      "causal, 2K-32K tokens), where the model was -52% to +31% off (mean -21%";
  EXPECT_TRUE(note_with(ddp->notes, attention_note));
  auto at_2k = EstimateTraining(m8, C(h100), Train(8, 1, 1, 16, 2048), E(h100));
  ASSERT_TRUE(at_2k.ok());
  EXPECT_FALSE(note_with(at_2k->notes, attention_note));
  TrainConfig long_ctx = Train(8, 1, 1, 8, 32768);
  long_ctx.fit.recompute = Recompute::kFull;
  auto at_32k = EstimateTraining(m8, C(h100), long_ctx, E(h100));
  ASSERT_TRUE(at_32k.ok()) << at_32k.status().message();
  EXPECT_TRUE(note_with(at_32k->notes, attention_note));
  EXPECT_TRUE(note_with(at_32k->notes, "priced at 0.331 of the 16-bit peak (FlashAttention 2's measured rate)"));
  auto at_32k_b200 = EstimateTraining(m8, C(b200), long_ctx, E(b200));
  ASSERT_TRUE(at_32k_b200.ok());
  EXPECT_TRUE(note_with(at_32k_b200->notes, "(an assumption on Blackwell)"));
  auto at_32k_a100 = EstimateTraining(m8, C(a100_80), long_ctx, E(a100_80));
  ASSERT_TRUE(at_32k_a100.ok());
  EXPECT_FALSE(note_with(at_32k_a100->notes, attention_note));
  TrainConfig long_eager = long_ctx;
  long_eager.eager = true;
  auto at_32k_eager = EstimateTraining(m8, C(h100), long_eager, E(h100));
  ASSERT_TRUE(at_32k_eager.ok());
  EXPECT_FALSE(note_with(at_32k_eager->notes, attention_note));
  // MoE training: no band (the training band is over dense models), a note with the MoE runs' figures instead.
  TrainConfig moe = Train(8, 1, 1, 64, 4096);
  moe.fit.par.ep = 8;
  auto qwen = EstimateTraining(M("qwen3-30b-a3b"), C(h100), moe, E(h100));
  ASSERT_TRUE(qwen.ok()) << qwen.status().message();
  EXPECT_EQ(qwen->error.cases, 0);
  EXPECT_EQ(ddp->error.cases, evidence::kTrainingError.cases);
  EXPECT_TRUE(note_with(qwen->notes, fmt::format("uncertain: MoE training is checked against {} held-out Megatron-Core runs",
                                               evidence::kMoeTrainingHoldout.cases).c_str()));
  EXPECT_TRUE(note_with(qwen->notes, "8 runs of the older Megatron-Bridge 25.11 stack"));
  EXPECT_TRUE(note_with(qwen->notes, "and 2 runs of NeMo AutoModel's PyTorch FSDP2 stack (-55% to -38%"));
  EXPECT_TRUE(note_with(qwen->notes, "calibrated: each MoE layer takes 1.80x the time its operators add up to, its "
                                     "shared experts' GEMMs excepted (CUDA graphs none; 1.80x without a full-iteration "
                                     "graph, 1.30x with one), a multiple "
                                     "fitted on 9 Megatron-LM recipe runs (-24% to +12% off after the fit; a run "
                                     "left out of the fit is 17% off on average, 28% at worst)"));
  moe.cuda_graphs = CudaGraphs::kFull;
  auto graphed = EstimateTraining(M("qwen3-30b-a3b"), C(h100), moe, E(h100));
  ASSERT_TRUE(graphed.ok());
  EXPECT_TRUE(note_with(graphed->notes, "each MoE layer takes 1.30x the time its operators add up to, its shared "
                                         "experts' GEMMs excepted (CUDA graphs full"));
  auto moe_b200 = EstimateTraining(M("qwen3-30b-a3b"), C(G("b200")), moe, E(G("b200")));
  ASSERT_TRUE(moe_b200.ok()) << moe_b200.status().message();
  EXPECT_FALSE(note_with(moe_b200->notes, "dense-model training runs on B200"));
  EXPECT_FALSE(note_with(graphed->notes, "no eager-PyTorch MoE run"));
  moe.eager = true;
  moe.fit.par.zero = 3;
  auto eager_moe = EstimateTraining(M("qwen3-30b-a3b"), C(h100), moe, E(h100));
  ASSERT_TRUE(eager_moe.ok()) << eager_moe.status().message();
  EXPECT_TRUE(note_with(eager_moe->notes, "no eager-PyTorch MoE run (torchtitan, HF) checks it"));
  // Inference: MoE anywhere; FP8 on Hopper at short prompts; a GQA model at large batch and long context gets
  // the per-head alternative.
  InferConfig ic;
  ic.fit.weights = *ParseWeightFormat("fp8");
  ic.compute = Precision::kFp8;
  ic.fit.batch = 64;
  ic.input_len = 128;
  ic.output_len = 4096;
  auto mistral = EstimateInference(M("mistral-7b"), C(h100), ic, E(h100));
  ASSERT_TRUE(mistral.ok());
  EXPECT_TRUE(note_with(mistral->notes, "--decode-attention per-head"));
  EXPECT_TRUE(note_with(mistral->notes, "no fixed cost per request"));  // one GPU: the absolute shortfall
  EXPECT_FALSE(note_with(mistral->notes, "FP8 activation scaling"));
  EXPECT_FALSE(note_with(mistral->notes, "MoE"));
  ic.fit.par.tp = 4;  // with tensor parallelism the evidence is the relative Hopper FP8 figure
  auto llama70 = EstimateInference(M("llama-2-70b"), C(h100), ic, E(h100));
  ASSERT_TRUE(llama70.ok());
  EXPECT_TRUE(note_with(llama70->notes, "FP8 activation scaling"));
  EXPECT_FALSE(note_with(llama70->notes, "no fixed cost per request"));
  const GpuSpec& a100 = G("a100-sxm-80gb");
  InferConfig fp16;
  fp16.fit.weights = *ParseWeightFormat("fp16");
  fp16.fit.batch = 64;
  auto llama_a100 = EstimateInference(M("llama-2-7b"), C(a100), fp16, E(a100));
  ASSERT_TRUE(llama_a100.ok());
  EXPECT_FALSE(note_with(llama_a100->notes, "uncertain:"));
  fp16.fit.par.tp = 2;
  auto mixtral = EstimateInference(M("mixtral-8x7b"), C(a100), fp16, E(a100));
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().message();
  EXPECT_TRUE(note_with(mixtral->notes, "MoE serving speed depends on the stack"));
  // Every estimate carries the validation band of its group; MoE serving has the note instead, and the
  // decode group (gpt-fast) covers batch 1 only.
  EXPECT_EQ(mixtral->ttft_error.cases, 0);
  EXPECT_EQ(mixtral->throughput_error.cases, 0);
  EXPECT_EQ(mixtral->decode_error.cases, 0);  // batch 64
  EXPECT_STREQ(llama_a100->ttft_error.group, "ttft");
  EXPECT_EQ(llama_a100->throughput_error.cases, evidence::kThroughputDenseError.cases);
  fp16.fit.par.tp = 1;
  fp16.fit.batch = 1;
  auto one = EstimateInference(M("llama-2-7b"), C(a100), fp16, E(a100));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->decode_error.cases, evidence::kDecodeError.cases);
  EXPECT_EQ(one->throughput_error.cases, 0);  // the throughput group's runs are static batches of 16 and more
  EXPECT_STREQ(fused->error.group, "training");
  // Serving attention against TensorRT-LLM 1.3's kernels timed alone: a long prompt on Hopper quotes its context
  // kernel (faster than the FA2 rate charged there), not on A100; a long cache over one KV head per GPU at batch 1
  // quotes the decode kernel's shortfall with few sequence x KV-head pairs, not at batch 16 with 8 heads per GPU.
  InferConfig long_prompt;
  long_prompt.input_len = 8192;
  long_prompt.output_len = 128;
  auto h100_prompt = EstimateInference(M("llama-3.1-8b"), C(h100), long_prompt, E(h100));
  ASSERT_TRUE(h100_prompt.ok());
  EXPECT_TRUE(note_with(h100_prompt->notes, "Hopper context kernel and vLLM 0.24's and SGLang 0.5.14's"));
  auto a100_prompt = EstimateInference(M("llama-3.1-8b"), C(a100), long_prompt, E(a100));
  ASSERT_TRUE(a100_prompt.ok());
  EXPECT_FALSE(note_with(a100_prompt->notes, "Hopper context kernel"));
  InferConfig long_cache;
  long_cache.fit.par.tp = 8;
  long_cache.input_len = 100000;
  long_cache.output_len = 128;
  auto tp8 = EstimateInference(M("llama-3.1-70b"), C(h100), long_cache, E(h100));
  ASSERT_TRUE(tp8.ok());
  EXPECT_TRUE(note_with(tp8->notes, "over 1 sequence x KV-head pair per GPU"));
  long_cache.fit.par.tp = 1;
  long_cache.fit.batch = 16;
  long_cache.input_len = 16384;
  auto tp1 = EstimateInference(M("llama-3.1-8b"), C(h100), long_cache, E(h100));
  ASSERT_TRUE(tp1.ok());
  EXPECT_FALSE(note_with(tp1->notes, "sequence x KV-head pair"));
  // An MLA model quotes the measured absorbed MLA decode kernels where decode attention is a tenth of the step.
  InferConfig mla;
  mla.fit.weights = *ParseWeightFormat("fp8");
  mla.compute = Precision::kFp8;
  mla.fit.par.tp = 8;
  mla.fit.batch = 64;
  mla.input_len = 8192;
  mla.output_len = 1024;
  auto ds = EstimateInference(M("deepseek-v3"), C(G("b200")), mla, E(G("b200")));
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  EXPECT_TRUE(note_with(ds->notes, "MLA decode attention is"));
  EXPECT_FALSE(note_with(tp1->notes, "MLA decode attention is"));
}

// Per-query-head decode kernels (TensorRT-LLM masked MHA, vLLM PagedAttention v1/v2): the KV read is shared
// through L2, but every query head issues instructions for every cached element, at 4 warp schedulers x 32
// lanes per SM per clock.
TEST_F(Perf, PerHeadDecodeAttentionIsBoundByInstructionIssue) {
  EXPECT_EQ(*ParseDecodeAttention("grouped"), DecodeAttention::kGrouped);
  EXPECT_EQ(*ParseDecodeAttention("xqa"), DecodeAttention::kGrouped);
  EXPECT_EQ(*ParseDecodeAttention("mmha"), DecodeAttention::kPerHead);
  EXPECT_STREQ(DecodeAttentionName(*ParseDecodeAttention("per-head")), "per-head");
  auto bad = ParseDecodeAttention("paged");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("per-head"), std::string::npos);
  // The SM clock derived from the FP32 peak equals the maximum SM clock nvidia-smi reports
  // (shared/reference/gpus.md captures: A100-SXM4-40GB 1410, H100 1980, L40S 2520, T4 1590 MHz).
  for (auto [id, mhz] : {std::pair{"a100-sxm-40gb", 1410.0}, {"h100-sxm", 1980.0}, {"l40s", 2520.0}, {"t4", 1590.0}}) {
    const GpuSpec& g = G(id);
    auto rate = InstructionIssueRate(g);
    ASSERT_TRUE(rate.ok()) << id;
    EXPECT_NEAR(*rate / (128.0 * g.sm_count->value) / 1e6, mhz, 0.01 * mhz) << id;
  }
  EXPECT_FALSE(InstructionIssueRate(G("mi300x")).ok());

  // Mistral 7B (32 query heads, 8 KV heads) on one H100, FP8, batch 56 at 2048 + 2048 tokens: the decode
  // step attends to 3072 tokens (input + output / 2).
  const GpuSpec& h100 = G("h100-sxm");
  const Efficiency eff = E(h100);
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.compute = Precision::kFp8;
  c.fit.kv_bytes_per_elem = 1;
  c.fit.batch = 56;
  c.input_len = 2048;
  c.output_len = 2048;
  auto grouped = EstimateInference(M("mistral-7b"), C(h100), c, eff);
  c.decode_attention = DecodeAttention::kPerHead;
  auto per_head = EstimateInference(M("mistral-7b"), C(h100), c, eff);
  ASSERT_TRUE(grouped.ok() && per_head.ok()) << per_head.status().message();
  auto attention = [](const InferResult& r) {
    const OpCost* o = FindOp(r.decode_ops, "attention");
    return o ? *o : OpCost{};
  };
  const double elements = 56.0 * 3072 * 4096 * 2;  // batch x context x query width x (K and V), per layer
  const double issue = 132 * 128 * (67e12 / (2 * 128 * 132));
  EXPECT_NEAR(attention(*per_head).time_s, elements * eff.per_head_decode_instructions / issue + eff.kernel_launch_s,
              1e-9);
  EXPECT_EQ(attention(*per_head).bound, Bound::kIssue);
  // The grouped kernel reads the 8 KV heads once: memory-bound and faster.
  const double kv_bytes = 56.0 * 3072 * 2 * 8 * 128;  // FP8 K and V
  EXPECT_NEAR(attention(*grouped).time_s, kv_bytes / (3.35e12 * eff.memory) + 56.0 * 4096 * 4 / (3.35e12 * eff.memory) +
                                              eff.kernel_launch_s,
              1e-9);
  EXPECT_GT(per_head->tpot_s, 1.5 * grouped->tpot_s);
  // The grouped estimate says what a per-head kernel would give; the per-head estimate has no such note.
  bool noted = false;
  for (const auto& n : grouped->notes) noted |= n.find("--decode-attention per-head") != std::string::npos;
  EXPECT_TRUE(noted);
  for (const auto& n : per_head->notes) EXPECT_EQ(n.find("--decode-attention per-head"), std::string::npos) << n;

  // Multi-head attention at batch 1 stays bound by the weight read: the kernel choice does not matter.
  InferConfig one;
  one.fit.batch = 1;
  auto mha = EstimateInference(M("llama-2-7b"), C(h100), one, eff);
  one.decode_attention = DecodeAttention::kPerHead;
  auto mha_per_head = EstimateInference(M("llama-2-7b"), C(h100), one, eff);
  ASSERT_TRUE(mha.ok() && mha_per_head.ok());
  EXPECT_DOUBLE_EQ(mha->tpot_s, mha_per_head->tpot_s);
  // Not modelled on other vendors: an error, not a number.
  const GpuSpec& mi300x = G("mi300x");
  auto amd = EstimateInference(M("llama-2-7b"), C(mi300x), one, E(mi300x));
  ASSERT_FALSE(amd.ok());
  EXPECT_NE(amd.status().message().find("NVIDIA"), std::string::npos);
}

// Serving on AMD Instinct GPUs carries the held-out MI300X latency runs' figures (vLLM on 8 MI300X: Oracle's LLaMA 3.1
// 405B FP8 runs, the model 14-23% fast; AMD's LLaMA 3.1 70B FP8 runs, 1-10%); NVIDIA GPUs do not.
TEST_F(Perf, ServingOnAmdInstinctCarriesTheMi300xLatencyRuns) {
  InferConfig cfg;
  cfg.fit.batch = 4;
  cfg.fit.par.tp = 8;
  cfg.fit.weights = *ParseWeightFormat("fp8");
  cfg.input_len = 128;
  cfg.output_len = 128;
  const char* note =
      "on MI300X, vLLM's end-to-end latency of LLaMA 3.1 70B and 405B in FP8 over 8 GPUs took 1% to 30% longer";
  auto has_note = [&](const InferResult& r) {
    for (const auto& n : r.notes)
      if (n.find(note) != std::string::npos) return true;
    return false;
  };
  for (const char* id : {"mi300x", "mi325x", "h100-sxm"}) {
    const GpuSpec& g = G(id);
    auto r = EstimateInference(M("llama-3.1-405b"), C(g), cfg, E(g));
    ASSERT_TRUE(r.ok()) << id << ": " << r.status().message();
    EXPECT_EQ(has_note(*r), std::string(id) != "h100-sxm") << id;
  }
}

// What `perf` prints about the links is what the collectives use: the intra-node bus bandwidths are those of a group
// inside one node, the inter-node one that of a group with one GPU per node, and the fabric's line rate, quoted in
// Gb/s, is converted to bytes (400 Gb/s NDR = 50 GB/s per NIC; 8 NICs per 8 GPUs = 50 GB/s per GPU, 4 = 25).
TEST_F(Perf, TheNetworkSummaryIsWhatTheCollectivesUse) {
  const GpuSpec& h = G("h100-sxm");
  const Efficiency e = E(h);
  Cluster c = C(h);
  NetworkSummary n = DescribeNetwork(c, e);
  EXPECT_EQ(n.intra_name, "nvlink4");
  EXPECT_DOUBLE_EQ(n.intra_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(n.intra_busbw_bytes_per_s, GroupBusBandwidth(c, e, 8, 1, Collective::kRing));
  EXPECT_DOUBLE_EQ(n.intra_nvls_busbw_bytes_per_s, GroupBusBandwidth(c, e, 8, 1, Collective::kAllReduce));
  EXPECT_GT(n.intra_nvls_busbw_bytes_per_s, n.intra_busbw_bytes_per_s);
  EXPECT_EQ(n.fabric, "ib-ndr");
  EXPECT_DOUBLE_EQ(n.nic_bytes_per_s * 8, 400e9);
  EXPECT_EQ(n.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(n.inter_bytes_per_s_per_gpu, 50e9);
  // A data-parallel group of 16 with one rank on each node (stride 8).
  EXPECT_DOUBLE_EQ(n.inter_busbw_bytes_per_s_per_gpu, GroupBusBandwidth(c, e, 16, 8, Collective::kRing));
  EXPECT_LT(n.inter_busbw_bytes_per_s_per_gpu, n.inter_bytes_per_s_per_gpu);
  c.nvls = false;
  EXPECT_EQ(DescribeNetwork(c, e).intra_nvls_busbw_bytes_per_s, 0);
  const NetworkSummary half = DescribeNetwork(*MakeCluster(*hw_, h, 8, "ib-ndr", 4), e);
  EXPECT_EQ(half.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(half.inter_bytes_per_s_per_gpu, 25e9);
  // No GPU link: PCIe, no in-switch reduction.
  const GpuSpec& l = G("l40s");
  const NetworkSummary p = DescribeNetwork(C(l, "roce-200g"), E(l));
  EXPECT_FALSE(p.intra_nvlink);
  EXPECT_NE(p.intra_name.find("pcie"), std::string::npos);
  EXPECT_EQ(p.intra_nvls_busbw_bytes_per_s, 0);
  EXPECT_DOUBLE_EQ(p.nic_bytes_per_s * 8, 200e9);
}

// data/nccl_curves.toml: one curve per NVLink generation, its reference the bus bandwidths data/efficiency.toml gives
// the GPU it was measured on, every time non-decreasing in the message size; NVLink 3 takes NVLink 4's.
TEST_F(Perf, NcclCurvesAreTheMeasuredGpusOwnTimes) {
  ASSERT_TRUE(BundledNcclCurves().ok()) << BundledNcclCurves().status().message();
  const auto& curves = *BundledNcclCurves();
  ASSERT_EQ(curves.size(), 2u);
  for (const NcclCurve& c : curves) {
    const GpuSpec& g = G(c.gpu);
    const Efficiency e = E(g);
    EXPECT_EQ(g.link_kind->value, c.link);
    EXPECT_NEAR(c.reference_busbw, g.link_bandwidth_per_direction_bytes_per_s->value * e.link, 1e8) << c.gpu;
    EXPECT_NEAR(c.reference_nvls_busbw, g.link_bandwidth_per_direction_bytes_per_s->value * e.link_allreduce, 1e8)
        << c.gpu;
    ASSERT_EQ(c.sizes.size(), 21u);
    for (const auto& op : c.time_s)
      for (const auto& t : op) {
        ASSERT_EQ(t.size(), c.sizes.size());
        EXPECT_TRUE(std::is_sorted(t.begin(), t.end())) << c.gpu;
      }
  }
  EXPECT_EQ(NcclCurveFor("nvlink4")->gpu, "h100-sxm");
  EXPECT_EQ(NcclCurveFor("nvlink3"), NcclCurveFor("nvlink4"));
  EXPECT_EQ(NcclCurveFor("nvlink5")->gpu, "b200");
  EXPECT_EQ(NcclCurveFor("nvlink2"), nullptr);
  EXPECT_EQ(NcclCurveFor("nvlink-bridge"), nullptr);
}

// Inside one NVLink domain a collective takes nccl-tests' time: on the GPU the curve was measured on, the measured
// time at a measured size (H100, 8 GPUs, all-gather of 64 MiB: 208.14 us); on another GPU of the link the same
// fraction of its own bus bandwidth (H200: the same link and efficiency, so the same time; A100: NVLink 3's 300 GB/s
// at its own efficiency). Between sizes linear, below the smallest flat, beyond the largest along the line through
// the two largest; between 4 and 8 ranks linear in the fraction. PCIe and groups across nodes keep NCCL's cost model.
TEST_F(Perf, MeasuredCollectivesInterpolateNcclTests) {
  const GpuSpec& h = G("h100-sxm");
  const Efficiency e = E(h);
  const Cluster c = C(h);
  const double mib64 = 64.0 * 1024 * 1024;
  EXPECT_NEAR(MeasuredCollectiveTime(c, e, CurveOp::kAllGather, mib64, 8), 208.14e-6, 1e-10);
  EXPECT_NEAR(GroupCollectiveTime(c, e, NcclOp::kAllGather, mib64, 8, 1), 208.14e-6, 1e-10);
  EXPECT_NEAR(MeasuredCollectiveTime(C(G("h200-sxm")), E(G("h200-sxm")), CurveOp::kAllGather, mib64, 8), 208.14e-6,
              1e-10);
  const GpuSpec& a = G("a100-sxm-80gb");
  const Efficiency ea = E(a);
  EXPECT_NEAR(MeasuredCollectiveTime(C(a), ea, CurveOp::kAllGather, mib64, 8),
              208.14e-6 * (450e9 * e.link) / (300e9 * ea.link), 1e-10);
  // Halfway (in bytes) between 32 and 64 MiB: halfway between 125.46 and 208.14 us.
  EXPECT_NEAR(MeasuredCollectiveTime(c, e, CurveOp::kAllGather, 48.0 * 1024 * 1024, 8), (125.46 + 208.14) / 2 * 1e-6,
              1e-10);
  // Below 512 B the 512 B time (10.14 us); at 1 GiB the line through 256 and 512 MiB (728.79, 1401.5 us).
  EXPECT_NEAR(MeasuredCollectiveTime(c, e, CurveOp::kAllGather, 8, 8), 10.14e-6, 1e-10);
  EXPECT_NEAR(MeasuredCollectiveTime(c, e, CurveOp::kAllGather, 1024.0 * 1024 * 1024, 8),
              (1401.5 + 2 * (1401.5 - 728.79)) * 1e-6, 1e-10);
  // 6 ranks: the bus-bandwidth fraction halfway between 4 and 8 ranks', at 6 ranks' (n-1)/n.
  const NcclCurve& curve = *NcclCurveFor("nvlink4");
  const double rel6 = (NcclCurveRel(curve, CurveOp::kAllGather, mib64, 4) + NcclCurveRel(curve, CurveOp::kAllGather, mib64, 8)) / 2;
  EXPECT_NEAR(MeasuredCollectiveTime(c, e, CurveOp::kAllGather, mib64, 6), mib64 * 5 / 6 / (450e9 * e.link * rel6), 1e-12);
  // All-reduce: the in-switch reduction's measured times; as a ring (--no-nvls) 8 ranks add the two asymptotic
  // bandwidth terms' difference, 2 and 4 ranks (rings already) do not change.
  Cluster ring = c;
  ring.nvls = false;
  const double nv8 = MeasuredCollectiveTime(c, e, CurveOp::kAllReduce, mib64, 8);
  EXPECT_NEAR(nv8, 324.53e-6, 1e-10);
  EXPECT_NEAR(MeasuredCollectiveTime(ring, e, CurveOp::kAllReduce, mib64, 8),
              nv8 + mib64 * 2 * 7 / 8 * (1 / (450e9 * e.link) - 1 / (450e9 * e.link_allreduce)), 1e-10);
  EXPECT_DOUBLE_EQ(MeasuredCollectiveTime(ring, e, CurveOp::kAllReduce, mib64, 2),
                   MeasuredCollectiveTime(c, e, CurveOp::kAllReduce, mib64, 2));
  // A100 has no in-switch reduction: its all-reduces are rings.
  EXPECT_GT(MeasuredCollectiveTime(C(a), ea, CurveOp::kAllReduce, mib64, 8),
            324.53e-6 * (450e9 * e.link) / (300e9 * ea.link));
  // No curve: PCIe (L40S), and groups across nodes.
  EXPECT_LT(MeasuredCollectiveTime(C(G("l40s")), E(G("l40s")), CurveOp::kAllGather, mib64, 8), 0);
  const NcclGroup two_nodes = GroupNccl(c, e, 16, 1, Collective::kRing);
  EXPECT_EQ(two_nodes.nodes, 2);
  EXPECT_DOUBLE_EQ(GroupCollectiveTime(c, e, NcclOp::kAllGather, mib64, 16, 1),
                   NcclCollective(NcclOp::kAllGather, mib64, two_nodes).time_s);
}

// A curves file is checked: each time list as long as the sizes, sizes increasing, the in-switch reference at least
// the ring's, every key known.
TEST(NcclCurvesFile, BadFilesAreErrorsNamingTheKey) {
  const std::string times = "[1, 2, 3]";
  const auto op = [&](const char* name) {
    return fmt::format("[curve.{}]\nn2 = {}\nn4 = {}\nn8 = {}\n", name, times, times, times);
  };
  const std::string good = "sizes = [512, 1024, 2048]\n[sources]\nx = \"a source\"\n[[curve]]\nlink = \"nvlink4\"\n"
                           "gpu = \"h100-sxm\"\nreference_busbw = \"369.9 GB/s\"\nreference_nvls_busbw = \"478.8 GB/s\"\n"
                           "source = \"x\"\n" +
                           op("all_reduce") + op("all_gather") + op("reduce_scatter") + op("all_to_all");
  auto ok = ParseNcclCurves(good, "c.toml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->front().time_s[1][2][2], 3e-6);
  const auto error = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    auto r = ParseNcclCurves(text, "c.toml");
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_NE(error("n8 = [1, 2, 3]", "n8 = [1, 2]").find("needs 3 times"), std::string::npos);
  EXPECT_NE(error("[512, 1024, 2048]", "[512, 2048, 1024]").find("increasing order"), std::string::npos);
  EXPECT_NE(error("\"478.8 GB/s\"", "\"300 GB/s\"").find("must be at least reference_busbw"), std::string::npos);
  EXPECT_NE(error("source = \"x\"", "source = \"y\"").find("'y' is not in [sources]"), std::string::npos);
  EXPECT_NE(error("gpu = \"h100-sxm\"", "gpus = \"h100-sxm\"").find("gpu"), std::string::npos)
      << error("gpu = \"h100-sxm\"", "gpus = \"h100-sxm\"");
  EXPECT_NE(error("link = \"nvlink4\"\n", "link = \"nvlink4\"\nlinks = 1\n").find("key 'curve[0].links': unknown key (did you mean 'link'?)"), std::string::npos)
      << error("link = \"nvlink4\"\n", "link = \"nvlink4\"\nlinks = 1\n");
  EXPECT_NE(error("[curve.all_to_all]", "[curve.alltoall]").find("all_to_all"), std::string::npos);
  EXPECT_NE(error("n2 = [1, 2, 3]", "n2 = [1, -2, 3]").find("positive number of microseconds"), std::string::npos);
}

// Megatron-LM (since 2022) and Transformer Engine run a column-parallel linear's backward collectives under its
// gradient GEMMs: with SP the input-gradient reduce-scatters leave the exposed communication (the output-gradient
// all-gathers stay), and the backward pass pays at most what they would have cost; eager stacks and
// --no-tp-grad-overlap expose them. LLaMA-2 7B on 8 H100s, TP 8 with SP, one node, no data parallelism.
TEST_F(Perf, TpGradOverlapHidesTheColumnParallelBackwardCollectives) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  const auto run = [&](bool overlap, bool eager = false) {
    TrainConfig c = Train(8, 8, 1, 8, 4096);
    c.fit.par.sequence_parallel = true;
    c.fit.recompute = Recompute::kNone;
    c.tp_grad_overlap = overlap;
    c.eager = eager;
    auto r = EstimateTraining(m, C(g), c, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult on = run(true), off = run(false);
  const double rs = GroupCollectiveTime(C(g), E(g), NcclOp::kReduceScatter, 4096.0 * 4096 * 2, 8, 1);
  const double ag = GroupCollectiveTime(C(g), E(g), NcclOp::kAllGather, 4096.0 * 4096 * 2, 8, 1);
  const double blocks = double(on.num_micro_batches) * 32 * 2;  // attention's and the MLP's, every layer
  EXPECT_NEAR(off.breakdown_s.communication_exposed - on.breakdown_s.communication_exposed, blocks * rs,
              1e-6 * off.step_time_s);
  const double added = on.breakdown_s.compute - off.breakdown_s.compute;
  EXPECT_GT(added, 0);                          // contention at least
  EXPECT_LE(added, blocks * (ag + rs) + 1e-9);  // never more than the two collectives themselves
  EXPECT_LT(on.step_time_s, off.step_time_s);
  EXPECT_DOUBLE_EQ(run(true, true).step_time_s, run(false, true).step_time_s);  // eager: never overlapped
}

// `--explain`'s collectives table reports each collective in nccl-tests' terms, consistently with the time the model
// charges: time = GroupCollectiveTime, algbw = size / time, busbw = algbw x (n-1)/n (all-gather, reduce-scatter) or
// x 2(n-1)/n (all-reduce). Inside an H100 node the times are nccl-tests' own (data/nccl_curves.toml): a 1 GB all-gather
// on 8 GPUs runs beyond the largest size measured (512 MiB), along the line through the two largest, at about 0.9 of
// the link's 370 GB/s bus bandwidth; without the curves (PCIe, across nodes) NCCL's cost model picks an algorithm.
TEST_F(Perf, CollectivesAreReportedInNcclTestsTerms) {
  const GpuSpec& h = G("h100-sxm");
  const Efficiency e = E(h);
  const Cluster c = C(h);
  const CollectiveCall ag = DescribeCollective(c, e, NcclOp::kAllGather, 1e9, 8, 1, "ag", "once");
  EXPECT_DOUBLE_EQ(ag.time_s, GroupCollectiveTime(c, e, NcclOp::kAllGather, 1e9, 8, 1));
  EXPECT_DOUBLE_EQ(ag.algbw_bytes_per_s, 1e9 / ag.time_s);
  EXPECT_NEAR(ag.busbw_bytes_per_s, ag.algbw_bytes_per_s * 7 / 8, 1);
  EXPECT_GT(ag.busbw_bytes_per_s, 0.85 * 450e9 * 0.822);
  EXPECT_LE(ag.busbw_bytes_per_s, 450e9 * 0.822);
  EXPECT_EQ(ag.nodes, 1);
  EXPECT_EQ(ag.algorithm, "measured");
  EXPECT_EQ(ag.protocol, "nccl-tests ring");
  const CollectiveCall ar = DescribeCollective(c, e, NcclOp::kAllReduce, 1e9, 8, 1, "ar", "once");
  EXPECT_NEAR(ar.busbw_bytes_per_s, ar.algbw_bytes_per_s * 2 * 7 / 8, 1);
  EXPECT_EQ(ar.protocol, "nccl-tests");  // NCCL's default on H100: the in-switch reduction
  EXPECT_GT(ar.busbw_bytes_per_s, 450e9 * 0.822);
  Cluster pcie = C(G("l40s"));
  const CollectiveCall lp = DescribeCollective(pcie, E(G("l40s")), NcclOp::kAllGather, 1e9, 8, 1, "ag", "once");
  EXPECT_EQ(lp.algorithm, "ring");
  // A data-parallel group of 16, one rank per node: 16 nodes, at the NIC's bus bandwidth.
  const CollectiveCall dp = DescribeCollective(c, e, NcclOp::kReduceScatter, 1e9, 16, 8, "dp", "once");
  EXPECT_EQ(dp.nodes, 16);
  EXPECT_LT(dp.busbw_bytes_per_s, 50e9);
  // A training estimate with detail lists its TP and DP collectives, with the bytes the layer moves.
  TrainConfig t = Train(64, 8, 1, 64, 4096, 1);
  t.fit.par.sequence_parallel = true;
  t.detail = true;
  auto r = EstimateTraining(M("llama-3.1-70b"), c, t, e);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<std::string> what;
  for (const auto& call : r->collectives) what.push_back(call.what);
  ASSERT_EQ(what.size(), 4u) << ::testing::PrintToString(what);
  EXPECT_EQ(what[0], "TP all-gather (sequence parallel)");
  EXPECT_DOUBLE_EQ(r->collectives[0].bytes, 4096.0 * 8192 * 2);  // the gathered micro-batch, 16-bit
  EXPECT_EQ(r->collectives[0].ranks, 8);
  EXPECT_EQ(what[2], "DP gradient reduce-scatter (one bucket)");
  EXPECT_EQ(r->collectives[2].ranks, 8);
  EXPECT_EQ(r->collectives[2].nodes, 8);
  t.detail = false;
  EXPECT_TRUE(EstimateTraining(M("llama-3.1-70b"), c, t, e)->collectives.empty());
}

// FP8 parameters in full training (--weights fp8 with --dtype fp8: Megatron-Core --fp8-param-gather, NeMo fp8_params):
// the layers' weights take 1 byte in memory and in the distributed optimizer's parameter all-gather, the embedding
// and output layer stay 16-bit; gradients and the optimizer's copy do not change. Other formats, and FP8 weights
// without FP8 GEMMs, are refused with what would do.
TEST_F(Perf, Fp8ParametersHalveTheLayerWeightsAndTheirAllGather) {
  const GpuSpec& h = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-70b");
  TrainConfig t = Train(64, 4, 2, 256, 4096, 1);
  t.fit.par.sequence_parallel = true;
  t.fit.recompute = Recompute::kSelective;
  t.dtype = Precision::kFp8;
  t.detail = true;
  auto bf = EstimateTraining(m, C(h), t, E(h));
  ASSERT_TRUE(bf.ok()) << bf.status().message();
  TrainConfig f8 = t;
  f8.fit.weights = *ParseWeightFormat("fp8");
  auto fp = EstimateTraining(m, C(h), f8, E(h));
  ASSERT_TRUE(fp.ok()) << fp.status().message();
  const ParamCounts pc = CountParams(m);
  const double layer_params_gpu = (pc.total - pc.non_layer_total) / (4 * 2);
  // The weights term: 1 byte less per layer weight on this GPU (the embedding or head on a stage stays 2 B); so is
  // the FP8 weight cache (the parameter is its row-wise copy; Hopper still caches the transpose): 2 B less in all.
  const auto& wb = bf->memory.breakdown;
  const auto& wf = fp->memory.breakdown;
  EXPECT_NEAR(wb.weights - wf.weights, layer_params_gpu, 0.05 * layer_params_gpu);
  EXPECT_NEAR(wb.fp8_weight_cache, 2 * layer_params_gpu, 0.05 * layer_params_gpu);
  EXPECT_NEAR(wf.fp8_weight_cache, layer_params_gpu, 0.05 * layer_params_gpu);
  EXPECT_NEAR(bf->memory.per_gpu_peak_bytes - fp->memory.per_gpu_peak_bytes, 2 * layer_params_gpu,
              0.05 * layer_params_gpu);
  EXPECT_EQ(fp->memory.grad_bytes_per_param, bf->memory.grad_bytes_per_param);
  EXPECT_EQ(fp->memory.optimizer_bytes_per_param, bf->memory.optimizer_bytes_per_param);
  auto gather = [](const TrainResult& r) {
    for (const auto& c : r.collectives)
      if (c.what == "DP parameter all-gather (one bucket)") return c.bytes;
    return 0.0;
  };
  ASSERT_GT(gather(*bf), 0);
  const double ratio = gather(*fp) / gather(*bf);
  EXPECT_NEAR(ratio, (1 + pc.non_layer_total / pc.total) / 2, 1e-9);
  EXPECT_LT(fp->step_time_s, bf->step_time_s);
  // FP8 weights need FP8 GEMMs; quantised formats are for LoRA's frozen base weights.
  TrainConfig bad = f8;
  bad.dtype = Precision::kBf16;
  auto no_fp8 = EstimateTraining(m, C(h), bad, E(h));
  ASSERT_FALSE(no_fp8.ok());
  EXPECT_NE(no_fp8.status().message().find("needs --dtype fp8"), std::string::npos);
  bad = t;
  bad.fit.weights = *ParseWeightFormat("int4");
  auto int4 = EstimateTraining(m, C(h), bad, E(h));
  ASSERT_FALSE(int4.ok());
  EXPECT_NE(int4.status().message().find("--mode lora"), std::string::npos) << int4.status().message();
}

// On H100/H200 NVSwitch nodes NCCL's all-reduce reduces in the switch (NVLS, about 480 GB/s busbw) while every other
// collective moves its bytes over the wire (about 370 GB/s); NCCL_NVLS_ENABLE=0 (Cluster::nvls) makes the all-reduce
// a ring too. Elsewhere (A100) the two are the same.
TEST_F(Perf, OnlyAllReduceGetsTheInSwitchReduction) {
  Cluster h100 = C(G("h100-sxm"));
  const Efficiency e = E(G("h100-sxm"));
  EXPECT_NEAR(GroupBusBandwidth(h100, e, 8, 1, Collective::kAllReduce), 450e9 * 1.064, 1e9);
  EXPECT_NEAR(GroupBusBandwidth(h100, e, 8, 1, Collective::kRing), 450e9 * 0.822, 1e9);
  h100.nvls = false;
  EXPECT_NEAR(GroupBusBandwidth(h100, e, 8, 1, Collective::kAllReduce), 450e9 * 0.822, 1e9);
  const Cluster a100 = C(G("a100-sxm-80gb"));
  const Efficiency ea = E(G("a100-sxm-80gb"));
  EXPECT_DOUBLE_EQ(GroupBusBandwidth(a100, ea, 8, 1, Collective::kAllReduce),
                   GroupBusBandwidth(a100, ea, 8, 1, Collective::kRing));
  // A TP=8 step with sequence parallelism (all-gather + reduce-scatter) cannot use it; without SP it does, and
  // turning NVLS off slows only the latter.
  const ModelSpec m = M("llama-2-70b");
  auto step = [&](bool sp, bool nvls) {
    Cluster c = C(G("h100-sxm"));
    c.nvls = nvls;
    TrainConfig t = Train(8, 8, 1, 8);
    t.fit.par.sequence_parallel = sp;
    auto r = EstimateTraining(m, c, t, e);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r->step_time_s;
  };
  EXPECT_DOUBLE_EQ(step(true, true), step(true, false));
  EXPECT_LT(step(false, true), step(false, false));
}

TEST_F(Perf, InterNodeBusBandwidthScalesWithRanksPerNode) {
  const Cluster c = C(G("a100-sxm-80gb"), "ib-hdr");
  const Efficiency e = E(G("a100-sxm-80gb"));
  // One rank per node (DP across nodes with TP=8): one HDR NIC, 25 GB/s x network efficiency.
  EXPECT_NEAR(GroupBusBandwidth(c, e, 16, 8), 25e9 * e.network, 1e6);
  // Eight ranks per node: eight rings, one per NIC.
  EXPECT_NEAR(GroupBusBandwidth(c, e, 64, 1), 8 * 25e9 * e.network, 1e6);
  // Inside one node: NVLink.
  EXPECT_NEAR(GroupBusBandwidth(c, e, 8, 1), 300e9 * e.link, 1e6);
}

// Windowed layers attend to at most the window: GPT-OSS windows half its layers at 128 tokens, so at 4096 tokens a
// query sees 4096/2 keys on a full layer and 128 - 128^2/(2 x 4096) on a windowed one, in training and in prefill.
// A window at least as long as the sequence changes nothing (Mistral's 4096 at 2048 tokens).
TEST_F(Perf, SlidingWindowLayersAttendToTheWindowOnly) {
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 64, 4096);
  c.fit.par.ep = 8;
  auto oss = EstimateTraining(M("gpt-oss-120b"), C(g), c, E(g));
  ASSERT_TRUE(oss.ok()) << oss.status().message();
  const OpCost* attn = FindOp(oss->ops, "[moe] attention (flash)");
  ASSERT_NE(attn, nullptr);
  const double keys = 0.5 * 2048 + 0.5 * (128 - 128.0 * 128 / (2 * 4096));
  EXPECT_DOUBLE_EQ(attn->flops, 4.0 * 4096 * keys * 64 * 64);
  InferConfig ic;
  ic.fit.batch = 1;
  ic.input_len = 4096;
  ic.output_len = 1;
  auto inf = EstimateInference(M("gpt-oss-120b"), C(g), ic, E(g));
  ASSERT_TRUE(inf.ok()) << inf.status().message();
  const OpCost* pre = FindOp(inf->prefill_ops, "attention");
  ASSERT_NE(pre, nullptr);
  EXPECT_DOUBLE_EQ(pre->flops, 4.0 * 4096 * keys * 64 * 64);
  TrainConfig d = Train(8, 1, 1, 64, 2048);
  auto mistral = EstimateTraining(M("mistral-7b"), C(g), d, E(g));
  ASSERT_TRUE(mistral.ok());
  EXPECT_DOUBLE_EQ(FindOp(mistral->ops, "attention (flash)")->flops, 4.0 * 2048 * 1024 * 32 * 128);
  // A 128-token window carries the sliding-window kernel runs' figures (cuDNN ran 2-4x slower than priced there);
  // Mistral's 4096-token window, where the 1024-token runs held the price, does not.
  const char* window_note = "18 of this model's 36 layers attend within a 128-token window";
  EXPECT_TRUE(std::any_of(oss->notes.begin(), oss->notes.end(),
                          [&](const std::string& n) { return n.find(window_note) != std::string::npos; }));
  for (const auto* r : {&*mistral, &*oss})
    for (const auto& n : r->notes)
      if (r == &*mistral) {
        EXPECT_EQ(n.find("-token window, priced at the fused-attention"), std::string::npos) << n;
      }
}

// Chunked attention (Llama 4): a query attends to its own chunk up to itself, so over 2 chunks of 8192 a prefill
// query sees 4096 keys on average on a chunked layer, where a sliding window of 8192 would give it 8192 - 8192^2 /
// (2 x 16384) = 6144; a decode step past the first chunk sees 4096 on average. Within one chunk nothing changes.
TEST_F(Perf, ChunkedLayersAttendWithinTheirChunk) {
  const ModelSpec s = M("llama-4-scout");
  ASSERT_TRUE(s.chunked_window);
  const double share = 36.0 / 48;
  EXPECT_DOUBLE_EQ(perf_detail::MeanAttendedKeys(s, 16384, false), (1 - share) * 8192 + share * 4096);
  EXPECT_DOUBLE_EQ(perf_detail::MeanAttendedKeys(s, 20000, true), (1 - share) * 20000 + share * 4096);
  EXPECT_DOUBLE_EQ(perf_detail::MeanAttendedKeys(s, 4096, false), 2048);
  EXPECT_DOUBLE_EQ(perf_detail::MeanAttendedKeys(s, 4096, true), 4096);
  ModelSpec windowed = s;
  windowed.chunked_window = false;
  EXPECT_DOUBLE_EQ(perf_detail::MeanAttendedKeys(windowed, 16384, false), (1 - share) * 8192 + share * 6144);
}

// Fused attention does 2 x (qk head dim + v head dim) FLOPs per attended key and head: QK^T at the query's width,
// PV at the value's. With MLA they differ (DeepSeek-V3: 128 heads, Q and K 192 wide, V 128), and the count is
// 2 x 320 per key, as cuDNN's SDPA benchmark counts it, not 4 x 192; elsewhere the two are equal and it is 4 x d.
TEST_F(Perf, AttentionFlopsCountTheValueHeadDimension) {
  const GpuSpec& g = G("b200");
  TrainConfig c = Train(64, 1, 1, 64, 4096);
  c.fit.par.ep = 64;
  c.fit.recompute = Recompute::kFull;
  auto dsv3 = EstimateTraining(M("deepseek-v3"), C(g), c, E(g));
  ASSERT_TRUE(dsv3.ok()) << dsv3.status().message();
  const OpCost* attn = FindOp(dsv3->ops, "[moe] attention (flash)");
  ASSERT_NE(attn, nullptr);
  EXPECT_DOUBLE_EQ(attn->flops, 2.0 * 4096 * 2048 * 128 * (192 + 128));
  auto llama = EstimateTraining(M("llama-3.1-8b"), C(g), Train(8, 1, 1, 64, 4096), E(g));
  ASSERT_TRUE(llama.ok());
  EXPECT_DOUBLE_EQ(FindOp(llama->ops, "attention (flash)")->flops, 4.0 * 4096 * 2048 * 32 * 128);
  // Serving prefill runs MLA expanded too: 2 x 320 per key and head over the TP shard's heads.
  InferConfig ic;
  ic.fit.batch = 1;
  ic.fit.par.tp = 8;
  ic.input_len = 4096;
  ic.output_len = 1;
  auto pre = EstimateInference(M("deepseek-v3"), C(g), ic, E(g));
  ASSERT_TRUE(pre.ok()) << pre.status().message();
  const OpCost* a = FindOp(pre->prefill_ops, "attention");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->flops, 4096.0 * 2048 * (2.0 * (192 + 128)) * 128 / 8);
}

// Ulysses context parallelism (--cp-comm a2a): per layer and pass one all-to-all over the CP group of the rank's Q,
// K, V and output rows (16-bit), forward and again backward, none of it hidden; the K/V ring (p2p) hides under
// attention. Heads must divide over TP x CP; a full recompute repeats the forward's all-to-alls.
TEST_F(Perf, UlyssesContextParallelExchangesQkvAndOutputExposed) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec& m = M("llama-3.1-8b");  // 32 query heads, 8 K/V heads of 128, hidden 4096
  TrainConfig c = Train(32, 2, 1, 64, 16384);
  c.fit.par.cp = 4;
  c.fit.par.dp = 4;
  c.fit.par.sequence_parallel = true;
  c.fit.recompute = Recompute::kNone;
  auto ring = EstimateTraining(m, C(g), c, E(g));
  c.cp_comm = CpComm::kAllToAll;
  auto a2a = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(ring.ok() && a2a.ok()) << (ring.ok() ? a2a.status().message() : ring.status().message());
  const OpCost* x = FindOp(a2a->ops, "CP all-to-all (Q, K, V in, output back)");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(FindOp(a2a->ops, "CP K/V ring exchange"), nullptr);
  EXPECT_NE(FindOp(ring->ops, "CP K/V ring exchange"), nullptr);
  // 4096 tokens on this rank (16384 / CP 4), TP 2: (4096 + 2 x 1024 + 4096) / 2 columns x 2 B.
  EXPECT_DOUBLE_EQ(x->bytes, 4096.0 * (4096 + 2 * 1024 + 4096) / 2 * 2);
  // Once forward and once backward per layer and micro-batch (64 sequences over DP 4: 16), all exposed.
  EXPECT_DOUBLE_EQ(x->count, 16.0 * 32 * 2);
  EXPECT_GT(a2a->breakdown_s.communication_exposed, ring->breakdown_s.communication_exposed);
  EXPECT_DOUBLE_EQ(a2a->breakdown_s.compute, ring->breakdown_s.compute);
  // Its evidence (evidence::kCpAllToAllTraining) comes with it, not with the ring.
  const auto noted = [](const TrainResult& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.find("on 14 published runs with context parallelism by all-to-all") != std::string::npos &&
             n.find("-40% to +17% off (mean -13%") != std::string::npos;
    });
  };
  EXPECT_TRUE(noted(*a2a));
  EXPECT_FALSE(noted(*ring));
  c.fit.recompute = Recompute::kFull;
  auto a2a_rc = EstimateTraining(m, C(g), c, E(g));
  c.cp_comm = CpComm::kP2P;
  auto ring_rc = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(a2a_rc.ok() && ring_rc.ok());
  EXPECT_GT(a2a_rc->breakdown_s.communication_exposed - ring_rc->breakdown_s.communication_exposed,
            a2a->breakdown_s.communication_exposed - ring->breakdown_s.communication_exposed);
  // 8 K/V heads cannot split over TP 2 x CP 8.
  c.cp_comm = CpComm::kAllToAll;
  c.fit.recompute = Recompute::kNone;
  c.fit.par.cp = 8;
  c.fit.par.dp = 2;
  auto bad = EstimateTraining(m, C(g), c, E(g));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("32 query and 8 K/V heads, which TP 2 x CP 8 does not divide; CP 2, 4 would"),
            std::string::npos)
      << bad.status().message();
  c.fit.par.cp = 1;
  c.fit.par.dp = 16;
  auto no_cp = EstimateTraining(m, C(g), c, E(g));
  ASSERT_FALSE(no_cp.ok());
  EXPECT_NE(no_cp.status().message().find("it needs --cp > 1"), std::string::npos);
  EXPECT_FALSE(ParseCpComm("ulyses").ok());
  EXPECT_NE(ParseCpComm("ulyses").status().message().find("did you mean 'ulysses'"), std::string::npos);
  EXPECT_EQ(*ParseCpComm("ring"), CpComm::kP2P);
}

// --fp8-attention: attention at cuDNN's measured FP8 speed-up where the efficiency table has one (GB300: 1.291x, the
// forward and, through it, the backward), Q, K and V exchanged in FP8 under Ulysses CP; on a GPU without a
// measurement the 16-bit rate and a note saying so; refused outside FP8 or FP4 training.
TEST_F(Perf, Fp8AttentionRunsAtTheMeasuredSpeedUpWhereThereIsOne) {
  const ModelSpec& m = M("llama-3.1-8b");
  TrainConfig c = Train(8, 1, 1, 64, 8192);
  c.dtype = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kCurrent;
  c.fit.recompute = Recompute::kNone;
  const GpuSpec& gb300 = G("gb300");
  auto bf16_attn = EstimateTraining(m, C(gb300), c, E(gb300));
  c.fp8_attention = true;
  auto fp8_attn = EstimateTraining(m, C(gb300), c, E(gb300));
  ASSERT_TRUE(bf16_attn.ok() && fp8_attn.ok()) << fp8_attn.status().message();
  const OpCost* a16 = FindOp(bf16_attn->ops, "attention (flash)");
  const OpCost* a8 = FindOp(fp8_attn->ops, "attention (flash, FP8)");
  ASSERT_TRUE(a16 && a8);
  EXPECT_DOUBLE_EQ(E(gb300).attention_fp8, 1.291);
  EXPECT_NEAR(a8->time_s, a16->time_s / 1.291, 1e-15);
  EXPECT_LT(fp8_attn->step_time_s, bf16_attn->step_time_s);
  const auto note_with = [](const TrainResult& r, const char* s) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(s) != n.npos; });
  };
  EXPECT_TRUE(note_with(*fp8_attn, "FP8 attention at 1.29x the 16-bit kernel's speed"));
  // The speed-up is read at the kernel's length (attention_fp8_seq): at 2K tokens GB300's is 1.049x. Under CP 2 the
  // K/V ring runs kernels over 4K tokens each (1.212x); the all-to-all runs the whole 8K sequence (1.291x).
  const auto speedup = [&](const TrainConfig& cfg) {
    TrainConfig off = cfg;
    off.fp8_attention = false;
    auto on16 = EstimateTraining(m, C(gb300), off, E(gb300));
    auto on8 = EstimateTraining(m, C(gb300), cfg, E(gb300));
    EXPECT_TRUE(on16.ok() && on8.ok());
    return FindOp(on16->ops, "attention (flash)")->time_s / FindOp(on8->ops, "attention (flash, FP8)")->time_s;
  };
  TrainConfig short_seq = Train(8, 1, 1, 64, 2048);
  short_seq.dtype = Precision::kFp8;
  short_seq.fp8_recipe = Fp8Recipe::kCurrent;
  short_seq.fit.recompute = Recompute::kNone;
  short_seq.fp8_attention = true;
  EXPECT_NEAR(speedup(short_seq), 1.049, 1e-12);
  TrainConfig ring = c;
  ring.fit.par.cp = 2;
  ring.fit.par.dp = 4;
  EXPECT_NEAR(speedup(ring), 1.212, 1e-12);
  ring.cp_comm = CpComm::kAllToAll;
  EXPECT_NEAR(speedup(ring), 1.291, 1e-12);
  // H100: no FP8 attention measurement in the table.
  const GpuSpec& h100 = G("h100-sxm");
  auto h_on = EstimateTraining(m, C(h100), c, E(h100));
  c.fp8_attention = false;
  auto h_off = EstimateTraining(m, C(h100), c, E(h100));
  ASSERT_TRUE(h_on.ok() && h_off.ok());
  EXPECT_DOUBLE_EQ(h_on->step_time_s, h_off->step_time_s);
  EXPECT_TRUE(note_with(*h_on, "no FP8 attention measurement for h100-sxm"));
  // Ulysses CP moves Q, K and V in FP8, the output in 16 bits: (4096 + 2 x 1024) x 1 + 4096 x 2 bytes per token.
  TrainConfig u = Train(16, 1, 1, 64, 16384);
  u.fit.par.cp = 4;
  u.fit.par.dp = 4;
  u.dtype = Precision::kFp8;
  u.fit.recompute = Recompute::kNone;
  u.cp_comm = CpComm::kAllToAll;
  u.fp8_attention = true;
  auto ux = EstimateTraining(m, C(gb300), u, E(gb300));
  ASSERT_TRUE(ux.ok()) << ux.status().message();
  EXPECT_DOUBLE_EQ(FindOp(ux->ops, "CP all-to-all (Q, K, V in, output back)")->bytes,
                   4096.0 * ((4096 + 2 * 1024) * 1 + 4096 * 2));
  c.dtype = Precision::kBf16;
  c.fp8_attention = true;
  auto refused = EstimateTraining(m, C(gb300), c, E(gb300));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("it needs --dtype fp8 or fp4, not bf16"), std::string::npos)
      << refused.status().message();
}

// The load-imbalance factor is the busiest expert-parallel rank's wait: with EP 1 every expert sits on every GPU,
// the grouped GEMMs run all the step's k x T pairs whatever the router does, and the factor changes nothing. With
// EP > 1 it scales the busiest rank's expert rows.
TEST_F(Perf, MoeImbalanceOnlyActsAcrossExpertParallelRanks) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec& m = M("qwen3-30b-a3b");  // hidden 2048, 8 of 128 experts per token, 768 wide
  const auto at = [&](int ep, double imbalance) {
    TrainConfig c = Train(8, 1, 1, 64, 4096);
    c.fit.par.ep = ep;
    c.moe_imbalance = imbalance;
    return EstimateTraining(m, C(g), c, E(g));
  };
  auto even = at(1, 1.0), skewed = at(1, 1.5);
  ASSERT_TRUE(even.ok() && skewed.ok());
  EXPECT_DOUBLE_EQ(skewed->step_time_s, even->step_time_s);
  const OpCost* up = FindOp(skewed->ops, "[moe] experts up/gate");
  ASSERT_NE(up, nullptr);
  // 4096 tokens x 8 pairs x 2 x (2 x 768) x 2048 per micro-batch on the rank's 128 experts.
  EXPECT_DOUBLE_EQ(up->flops, 2.0 * 4096 * 8 * 2 * 768 * 2048);
  auto ep_even = at(8, 1.0), ep_skewed = at(8, 1.5);
  ASSERT_TRUE(ep_even.ok() && ep_skewed.ok());
  EXPECT_GT(ep_skewed->step_time_s, ep_even->step_time_s);
  EXPECT_DOUBLE_EQ(FindOp(ep_skewed->ops, "[moe] experts up/gate")->flops,
                   1.5 * FindOp(ep_even->ops, "[moe] experts up/gate")->flops);
}

// MoE token permutation: each rank copies its tokens to their k expert slots and sums them back, 16-bit:
// (E x h + E x k x h) x 2 B twice per pass, in forward and again in backward. The all-to-all dispatcher then sorts
// the k copies it received by local expert and unsorts them before the combine (a read and a write each); the flex
// dispatcher does not. FP8 casts the k copies.
TEST_F(Perf, MoeLayerCountsPermutationAndCastsEveryDispatchedCopy) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec& m = M("qwen3-30b-a3b");  // hidden 2048, 8 of 128 experts per token
  TrainConfig c = Train(8, 1, 1, 64, 4096);
  c.fit.par.ep = 8;
  c.moe_imbalance = 1.0;
  c.moe_dispatcher = MoeDispatcher::kFlex;
  auto flex = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(flex.ok()) << flex.status().message();
  const OpCost* flex_perm = FindOp(flex->ops, "[moe] token permute + unpermute");
  ASSERT_NE(flex_perm, nullptr);
  EXPECT_DOUBLE_EQ(flex_perm->bytes, 2.0 * 2 * 4096 * 2048 * (1 + 8));
  c.moe_dispatcher = MoeDispatcher::kAllToAll;
  auto bf16 = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(bf16.ok()) << bf16.status().message();
  const OpCost* perm = FindOp(bf16->ops, "[moe] token permute + unpermute");
  ASSERT_NE(perm, nullptr);
  EXPECT_DOUBLE_EQ(perm->bytes, 2.0 * 2 * 4096 * 2048 * (1 + 8) + 2.0 * 2 * 4096 * 8 * 2048 * 2);
  // --explain counts it once forward and once backward: 8 micro-batches x 48 layers x 2.
  EXPECT_DOUBLE_EQ(perm->count, 8.0 * 48 * 2);
  // One expert per rank (EP = number of experts) leaves nothing to sort.
  TrainConfig one = Train(128, 1, 1, 128, 4096);
  one.fit.par.ep = 128;
  one.moe_imbalance = 1.0;
  auto wide = EstimateTraining(m, C(g), one, E(g));
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_DOUBLE_EQ(FindOp(wide->ops, "[moe] token permute + unpermute")->bytes, 2.0 * 2 * 4096 * 2048 * (1 + 8));
  c.dtype = Precision::kFp8;
  auto fp8 = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  const OpCost* cast = FindOp(fp8->ops, "[moe] FP8 cast + transpose");
  ASSERT_NE(cast, nullptr);
  // Inputs of the four GEMMs: qkv (h), output projection (q_dim), experts' up (k x h), experts' down (k x ffn).
  const double T = 4096, h = 2048, k = 8;
  EXPECT_DOUBLE_EQ(cast->bytes, 4.0 * T * (h + 32 * 128 + k * h + k * 768));
}

// --ep-overlap hides the expert all-to-all under the other micro-batch's compute: never slower, exposed
// communication down; refused where Megatron-Core refuses it.
TEST_F(Perf, ExpertAllToAllOverlapNeverSlowsAndFollowsMegatronCoreRules) {
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(16, 1, 1, 256, 4096);
  c.fit.par.ep = 16;
  auto off = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, E(g));
  c.ep_overlap = true;
  auto on = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, E(g));
  ASSERT_TRUE(off.ok() && on.ok());
  EXPECT_LT(on->step_time_s, off->step_time_s);
  EXPECT_LT(on->breakdown_s.communication_exposed, off->breakdown_s.communication_exposed);
  EXPECT_DOUBLE_EQ(on->breakdown_s.compute, off->breakdown_s.compute);
  // Megatron-Core's conditions: EP > 1 on an MoE model, an interleaved schedule under PP, no full recompute.
  TrainConfig d = Train(16, 1, 1, 256, 4096);
  d.ep_overlap = true;
  auto dense = EstimateTraining(M("llama-3.1-8b"), C(g), d, E(g));
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("--ep > 1"), std::string::npos) << dense.status().message();
  TrainConfig pp = Train(16, 1, 2, 256, 4096);
  pp.fit.par.ep = 8;
  pp.ep_overlap = true;
  auto plain = EstimateTraining(M("qwen3-30b-a3b"), C(g), pp, E(g));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("--interleave"), std::string::npos) << plain.status().message();
  pp.fit.par.interleave = 2;
  EXPECT_TRUE(EstimateTraining(M("qwen3-30b-a3b"), C(g), pp, E(g)).ok());
  c.fit.recompute = Recompute::kFull;
  auto full = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, E(g));
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("--recompute full"), std::string::npos) << full.status().message();
}

// P(a token's k experts include one of a group's) = 1 - C(E - E/g, k) / C(E, k), by hand.
TEST(MoeDispatch, ExpertGroupHitProbabilityIsTheHypergeometricComplement) {
  EXPECT_DOUBLE_EQ(ExpertGroupHitProbability(8, 2, 8), 1 - 21.0 / 28);     // C(7,2) / C(8,2): one expert per group
  EXPECT_NEAR(ExpertGroupHitProbability(8, 2, 2), 1 - 6.0 / 28, 1e-12);    // C(4,2) / C(8,2)
  EXPECT_NEAR(ExpertGroupHitProbability(128, 8, 16), 1 - 0.58772, 1e-5);   // C(120,8) / C(128,8) = 0.58772
  EXPECT_NEAR(ExpertGroupHitProbability(128, 8, 8), 1 - 0.33258, 1e-5);    // C(112,8) / C(128,8) = 0.33258
  EXPECT_DOUBLE_EQ(ExpertGroupHitProbability(128, 8, 1), 1);               // one group holds every expert
  EXPECT_DOUBLE_EQ(ExpertGroupHitProbability(8, 5, 2), 1);                 // 5 experts cannot all miss 4
}

// The flex dispatcher (DeepEP, HybridEP) sends a token once per GPU holding one of its experts and, across nodes,
// once per node: with one expert per GPU inside a node that is the all-to-all's traffic; with several experts per
// GPU, or several nodes, it is less, never more.
TEST_F(Perf, FlexDispatchSendsATokenOncePerGpuAndOncePerNode) {
  const Cluster c = C(G("h100-sxm"), "ib-ndr");
  const Efficiency e = E(G("h100-sxm"));
  const double token_bytes = 64e6;
  // 8 experts on 8 GPUs of one node, top-2: each token goes to 2 of them, as the all-to-all's 2 copies, at the link's
  // bus bandwidth (DeepEP's and HybridEP's own kernels, not NCCL's: the measured NCCL curves do not apply).
  EXPECT_NEAR(FlexDispatchTime(c, e, token_bytes, 8, 2, 8, 1),
              AllToAllTime(2 * token_bytes, 8, 450e9 * e.link, c.intra_latency_s), 1e-12);
  // 128 experts, top-8, 16 GPUs on two nodes: over NVLink a copy to each of the other 14 GPUs off the receiving
  // index that holds an expert; over the NIC one copy when the other node holds one.
  const double p_gpu = ExpertGroupHitProbability(128, 8, 16), p_node = ExpertGroupHitProbability(128, 8, 2);
  const double on = token_bytes * 14 * p_gpu / (450e9 * e.link), off = token_bytes * p_node / (50e9 * e.network);
  EXPECT_NEAR(FlexDispatchTime(c, e, token_bytes, 128, 8, 16, 1), std::max(on, off) + 15 * c.inter_latency_s, 1e-12);
  for (int n : {8, 16, 32, 64})
    for (int k : {2, 8})
      EXPECT_LE(FlexDispatchTime(c, e, token_bytes, 128, k, n, 1), GroupAllToAllTime(c, e, k * token_bytes, n, 1))
          << n << " GPUs, top-" << k;
  EXPECT_EQ(FlexDispatchTime(c, e, token_bytes, 128, 8, 1, 1), 0);
}

// In a layer: flex is never slower than the all-to-all, its table row says so, and it changes nothing for a dense
// model or EP 1 (the CLI refuses it there). Besides the exchange, only the all-to-all's sort of the received copies
// by local expert differs (the token permute row's bytes).
TEST_F(Perf, FlexDispatcherOnlyChangesTheExpertExchange) {
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(16, 1, 1, 256, 4096);
  c.fit.par.ep = 16;
  c.fit.micro_batch = 1;
  auto a2a = EstimateTraining(M("qwen3-30b-a3b"), C(g, "ib-ndr"), c, E(g));
  c.moe_dispatcher = MoeDispatcher::kFlex;
  auto flex = EstimateTraining(M("qwen3-30b-a3b"), C(g, "ib-ndr"), c, E(g));
  ASSERT_TRUE(a2a.ok() && flex.ok());
  EXPECT_LT(flex->step_time_s, a2a->step_time_s);
  EXPECT_LT(flex->breakdown_s.compute, a2a->breakdown_s.compute);
  for (const OpCost& o : flex->ops) {
    if (o.bound == Bound::kCommunication || o.bound == Bound::kCalibrated || o.name.find("permute") != std::string::npos)
      continue;
    const OpCost* same = FindOp(a2a->ops, o.name.c_str());
    ASSERT_NE(same, nullptr) << o.name;
    EXPECT_DOUBLE_EQ(same->time_s, o.time_s) << o.name;
  }
  // 4096 tokens x 8 copies (on the busiest rank: x the imbalance) x 2048 x 2 B, read and written, sorted and unsorted.
  EXPECT_DOUBLE_EQ(FindOp(a2a->ops, "[moe] token permute + unpermute")->bytes -
                       FindOp(flex->ops, "[moe] token permute + unpermute")->bytes,
                   2.0 * 2 * 4096 * 8 * c.moe_imbalance * 2048 * 2);
  EXPECT_NE(FindOp(flex->ops, "[moe] expert dispatch + combine (flex)"), nullptr);
  EXPECT_NE(FindOp(a2a->ops, "[moe] expert all-to-all (x2)"), nullptr);
  TrainConfig d = Train(8, 1, 1, 64, 4096);
  auto dense = EstimateTraining(M("llama-3.1-8b"), C(g), d, E(g));
  d.moe_dispatcher = MoeDispatcher::kFlex;
  auto dense_flex = EstimateTraining(M("llama-3.1-8b"), C(g), d, E(g));
  ASSERT_TRUE(dense.ok() && dense_flex.ok());
  EXPECT_DOUBLE_EQ(dense->step_time_s, dense_flex->step_time_s);
  EXPECT_FALSE(ParseMoeDispatcher("deepx").ok());
  EXPECT_NE(ParseMoeDispatcher("deepx").status().message().find("did you mean 'deepep'"), std::string::npos);
  EXPECT_EQ(*ParseMoeDispatcher("hybridep"), MoeDispatcher::kFlex);
  EXPECT_EQ(*ParseMoeDispatcher("a2a"), MoeDispatcher::kAllToAll);
}

// The calibrated MoE-layer overhead (Efficiency::moe_layer_time_*): it multiplies an MoE layer's computation but for
// the shared experts' GEMMs and nothing else, the full-iteration value applies only with --cuda-graphs full, partial graphs share the eager value,
// the operator table carries the added time as its own row, and dense models are untouched.
TEST_F(Perf, MoeLayerOverheadScalesOnlyMoeComputation) {
  const GpuSpec& g = G("h100-sxm");
  Efficiency e = E(g);
  TrainConfig c = Train(8, 1, 1, 64, 4096);
  c.fit.par.ep = 8;
  c.fit.micro_batch = 1;
  e.moe_layer_time_eager = 1;
  e.moe_layer_time_full_graph = 1;
  auto bare = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, e);
  e.moe_layer_time_eager = 2;
  auto eager = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, e);
  c.cuda_graphs = CudaGraphs::kPartial;
  auto partial = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, e);
  c.cuda_graphs = CudaGraphs::kFull;
  auto full = EstimateTraining(M("qwen3-30b-a3b"), C(g), c, e);
  ASSERT_TRUE(bare.ok() && eager.ok() && partial.ok() && full.ok());
  // Every layer of Qwen3 30B-A3B is an MoE layer; the head is not one, so compute and overhead together are a little
  // under twice the compute, and the overhead is its own breakdown term.
  EXPECT_DOUBLE_EQ(bare->breakdown_s.moe_overhead, 0);
  EXPECT_NEAR(eager->breakdown_s.compute, bare->breakdown_s.compute, 1e-9 * bare->breakdown_s.compute);
  EXPECT_GT(eager->breakdown_s.moe_overhead, 0.9 * bare->breakdown_s.compute);
  EXPECT_LT(eager->breakdown_s.moe_overhead, 1.0 * bare->breakdown_s.compute);
  EXPECT_DOUBLE_EQ(partial->step_time_s, eager->step_time_s);
  EXPECT_DOUBLE_EQ(full->step_time_s, bare->step_time_s);
  EXPECT_DOUBLE_EQ(eager->model_flops_per_step, bare->model_flops_per_step);
  const OpCost* row = FindOp(eager->ops, "MoE layers beyond their operators (calibrated x2.00, CUDA graphs none)");
  ASSERT_NE(row, nullptr);
  EXPECT_NEAR(row->time_s * row->count, eager->breakdown_s.moe_overhead, 1e-9 * eager->breakdown_s.moe_overhead);
  TrainConfig d = Train(8, 1, 1, 64, 4096);
  auto dense = EstimateTraining(M("llama-3.1-8b"), C(g), d, e);
  e.moe_layer_time_eager = 1;
  auto dense_bare = EstimateTraining(M("llama-3.1-8b"), C(g), d, e);
  ASSERT_TRUE(dense.ok() && dense_bare.ok());
  EXPECT_DOUBLE_EQ(dense->step_time_s, dense_bare->step_time_s);
  EXPECT_EQ(*ParseCudaGraphs("full_iteration"), CudaGraphs::kFull);
  EXPECT_NE(ParseCudaGraphs("ful").status().message().find("did you mean 'full'"), std::string::npos);
  // The shared experts' GEMMs are ordinary dense GEMMs and are not multiplied: on Llama 4 Scout (a shared expert as wide
  // as the routed one in every layer) the overhead at x2 is the MoE layers' time without those GEMMs, so a wider shared
  // expert adds its GEMM time once, not twice.
  TrainConfig sc = Train(16, 1, 1, 32, 4096);
  sc.fit.par.ep = 16;
  sc.fit.micro_batch = 1;
  sc.fit.recompute = Recompute::kFull;
  ModelSpec scout = M("llama-4-scout");
  e.moe_layer_time_eager = 2;
  auto s1 = EstimateTraining(scout, C(g), sc, e);
  scout.moe->shared_ffn *= 2;
  auto s2 = EstimateTraining(scout, C(g), sc, e);
  e.moe_layer_time_eager = 1;
  auto s2_bare = EstimateTraining(scout, C(g), sc, e);
  scout.moe->shared_ffn /= 2;
  auto s1_bare = EstimateTraining(scout, C(g), sc, e);
  ASSERT_TRUE(s1.ok() && s2.ok() && s1_bare.ok() && s2_bare.ok());
  const double added = s2_bare->step_time_s - s1_bare->step_time_s;  // the wider shared expert, at x1
  ASSERT_GT(added, 0);
  // Its activation's element-wise pass is part of the multiplied layer, its GEMMs are not: the overhead grows by a
  // small fraction of what the GEMMs add, where multiplying them would have doubled it.
  EXPECT_LT(s2->breakdown_s.moe_overhead - s1->breakdown_s.moe_overhead, 0.15 * added);
  EXPECT_LT(s2->step_time_s - s1->step_time_s, 1.15 * added);
}

TEST_F(Perf, AllToAllAcrossNodesIsBoundByEachGpusNic) {
  const Cluster c = C(G("h100-sxm"), "ib-ndr");
  const Efficiency e = E(G("h100-sxm"));
  const double bytes = 128e6;
  // Inside one node: nccl-tests' all-to-all (data/nccl_curves.toml), slower than the ring formula at the link rate.
  EXPECT_DOUBLE_EQ(GroupAllToAllTime(c, e, bytes, 8, 1), MeasuredCollectiveTime(c, e, CurveOp::kAllToAll, bytes, 8));
  EXPECT_GT(GroupAllToAllTime(c, e, bytes, 8, 1), AllToAllTime(bytes, 8, 450e9 * e.link, c.intra_latency_s));
  // 16 ranks on two nodes: half of each rank's bytes leave the node through its own 400 Gb/s NIC (50 GB/s),
  // the node's other NICs carry their own ranks' halves.
  EXPECT_NEAR(GroupAllToAllTime(c, e, bytes, 16, 1), bytes * 0.5 / (50e9 * e.network) + 15 * c.inter_latency_s, 1e-9);
  // More nodes: a larger share leaves the node; never faster than inside one node.
  EXPECT_GT(GroupAllToAllTime(c, e, bytes, 32, 1), GroupAllToAllTime(c, e, bytes, 16, 1));
  EXPECT_GT(GroupAllToAllTime(c, e, bytes, 16, 1), GroupAllToAllTime(c, e, bytes, 8, 1));
  // One rank per node (stride 8): all of the off-rank bytes go through the NIC.
  EXPECT_NEAR(GroupAllToAllTime(c, e, bytes, 4, 8), bytes * 0.75 / (50e9 * e.network) + 3 * c.inter_latency_s, 1e-9);
}

TEST_F(Perf, GemmRoofline) {
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  const double peak = *g.PeakFlops(Precision::kBf16);
  // A large square GEMM runs at the GEMM efficiency of the peak, less the last wave's idle SMs
  // (4096 tiles of 128x128 on 132 SMs: 31.03 waves -> 32), plus the launch floor.
  const GemmTime big = EstimateGemm(8192, 8192, 8192, 1, 2, peak, e.gemm, g, e);
  EXPECT_EQ(big.bound, Bound::kCompute);
  const double ideal = big.flops / (peak * e.gemm);
  EXPECT_NEAR(big.utilisation, 4096.0 / (32 * 132), 1e-9);
  EXPECT_NEAR(big.time_s, RooflineTime(ideal / big.utilisation, big.bytes / (g.memory_bandwidth_bytes_per_s.value * e.memory)) +
                              e.kernel_launch_s, 1e-12);
  // A matrix-vector product (decode at batch 1) is memory-bound.
  const GemmTime gemv = EstimateGemm(1, 8192, 8192, 1, 2, peak, e.gemm, g, e);
  EXPECT_EQ(gemv.bound, Bound::kMemory);
  EXPECT_LT(gemv.flops / gemv.bytes, peak / g.memory_bandwidth_bytes_per_s.value);
  // The smooth roofline is max() far from the ridge point and slower near it.
  EXPECT_NEAR(RooflineTime(1.0, 0.01), 1.0, 1e-3);
  EXPECT_GT(RooflineTime(1.0, 1.0), 1.2);  // at the ridge point: well above max() ...
  EXPECT_LT(RooflineTime(1.0, 1.0), 2.0);  // ... and below no overlap at all
}

TEST_F(Perf, RidgePointIsAtThePrecisionTheGemmsRunAt) {
  // Achievable: peak x GEMM efficiency / (bandwidth x memory efficiency); datasheet: peak / bandwidth.
  const GpuSpec& h100 = G("h100-sxm");
  const Efficiency e = E(h100);
  const double bw = h100.memory_bandwidth_bytes_per_s.value;
  const RidgePoint fp8 = RidgePointFor(h100, e, Precision::kFp8);
  EXPECT_STREQ(fp8.precision, "FP8");
  EXPECT_NEAR(fp8.achievable_flops_per_byte, *h100.PeakFlops(Precision::kFp8) * e.gemm_fp8 / (bw * e.memory), 1e-9);
  EXPECT_NEAR(fp8.datasheet_flops_per_byte, *h100.PeakFlops(Precision::kFp8) / bw, 1e-9);
  const RidgePoint b16 = RidgePointFor(h100, e, Precision::kBf16);
  EXPECT_STREQ(b16.precision, "16-bit");
  EXPECT_NEAR(b16.achievable_flops_per_byte, *h100.PeakFlops(Precision::kBf16) * e.gemm / (bw * e.memory), 1e-9);
  EXPECT_GT(fp8.datasheet_flops_per_byte, 1.9 * b16.datasheet_flops_per_byte);  // FP8 doubles the dense rate
  // A GPU without FP8 falls back to its 16-bit ridge point and says so.
  const GpuSpec& a100 = G("a100-sxm-80gb");
  const RidgePoint a = RidgePointFor(a100, E(a100), Precision::kFp8);
  EXPECT_STREQ(a.precision, "16-bit");
  EXPECT_NEAR(a.datasheet_flops_per_byte, *a100.PeakFlops(Precision::kBf16) / a100.memory_bandwidth_bytes_per_s.value,
              1e-9);
}

TEST_F(Perf, FlopConventions) {
  const ModelSpec m = M("llama-2-7b");
  const ParamCounts c = CountParams(m);
  // 6N + 12*L*d_attn*s, N without the (untied) input embedding.
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(m, 4096, FlopConvention::k6N),
                   6 * (c.total - c.embedding) + 12.0 * 32 * 4096 * 4096);
  // Megatron: 72*L*h^2*(1 + s/6h + V/12hL) per token.
  const double h = 4096, L = 32, V = 32000, s = 2048;
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(m, s, FlopConvention::kMegatron), 72 * L * h * h * (1 + s / (6 * h) + V / (12 * h * L)));
}

TEST_F(Perf, PipelineBubbleIsPMinusOneMicroBatches) {
  const ModelSpec m = M("llama-2-70b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(64, 8, 4, 32, 4096);  // DP=2, 16 micro-batches of 1
  auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double per_mb = (r->breakdown_s.compute + r->breakdown_s.communication_exposed - 0) / r->num_micro_batches;
  EXPECT_EQ(r->num_micro_batches, 16);
  EXPECT_NEAR(r->breakdown_s.pipeline_bubble, 3 * per_mb, 0.05 * r->breakdown_s.pipeline_bubble);
  // Interleaving with v virtual stages divides the bubble by v.
  c.fit.par.interleave = 2;
  auto ri = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(ri.ok()) << ri.status().message();
  EXPECT_NEAR(ri->breakdown_s.pipeline_bubble, r->breakdown_s.pipeline_bubble / 2, 0.05 * r->breakdown_s.pipeline_bubble);
}

// Unequal ranks: the last of LLaMA 3.1 8B's four stages also runs the 128K-vocabulary head and loss, so it paces
// the step, and the bubble is the other three ranks' time once each (fill and drain), not three of the last's.
TEST_F(Perf, PipelineBubbleIsTheOtherRanksFillAndDrain) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const TrainConfig c = Train(8, 1, 4, 32, 4096);  // DP 2, 16 micro-batches
  auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->pipeline_ranks.size(), 4u);
  const auto& pr = r->pipeline_ranks;
  EXPECT_GT(pr[3].seconds_per_micro_batch, 1.05 * pr[0].seconds_per_micro_batch);
  const double others = pr[0].seconds_per_micro_batch + pr[1].seconds_per_micro_batch + pr[2].seconds_per_micro_batch;
  // Plus three point-to-point hops per micro-batch, within NVLink: well under 1% here.
  EXPECT_NEAR(r->breakdown_s.pipeline_bubble, others, 0.01 * others);
  EXPECT_LT(r->breakdown_s.pipeline_bubble, 3 * pr[3].seconds_per_micro_batch * 0.97);
}

TEST_F(Perf, MoreBandwidthNeverSlowsAStep) {
  const ModelSpec m = M("llama-3.1-8b");
  GpuSpec g = G("h100-sxm");
  const TrainConfig c = Train(16, 2, 1, 64, 4096);
  const double base = EstimateTraining(m, C(g), c, E(g))->step_time_s;
  g.memory_bandwidth_bytes_per_s.value *= 1.5;
  EXPECT_LE(EstimateTraining(m, C(g), c, E(g))->step_time_s, base);
  Cluster fast = C(G("h100-sxm"));
  fast.inter_bw_per_gpu *= 4;
  fast.intra_bw_per_dir *= 2;
  EXPECT_LE(EstimateTraining(m, fast, c, E(G("h100-sxm")))->step_time_s, base);
  // And a slower network never speeds it up.
  EXPECT_GE(EstimateTraining(m, C(G("h100-sxm"), "eth-10g"), c, E(G("h100-sxm")))->step_time_s, base);
}

TEST_F(Perf, DoublingTheTokensDoublesTheTime) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 64, 4096);
  c.tokens = 1e12;
  c.price_per_gpu_hour = 2;
  auto a = EstimateTraining(m, C(g), c, E(g));
  c.tokens = 2e12;
  auto b = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(b->train_time_s, 2 * a->train_time_s, 1e-6 * a->train_time_s);
  EXPECT_NEAR(b->gpu_hours, 2 * a->gpu_hours, 1e-6 * a->gpu_hours);
  EXPECT_NEAR(a->cost_usd, a->gpu_hours * 2, 1e-6 * a->cost_usd);
  EXPECT_NEAR(a->gpu_hours, a->train_time_s * 8 / 3600, 1e-9 * a->gpu_hours);
}

TEST_F(Perf, DecodeAtBatchOneIsBandwidthBoundOnEveryGpu) {
  const ModelSpec m = M("llama-3.1-8b");
  for (const auto& g : hw_->gpus()) {
    if (!g.PeakFlops(Precision::kBf16) && !g.PeakFlops(Precision::kFp16)) continue;
    InferConfig c;
    c.fit.weights = *ParseWeightFormat("int4");  // fits every card, even 8 GB
    c.input_len = 128;
    c.output_len = 128;
    auto r = EstimateInference(m, C(g), c, E(g));
    ASSERT_TRUE(r.ok()) << g.id << ": " << r.status().message();
    EXPECT_EQ(r->decode_bound, "memory") << g.id;
  }
}

// No estimate beats the hardware's own limit (InferResult's physical bound, methodology §9.5): on every catalog GPU
// with a 16-bit peak, for a dense and an MoE model, in 16-bit, weight-only 4-bit and (where the GPU has it) FP8, at
// batch 1 and 64, the predicted prefill takes at least the bound and the decode emits at most the bound's tokens/s.
TEST_F(Perf, EstimatesStayInsideThePhysicalBound) {
  int checked = 0;
  for (const char* model : {"llama-3.1-8b", "mixtral-8x7b"}) {
    const ModelSpec m = M(model);
    for (const auto& g : hw_->gpus()) {
      if (!g.PeakFlops(Precision::kBf16) && !g.PeakFlops(Precision::kFp16)) continue;
      for (const char* w : {"bf16", "int4", "fp8"}) {
        if (std::string_view(w) == "fp8" && !g.PeakFlops(Precision::kFp8)) continue;
        for (int64_t batch : {1, 64}) {
          InferConfig c;
          c.fit.weights = *ParseWeightFormat(w);
          c.fit.batch = batch;
          c.input_len = 512;
          c.output_len = 128;
          auto r = EstimateInference(m, C(g), c, E(g));
          ASSERT_TRUE(r.ok()) << g.id << ": " << r.status().message();
          ASSERT_GT(r->ttft_bound_s, 0) << g.id;
          ASSERT_GT(r->decode_tokens_per_s_bound, 0) << g.id;
          EXPECT_GE(r->ttft_s, r->ttft_bound_s) << model << " " << g.id << " " << w << " batch " << batch;
          EXPECT_LE(r->decode_tokens_per_s, r->decode_tokens_per_s_bound)
              << model << " " << g.id << " " << w << " batch " << batch;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 80);
  // A dense model reads the same weights at any batch: the decode bound grows with it; the prefill's FLOPs too.
  InferConfig one, many;
  many.fit.batch = 8;
  auto r1 = EstimateInference(M("llama-2-7b"), C(G("h100-sxm")), one, E(G("h100-sxm")));
  auto r8 = EstimateInference(M("llama-2-7b"), C(G("h100-sxm")), many, E(G("h100-sxm")));
  ASSERT_TRUE(r1.ok() && r8.ok());
  EXPECT_NEAR(r8->decode_tokens_per_s_bound, 8 * r1->decode_tokens_per_s_bound, 1e-9 * r8->decode_tokens_per_s_bound);
  // Speculation has no bound here (0).
  InferConfig spec;
  spec.spec.tokens = 3;
  spec.spec.acceptance_length = 2.5;
  auto rs = EstimateInference(M("llama-2-7b"), C(G("h100-sxm")), spec, E(G("h100-sxm")));
  ASSERT_TRUE(rs.ok()) << rs.status().message();
  EXPECT_EQ(rs->decode_tokens_per_s_bound, 0);
}

TEST_F(Perf, PrefillIsComputeBoundDecodeTimeFollowsBandwidth) {
  const ModelSpec m = M("llama-2-7b");
  InferConfig c;
  c.input_len = 2048;
  c.output_len = 128;
  auto a100 = EstimateInference(m, C(G("a100-sxm-80gb")), c, E(G("a100-sxm-80gb")));
  auto h200 = EstimateInference(m, C(G("h200-sxm")), c, E(G("h200-sxm")));
  ASSERT_TRUE(a100.ok() && h200.ok());
  EXPECT_EQ(a100->prefill_bound, "compute");
  // Decode time ratio follows the achievable bandwidth ratio (within launch overheads).
  const double bw_ratio = (4.8e12 * E(G("h200-sxm")).memory) / (2.039e12 * E(G("a100-sxm-80gb")).memory);
  EXPECT_NEAR(a100->tpot_s / h200->tpot_s, bw_ratio, 0.25 * bw_ratio);
  // The prefill emits the first of the 128 output tokens; 127 decode steps follow.
  EXPECT_NEAR(a100->e2e_latency_s, a100->ttft_s + 127 * a100->tpot_s, 1e-9);
}

// The user's serving-engine host costs (methodology §9.2): the request's cost and one pass's cost are added to the
// TTFT, one pass's to every decode step, and the derived figures follow; the GPU-side passes are untouched, the
// explain tables carry the cost as its own row, and a negative or non-finite value is an error naming its flag.
TEST_F(Perf, GivenHostOverheadsAddToTheirPassesExactly) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  InferConfig c;
  c.fit.batch = 4;
  c.input_len = 128;
  c.output_len = 64;
  auto base = EstimateInference(m, C(g), c, E(g));
  c.request_overhead_s = 1.0e-3;
  c.step_overhead_s = 0.25e-3;
  auto host = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(base.ok() && host.ok()) << host.status().message();
  EXPECT_NEAR(host->ttft_s - base->ttft_s, 1.25e-3, 1e-12);
  EXPECT_NEAR(host->tpot_s - base->tpot_s, 0.25e-3, 1e-12);
  EXPECT_NEAR(host->e2e_latency_s, host->ttft_s + 63 * host->tpot_s, 1e-12);
  EXPECT_DOUBLE_EQ(host->decode_tokens_per_s, 4 / host->tpot_s);
  EXPECT_DOUBLE_EQ(host->output_tokens_per_s_per_gpu, 4 * 64 / host->e2e_latency_s);
  EXPECT_EQ(host->prefill_bound, base->prefill_bound);
  const OpCost* pre = FindOp(host->prefill_ops, "host overhead (given)");
  const OpCost* dec = FindOp(host->decode_ops, "host overhead (given)");
  ASSERT_TRUE(pre && dec);
  EXPECT_DOUBLE_EQ(pre->time_s, 1.25e-3);
  EXPECT_DOUBLE_EQ(dec->time_s, 0.25e-3);
  EXPECT_EQ(FindOp(base->prefill_ops, "host overhead (given)"), nullptr);
  bool noted = false;
  for (const auto& n : host->notes) noted |= n.find("host overheads as given") != std::string::npos;
  EXPECT_TRUE(noted);
  for (double bad : {-1e-3, std::nan(""), double(INFINITY), 11.0}) {
    InferConfig b = c;
    b.step_overhead_s = bad;
    auto r = EstimateInference(m, C(g), b, E(g));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--step-overhead-ms"), std::string::npos) << r.status().message();
    b = c;
    b.request_overhead_s = bad;
    r = EstimateInference(m, C(g), b, E(g));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--request-overhead-ms"), std::string::npos) << r.status().message();
  }
}

// Prefill element-wise bytes per layer: norms (4h each) and two residual adds (12h) per token, plus a gated MLP's
// activation kernel (read gate and up, write the product: 6 B per element of the TP shard). A plain GELU rides in
// the GEMM epilogue and adds nothing.
TEST_F(Perf, PrefillCountsTheGatedActivationKernel) {
  auto ew_bytes = [&](const char* model, int tp) {
    InferConfig c;
    c.input_len = 2048;
    c.output_len = 1;
    c.fit.par.tp = tp;
    auto r = EstimateInference(M(model), C(G("h100-sxm")), c, E(G("h100-sxm")));
    EXPECT_TRUE(r.ok()) << r.status().message();
    for (const auto& o : r->prefill_ops)
      if (o.name == "norms, residuals, activation") return o.bytes;
    ADD_FAILURE() << "no element-wise op for " << model;
    return 0.0;
  };
  const double T = 2048, h = 4096;
  EXPECT_DOUBLE_EQ(ew_bytes("llama-2-7b", 1), T * (2 * 4 * h + 12 * h) + T * 6 * 11008);
  EXPECT_DOUBLE_EQ(ew_bytes("llama-2-7b", 2), T * (2 * 4 * h + 12 * h) + T * 6 * 11008 / 2);
  EXPECT_DOUBLE_EQ(ew_bytes("gpt-j-6b", 1), T * (1 * 4 * h + 12 * h));  // one LayerNorm, GELU in the epilogue
}

TEST_F(Perf, ImpossibleLayoutsAreErrorsAndNonFittingLayoutsReportTheShortfall) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  auto bad_tp = EstimateTraining(m, C(g), Train(24, 3, 1, 64), E(g));
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_NE(bad_tp.status().message().find("valid TP"), std::string::npos);
  EXPECT_FALSE(EstimateTraining(m, C(g), Train(64, 1, 64, 64), E(g)).ok());  // PP > layers
  auto bad_gbs = EstimateTraining(m, C(g), Train(8, 1, 1, 12, 4096, 1), E(g));
  ASSERT_FALSE(bad_gbs.ok());
  // Full training of a 70B model on 8 GPUs without sharding does not fit: fits=false, shortfall reported.
  TrainConfig c = Train(8, 1, 1, 8);
  c.fit.par.zero = 0;
  auto nofit = EstimateTraining(M("llama-2-70b"), C(g), c, E(g));
  ASSERT_TRUE(nofit.ok());
  EXPECT_FALSE(nofit->fits);
  EXPECT_GT(nofit->shortfall_bytes, 1e12);
}

TEST_F(Perf, AutomaticChoiceFitsMemory) {
  const ModelSpec m = M("llama-2-13b");
  const GpuSpec& g = G("a100-sxm-80gb");
  TrainConfig c = Train(8, 1, 1, 256, 4096);
  c.fit.par.zero = 3;
  c.micro_batch_auto = true;
  c.recompute_auto = true;
  auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->fits);
  EXPECT_GE(r->micro_batch, 1);
}

// FP8 training (Transformer Engine): each FP8 GEMM's 16-bit input (forward) and output gradient (backward)
// goes through a cast-transpose, 4 bytes per element; the output layer stays in 16-bit.
TEST_F(Perf, Fp8TrainingPaysCastTransposeTrafficAndKeepsTheHeadIn16Bit) {
  const ModelSpec m = M("llama-2-7b");  // h 4096, 32 heads x 128, 32 KV heads, ffn 11008 (gated), 32 layers
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 8, 4096);  // one micro-batch of one 4096-token sequence per rank
  c.fit.recompute = Recompute::kNone;
  auto bf16 = EstimateTraining(m, C(g), c, E(g));
  c.dtype = Precision::kFp8;
  auto fp8 = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(bf16.ok() && fp8.ok());
  auto find = [](const TrainResult& r, const char* name) { return FindOp(r.ops, name); };
  EXPECT_EQ(find(*bf16, "FP8 cast + transpose"), nullptr);
  const OpCost* cast = find(*fp8, "FP8 cast + transpose");
  ASSERT_NE(cast, nullptr);
  const double T = 4096, inputs = 4096 + 4096 + 4096 + 11008;          // qkv, out-proj, up/gate, down inputs
  const double grads = (3 * 4096) + 4096 + 2 * 11008 + 4096;           // their outputs' gradients
  EXPECT_DOUBLE_EQ(cast->bytes, 4 * T * inputs);
  const Efficiency e = E(g);
  const double bw = 3.35e12 * e.memory, launches = 4 * e.kernel_launch_s;
  const double t_fwd = 4 * T * inputs / bw + launches, t_bwd = 4 * T * grads / bw + launches;
  EXPECT_NEAR(cast->time_s, t_fwd, 1e-12);
  EXPECT_NEAR(cast->count, 32 * (1 + t_bwd / t_fwd), 1e-9);  // per layer: forward, and backward at its own bytes
  const OpCost* head16 = find(*bf16, "logits (output head)");
  const OpCost* head8 = find(*fp8, "logits (output head)");
  ASSERT_TRUE(head16 && head8);
  EXPECT_DOUBLE_EQ(head8->time_s, head16->time_s);
  EXPECT_LT(fp8->step_time_s, bf16->step_time_s);
  // The FP8 estimate quotes the only FP8 training evidence there is; the BF16 one does not.
  auto quotes = [](const TrainResult& r) {
    for (const auto& n : r.notes)
      if (n.find("Megatron-Core runs with Transformer Engine") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(quotes(*fp8));
  EXPECT_FALSE(quotes(*bf16));
}

// A linear's gradients are two GEMMs with the forward's FLOPs, each timed at the forward's compute term over its own
// bytes: the data gradient reads dY and W and writes dX; the weight gradient reads X and dY and, in a fused stack,
// writes the step's first micro-batch into the gradient buffer and reads and rewrites it on every later one (4-byte
// elements with FP32 gradients). FP8 training runs them with FP32 accumulation, on Hopper at gemm_fp8_precise of the
// fast rate the forward gets. The table lists what they take beyond twice the forward, once per gradient pass; LoRA's
// frozen linears have the data gradient only.
TEST_F(Perf, GradientGemmsMoveTheirOwnBytesAndAccumulateInFp32UnderFp8) {
  const ModelSpec m = M("llama-2-7b");  // h 4096, 32 heads x 128, 32 KV heads, ffn 11008 (gated), 32 layers
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  ASSERT_LT(e.gemm_fp8_precise, 1.0);
  const double T = 4096, bw = 3.35e12 * e.memory;
  const std::vector<std::pair<double, double>> linears = {
      {3 * 4096.0, 4096.0}, {4096.0, 4096.0}, {2 * 11008.0, 4096.0}, {4096.0, 11008.0}};  // (N, K) per linear
  // One gradient pass's GEMMs beyond twice the forward, by hand.
  auto extra = [&](Precision dtype, double rate, double wgrad_out, bool frozen) {
    const double a = dtype == Precision::kFp8 ? 1 : 2;
    const double peak = perf_detail::PeakFor(g, dtype), eff = perf_detail::GemmEfficiencyFor(e, dtype);
    double fwd = 0, bwd = 0;
    for (auto [n, k] : linears) {
      const GemmTime f = EstimateGemm(T, n, k, 1, a, peak, eff, g, e);
      fwd += f.time_s;
      bwd += RooflineTime(f.compute_s / rate, (T * n * a + k * n * a + T * k * 2) / bw) + e.kernel_launch_s;
      if (!frozen)
        bwd += RooflineTime(f.compute_s / rate, (T * k * a + T * n * a + k * n * wgrad_out) / bw) + e.kernel_launch_s;
    }
    const double passes = frozen ? 1 : 2;
    return (bwd - passes * fwd) / passes;
  };
  auto row = [&](const TrainResult& r) {
    return FindOp(r.ops, "gradient GEMMs beyond 2x forward (gradient buffer; FP32 accumulation in FP8)");
  };
  TrainConfig c = Train(8, 1, 1, 16, 4096);  // DP 8: two micro-batches of one 4096-token sequence per rank
  c.fit.recompute = Recompute::kNone;
  const double layers_x_mb = 32 * 2;
  for (bool fp32 : {false, true}) {
    c.fit.fp32_grads = fp32;
    for (Precision dtype : {Precision::kBf16, Precision::kFp8}) {
      c.dtype = dtype;
      auto r = EstimateTraining(m, C(g), c, e);
      ASSERT_TRUE(r.ok()) << r.status().message();
      const OpCost* o = row(*r);
      ASSERT_NE(o, nullptr);
      EXPECT_EQ(o->phase, "backward");
      // The gradient buffer: written by the first of the two micro-batches, read and rewritten by the second.
      const double wgrad_out = (fp32 ? 4 : 2) * (2 - 1 / 2.0);
      const double rate = dtype == Precision::kFp8 ? e.gemm_fp8_precise : 1.0;
      EXPECT_NEAR(o->time_s, extra(dtype, rate, wgrad_out, false), 1e-12) << fp32 << " " << PrecisionKey(dtype);
      EXPECT_GT(o->time_s, 0);
      EXPECT_DOUBLE_EQ(o->count, 2 * layers_x_mb);
    }
  }
  // Hopper's FP32 accumulation costs FP8 training exactly what the rate says, in both gradient GEMMs.
  c.fit.fp32_grads = false;
  c.dtype = Precision::kFp8;
  Efficiency fast = e;
  fast.gemm_fp8_precise = 1;
  auto slow_r = EstimateTraining(m, C(g), c, e);
  auto fast_r = EstimateTraining(m, C(g), c, fast);
  ASSERT_TRUE(slow_r.ok() && fast_r.ok());
  const double wgrad_out = 2 * 1.5;
  EXPECT_NEAR(slow_r->breakdown_s.compute - fast_r->breakdown_s.compute,
              2 * layers_x_mb * (extra(Precision::kFp8, e.gemm_fp8_precise, wgrad_out, false) -
                                 extra(Precision::kFp8, 1.0, wgrad_out, false)),
              1e-9);
  // LoRA: the frozen linears' data gradient only, once per micro-batch.
  TrainConfig lora = c;
  lora.fit.mode = Mode::kLora;
  lora.fit.lora_rank = 16;
  auto l = EstimateTraining(m, C(g), lora, e);
  ASSERT_TRUE(l.ok());
  ASSERT_NE(row(*l), nullptr);
  EXPECT_NEAR(row(*l)->time_s, extra(Precision::kFp8, e.gemm_fp8_precise, 0, true), 1e-12);
  EXPECT_DOUBLE_EQ(row(*l)->count, layers_x_mb);
  // One micro-batch per step only writes the buffer; eager PyTorch writes a 16-bit gradient whatever it keeps.
  EXPECT_DOUBLE_EQ(perf_detail::WeightGradOutputBytes(false, 4, 1), 4);
  EXPECT_DOUBLE_EQ(perf_detail::WeightGradOutputBytes(false, 4, 8), 4 * 1.875);
  EXPECT_DOUBLE_EQ(perf_detail::WeightGradOutputBytes(true, 4, 8), 2);
  // Under ZeRO-3 each micro-batch's gradients leave as its backward ends: the buffer is overwritten every time.
  EXPECT_DOUBLE_EQ(perf_detail::WeightGradOutputBytes(false, 4, 8, true), 4);
  // Blackwell has no fast-accumulation mode: the bundled rate there is 1; every Hopper entry has one below 1.
  for (const char* id : {"b200", "gb200", "a100-sxm-80gb", "l40s"})
    EXPECT_DOUBLE_EQ(E(G(id)).gemm_fp8_precise, 1.0) << id;
  for (const char* id : {"h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl"})
    EXPECT_LT(E(G(id)).gemm_fp8_precise, 1.0) << id;
  // Ada accumulates FP8 as Hopper does, unmeasured: an FP8 estimate there says so; Hopper's and a 16-bit one do not.
  auto ada_note = [](const TrainResult& r) {
    for (const auto& n : r.notes)
      if (n.find("no measurement exists for l40s's Ada tensor cores") != std::string::npos) return true;
    return false;
  };
  const GpuSpec& l40s = G("l40s");
  TrainConfig small = Train(8, 1, 1, 16, 2048);
  small.fit.recompute = Recompute::kFull;
  small.dtype = Precision::kFp8;
  small.detail = true;
  auto ada8 = EstimateTraining(M("llama-3.2-1b"), C(l40s), small, E(l40s));
  ASSERT_TRUE(ada8.ok()) << ada8.status().message();
  EXPECT_TRUE(ada_note(*ada8));
  small.dtype = Precision::kBf16;
  auto ada16 = EstimateTraining(M("llama-3.2-1b"), C(l40s), small, E(l40s));
  ASSERT_TRUE(ada16.ok());
  EXPECT_FALSE(ada_note(*ada16));
  EXPECT_FALSE(ada_note(*slow_r));
}

// Blackwell's FP8 GEMMs take operands in any layout, so Transformer Engine's tensor-scaled casts write no transposed
// copy there (is_non_tn_fp8_gemm_supported: compute capability 10.x and 13+): 3 bytes per element against Hopper's 4;
// MXFP8 writes both layouts on every GPU.
TEST_F(Perf, TensorScaledFp8CastsWriteNoTransposeWhereGemmsTakeAnyLayout) {
  const ModelSpec m = M("llama-2-7b");
  TrainConfig c = Train(8, 1, 1, 8, 4096);
  c.fit.recompute = Recompute::kNone;
  c.dtype = Precision::kFp8;
  const double T = 4096, inputs = 4096 + 4096 + 4096 + 11008;  // qkv, out-proj, up/gate, down inputs
  auto cast_bytes = [&](const char* gpu, Fp8Recipe recipe) {
    TrainConfig cc = c;
    cc.fp8_recipe = recipe;
    const GpuSpec& g = G(gpu);
    auto r = EstimateTraining(m, C(g), cc, E(g));
    EXPECT_TRUE(r.ok()) << gpu << ": " << r.status().message();
    const OpCost* o = r.ok() ? FindOp(r->ops, "FP8 cast + transpose") : nullptr;
    return o ? o->bytes : -1.0;
  };
  EXPECT_DOUBLE_EQ(cast_bytes("h100-sxm", Fp8Recipe::kDelayed), 4 * T * inputs);
  EXPECT_DOUBLE_EQ(cast_bytes("b200", Fp8Recipe::kDelayed), 3 * T * inputs);
  EXPECT_DOUBLE_EQ(cast_bytes("gb200", Fp8Recipe::kDelayed), 3 * T * inputs);
  EXPECT_GT(cast_bytes("b200", Fp8Recipe::kMxfp8), 4 * T * inputs);  // both layouts, and their E8M0 scales
  EXPECT_FALSE(perf_detail::NonTnFp8Gemms(G("h100-sxm")));
  EXPECT_FALSE(perf_detail::NonTnFp8Gemms(G("l40s")));
  EXPECT_FALSE(perf_detail::NonTnFp8Gemms(G("rtx-5090")));  // consumer Blackwell, 12.0: TN only
  EXPECT_TRUE(perf_detail::NonTnFp8Gemms(G("b200")));
  EXPECT_TRUE(perf_detail::NonTnFp8Gemms(G("gb200")));
}

// The FP8 weight cache follows the GPU's FP8 layouts: Hopper and Ada keep the row-wise copy and its transpose (2 B
// per layer weight), Blackwell the row-wise copy only (1 B), MXFP8 both with their block scales; FP8 parameters are
// themselves the row-wise copy. perf train sets it for Transformer Engine FP8 training only, and
// --no-fp8-weight-cache (disable_parameter_transpose_cache) drops it.
TEST_F(Perf, Fp8WeightCacheFollowsTheGpusLayouts) {
  EXPECT_EQ(Fp8WeightCacheBytesPerParam(G("h100-sxm"), Fp8Recipe::kDelayed, false), 2);
  EXPECT_EQ(Fp8WeightCacheBytesPerParam(G("h100-sxm"), Fp8Recipe::kCurrent, true), 1);
  EXPECT_EQ(Fp8WeightCacheBytesPerParam(G("l40s"), Fp8Recipe::kDelayed, false), 2);
  EXPECT_EQ(Fp8WeightCacheBytesPerParam(G("b200"), Fp8Recipe::kDelayed, false), 1);
  EXPECT_EQ(Fp8WeightCacheBytesPerParam(G("gb200"), Fp8Recipe::kCurrent, true), 0);
  EXPECT_DOUBLE_EQ(Fp8WeightCacheBytesPerParam(G("b200"), Fp8Recipe::kMxfp8, false), 2 * (1 + 1.0 / 32));

  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& h = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 8, 4096);
  c.fit.recompute = Recompute::kNone;
  auto cache = [&](const TrainConfig& cc) {
    auto r = EstimateTraining(m, C(h), cc, E(h));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->memory.breakdown.fp8_weight_cache : -1.0;
  };
  EXPECT_EQ(cache(c), 0);  // BF16
  c.dtype = Precision::kFp8;
  EXPECT_NEAR(cache(c), 2 * CountParams(m).per_layer_total * 32, 2 * 4096);  // and the final norm
  TrainConfig eager = c;
  eager.eager = true;  // torchao's Float8 casts on the fly
  EXPECT_EQ(cache(eager), 0);
  TrainConfig off = c;
  off.fp8_weight_cache = false;
  EXPECT_EQ(cache(off), 0);
  off.dtype = Precision::kBf16;
  auto bad = EstimateTraining(m, C(h), off, E(h));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("--no-fp8-weight-cache applies to FP8"), std::string::npos);
}

// Megatron-Core's and NeMo's LoRA adapts fused projections: one adapter on linear_qkv (the input read once, the
// fused Q, K, V output) and one on linear_fc1 (gate and up). LLaMA-2 7B (MHA, 4096 wide, gated MLP 11008), rank 16,
// TP 2: qkv is (4096, 3 x 4096 / 2) with 16 x (4096 + 6144) parameters, fewer than q, k, v's three adapters, and
// faster (the input is read once, not three times); the module names are aliases; mixing the fused and separate
// names, or qkv on an MLA model, is an error.
TEST_F(Perf, LoraOnFusedProjectionsReadsTheInputOnce) {
  const ModelSpec m = M("llama-2-7b");
  auto shapes = LoraTargetShapes(m, {"qkv", "linear_proj", "fc1", "mlp_fc2"}, 2);
  ASSERT_TRUE(shapes.ok()) << shapes.status().message();
  ASSERT_EQ(shapes->size(), 4u);
  EXPECT_EQ((*shapes)[0], (LoraShape{4096.0, 3 * 4096.0 / 2, true}));
  EXPECT_EQ((*shapes)[1], (LoraShape{4096.0 / 2, 4096.0, false}));
  EXPECT_EQ((*shapes)[2], (LoraShape{4096.0, 2 * 11008.0 / 2, true}));
  EXPECT_EQ((*shapes)[3], (LoraShape{11008.0 / 2, 4096.0, false}));
  EXPECT_EQ(*LoraTargetShapes(m, {"linear_qkv"}, 1), *LoraTargetShapes(m, {"qkv"}, 1));
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 2, 1, 32, 4096, 1);
  c.fit.par.sequence_parallel = true;
  c.fit.recompute = Recompute::kNone;
  c.fit.mode = Mode::kLora;
  c.fit.lora_rank = 16;
  c.detail = true;
  c.fit.lora_targets = {"q", "k", "v"};
  auto separate = EstimateTraining(m, C(g), c, E(g));
  c.fit.lora_targets = {"qkv"};
  auto fused = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(separate.ok() && fused.ok());
  EXPECT_DOUBLE_EQ(fused->memory.trainable_params, 32 * 16 * (4096.0 + 3 * 4096.0));
  EXPECT_DOUBLE_EQ(separate->memory.trainable_params, 32 * 16 * 3 * (4096.0 + 4096.0));
  const OpCost* one = FindOp(fused->ops, "LoRA adapters (rank 16, 1 per layer)");
  const OpCost* three = FindOp(separate->ops, "LoRA adapters (rank 16, 3 per layer)");
  ASSERT_TRUE(one && three);
  // Two down-projections fewer: 2 x 2 T h r FLOPs, and each one's input read, weight read and rank-r output
  // written, which the up-projections read back (T = 4096 tokens, gathered from the sequence-parallel shards).
  const double T = 4096, h = 4096, r = 16;
  EXPECT_DOUBLE_EQ(three->flops - one->flops, 2 * 2 * T * h * r);
  EXPECT_DOUBLE_EQ(three->bytes - one->bytes, 2 * (T * h * 2 + h * r * 2 + T * r * 2) + 2 * T * r * 2);
  EXPECT_LT(fused->step_time_s, separate->step_time_s);
  auto err = [&](std::vector<std::string> targets, const ModelSpec& model, const char* part) {
    auto r = LoraTargetShapes(model, targets, 1);
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
  };
  err({"qkv", "q"}, m, "give it or q, k, v");
  err({"fc1", "up"}, m, "give it or gate, up");
  err({"linear_proj", "o"}, m, "'o' is given twice");
  err({"linear_qvk"}, m, "did you mean 'linear_qkv'");
  err({"qkv"}, M("deepseek-v3"), "no fused QKV projection");
  // Adapter dropout on the input: a pass reading it and writing the dropped copy and a 1-byte mask in the forward,
  // and its gradient's pass in the backward, 5 B per input element each way. The qkv adapter drops the layer's
  // sequence-parallel input before gathering it: T / 2 x 4096 elements at TP 2; without sequence parallelism all T.
  c.fit.lora_dropout = 0.1;
  auto dropped = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(dropped.ok()) << dropped.status().message();
  const OpCost* with_drop = FindOp(dropped->ops, "LoRA adapters (rank 16, 1 per layer, input dropout)");
  ASSERT_NE(with_drop, nullptr);
  EXPECT_DOUBLE_EQ(with_drop->bytes - one->bytes, 5 * T / 2 * h);
  TrainConfig no_sp = c;
  no_sp.fit.par.sequence_parallel = false;
  no_sp.fit.lora_dropout = 0;
  auto whole = EstimateTraining(m, C(g), no_sp, E(g));
  no_sp.fit.lora_dropout = 0.1;
  auto whole_dropped = EstimateTraining(m, C(g), no_sp, E(g));
  ASSERT_TRUE(whole.ok() && whole_dropped.ok());
  EXPECT_DOUBLE_EQ(FindOp(whole_dropped->ops, "LoRA adapters (rank 16, 1 per layer, input dropout)")->bytes -
                       FindOp(whole->ops, "LoRA adapters (rank 16, 1 per layer)")->bytes,
                   5 * T * h);
  EXPECT_GT(dropped->step_time_s, fused->step_time_s);
}

// Transformer Engine casts each layer weight to FP8 once per step with its weight cache (the first micro-batch; the
// pipeline's fill waits for every rank's casts) and on every micro-batch without it: reading the 16-bit weight
// (twice with current scaling, for the amax) and writing the GPU's FP8 layouts (Hopper's row-wise copy and
// transpose, Blackwell's row-wise copy); under FP8 parameters Hopper only transposes (1 B read, 1 B written) and
// Blackwell does nothing. LLaMA-2 7B on 8 H100s, 8 micro-batches per step.
TEST_F(Perf, Fp8WeightCastsOncePerStepWithTheCacheAndEveryMicroBatchWithout) {
  using perf_detail::Fp8WeightCastBytesPerParam;
  EXPECT_EQ(Fp8WeightCastBytesPerParam(G("h100-sxm"), Fp8Recipe::kDelayed, false), 4);
  EXPECT_EQ(Fp8WeightCastBytesPerParam(G("h100-sxm"), Fp8Recipe::kCurrent, false), 6);
  EXPECT_EQ(Fp8WeightCastBytesPerParam(G("b200"), Fp8Recipe::kDelayed, false), 3);
  EXPECT_EQ(Fp8WeightCastBytesPerParam(G("h100-sxm"), Fp8Recipe::kDelayed, true), 2);
  EXPECT_EQ(Fp8WeightCastBytesPerParam(G("b200"), Fp8Recipe::kCurrent, true), 0);
  EXPECT_EQ(Fp8WeightCastBytesPerParam(G("b200"), Fp8Recipe::kMxfp8, true), 0);

  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& h = G("h100-sxm");
  const ParamCounts pc = CountParams(m);
  const double linear_weights = pc.attention + pc.mlp_dense;  // the router-free dense model's TE linears
  constexpr const char* kCached = "FP8 weight casts, first micro-batch (cached for the step)";
  constexpr const char* kEvery = "FP8 weight casts, every micro-batch (no weight cache)";
  TrainConfig c = Train(8, 1, 1, 64, 4096);
  c.fit.recompute = Recompute::kNone;
  c.dtype = Precision::kFp8;
  c.detail = true;
  auto run = [&](const TrainConfig& cc) {
    auto r = EstimateTraining(m, C(h), cc, E(h));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : TrainResult{};
  };
  const TrainResult cached = run(c);
  const OpCost* once = FindOp(cached.ops, kCached);
  ASSERT_NE(once, nullptr);
  EXPECT_NEAR(once->bytes, 4 * linear_weights, 1e-6 * linear_weights);
  EXPECT_GT(once->time_s, once->bytes / h.memory_bandwidth_bytes_per_s.value);
  EXPECT_EQ(FindOp(cached.ops, kEvery), nullptr);
  TrainConfig off = c;
  off.fp8_weight_cache = false;
  const TrainResult every = run(off);
  const OpCost* each = FindOp(every.ops, kEvery);
  ASSERT_NE(each, nullptr);
  EXPECT_NEAR(each->bytes, 8 * once->bytes, 1e-6 * each->bytes);
  EXPECT_NEAR(each->time_s, 8 * once->time_s, 1e-9);
  EXPECT_NEAR(every.step_time_s - cached.step_time_s, 7 * once->time_s, 1e-3 * once->time_s);
  // FP8 parameters: the transpose alone; BF16: no casts.
  TrainConfig params = c;
  params.fit.weights = *ParseWeightFormat("fp8");
  const TrainResult with_params = run(params);
  const OpCost* transpose = FindOp(with_params.ops, kCached);
  ASSERT_NE(transpose, nullptr);
  EXPECT_NEAR(transpose->bytes, 2 * linear_weights, 1e-6 * linear_weights);
  TrainConfig bf16 = c;
  bf16.dtype = Precision::kBf16;
  EXPECT_EQ(FindOp(run(bf16).ops, kCached), nullptr);
  // Two pipeline stages without interleaving: the fill waits for the other rank's casts too, so the step pays both
  // ranks' (each holding half the layers); with interleaving over 4 chunks, the other rank's first chunk's.
  TrainConfig pp = Train(8, 1, 2, 64, 4096);
  pp.fit.recompute = Recompute::kNone;
  pp.dtype = Precision::kFp8;
  pp.detail = true;
  const TrainResult two_ranks = run(pp);
  const OpCost* two = FindOp(two_ranks.ops, kCached);
  ASSERT_NE(two, nullptr);
  EXPECT_NEAR(two->bytes, 4 * linear_weights, 1e-6 * linear_weights);
  pp.fit.par.interleave = 4;
  const TrainResult interleaved = run(pp);
  const OpCost* chunked = FindOp(interleaved.ops, kCached);
  ASSERT_NE(chunked, nullptr);
  EXPECT_NEAR(chunked->bytes, 4 * linear_weights * (0.5 + 0.5 / 4), 1e-6 * linear_weights);
}

// FP8 recipes (Transformer Engine): current scaling reads every tensor no norm kernel produced once more for its
// amax (2 B per element) and runs an amax and a scale kernel per cast (a scale kernel only after a norm); MXFP8
// writes one E8M0 scale per 32 values in each of two layouts; delayed scaling is the cast-transpose alone.
TEST(Fp8Recipes, CastCostsFollowTransformerEngineQuantizers) {
  using perf_detail::Fp8CastExtra;
  const auto d = Fp8CastExtra(Fp8Recipe::kDelayed, 100, 400, 500, 2);
  EXPECT_EQ(d.fwd_bytes + d.bwd_bytes, 0);
  EXPECT_EQ(d.fwd_kernels + d.bwd_kernels, 0);
  const auto cs = Fp8CastExtra(Fp8Recipe::kCurrent, 100, 400, 500, 2);
  EXPECT_DOUBLE_EQ(cs.fwd_bytes, 200);   // the two forward inputs without a fused norm
  EXPECT_DOUBLE_EQ(cs.bwd_bytes, 1000);  // every gradient: none comes from a TE norm
  EXPECT_EQ(cs.fwd_kernels, 2 * 2 + 2);  // amax + scale for two casts, scale for the two norm-fed ones
  EXPECT_EQ(cs.bwd_kernels, 8);
  EXPECT_EQ(Fp8CastExtra(Fp8Recipe::kCurrent, 100, 400, 500, 1).fwd_kernels, 2 * 3 + 1);  // MoE layer
  const auto mx = Fp8CastExtra(Fp8Recipe::kMxfp8, 100, 400, 500, 2);
  EXPECT_DOUBLE_EQ(mx.fwd_bytes, 400 * 2.0 / 32);
  EXPECT_DOUBLE_EQ(mx.bwd_bytes, 500 * 2.0 / 32);
  EXPECT_EQ(mx.fwd_kernels + mx.bwd_kernels, 0);
}

// NVFP4 (Transformer Engine's NVFP4BlockScaling): 4-bit values and an E4M3 scale per 16 (0.5625 B per element) in
// both layouts, every tensor read once for its per-tensor amax and once more with the random Hadamard transform.
TEST_F(Perf, Nvfp4CastBytesFollowTheQuantizer) {
  using namespace perf_detail;
  EXPECT_DOUBLE_EQ(kNvfp4BytesPerElement, 0.5625);
  EXPECT_DOUBLE_EQ(Nvfp4CastBytesPerElement(false), 2 + 2 * 0.5625);
  EXPECT_DOUBLE_EQ(Nvfp4CastBytesPerElement(true), 2 + 0.5625);  // frozen weights: no weight-gradient layout
  const auto plain = Fp8CastExtra(Fp8Recipe::kNvfp4, 100, 400, 500, 2, false);
  EXPECT_DOUBLE_EQ(plain.fwd_bytes, 2 * 400);  // every input's amax: no norm kernel computes it for NVFP4
  EXPECT_DOUBLE_EQ(plain.bwd_bytes, 2 * 500);
  EXPECT_EQ(plain.fwd_kernels, 4);
  const auto rht = Fp8CastExtra(Fp8Recipe::kNvfp4, 100, 400, 500, 2, true);
  EXPECT_DOUBLE_EQ(rht.fwd_bytes, 4 * 400);  // and the transformed copy's
  EXPECT_DOUBLE_EQ(rht.bwd_bytes, 4 * 500);
  EXPECT_EQ(rht.bwd_kernels, 8);
  const GpuSpec& b200 = G("b200");
  EXPECT_DOUBLE_EQ(Fp8WeightCastBytesPerParam(b200, Fp8Recipe::kNvfp4, false), 2 + 2 + 2 * 0.5625);
  EXPECT_DOUBLE_EQ(Fp8WeightCacheBytesPerParam(b200, Fp8Recipe::kNvfp4, false), 2 * 0.5625);
  // NVFP4 parameters (--weights nvfp4): the column-wise copy alone is cached, made from the gathered row-wise one.
  EXPECT_DOUBLE_EQ(Fp8WeightCacheBytesPerParam(b200, Fp8Recipe::kNvfp4, true), 0.5625);
  EXPECT_DOUBLE_EQ(Fp8WeightCastBytesPerParam(b200, Fp8Recipe::kNvfp4, true), 2 * 0.5625);
}

TEST(Fp8Recipes, NamesAliasesAndErrors) {
  EXPECT_EQ(*ParseFp8Recipe("delayed"), Fp8Recipe::kDelayed);
  EXPECT_EQ(*ParseFp8Recipe("tensorwise"), Fp8Recipe::kCurrent);  // Megatron-Core's name
  EXPECT_EQ(*ParseFp8Recipe("fp8-cs"), Fp8Recipe::kCurrent);       // Megatron-Bridge's
  EXPECT_EQ(*ParseFp8Recipe("fp8-mx"), Fp8Recipe::kMxfp8);
  for (Fp8Recipe r : {Fp8Recipe::kDelayed, Fp8Recipe::kCurrent, Fp8Recipe::kMxfp8})
    EXPECT_EQ(*ParseFp8Recipe(Fp8RecipeName(r)), r);
  auto bad = ParseFp8Recipe("tensor");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'tensorwise'"), std::string::npos) << bad.status().message();
}

TEST(CrossEntropyImpls, NamesAliasesAndErrors) {
  EXPECT_EQ(*ParseCrossEntropyImpl("native"), CrossEntropyImpl::kFused);  // Megatron-Core's impl name
  EXPECT_EQ(*ParseCrossEntropyImpl("te"), CrossEntropyImpl::kOnline);
  for (CrossEntropyImpl c : {CrossEntropyImpl::kFused, CrossEntropyImpl::kUnfused, CrossEntropyImpl::kOnline})
    EXPECT_EQ(*ParseCrossEntropyImpl(CrossEntropyImplName(c)), c);
  auto bad = ParseCrossEntropyImpl("unfsed");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'unfused'"), std::string::npos) << bad.status().message();
}

// The loss's bytes per logit by implementation (docs/methodology.md §6.4): fused 22 + 10, unfused 38 + 14, online
// 2 + 4. On one GPU with one micro-batch the step differs from the fused one by exactly those bytes over the
// vocabulary at the achievable bandwidth, plus the kernels' launch floor; the operator table says the same, and the
// memory the loss holds follows the implementation.
TEST_F(Perf, CrossEntropyImplementationsMoveTheirBytesPerLogit) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-8b");
  TrainConfig c = Train(1, 1, 1, 2, 4096, 2);
  c.fit.par.zero = 0;
  c.fit.recompute = Recompute::kNone;
  const Efficiency e = E(g);
  auto run = [&](CrossEntropyImpl impl) {
    TrainConfig x = c;
    x.cross_entropy = impl;
    auto r = EstimateTraining(m, C(g), x, e);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult fused = run(CrossEntropyImpl::kFused), unfused = run(CrossEntropyImpl::kUnfused),
                    online = run(CrossEntropyImpl::kOnline);
  const double logits = 2.0 * 4096 * m.vocab, bw = g.memory_bandwidth_bytes_per_s.value * e.memory;
  EXPECT_NEAR(unfused.step_time_s - fused.step_time_s, logits * (52 - 32) / bw + (11 - 4) * e.kernel_launch_s,
              1e-9);
  EXPECT_NEAR(fused.step_time_s - online.step_time_s, logits * (32 - 6) / bw + (4 - 3) * e.kernel_launch_s, 1e-9);
  // The table's cross-entropy row: forward bytes, and a count that carries the backward's share.
  const OpCost* ce = FindOp(unfused.ops, "cross-entropy");
  ASSERT_NE(ce, nullptr);
  EXPECT_DOUBLE_EQ(ce->bytes, logits * 38);
  const double fwd_t = logits * 38 / bw + 8 * e.kernel_launch_s, bwd_t = logits * 14 / bw + 3 * e.kernel_launch_s;
  EXPECT_NEAR(ce->time_s * ce->count, fwd_t + bwd_t, 1e-12);
  // Memory: Megatron's losses hold the 16-bit logits and their FP32 softmax (6 B per logit), a single-pass kernel
  // the logits and their 16-bit gradient (4 B).
  EXPECT_DOUBLE_EQ(fused.memory.breakdown.logits, logits * 6);
  EXPECT_DOUBLE_EQ(unfused.memory.breakdown.logits, logits * 6);
  EXPECT_DOUBLE_EQ(online.memory.breakdown.logits, logits * 4);
}

// NVFP4 training (--dtype fp4) on B200: the layer GEMMs at the FP4 rate, so faster than MXFP8 but not twice as fast
// (casts, attention, the 16-bit head and communication do not shrink); the Hadamard transform costs its amax passes;
// the operator table names the cast; Hopper, FP8 parameters, eager PyTorch and the recipe flags out of place are
// refused with what would be valid.
TEST_F(Perf, Nvfp4TrainingRunsTheLayerGemmsInFp4) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("b200");
  TrainConfig c = Train(8, 1, 1, 16, 8192, 2);
  c.fit.recompute = Recompute::kNone;
  c.dtype = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kMxfp8;
  auto mx = EstimateTraining(m, C(g), c, E(g));
  c.dtype = Precision::kFp4;
  c.fp8_recipe = Fp8Recipe::kDelayed;  // ignored: fp4 has its own recipe
  auto fp4 = EstimateTraining(m, C(g), c, E(g));
  c.nvfp4_rht = false;
  auto vanilla = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(mx.ok() && fp4.ok() && vanilla.ok()) << fp4.status().message();
  EXPECT_LT(fp4->step_time_s, mx->step_time_s);
  EXPECT_GT(fp4->step_time_s, 0.5 * mx->step_time_s);
  EXPECT_LT(vanilla->step_time_s, fp4->step_time_s);
  const OpCost* cast = FindOp(fp4->ops, "NVFP4 cast (amax, both layouts)");
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(FindOp(fp4->ops, "FP8 cast + transpose"), nullptr);
  const OpCost* q = FindOp(fp4->ops, "qkv projection");
  const OpCost* q8 = FindOp(mx->ops, "qkv projection");
  ASSERT_TRUE(q && q8);
  EXPECT_LT(q->time_s, q8->time_s);
  EXPECT_DOUBLE_EQ(fp4->peak_flops_per_gpu, *g.PeakFlops(Precision::kFp4));
  // Its note quotes the held-out NVFP4 runs (evidence::kNvfp4TrainingMegatronCore); an FP8 estimate does not.
  auto has_note = [](const TrainResult& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
      return n.find("NVFP4 training") != std::string::npos && n.find("checked against 37 runs") != std::string::npos &&
             n.find("-7% to +12% off (mean +5%") != std::string::npos;
    });
  };
  EXPECT_TRUE(has_note(*fp4));
  EXPECT_FALSE(has_note(*mx));
  // Refusals.
  auto on_hopper = EstimateTraining(m, C(G("h100-sxm")), c, E(G("h100-sxm")));
  ASSERT_FALSE(on_hopper.ok());
  EXPECT_NE(on_hopper.status().message().find("use --dtype fp8"), std::string::npos) << on_hopper.status().message();
  TrainConfig params = c;
  params.fit.weights = *ParseWeightFormat("fp8");
  EXPECT_FALSE(EstimateTraining(m, C(g), params, E(g)).ok());
  // NVFP4 parameters: less memory (0.5625 B per layer weight, a one-layout cache), no per-step cast from 16 bits, and
  // the parameter all-gather at 0.5625 B; they need --dtype fp4.
  TrainConfig nvfp4_params = c;
  nvfp4_params.fit.weights = *ParseWeightFormat("nvfp4");
  auto p4 = EstimateTraining(m, C(g), nvfp4_params, E(g));
  ASSERT_TRUE(p4.ok()) << p4.status().message();
  EXPECT_LT(p4->memory.per_gpu_peak_bytes, vanilla->memory.per_gpu_peak_bytes);
  EXPECT_LT(p4->step_time_s, vanilla->step_time_s);
  TrainConfig nvfp4_in_fp8 = nvfp4_params;
  nvfp4_in_fp8.dtype = Precision::kFp8;
  nvfp4_in_fp8.nvfp4_rht = true;
  auto refused4 = EstimateTraining(m, C(g), nvfp4_in_fp8, E(g));
  ASSERT_FALSE(refused4.ok());
  EXPECT_NE(refused4.status().message().find("it needs --dtype fp4"), std::string::npos) << refused4.status().message();
  TrainConfig eager = c;
  eager.eager = true;
  EXPECT_FALSE(EstimateTraining(m, C(g), eager, E(g)).ok());
  TrainConfig rht_in_fp8 = c;
  rht_in_fp8.dtype = Precision::kFp8;
  auto st = EstimateTraining(m, C(g), rht_in_fp8, E(g));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("--no-nvfp4-rht applies to NVFP4"), std::string::npos);
  TrainConfig recipe_in_fp8 = c;
  recipe_in_fp8.dtype = Precision::kFp8;
  recipe_in_fp8.nvfp4_rht = true;
  recipe_in_fp8.fp8_recipe = Fp8Recipe::kNvfp4;
  EXPECT_FALSE(EstimateTraining(m, C(g), recipe_in_fp8, E(g)).ok());
  EXPECT_EQ(*ParseTrainDtype("nvfp4"), Precision::kFp4);
  auto typo = ParseTrainDtype("fp44");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean"), std::string::npos) << typo.status().message();
}

// On LLaMA-2 7B, one 4096-token micro-batch per rank: current scaling's extra bytes are exactly the proj and
// MLP-down inputs forward and all gradients backward, at 2 B per element; under sequence parallelism it also
// pays the amax all-reduce over TP, which is absent without it. MXFP8 needs Blackwell.
TEST_F(Perf, Fp8RecipesOrderAndCurrentScalingAmaxReduction) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 8, 4096);
  c.fit.recompute = Recompute::kNone;
  c.dtype = Precision::kFp8;
  auto delayed = EstimateTraining(m, C(g), c, E(g));
  c.fp8_recipe = Fp8Recipe::kCurrent;
  auto current = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(delayed.ok() && current.ok());
  const OpCost* cd = FindOp(delayed->ops, "FP8 cast + transpose");
  const OpCost* cc = FindOp(current->ops, "FP8 cast + transpose");
  ASSERT_TRUE(cd && cc);
  const double T = 4096;
  EXPECT_DOUBLE_EQ(cc->bytes - cd->bytes, 2 * T * (4096 + 11008));  // forward: proj and down inputs
  const Efficiency e = E(g);
  EXPECT_NEAR(cc->time_s - cd->time_s, 2 * T * (4096 + 11008) / (3.35e12 * e.memory) + 6 * e.kernel_launch_s, 1e-12);
  EXPECT_GT(current->step_time_s, delayed->step_time_s);

  // TP 4: the extra cast time with SP minus that without it is the two amax all-reduces per pass.
  auto extra = [&](bool sp) {
    TrainConfig t = Train(8, 4, 1, 8, 4096);
    t.fit.recompute = Recompute::kNone;
    t.dtype = Precision::kFp8;
    t.fit.par.sequence_parallel = sp;
    auto a = EstimateTraining(m, C(g), t, E(g));
    t.fp8_recipe = Fp8Recipe::kCurrent;
    auto b = EstimateTraining(m, C(g), t, E(g));
    EXPECT_TRUE(a.ok() && b.ok());
    return FindOp(b->ops, "FP8 cast + transpose")->time_s - FindOp(a->ops, "FP8 cast + transpose")->time_s;
  };
  const double with_sp = extra(true), without_sp = extra(false);
  EXPECT_GT(with_sp - without_sp, 0);
  EXPECT_LT(with_sp - without_sp, 200e-6);  // tiny latency-bound all-reduces, not a bandwidth term

  c.fp8_recipe = Fp8Recipe::kMxfp8;
  auto mx_h100 = EstimateTraining(m, C(g), c, E(g));
  ASSERT_FALSE(mx_h100.ok());
  EXPECT_NE(mx_h100.status().message().find("Blackwell"), std::string::npos);
  const GpuSpec& b200 = G("b200");
  auto mx = EstimateTraining(m, C(b200), c, E(b200));
  c.fp8_recipe = Fp8Recipe::kDelayed;
  auto dl = EstimateTraining(m, C(b200), c, E(b200));
  c.fp8_recipe = Fp8Recipe::kCurrent;
  auto cs = EstimateTraining(m, C(b200), c, E(b200));
  ASSERT_TRUE(mx.ok() && dl.ok() && cs.ok()) << mx.status().message();
  EXPECT_LT(dl->step_time_s, mx->step_time_s);
  EXPECT_LT(mx->step_time_s, cs->step_time_s);
}

// Block recompute: N layers of 32 rerun their forward, so the step grows linearly in N from no extra forward to
// full recompute's one, and each layer operator counts (1 forward + 2 backward + N/32 recomputed) per layer.
// A deep pipeline without interleaving gets a hint with the fastest depth that fits (LLaMA-3.1 70B, 80 layers on 16
// stages: only v = 5 divides); FastestInterleave finds that depth and reports it; an interleaved or shallow pipeline
// gets no hint, and PP 1 cannot choose one.
TEST_F(Perf, DeepPipelinesWithoutInterleavingGetTheFastestDepth) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(512, 8, 16, 512, 4096);
  c.fit.par.sequence_parallel = true;
  c.fit.micro_batch = 1;
  c.fit.recompute = Recompute::kNone;
  auto plain = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto best = FastestInterleave(m, C(g), c, E(g));
  ASSERT_TRUE(best.ok()) << best.status().message();
  EXPECT_EQ(best->interleave, 5);
  EXPECT_LT(best->step_time_s, plain->step_time_s);
  EXPECT_LT(best->breakdown_s.pipeline_bubble, plain->breakdown_s.pipeline_bubble);
  auto has_hint = [](const TrainResult& r) {
    for (const auto& n : r.notes)
      if (n.rfind("hint: --interleave 5 (1 layer per virtual stage)", 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(has_hint(*plain));
  TrainConfig interleaved = c;
  interleaved.fit.par.interleave = 5;
  auto r5 = EstimateTraining(m, C(g), interleaved, E(g));
  ASSERT_TRUE(r5.ok());
  EXPECT_EQ(r5->interleave, 5);
  EXPECT_DOUBLE_EQ(r5->step_time_s, best->step_time_s);
  EXPECT_FALSE(has_hint(*r5));
  TrainConfig flat = Train(512, 8, 1, 512, 4096);
  EXPECT_FALSE(FastestInterleave(m, C(g), flat, E(g)).ok());
  // A stage count that divides no depth still gets the plain schedule's estimate, and one past the layer count the
  // layout's own error, never an error without a message.
  TrainConfig uneven = Train(24, 8, 3, 24, 4096);
  uneven.fit.recompute = Recompute::kNone;
  auto u = FastestInterleave(m, C(g), uneven, E(g));
  auto u1 = EstimateTraining(m, C(g), uneven, E(g));
  ASSERT_EQ(u.ok(), u1.ok());
  if (u.ok()) {
    EXPECT_EQ(u->interleave, 1);
  }
  TrainConfig deep = Train(8 * 128, 8, 128, 128, 4096);
  auto too_deep = FastestInterleave(m, C(g), deep, E(g));
  ASSERT_FALSE(too_deep.ok());
  EXPECT_FALSE(too_deep.status().message().empty());
}

TEST_F(Perf, BlockRecomputeCostsItsShareOfAForward) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 2, 1, 16, 4096);
  c.fit.par.sequence_parallel = true;
  c.fit.recompute = Recompute::kFull;
  auto at = [&](int n) {
    TrainConfig t = c;
    t.fit.recompute_layers = n;
    auto r = EstimateTraining(m, C(g), t, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult r8 = at(8), r16 = at(16), r24 = at(24), full = at(0);
  const double step = [&] {
    TrainConfig t = c;
    t.fit.recompute = Recompute::kNone;
    return EstimateTraining(m, C(g), t, E(g))->step_time_s;
  }();
  EXPECT_NEAR(r16.step_time_s - r8.step_time_s, r24.step_time_s - r16.step_time_s, 1e-9);
  EXPECT_LT(step, r8.step_time_s);
  EXPECT_LT(r24.step_time_s, full.step_time_s);
  EXPECT_NEAR(at(32).step_time_s, full.step_time_s, 1e-12);
  EXPECT_EQ(r8.recompute_layers, 8);
  EXPECT_LT(r8.hfu * r8.step_time_s, full.hfu * full.step_time_s);  // fewer hardware FLOPs
  const OpCost* q8 = FindOp(r8.ops, "qkv projection");
  ASSERT_NE(q8, nullptr);
  EXPECT_NEAR(q8->count, r8.num_micro_batches * 32 * (3 + 8.0 / 32), 1e-9);
  EXPECT_LT(r8.memory.per_gpu_peak_bytes, [&] {
    TrainConfig t = c;
    t.fit.recompute = Recompute::kNone;
    return EstimateTraining(m, C(g), t, E(g))->memory.per_gpu_peak_bytes;
  }());
  TrainConfig bad = c;
  bad.fit.recompute_layers = 33;
  EXPECT_FALSE(EstimateTraining(m, C(g), bad, E(g)).ok());
}

// Selective recompute reruns the forward of the modules named (Megatron-Core's --recompute-modules): layernorm the
// two norms (read 2h, write 2h per token each, two kernels), core_attn the attention forward, once per layer and
// micro-batch; LLaMA-2 7B on 8 H100s, DP 8, 8 micro-batches of 4096 tokens per GPU.
TEST_F(Perf, RecomputeModulesCostTheirForward) {
  const ModelSpec m = M("llama-2-7b");
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  const auto run = [&](Recompute rc, const char* list) {
    TrainConfig c = Train(8, 1, 1, 64, 4096);
    c.fit.recompute = rc;
    if (list[0]) c.fit.recompute_modules = *ParseRecomputeModules(list);
    auto r = EstimateTraining(m, C(g), c, e);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult none = run(Recompute::kNone, ""), ln = run(Recompute::kSelective, "layernorm"),
                    attn = run(Recompute::kSelective, "");
  ASSERT_EQ(none.num_micro_batches, 8);
  const double per_layer_mb = 8.0 * 32;
  const double norms = 4096 * 2 * 4 * 4096 / (g.memory_bandwidth_bytes_per_s.value * e.memory) + 2 * e.kernel_launch_s;
  EXPECT_NEAR(ln.breakdown_s.compute - none.breakdown_s.compute, per_layer_mb * norms, 1e-9);
  EXPECT_LT(ln.memory.per_gpu_peak_bytes, none.memory.per_gpu_peak_bytes);
  const OpCost* fa = FindOp(none.ops, "attention (flash)");
  ASSERT_NE(fa, nullptr);
  EXPECT_NEAR(attn.breakdown_s.compute - none.breakdown_s.compute, per_layer_mb * fa->time_s, 1e-9);
  EXPECT_GT(attn.hardware_flops_per_step, none.hardware_flops_per_step);
  EXPECT_EQ(RecomputeModulesList(attn.recompute_modules), "core_attn");
  EXPECT_EQ(RecomputeModulesList(ln.recompute_modules), "layernorm");
}

// On an MoE model, moe_act reruns the experts' activation and moe the whole layer with its all-to-all (dispatch
// and combine once more per layer and micro-batch); each saves more memory than the one before. Qwen3 30B-A3B on
// 8 H100s with EP 8.
TEST_F(Perf, MoeRecomputeRerunsTheLayerAndItsAllToAll) {
  const ModelSpec m = M("qwen3-30b-a3b");
  const GpuSpec& g = G("h100-sxm");
  const auto run = [&](Recompute rc, const char* list) {
    TrainConfig c = Train(8, 1, 1, 64, 4096);
    c.fit.par.ep = 8;
    c.moe_imbalance = 1.0;
    c.fit.recompute = rc;
    if (list[0]) c.fit.recompute_modules = *ParseRecomputeModules(list);
    auto r = EstimateTraining(m, C(g), c, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult none = run(Recompute::kNone, ""), act = run(Recompute::kSelective, "moe_act"),
                    moe = run(Recompute::kSelective, "moe");
  EXPECT_LT(none.breakdown_s.compute, act.breakdown_s.compute);
  EXPECT_LT(act.breakdown_s.compute, moe.breakdown_s.compute);
  EXPECT_GT(none.memory.per_gpu_peak_bytes, act.memory.per_gpu_peak_bytes);
  EXPECT_GT(act.memory.per_gpu_peak_bytes, moe.memory.per_gpu_peak_bytes);
  const OpCost* a2a = FindOp(none.ops, "[moe] expert all-to-all (x2)");
  ASSERT_NE(a2a, nullptr);
  EXPECT_NEAR(moe.communication_total_s - none.communication_total_s, none.num_micro_batches * 48 * a2a->time_s, 1e-9);
  EXPECT_NEAR(act.communication_total_s, none.communication_total_s, 1e-12);
}

// The automatic choice tries the module ladder where nothing fits without recompute: LLaMA-3.1 70B on 64 H100s (TP 2,
// PP 4 x 5, CP 2, ZeRO-2, 8192 tokens) fits by recomputing its layer norms, faster than any block recompute; the
// ladder is the documented one for dense, MoE, MLA and FP8-delayed cases.
TEST_F(Perf, AutomaticRecomputeTriesModulesBeforeWholeLayers) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(64, 2, 4, 512, 8192);
  c.fit.par.cp = 2;
  c.fit.par.dp = 4;
  c.fit.par.zero = 2;
  c.fit.par.interleave = 5;
  c.fit.par.sequence_parallel = true;
  c.recompute_auto = true;
  auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->fits);
  EXPECT_EQ(r->recompute, Recompute::kSelective);
  EXPECT_EQ(RecomputeModulesList(r->recompute_modules), "layernorm");
  const auto ladder = [&](const char* id, Precision p = Precision::kBf16, Fp8Recipe f = Fp8Recipe::kCurrent) {
    std::string out;
    for (const auto& mods : RecomputeModuleLadder(M(id), AttentionImpl::kFlash, p, f))
      out += (out.empty() ? "" : " | ") + RecomputeModulesList(mods);
    return out;
  };
  EXPECT_EQ(ladder("llama-3.1-70b"), "layernorm | layernorm,mlp");
  EXPECT_EQ(ladder("qwen3-30b-a3b"), "moe_act,layernorm | layernorm,moe");
  EXPECT_EQ(ladder("deepseek-v3"), "moe_act,layernorm,mla_up_proj,shared_experts | layernorm,mla_up_proj,mlp,moe");
  EXPECT_EQ(ladder("llama-3.1-70b", Precision::kFp8, Fp8Recipe::kDelayed), "mlp");
}

// A layout that splits the layers evenly is the default split; an uneven one paces the step by its fullest rank. An
// MTP module adds its layer, its projection and the output layer again to its rank, and its FLOPs to the model's
// (6 x (2h^2 + the layer's matmul parameters + V h) + the layer's attention, per token). LLaMA-3.1 8B on 8 H100s,
// PP 2, DP 4.
TEST_F(Perf, PipelineLayoutAndMtpModules) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const auto run = [&](const char* layout, int mtp) {
    TrainConfig c = Train(8, 1, 2, 64, 4096);
    if (layout[0]) {
      EXPECT_TRUE(ApplyPipelineLayout(c.fit.par, layout).ok()) << layout;
    }
    c.fit.mtp_layers = mtp;
    auto r = EstimateTraining(m, C(g), c, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult def = run("", 0), even = run("Et*16|t*16L", 0), uneven = run("Et*20|t*12L", 0);
  EXPECT_NEAR(even.step_time_s, def.step_time_s, 1e-9 * def.step_time_s);
  EXPECT_GT(uneven.step_time_s, even.step_time_s);
  const TrainResult mtp = run("", 1), mtp_layout = run("Et*16|t*16mL", 1);
  EXPECT_GT(mtp.step_time_s, def.step_time_s);
  EXPECT_NEAR(mtp_layout.step_time_s, mtp.step_time_s, 1e-9 * mtp.step_time_s);
  // Without a pipeline the one stage holds the MTP module's layer and logits too.
  TrainConfig one = Train(8, 1, 1, 64, 4096);
  const double without = EstimateTraining(m, C(g), one, E(g))->memory.per_gpu_peak_bytes;
  one.fit.mtp_layers = 1;
  EXPECT_GT(EstimateTraining(m, C(g), one, E(g))->memory.per_gpu_peak_bytes, without);
  const ParamCounts pc = CountParams(m);
  const double h = 4096, layer = (pc.attention + pc.mlp_dense) / 32;
  const double per_token = 6 * (2 * h * h + layer + 128256.0 * h) + 12.0 * 32 * 128 * 4096;
  EXPECT_NEAR(mtp.model_flops_per_step - def.model_flops_per_step, per_token * 64 * 4096, 1e-6 * per_token * 64 * 4096);
}

// Each pipeline rank runs its own layers' kinds: under DeepSeek-V3's 16-stage layout on PP 8 ranks 0 and 1 both hold 8
// layers, but rank 0's first three are dense, so it is faster per micro-batch than rank 1's eight MoE layers, and
// an all-MoE rank paces the step.
TEST_F(Perf, EachPipelineRankRunsItsOwnDenseAndMoeLayers) {
  const ModelSpec m = M("deepseek-v3");
  const GpuSpec& g = G("b200");
  TrainConfig c = Train(256, 1, 8, 4096);
  c.fit.par.ep = 32;
  c.fit.mtp_layers = 1;
  c.fit.recompute = Recompute::kFull;
  ASSERT_TRUE(ApplyPipelineLayout(c.fit.par, "Et*4|(t*4|)*14tmL").ok());
  const auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->pipeline_ranks.size(), 8u);
  const auto& ranks = r->pipeline_ranks;
  EXPECT_EQ(ranks[0].layers, 8);
  EXPECT_EQ(ranks[1].layers, 8);
  EXPECT_EQ(ranks[7].layers, 5);
  EXPECT_EQ(ranks[7].mtp, 1);
  EXPECT_TRUE(ranks[7].output_layer);
  EXPECT_LT(ranks[0].seconds_per_micro_batch, ranks[1].seconds_per_micro_batch);
  for (int i = 2; i < 7; ++i)
    EXPECT_NEAR(ranks[i].seconds_per_micro_batch, ranks[1].seconds_per_micro_batch,
                1e-9 * ranks[1].seconds_per_micro_batch);
}

// Megatron-Core refuses moe_act and layernorm recompute under FP8 delayed scaling; LoRA recomputes whole layers or
// none.
TEST_F(Perf, RecomputeModulesRefusedWhereMegatronCoreRefusesThem) {
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 64, 4096);
  c.fit.recompute = Recompute::kSelective;
  c.fit.recompute_modules = *ParseRecomputeModules("layernorm");
  c.dtype = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kDelayed;
  auto r = EstimateTraining(M("llama-2-7b"), C(g), c, E(g));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--fp8-recipe current"), std::string::npos) << r.status().message();
  c.fp8_recipe = Fp8Recipe::kCurrent;
  EXPECT_TRUE(EstimateTraining(M("llama-2-7b"), C(g), c, E(g)).ok());
  TrainConfig l = Train(8, 1, 1, 64, 4096);
  l.fit.mode = Mode::kLora;
  l.fit.recompute = Recompute::kSelective;
  auto lr = EstimateTraining(M("llama-2-7b"), C(g), l, E(g));
  ASSERT_FALSE(lr.ok());
  EXPECT_NE(lr.status().message().find("not selected modules"), std::string::npos) << lr.status().message();
}

// The offload schedule, by hand (4 layers, 2 offloaded, so 2 activation sets on the GPU). Slow offloads: layer 3
// waits for layer 1's copy (ends at 4), layer 4 for layer 2's (ends at 7), so the forward ends at 8 instead of 4;
// the reloads (0.5 each) start once layers 4 and 3 have freed their sets and hide under backward: stall 4. Slow
// reloads: layer 2's reload waits for layer 4's backward (ends 5) and takes 5, layer 1's starts at 10 and ends at
// 15, so the backward ends at 16 instead of 8: stall 8. Fast copies cost nothing.
TEST(Offload, ScheduleWaitsForTheCopiesWhereTheLinkIsSlow) {
  EXPECT_DOUBLE_EQ(OffloadStallSeconds(4, 2, 1, 2, 0, 3, 0.5), 4);
  EXPECT_DOUBLE_EQ(OffloadStallSeconds(4, 2, 1, 1, 0, 0.1, 5), 8);
  EXPECT_DOUBLE_EQ(OffloadStallSeconds(32, 16, 1, 2, 0.5, 0.2, 0.2), 0);
  EXPECT_DOUBLE_EQ(OffloadStallSeconds(32, 0, 1, 2, 0, 100, 100), 0);
  // Faster copies never wait longer; more layers offloaded never wait less.
  double last = 1e30;
  for (double copy : {8.0, 4.0, 2.0, 1.0, 0.5, 0.25}) {
    const double w = OffloadStallSeconds(40, 30, 1, 2, 0, copy, copy);
    EXPECT_LE(w, last) << copy;
    last = w;
  }
  last = 0;
  for (int n = 1; n < 40; ++n) {
    const double w = OffloadStallSeconds(40, n, 1, 2, 0, 1.5, 1.5);
    EXPECT_GE(w, last) << n;
    last = w;
  }
}

// Offloading in a step: the step grows by exactly the wait, which is large over PCIe (H100: 63 GB/s per direction)
// and smaller over NVLink-C2C (GB200: 450 GB/s), and the GPU holds fewer activations. The catalog's host links:
// PCIe Gen5 x16 from the H100 file, NVLink-C2C from the GB200 file.
TEST_F(Perf, ActivationOffloadAddsTheCopyWaitAndFreesGpuMemory) {
  EXPECT_NEAR(HostBandwidthPerDirection(G("h100-sxm"))->value, 32e9 * 128 / 130 / 8 * 16, 1);
  EXPECT_NEAR(HostBandwidthPerDirection(G("gb200"))->value, 450e9, 1);
  EXPECT_EQ(C(G("gb200")).host_link_name, "nvlink-c2c");
  const ModelSpec m = M("llama-3.1-8b");
  TrainConfig c = Train(8, 1, 1, 64, 8192, 2);
  c.fit.par.zero = 3;
  double stall_pcie = 0, stall_c2c = 0;
  for (const char* id : {"h100-sxm", "gb200"}) {
    const GpuSpec& g = G(id);
    const TrainResult base = *EstimateTraining(m, C(g), c, E(g));
    TrainConfig o = c;
    o.fit.offload_layers = 16;
    auto r = EstimateTraining(m, C(g), o, E(g));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_NEAR(r->step_time_s - base.step_time_s, r->breakdown_s.offload, 1e-9 * base.step_time_s) << id;
    EXPECT_LT(r->memory.per_gpu_peak_bytes, base.memory.per_gpu_peak_bytes) << id;
    const OpCost* d2h = FindOp(r->ops, "activation offload to host (D2H)");
    ASSERT_NE(d2h, nullptr);
    const double per_copy = r->memory.offload_layer_bytes / (C(g).host_bw_per_dir * E(g).host_d2h);
    EXPECT_NEAR(d2h->time_s, 16.0 * r->num_micro_batches * per_copy, 1e-9 * d2h->time_s);
    (std::string(id) == "gb200" ? stall_c2c : stall_pcie) = r->breakdown_s.offload / base.step_time_s;
  }
  EXPECT_GT(stall_pcie, 0.05);
  EXPECT_LT(stall_c2c, stall_pcie);
}

// While the compute stream waits for offloaded activations, the data-parallel reductions go on: a faster GEMM, which
// shortens the layers and lengthens those waits, never lengthens the step. (The DP window had been the compute alone:
// GPT-OSS 120B on MI300X, ZeRO-2 with half the layers offloaded, took 2.3% longer at three times the GEMM rate.)
TEST_F(Perf, OffloadWaitsHideDataParallelTraffic) {
  const GpuSpec& g = G("mi300x");
  TrainConfig c = Train(40, 4, 1, 40, 4096, 4);
  c.fit.par.zero = 2;
  c.dtype = Precision::kFp8;
  c.fit.offload_layers = 18;
  double last = 0;
  for (double f : {1.0, 1.2, 1.5, 2.0, 3.0}) {
    Efficiency e = E(g);
    e.gemm = std::min(1.0, e.gemm * f);
    e.gemm_fp8 = std::min(1.0, e.gemm_fp8 * f);
    auto r = EstimateTraining(M("gpt-oss-120b"), C(g), c, e);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_GT(r->breakdown_s.offload, 0);
    if (last > 0) { EXPECT_LE(r->step_time_s, last * 1.001) << "GEMM fraction x" << f; }
    last = r->step_time_s;
  }
}

// The offloaded activations' copies go on while a layer waits for its TP and CP collectives: a faster attention kernel,
// which leaves more of CP's exchange exposed, does not also lengthen the wait for the copies. (Their schedule had run
// on the layers' compute alone: GPT-J on Gaudi 2, TP 8 and CP 2 over Ethernet, 14 layers offloaded, took 6.5% longer
// at twice the attention rate.)
TEST_F(Perf, OffloadCopiesOverlapALayersCollectives) {
  const GpuSpec& g = G("gaudi2");
  TrainConfig c = Train(112, 8, 1, 28, 16384, 2);
  c.fit.par.cp = 2;
  c.fit.par.dp = 7;
  c.fit.par.zero = 3;
  c.fit.offload_layers = 14;
  double last = 0;
  for (double f : {1.0, 1.2, 1.5, 2.0}) {
    Efficiency e = E(g);
    e.attention = std::min(1.0, e.attention * f);
    auto r = EstimateTraining(M("gpt-j-6b"), C(g, "eth-100g"), c, e);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_GT(r->breakdown_s.offload, 0);
    if (last > 0) { EXPECT_LE(r->step_time_s, last * 1.001) << "attention fraction x" << f; }
    last = r->step_time_s;
  }
}

// The fewest offloaded layers that fit: LLaMA-3.1 70B, FSDP over 64 GB200s, two 8192-token sequences per GPU, does
// not fit without recompute; the search returns the N that fits where N - 1 does not, and nothing for PP > 1.
TEST_F(Perf, FewestOffloadedLayersThatFit) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("gb200");
  TrainConfig c = Train(64, 1, 1, 256, 8192, 2);
  c.fit.par.zero = 3;
  c.dtype = Precision::kFp8;
  ASSERT_FALSE(EstimateTraining(m, C(g), c, E(g))->fits);
  auto best = FewestOffloadLayersThatFit(m, C(g), c, E(g));
  ASSERT_TRUE(best.has_value());
  ASSERT_GT(best->offload_layers, 1);
  EXPECT_TRUE(best->fits);
  TrainConfig fewer = c;
  fewer.fit.offload_layers = best->offload_layers - 1;
  EXPECT_FALSE(EstimateTraining(m, C(g), fewer, E(g))->fits);
  TrainConfig piped = Train(64, 1, 2, 256, 8192, 2);
  piped.fit.par.zero = 3;
  EXPECT_FALSE(FewestOffloadLayersThatFit(m, C(g), piped, E(g)).has_value());

  // Host memory bounds it too: with less host memory than the fewest layers need, the layout does not fit, says
  // by how much (the GPU itself holds it), and nothing is suggested.
  TrainConfig tight = c;
  tight.fit.offload_layers = best->offload_layers;
  tight.fit.host_memory_per_gpu_bytes = best->memory.host_offload_bytes - 1e9;
  auto t = EstimateTraining(m, C(g), tight, E(g));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->fits);
  EXPECT_EQ(t->shortfall_bytes, 0);
  EXPECT_NEAR(t->host_shortfall_bytes, 1e9, 1e3);
  EXPECT_DOUBLE_EQ(t->host_capacity_bytes, tight.fit.host_memory_per_gpu_bytes);
  TrainConfig tight_search = c;
  tight_search.fit.host_memory_per_gpu_bytes = tight.fit.host_memory_per_gpu_bytes;
  auto limited = FewestOffloadLayersThatFit(m, C(g), tight_search, E(g));
  if (limited) {
    EXPECT_LE(limited->memory.host_offload_bytes, tight.fit.host_memory_per_gpu_bytes);
  }
  EXPECT_DOUBLE_EQ(best->host_capacity_bytes, 240e9);  // GB200's catalog figure when none is given
}

// Choosing recompute automatically: where nothing fits without recompute but full recompute does, the fewest
// block-recomputed layers that fit is a candidate, and it beats full recompute (LLaMA-3.1 8B, BF16, ZeRO-1, one
// 8192-token sequence per H100; in FP8 the weight cache leaves room only for module recompute).
TEST_F(Perf, AutomaticRecomputeTriesTheFewestBlockLayersThatFit) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  TrainConfig c = Train(8, 1, 1, 128, 8192);
  c.recompute_auto = true;
  auto r = EstimateTraining(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->fits);
  ASSERT_EQ(r->recompute, Recompute::kFull);
  ASSERT_GT(r->recompute_layers, 0);
  c.recompute_auto = false;
  c.fit.recompute = Recompute::kNone;
  EXPECT_FALSE(EstimateTraining(m, C(g), c, E(g))->fits);
  c.fit.recompute = Recompute::kFull;
  const double full = EstimateTraining(m, C(g), c, E(g))->step_time_s;
  EXPECT_LT(r->step_time_s, full);
  if (r->recompute_layers > 1) {
    c.fit.recompute_layers = r->recompute_layers - 1;
    EXPECT_FALSE(EstimateTraining(m, C(g), c, E(g))->fits);  // one layer fewer does not fit
  }
}

// Eager PyTorch element-wise work: RMSNorm in FP32 steps (36 B forward / 58 B backward per element instead of
// 4 / 8), rotate-half RoPE on Q and K (22 / 25 instead of 4 / 8), SwiGLU as two kernels (10 / 18 instead of
// 6 / 12). A LayerNorm + GELU model without RoPE has nothing extra.
TEST_F(Perf, EagerElementwiseCountsTheUnfusedKernelsBytes) {
  const GpuSpec& g = G("a100-sxm-80gb");
  TrainConfig c = Train(8, 1, 1, 8, 4096);
  c.fit.recompute = Recompute::kNone;
  c.eager = true;
  auto llama = EstimateTraining(M("llama-2-7b"), C(g), c, E(g));
  ASSERT_TRUE(llama.ok());
  const OpCost* eager = FindOp(llama->ops, "eager element-wise (unfused)");
  ASSERT_NE(eager, nullptr);
  const double T = 4096, h = 4096, qk = 4096 + 4096, f = 11008;
  EXPECT_DOUBLE_EQ(eager->bytes, T * (2 * 32 * h + 18 * qk + 4 * f));
  c.eager = false;
  auto fused = EstimateTraining(M("llama-2-7b"), C(g), c, E(g));
  ASSERT_TRUE(fused.ok());
  EXPECT_GT(llama->step_time_s, fused->step_time_s);
  // Runs a model eager and fused; returns the fused estimate after checking the step times are equal but for
  // Megatron-Core DDP's gradient-buffer passes, which only the fused (Megatron) stack has.
  auto eager_costs_the_same = [&](const ModelSpec& m) {
    c.eager = true;
    auto eager_r = EstimateTraining(m, C(g), c, E(g));
    c.eager = false;
    auto fused_r = EstimateTraining(m, C(g), c, E(g));
    EXPECT_TRUE(eager_r.ok() && fused_r.ok()) << m.name;
    if (eager_r.ok() && fused_r.ok()) {
      EXPECT_EQ(FindOp(eager_r->ops, "gradient buffer: zero + 1/DP scale (Megatron-Core DDP)"), nullptr) << m.name;
      const OpCost* buffer = FindOp(fused_r->ops, "gradient buffer: zero + 1/DP scale (Megatron-Core DDP)");
      EXPECT_NE(buffer, nullptr) << m.name;
      if (buffer != nullptr) {
        EXPECT_NEAR(eager_r->step_time_s, fused_r->step_time_s - buffer->time_s, 1e-12 * fused_r->step_time_s)
            << m.name;
      }
    }
    return fused_r;
  };
  // GPT-3 style (LayerNorm, GELU, learned positions): eager costs the same as fused.
  auto gpt = ParseHfConfig(R"({"model_type": "gpt2", "n_embd": 2048, "n_layer": 24, "n_head": 16,
                                "vocab_size": 50257, "n_positions": 4096})",
                           "gpt.json");
  ASSERT_TRUE(gpt.ok()) << gpt.status().message();
  eager_costs_the_same(*gpt);
  // So is MPT (LayerNorm, GELU, ALiBi or a learned table): it has no rotary embedding to count (regression: MPT
  // without a learned table was taken for a rotary model, fused and eager).
  auto mpt = ParseHfConfig(R"({"model_type": "mpt", "d_model": 2048, "n_layers": 24, "n_heads": 16,
                                "vocab_size": 50368, "max_seq_len": 4096, "no_bias": false})",
                           "mpt.json");
  ASSERT_TRUE(mpt.ok()) << mpt.status().message();
  auto mpt_fused = eager_costs_the_same(*mpt);
  ASSERT_TRUE(mpt_fused.ok());
  const OpCost* ew = FindOp(mpt_fused->ops, "norms, residuals, activation");
  ASSERT_NE(ew, nullptr);
  // 2 LayerNorms x 4 B x h + residuals 12 B x h, GELU 4 B x 4h per token: no 4 B x (q + k) of RoPE.
  EXPECT_DOUBLE_EQ(ew->bytes, 4096 * (2 * 4 * 2048.0 + 12 * 2048.0 + 4 * 4 * 2048.0));
}

// Eager PyTorch FSDP: a host-side cost per layer per micro-batch that the GPU waits for, the same on every GPU
// (docs/methodology.md §6.4): layers x 6.5 ms x micro-batches, x 4/3 with full recompute; nothing without --eager
// or without ZeRO-3.
TEST_F(Perf, EagerFsdpPaysAHostCostPerLayerPerMicroBatchOnEveryGpu) {
  const ModelSpec m = M("llama-2-7b");  // 32 layers
  TrainConfig c = Train(8, 1, 1, 32, 2048, 2);  // 2 micro-batches per step
  c.fit.par.zero = 3;
  c.fit.recompute = Recompute::kNone;
  c.eager = true;
  for (const char* id : {"a100-sxm-80gb", "h100-sxm"}) {
    const GpuSpec& g = G(id);
    const Efficiency e = E(g);
    ASSERT_DOUBLE_EQ(e.eager_fsdp_host_per_layer_s, 6.5e-3);
    auto r = EstimateTraining(m, C(g), c, e);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->num_micro_batches, 2);
    EXPECT_NEAR(r->breakdown_s.host, 2 * 32 * 6.5e-3, 1e-12) << id;
    const OpCost* host = FindOp(r->ops, "host overhead (eager FSDP)");
    ASSERT_NE(host, nullptr);
    EXPECT_DOUBLE_EQ(host->time_s, r->breakdown_s.host);
    // The step is the breakdown's sum (PP = 1: no bubble).
    EXPECT_NEAR(r->step_time_s,
                r->breakdown_s.compute + r->breakdown_s.communication_exposed + r->breakdown_s.optimizer +
                    r->breakdown_s.host,
                1e-9 * r->step_time_s);
    // A recomputed forward adds a third; the value comes from the efficiency data.
    TrainConfig full = c;
    full.fit.recompute = Recompute::kFull;
    auto rf = EstimateTraining(m, C(g), full, e);
    ASSERT_TRUE(rf.ok());
    EXPECT_NEAR(rf->breakdown_s.host, 2 * 32 * 6.5e-3 * 4 / 3, 1e-12);
    Efficiency e2 = e;
    e2.eager_fsdp_host_per_layer_s = 1e-3;
    auto r2 = EstimateTraining(m, C(g), c, e2);
    ASSERT_TRUE(r2.ok());
    EXPECT_NEAR(r->step_time_s - r2->step_time_s, 2 * 32 * 5.5e-3, 1e-9);
    // Fused stacks and ZeRO-1 pay nothing.
    TrainConfig fused = c;
    fused.eager = false;
    auto rn = EstimateTraining(m, C(g), fused, e);
    TrainConfig zero1 = c;
    zero1.fit.par.zero = 1;
    auto r1 = EstimateTraining(m, C(g), zero1, e);
    ASSERT_TRUE(rn.ok() && r1.ok());
    EXPECT_EQ(rn->breakdown_s.host, 0);
    EXPECT_EQ(r1->breakdown_s.host, 0);
    EXPECT_EQ(FindOp(rn->ops, "host overhead (eager FSDP)"), nullptr);
  }
}

TEST(EfficiencyData, EagerFsdpHostCostIsATimeWithinBounds) {
  const char* head = "[sources]\nx = \"a source\"\n[eager_fsdp]\n";
  auto ok = ParseEfficiencyToml(std::string(head) + "host_per_layer = { value = \"2 ms\", source = \"x\" }\n", "e.toml",
                                "h100-sxm");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->eager_fsdp_host_per_layer_s, 2e-3);
  auto big = ParseEfficiencyToml(std::string(head) + "host_per_layer = { value = \"2 s\", source = \"x\" }\n", "e.toml",
                                 "h100-sxm");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("host_per_layer"), std::string::npos) << big.status().message();
  auto typo = ParseEfficiencyToml(std::string(head) + "host_per_layr = { value = \"2 ms\", source = \"x\" }\n",
                                  "e.toml", "h100-sxm");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("host_per_layr"), std::string::npos) << typo.status().message();
}

TEST(EfficiencyData, MoeServingFixedTimeIsATimeWithinBounds) {
  const char* head = "[sources]\nx = \"a source\"\n[moe_serving]\n";
  auto ok = ParseEfficiencyToml(std::string(head) + "fixed = { value = \"20 us\", source = \"x\" }\n", "e.toml", "h100-sxm");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->moe_serving_fixed_s, 20e-6);
  auto big = ParseEfficiencyToml(std::string(head) + "fixed = { value = \"2 ms\", source = \"x\" }\n", "e.toml", "h100-sxm");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("outside 0..1 ms"), std::string::npos) << big.status().message();
  auto typo = ParseEfficiencyToml(std::string(head) + "fix = { value = \"20 us\", source = \"x\" }\n", "e.toml", "h100-sxm");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("fix"), std::string::npos) << typo.status().message();
}

TEST(EfficiencyData, ServingPrefillAttentionFixedTimeIsATimeWithinBounds) {
  const char* head = "[sources]\nx = \"a source\"\n[serving_attention]\n";
  auto ok = ParseEfficiencyToml(std::string(head) + "prefill_fixed = { value = \"7 us\", source = \"x\" }\n", "e.toml",
                                "h100-sxm");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->serving_prefill_attention_fixed_s, 7e-6);
  auto big = ParseEfficiencyToml(std::string(head) + "prefill_fixed = { value = \"2 ms\", source = \"x\" }\n",
                                 "e.toml", "h100-sxm");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("prefill_fixed"), std::string::npos) << big.status().message();
  EXPECT_NE(big.status().message().find("outside 0..1 ms"), std::string::npos) << big.status().message();
  auto typo = ParseEfficiencyToml(std::string(head) + "prefil_fixed = { value = \"7 us\", source = \"x\" }\n",
                                  "e.toml", "h100-sxm");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("prefil_fixed"), std::string::npos) << typo.status().message();
}

TEST(EfficiencyData, OneShotAllReduceTakesTimesAndALinkFraction) {
  const char* head = "[sources]\nx = \"a source\"\n[oneshot_allreduce]\n";
  auto ok = ParseEfficiencyToml(std::string(head) + "latency = { value = \"2 us\", source = \"x\" }\n"
                                "per_peer = { value = \"0.5 us\", source = \"x\" }\nlink = { value = 0.4, source = \"x\" }\n",
                                "e.toml", "h100-sxm");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->oneshot_allreduce_latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(ok->oneshot_allreduce_per_peer_s, 0.5e-6);
  EXPECT_DOUBLE_EQ(ok->oneshot_allreduce_link, 0.4);
  auto slow = ParseEfficiencyToml(std::string(head) + "latency = { value = \"1 ms\", source = \"x\" }\n", "e.toml",
                                  "h100-sxm");
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.status().message().find("latency"), std::string::npos) << slow.status().message();
  auto wide = ParseEfficiencyToml(std::string(head) + "link = { value = 2, source = \"x\" }\n", "e.toml", "h100-sxm");
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("link"), std::string::npos) << wide.status().message();
}

// `link` is the ring figure and cannot exceed the wire rate; an NVLS all-reduce figure above it is pointed to
// `link_allreduce`, which accepts it.
TEST(EfficiencyData, LinkAboveTheWireRateBelongsToTheAllReduceFigure) {
  const char* head = "[sources]\nx = \"a source\"\n[gpu.h100-sxm]\n";
  auto ring = ParseEfficiencyToml(std::string(head) + "link = { value = 1.064, source = \"x\" }\n", "e.toml", "h100-sxm");
  ASSERT_FALSE(ring.ok());
  EXPECT_NE(ring.status().message().find("belongs in link_allreduce"), std::string::npos) << ring.status().message();
  auto nvls = ParseEfficiencyToml(std::string(head) + "link = { value = 0.8, source = \"x\" }\n"
                                  "link_allreduce = { value = 1.064, source = \"x\" }\n", "e.toml", "h100-sxm");
  ASSERT_TRUE(nvls.ok()) << nvls.status().message();
  EXPECT_DOUBLE_EQ(nvls->link, 0.8);
  EXPECT_DOUBLE_EQ(nvls->link_allreduce, 1.064);
}

// A fraction outside its range is refused with the range, and nan as not a number, naming the key; the FP8
// FP32-accumulation rate is one of them.
TEST(EfficiencyData, FractionsOutsideTheirRangeOrNotANumberAreErrors) {
  const char* head = "[sources]\nx = \"a source\"\n[gpu.h100-sxm]\n";
  auto high = ParseEfficiencyToml(std::string(head) + "gemm_fp8_precise = { value = 1.2, source = \"x\" }\n", "e.toml",
                                  "h100-sxm");
  ASSERT_FALSE(high.ok());
  EXPECT_NE(high.status().message().find("gemm_fp8_precise"), std::string::npos) << high.status().message();
  EXPECT_NE(high.status().message().find("is outside 0.3..1"), std::string::npos) << high.status().message();
  for (const char* key : {"gemm_fp8_precise", "gemm"}) {
    auto e = ParseEfficiencyToml(std::string(head) + key + " = { value = nan, source = \"x\" }\n", "e.toml", "h100-sxm");
    ASSERT_FALSE(e.ok()) << key;
    EXPECT_NE(e.status().message().find(std::string(key) + "': value must be a number, not nan"), std::string::npos)
        << e.status().message();
  }
  auto ok = ParseEfficiencyToml(std::string(head) + "gemm_fp8_precise = { value = 0.9, source = \"x\" }\n", "e.toml",
                                "h100-sxm");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ(ok->gemm_fp8_precise, 0.9);
}

// attention_fp8_seq: the FP8 attention speed-up by sequence length, read log-linearly between its points and held at
// its ends; a malformed curve (unequal lengths, lengths not increasing, one point, a speed-up outside 0.3..3, an
// unknown key) is an error naming the key and what is wrong.
TEST(EfficiencyData, Fp8AttentionCurveIsReadLogLinearlyAndCheckedWhenLoaded) {
  const char* head = "[sources]\nx = \"a source\"\n[gpu.gb300]\n";
  auto ok = ParseEfficiencyToml(std::string(head) + "attention_fp8_seq = { seq = [1024, 4096, 16384], speedup = [0.9, "
                                                    "1.1, 1.5], source = \"x\" }\n",
                                "e.toml", "gb300");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(perf_detail::HasFp8AttentionRate(*ok));
  EXPECT_DOUBLE_EQ(perf_detail::Fp8AttentionSpeedup(*ok, 4096), 1.1);
  EXPECT_NEAR(perf_detail::Fp8AttentionSpeedup(*ok, 2048), 1.0, 1e-12);   // halfway in log2 between 1K and 4K
  EXPECT_NEAR(perf_detail::Fp8AttentionSpeedup(*ok, 8192), 1.3, 1e-12);
  EXPECT_DOUBLE_EQ(perf_detail::Fp8AttentionSpeedup(*ok, 100), 0.9);      // held at the ends
  EXPECT_DOUBLE_EQ(perf_detail::Fp8AttentionSpeedup(*ok, 1e6), 1.5);
  EXPECT_NE(std::find_if(ok->sources.begin(), ok->sources.end(),
                         [](const std::string& l) { return l.find("attention_fp8_seq = 1024: 0.9, 4096: 1.1") == 0; }),
            ok->sources.end());
  // The single figure where no curve was measured; none at all: 1, and no rate.
  Efficiency flat;
  flat.attention_fp8 = 1.2;
  EXPECT_DOUBLE_EQ(perf_detail::Fp8AttentionSpeedup(flat, 512), 1.2);
  EXPECT_FALSE(perf_detail::HasFp8AttentionRate(Efficiency{}));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"seq = [1024, 4096], speedup = [1.0]", "'seq' has 2 entries and 'speedup' 1"},
      {"seq = [4096, 1024], speedup = [1.0, 1.1]", "'seq' must increase strictly (1024 follows 4096)"},
      {"seq = [4096], speedup = [1.0]", "a curve needs at least two points"},
      {"seq = [1024, 4096], speedup = [1.0, 5.0]", "speed-up 5 at 4096 tokens is outside 0.3..3"},
      {"seq = [1024, -4096], speedup = [1.0, 1.1]", "'seq' holds -4096, and every entry must be a positive number"},
      {"seq = [1024, 4096], speedup = [1.0, \"fast\"]", "'speedup' must be an array of numbers"},
      {"seq = [1024, 4096], speedups = [1.0, 1.1]", "unknown key 'speedups' (valid: seq, speedup, source, note, date)"},
      {"seq = [1024, 4096]", "has no 'speedup'"},
  };
  for (const auto& [body, want] : bad) {
    auto e = ParseEfficiencyToml(std::string(head) + "attention_fp8_seq = { " + body + ", source = \"x\" }\n", "e.toml",
                                 "gb300");
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_NE(e.status().message().find("e.toml: key 'gpu.gb300.attention_fp8_seq'"), std::string::npos)
        << e.status().message();
    EXPECT_NE(e.status().message().find(want), std::string::npos) << e.status().message();
  }
  auto unsourced = ParseEfficiencyToml(std::string(head) + "attention_fp8_seq = { seq = [1, 2], speedup = [1, 1] }\n",
                                       "e.toml", "gb300");
  ASSERT_FALSE(unsourced.ok());
  EXPECT_NE(unsourced.status().message().find("has no 'source'"), std::string::npos) << unsourced.status().message();
  // The single figure beside a curve is its 8K reading: one changed without the other is an error, not ignored.
  const std::string curve = "attention_fp8_seq = { seq = [4096, 8192], speedup = [1.2, 1.3], source = \"x\" }\n";
  auto agree = ParseEfficiencyToml(std::string(head) + curve + "attention_fp8 = { value = 1.3, source = \"x\" }\n",
                                   "e.toml", "gb300");
  ASSERT_TRUE(agree.ok()) << agree.status().message();
  auto differ = ParseEfficiencyToml(std::string(head) + curve + "attention_fp8 = { value = 1.5, source = \"x\" }\n",
                                    "e.toml", "gb300");
  ASSERT_FALSE(differ.ok());
  EXPECT_NE(differ.status().message().find("attention_fp8 = 1.5 disagrees with attention_fp8_seq, which reads 1.300 at "
                                           "8,192 tokens"),
            std::string::npos)
      << differ.status().message();
}

// A GPU's entry replaces the default's value and its source line: `sources` lists the values in use, once each.
TEST(EfficiencyData, SourcesListOnlyTheValuesInUse) {
  const char* toml = "[sources]\nd = \"default source\"\ng = \"gpu source\"\n"
                     "[default]\ngemm = { value = 0.7, source = \"d\" }\nmemory = { value = 0.8, source = \"d\" }\n"
                     "[gpu.h100-sxm]\ngemm = { value = 0.76, source = \"g\" }\n";
  auto e = ParseEfficiencyToml(toml, "e.toml", "h100-sxm");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_DOUBLE_EQ(e->gemm, 0.76);
  const std::vector<std::string> want = {"memory = 0.8: default source", "gemm = 0.76: gpu source"};
  EXPECT_EQ(e->sources, want);
  // Another GPU keeps the default's line.
  auto other = ParseEfficiencyToml(toml, "e.toml", "a100-sxm-80gb");
  ASSERT_TRUE(other.ok());
  const std::vector<std::string> want_default = {"gemm = 0.7: default source", "memory = 0.8: default source"};
  EXPECT_EQ(other->sources, want_default);
}

// Weight-only quantised MoE decode dequantises only the experts the step reads: at batch 1, Mixtral's 2 of 8.
TEST_F(Perf, QuantisedMoeDecodeDequantisesOnlyTheTouchedExperts) {
  const ModelSpec m = M("mixtral-8x7b");
  const GpuSpec& g = G("a100-sxm-80gb");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("int8");
  c.fit.batch = 1;
  c.input_len = 5;
  c.output_len = 200;
  auto r = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const OpCost* dq = FindOp(r->decode_ops, "dequantise weights");
  ASSERT_NE(dq, nullptr);
  const ParamCounts pc = CountParams(m);
  const double per_layer = (pc.attention + pc.mlp_dense) / m.layers + pc.moe_experts / m.layers * (2.0 / 8.0);
  EXPECT_NEAR(dq->flops, per_layer * E(g).dequant_ops_int8, 1e-6 * dq->flops);
}

// A quantised output head (--quantize-head, as gpt-fast and torchao run): one decode step reads the head in the
// weight format instead of 16-bit and dequantises it like the layers: LLaMA-3 8B's 525 M-parameter head, int8.
TEST_F(Perf, QuantisedHeadIsReadInTheWeightFormat) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("a100-sxm-80gb");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("int8");
  c.input_len = 5;
  c.output_len = 200;
  auto plain = EstimateInference(m, C(g), c, E(g));
  c.fit.quantize_head = true;
  auto q = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(plain.ok() && q.ok());
  const OpCost* h16 = FindOp(plain->decode_ops, "output head");
  const OpCost* h8 = FindOp(q->decode_ops, "output head");
  ASSERT_NE(h16, nullptr);
  ASSERT_NE(h8, nullptr);
  const double head = CountParams(m).lm_head;
  EXPECT_NEAR(h16->bytes, 2 * head, 1e-6 * head);
  EXPECT_NEAR(h8->bytes, head, 1e-6 * head);
  const double bw = g.memory_bandwidth_bytes_per_s.value * E(g).memory;
  const double fp32 = g.PeakFlops(Precision::kFp32).value();
  EXPECT_NEAR(h8->time_s, head / bw + head * E(g).dequant_ops_int8 / (fp32 * 0.8) + 2 * E(g).kernel_launch_s,
              1e-9);
  EXPECT_LT(q->tpot_s, plain->tpot_s);
}

// Serving engines all-reduce small messages with their own one-shot kernel inside an NVLink node: at decode's few
// kilobytes it beats NCCL's modelled ring (fixed cost per hop) and is what the model charges; from a few hundred
// kilobytes NCCL is faster again, and without a GPU link (PCIe) or across nodes only NCCL is modelled.
TEST_F(Perf, ServingAllReduceIsTheOneShotKernelForSmallMessagesOnNvlink) {
  const GpuSpec& g = G("h100-sxm");
  const Cluster c = C(g);
  const Efficiency e = E(g);
  const double small = 8192;  // one token's 4096-wide bf16 hidden state
  const double oneshot = e.oneshot_allreduce_latency_s + 7 * e.oneshot_allreduce_per_peer_s +
                         7 * small / (c.intra_bw_per_dir * e.oneshot_allreduce_link);
  EXPECT_NEAR(ServingAllReduceTime(c, e, small, 8).time_s, oneshot, 1e-12);
  EXPECT_TRUE(ServingAllReduceTime(c, e, small, 8).oneshot);
  EXPECT_LT(oneshot, GroupCollectiveTime(c, e, NcclOp::kAllReduce, small, 8, 1));
  // The published kernel took 5.7-5.9 us at 512 B-4 KB on eight H100s (data/efficiency.toml [oneshot_allreduce]).
  EXPECT_NEAR(ServingAllReduceTime(c, e, 4096, 8).time_s, 5.75e-6, 0.5e-6);
  const double big = 4 << 20;
  EXPECT_DOUBLE_EQ(ServingAllReduceTime(c, e, big, 8).time_s, GroupCollectiveTime(c, e, NcclOp::kAllReduce, big, 8, 1));
  EXPECT_FALSE(ServingAllReduceTime(c, e, big, 8).oneshot);
  // Two nodes: NCCL.
  EXPECT_DOUBLE_EQ(ServingAllReduceTime(c, e, small, 16).time_s, GroupCollectiveTime(c, e, NcclOp::kAllReduce, small, 16, 1));
  // L40S has no GPU link: NCCL over PCIe.
  const GpuSpec& l = G("l40s");
  EXPECT_DOUBLE_EQ(ServingAllReduceTime(C(l), E(l), small, 4).time_s,
                   GroupCollectiveTime(C(l), E(l), NcclOp::kAllReduce, small, 4, 1));
  // Inference charges it: two per layer.
  InferConfig cfg;
  cfg.fit.par.tp = 8;
  cfg.input_len = 5;
  cfg.output_len = 200;
  auto r = EstimateInference(M("llama-3.1-8b"), c, cfg, e);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const OpCost* ar = FindOp(r->decode_ops, "TP all-reduce (x2, one-shot)");
  ASSERT_NE(ar, nullptr);
  EXPECT_NEAR(ar->time_s, 2 * ServingAllReduceTime(c, e, 4096 * 2, 8).time_s, 1e-12);
  // The prefill of 5 tokens is still small; a long prompt's all-reduce is NCCL's.
  EXPECT_NE(FindOp(r->prefill_ops, "TP all-reduce (x2, one-shot)"), nullptr);
  cfg.input_len = 4096;
  auto longer = EstimateInference(M("llama-3.1-8b"), c, cfg, e);
  ASSERT_TRUE(longer.ok()) << longer.status().message();
  EXPECT_NE(FindOp(longer->prefill_ops, "TP all-reduce (x2, NCCL)"), nullptr);
}

// A parallel attention + MLP block (Falcon's new decoder architecture, GPT-J) sums both outputs before one
// all-reduce per layer (TensorRT-LLM's Falcon and GPT-J layers, vLLM's Falcon); a sequential block reduces after each.
TEST_F(Perf, ParallelBlocksAllReduceOncePerLayer) {
  const GpuSpec& g = G("h100-sxm");
  const Cluster c = C(g);
  const Efficiency e = E(g);
  InferConfig cfg;
  cfg.fit.par.tp = 8;
  cfg.fit.weights = *ParseWeightFormat("fp8");
  cfg.compute = Precision::kFp8;
  cfg.input_len = 128;
  cfg.output_len = 16;
  const ModelSpec falcon = M("falcon-180b");
  ASSERT_TRUE(falcon.parallel_block);
  EXPECT_TRUE(M("gpt-j-6b").parallel_block);
  EXPECT_FALSE(M("llama-3.1-70b").parallel_block);
  auto r = EstimateInference(falcon, c, cfg, e);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const OpCost* ar = FindOp(r->decode_ops, "TP all-reduce (x1, one-shot)");
  ASSERT_NE(ar, nullptr);
  EXPECT_NEAR(ar->time_s, ServingAllReduceTime(c, e, double(falcon.hidden) * 2, 8).time_s, 1e-12);
  auto l = EstimateInference(M("llama-3.1-70b"), c, cfg, e);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_NE(FindOp(l->decode_ops, "TP all-reduce (x2, one-shot)"), nullptr);
}

// gpt-fast's tensor parallelism shards attention and MLP only (tp.py), so every rank reads the whole output head
// per decode step; its README's bandwidth column (model bytes per rank x tokens/s) counts it: LLaMA-3.1 8B at TP 8,
// 772.60 GB/s / 276.01 tokens/s = 2.80 GB, the layers' eighth (1.74 GB) plus the whole 1.05 GB head.
TEST_F(Perf, ReplicatedEmbeddingsReadTheWholeHeadOnEveryTpRank) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("a100-sxm-80gb");
  InferConfig c;
  c.fit.par.tp = 8;
  c.input_len = 5;
  c.output_len = 200;
  auto split = EstimateInference(m, C(g), c, E(g));
  c.fit.replicated_embeddings = true;
  auto whole = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(split.ok() && whole.ok());
  const double head = CountParams(m).lm_head;
  const OpCost* hs = FindOp(split->decode_ops, "output head");
  const OpCost* hw = FindOp(whole->decode_ops, "output head");
  ASSERT_NE(hs, nullptr);
  ASSERT_NE(hw, nullptr);
  EXPECT_NEAR(hs->bytes, 2 * head / 8, 1e-6 * head);
  EXPECT_NEAR(hw->bytes, 2 * head, 1e-6 * head);
  const double bw = g.memory_bandwidth_bytes_per_s.value * E(g).memory;
  EXPECT_NEAR(whole->tpot_s - split->tpot_s, 2 * head * 7 / 8 / bw, 1e-7);
  // Memory: the embedding table and the head, whole instead of an eighth each.
  const double extra = 2 * (CountParams(m).embedding + head) * 7 / 8;
  EXPECT_NEAR(whole->per_gpu_peak_bytes - split->per_gpu_peak_bytes, extra, 1e-3 * extra);
  // A draft head with its own vocabulary (EAGLE-3) holds that head the same way: whole on every rank.
  c.spec.tokens = 3;
  c.spec.acceptance_length = 2.5;
  c.spec.draft_vocab = 32000;
  auto dwhole = EstimateInference(m, C(g), c, E(g));
  c.fit.replicated_embeddings = false;
  auto dsplit = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(dwhole.ok() && dsplit.ok());
  EXPECT_NEAR(dwhole->draft_bytes_per_gpu - dsplit->draft_bytes_per_gpu, 32000.0 * m.hidden * 2 * 7 / 8, 1.0);
}

// Small-batch 16-bit decode on Hopper carries the held-out evidence that it ran slower than predicted outside
// TensorRT-LLM; A100 (where the decode calibration is) and large batches do not.
TEST_F(Perf, HopperSmallBatchDecodeCarriesItsCaveat) {
  const ModelSpec m = M("llama-3.1-8b");
  auto noted = [&](const char* gpu, int64_t batch) {
    InferConfig c;
    c.fit.batch = batch;
    c.input_len = 6;
    c.output_len = 200;
    auto r = EstimateInference(m, C(G(gpu)), c, E(G(gpu)));
    EXPECT_TRUE(r.ok());
    bool found = false;
    for (const auto& n : r->notes) found |= n.find("small-batch decode in torch.compile") != std::string::npos;
    return found;
  };
  EXPECT_TRUE(noted("h100-sxm", 1));
  EXPECT_TRUE(noted("h200-sxm", 8));
  EXPECT_FALSE(noted("h100-sxm", 64));
  EXPECT_FALSE(noted("a100-sxm-80gb", 1));
}

TEST_F(Perf, MfuIsModelFlopsOverPeak) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  auto r = EstimateTraining(m, C(g), Train(8, 1, 1, 64, 4096), E(g));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->mfu, r->model_flops_per_step / (r->step_time_s * 8 * 989.4e12), 1e-9);
  EXPECT_GT(r->mfu, 0.2);
  EXPECT_LT(r->mfu, 0.8);
  EXPECT_GE(r->hfu, r->mfu);
}

}  // namespace
}  // namespace suanli

#include "suanli/bench.h"

namespace suanli {
namespace {

TEST_F(Perf, CalibrationFromBenchReplacesTheEfficiencies) {
  const GpuSpec& g = G("h100-sxm");
  Calibration cal;
  cal.gpu = "h100-sxm";
  cal.device_name = "NVIDIA H100 80GB HBM3";
  cal.memory_bandwidth_bytes_per_s = 3.0e12;
  cal.gemm[Precision::kBf16] = {{1024, 1024, 1024, 300e12}, {8192, 8192, 8192, 750e12}};
  cal.link_bandwidth_bytes_per_s["allreduce_busbw"] = 470e9;
  cal.link_bandwidth_bytes_per_s["d2h_pinned"] = 50e9;
  cal.link_bandwidth_bytes_per_s["h2d_pinned"] = 55e9;
  cal.launch_latency_s = 3e-6;
  // Round trip through the file format `suanli bench export-calibration` writes.
  auto parsed = ParseCalibrationToml(CalibrationToToml(cal), "cal.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto e = ApplyCalibration(E(g), *parsed, g);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_NEAR(e->memory, 3.0 / 3.35, 1e-9);
  EXPECT_NEAR(e->gemm, 750e12 / 989.4e12, 1e-9);  // the large shape, not the small one
  // An all-reduce above the wire rate was reduced in the switch (NVLS): it sets the all-reduce figure and leaves
  // the ring figure of the other collectives alone. At or below the wire rate it is a ring and sets both.
  EXPECT_NEAR(e->link_allreduce, 470.0 / 450.0, 1e-9);
  EXPECT_DOUBLE_EQ(e->link, E(g).link);
  Calibration ring = *parsed;
  ring.link_bandwidth_bytes_per_s["allreduce_busbw"] = 360e9;
  auto er = ApplyCalibration(E(g), ring, g);
  ASSERT_TRUE(er.ok()) << er.status().message();
  EXPECT_NEAR(er->link, 360.0 / 450.0, 1e-9);
  EXPECT_NEAR(er->link_allreduce, 360.0 / 450.0, 1e-9);
  EXPECT_DOUBLE_EQ(e->kernel_launch_s, 3e-6);
  // The sources name the measured values only: one line per key, the bench's, none of the data file's it replaced.
  for (const char* key : {"memory = ", "gemm = ", "link_allreduce = ", "kernel_launch = ", "host_d2h = "}) {
    const auto n = std::count_if(e->sources.begin(), e->sources.end(),
                                 [&](const std::string& s) { return s.starts_with(key); });
    EXPECT_EQ(n, 1) << key;
    for (const auto& s : e->sources)
      if (s.starts_with(key)) {
        EXPECT_NE(s.find("bench"), std::string::npos) << s;
      }
  }
  // Pinned host copies against the host link (PCIe Gen5 x16 on this H100: 63.0 GB/s per direction).
  const double pcie5 = 16 * 32e9 * 128 / 130 / 8;
  EXPECT_NEAR(e->host_d2h, 50e9 / pcie5, 1e-9);
  EXPECT_NEAR(e->host_h2d, 55e9 / pcie5, 1e-9);
  // A slower measured machine predicts a slower step.
  const ModelSpec m = M("llama-3.1-8b");
  Efficiency slow = *e;
  slow.gemm *= 0.5;
  EXPECT_GT(EstimateTraining(m, C(g), Train(8, 1, 1, 64), slow)->step_time_s,
            EstimateTraining(m, C(g), Train(8, 1, 1, 64), *e)->step_time_s);
  // Measured on another GPU: refused.
  auto wrong = ApplyCalibration(E(G("a100-sxm-80gb")), *parsed, G("a100-sxm-80gb"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("h100-sxm"), std::string::npos);
  // Physically impossible values: refused.
  cal.memory_bandwidth_bytes_per_s = 30e12;
  EXPECT_FALSE(ApplyCalibration(E(g), cal, g).ok());
}

// ---- Expert parallelism in serving (docs/methodology.md section 9.1) ----

// The order statistics behind the busiest expert-parallel rank. E[max of 2 standard normals] = 1/sqrt(pi);
// E[max of r Bernoulli(q)] = 1 - (1 - q)^r; one rank gives the binomial mean.
TEST_F(Perf, ExpectedMaximaMatchClosedForms) {
  using perf_detail::ExpectedMaxBinomial;
  using perf_detail::ExpectedMaxStdNormal;
  EXPECT_DOUBLE_EQ(ExpectedMaxStdNormal(1), 0.0);
  EXPECT_NEAR(ExpectedMaxStdNormal(2), 1 / std::sqrt(M_PI), 1e-6);
  EXPECT_NEAR(ExpectedMaxStdNormal(8), 1.4236, 1e-3);  // tabulated (Tippett 1925)
  EXPECT_NEAR(ExpectedMaxBinomial(1, 0.25, 8), 1 - std::pow(0.75, 8), 1e-12);
  EXPECT_NEAR(ExpectedMaxBinomial(5, 0.3, 1), 1.5, 1e-12);
  EXPECT_DOUBLE_EQ(ExpectedMaxBinomial(4, 1.0, 8), 4.0);
}

// FP8 delayed scaling: each model chunk's forward and backward end with a max all-reduce of its amaxes over TP x DP x
// CP ranks (Megatron-Core core_r0.9.0 on), exposed on the compute stream; with --tp-only-amax-red over TP x CP. The
// step's exposed communication carries exactly the difference, and current scaling has neither.
TEST_F(Perf, DelayedScalingReducesAmaxesPerChunkOverItsGroup) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  const Cluster cl = C(g);
  TrainConfig c = Train(256, 8, 4, 512, 4096, 1);
  c.fit.par.interleave = 5;
  c.fit.par.sequence_parallel = true;
  c.dtype = Precision::kFp8;
  auto all = EstimateTraining(m, cl, c, e);
  c.tp_only_amax_reduction = true;
  auto tp_only = EstimateTraining(m, cl, c, e);
  ASSERT_TRUE(all.ok() && tp_only.ok());
  const int dp = 256 / (8 * 4), chunks = 5;
  const double layers_per_chunk = 80.0 / 4 / chunks;
  auto amax = [&](int group) {
    return chunks * (GroupCollectiveTime(cl, e, NcclOp::kAllReduce, layers_per_chunk * 48, group, 1) +
                     GroupCollectiveTime(cl, e, NcclOp::kAllReduce, layers_per_chunk * 32, group, 1));
  };
  const double per_mb = amax(8 * dp) - amax(8);
  ASSERT_GT(per_mb, 0);
  const int mbs = 512 / dp;
  EXPECT_NEAR(all->communication_total_s - tp_only->communication_total_s, mbs * per_mb, 1e-9);
  EXPECT_GT(all->step_time_s, tp_only->step_time_s);
  c.fp8_recipe = Fp8Recipe::kCurrent;
  c.tp_only_amax_reduction = false;
  auto current = EstimateTraining(m, cl, c, e);
  c.tp_only_amax_reduction = true;
  auto current_tp = EstimateTraining(m, cl, c, e);
  ASSERT_TRUE(current.ok() && current_tp.ok());
  EXPECT_DOUBLE_EQ(current->step_time_s, current_tp->step_time_s);
}

// Blom's approximation of E[max of n standard normals], against the integral: +4.5% at 2, +0.7% at 8, within 0.5%
// from 16 GPUs up.
TEST_F(Perf, FastExpectedMaximumTracksTheIntegral) {
  using perf_detail::ExpectedMaxStdNormal;
  using perf_detail::ExpectedMaxStdNormalFast;
  EXPECT_DOUBLE_EQ(ExpectedMaxStdNormalFast(1), 0.0);
  EXPECT_NEAR(ExpectedMaxStdNormalFast(2) / ExpectedMaxStdNormal(2), 1.045, 0.002);
  EXPECT_NEAR(ExpectedMaxStdNormalFast(8) / ExpectedMaxStdNormal(8), 1.0074, 0.001);
  for (int n : {16, 64, 256, 1024, 4096, 16384})
    EXPECT_NEAR(ExpectedMaxStdNormalFast(n) / ExpectedMaxStdNormal(n), 1.0, 0.005) << n;
  EXPECT_NEAR(perf_detail::InverseStdNormalCdf(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(perf_detail::InverseStdNormalCdf(0.001), -3.090232, 1e-6);
}

// gpu_speed_spread (off in the bundled table: docs/validation.md §4): a synchronous job's kernels take 1 + spread x
// E[max of N standard normals] times a typical GPU's; one GPU has no lag, and communication is not slowed.
TEST_F(Perf, SlowestGpuLagStretchesComputeOnly) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  Efficiency e = E(g);
  EXPECT_DOUBLE_EQ(e.gpu_speed_spread, 0.0);
  for (int gpus : {1, 64}) {
    TrainConfig c = Train(gpus, 1, 1, gpus * 2, 4096, 1);
    auto base = EstimateTraining(m, C(g), c, e);
    Efficiency slow = e;
    slow.gpu_speed_spread = 0.02;
    auto lagged = EstimateTraining(m, C(g), c, slow);
    ASSERT_TRUE(base.ok() && lagged.ok());
    const double lag = 1 + 0.02 * perf_detail::ExpectedMaxStdNormalFast(gpus);
    EXPECT_NEAR(lagged->breakdown_s.compute, base->breakdown_s.compute * lag, 1e-9 * base->breakdown_s.compute)
        << gpus;
    EXPECT_NEAR(lagged->communication_total_s, base->communication_total_s, 1e-12) << gpus;
  }
}

// Without expert parallelism the busiest rank is every rank: E (1 - (1 - k/E)^T) experts touched and T k
// token-expert pairs, the formulas the model used before EP.
TEST_F(Perf, BusiestExpertRankWithoutEpIsTheWholeStep) {
  const auto l = perf_detail::BusiestExpertRank(3, 8, 2, 1);
  EXPECT_NEAR(l.touched, 8 * (1 - std::pow(0.75, 3)), 1e-12);
  EXPECT_DOUBLE_EQ(l.assignments, 6.0);
  EXPECT_NEAR(l.tokens_per_expert, 6.0 / l.touched, 1e-12);
}

// The approximations (independent binomials for the experts touched, a normal tail for the token-expert pairs)
// against a Monte Carlo of uniform top-k routing, fixed seed: within 10% for Mixtral-like (8 experts, top-2),
// Qwen3-MoE-like (128, top-8) and DeepSeek-V3-like (256, top-8) routing, from one token to hundreds.
TEST_F(Perf, BusiestExpertRankMatchesMonteCarloRouting) {
  std::mt19937_64 rng(20261204);
  struct Case { int experts, k, ep, tokens; };
  for (const Case c : {Case{8, 2, 8, 1}, Case{8, 2, 8, 128}, Case{8, 2, 2, 4}, Case{128, 8, 8, 1}, Case{128, 8, 8, 16},
                       Case{256, 8, 8, 64}, Case{256, 8, 4, 512}}) {
    const int local = c.experts / c.ep, trials = 3000;
    double touched = 0, pairs = 0;
    std::vector<int> ids(c.experts);
    for (int t = 0; t < trials; ++t) {
      std::vector<int> hits(c.experts, 0);
      for (int tok = 0; tok < c.tokens; ++tok) {
        std::iota(ids.begin(), ids.end(), 0);
        for (int j = 0; j < c.k; ++j) {  // k distinct experts: a partial Fisher-Yates shuffle
          std::uniform_int_distribution<int> d(j, c.experts - 1);
          std::swap(ids[j], ids[d(rng)]);
          ++hits[ids[j]];
        }
      }
      double max_touched = 0, max_pairs = 0;
      for (int r = 0; r < c.ep; ++r) {
        double tr = 0, pr = 0;
        for (int e = r * local; e < (r + 1) * local; ++e) {
          tr += hits[e] > 0;
          pr += hits[e];
        }
        max_touched = std::max(max_touched, tr);
        max_pairs = std::max(max_pairs, pr);
      }
      touched += max_touched / trials;
      pairs += max_pairs / trials;
    }
    const auto l = perf_detail::BusiestExpertRank(c.tokens, c.experts, c.k, c.ep);
    const std::string what = fmt::format("E={} k={} EP={} T={}", c.experts, c.k, c.ep, c.tokens);
    EXPECT_NEAR(l.touched, touched, 0.10 * touched) << what;
    EXPECT_NEAR(l.assignments, pairs, 0.10 * pairs) << what;
  }
}

// A fused MoE operator (the default, --moe-impl fused) costs its routing and gathers besides the expert GEMMs: per MoE
// layer and pass the fixed time of data/efficiency.toml [moe_serving] plus the expansion's and the finalising gather's
// bytes at the achievable bandwidth. gpt-fast's indexed experts (--moe-impl indexed) have neither, and every other
// operator is the same.
TEST_F(Perf, FusedMoeOperatorChargesItsRoutingAndGathers) {
  const ModelSpec m = M("mixtral-8x7b");
  const GpuSpec& g = G("h100-sxm");
  InferConfig c;
  c.fit.batch = 4;
  c.fit.par.tp = 2;
  c.input_len = 128;
  c.output_len = 128;
  auto fused = EstimateInference(m, C(g), c, E(g));
  c.moe_impl = MoeImpl::kIndexed;
  auto indexed = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(fused.ok() && indexed.ok());
  const Efficiency eff = E(g);
  ASSERT_GT(eff.moe_serving_fixed_s, 0);
  const char* name = "MoE routing, row expansion and gather";
  EXPECT_EQ(FindOp(indexed->decode_ops, name), nullptr);
  const OpCost* dec = FindOp(fused->decode_ops, name);
  const OpCost* pre = FindOp(fused->prefill_ops, name);
  ASSERT_TRUE(dec && pre);
  // A decode step: 4 tokens, each on 2 experts at TP 2 (experts split by width, so all 8 pairs on every rank), 16-bit
  // rows gathered in, written at 2 B, the outputs gathered back into 4 rows.
  const double h = m.hidden;
  const double bytes = 8 * h * (2 + 2 + 2) + 4 * h * 2;
  EXPECT_NEAR(dec->bytes, bytes, 1e-6 * bytes);
  const double bw = g.memory_bandwidth_bytes_per_s.value * eff.memory;
  EXPECT_NEAR(dec->time_s, bytes / bw + eff.moe_serving_fixed_s, 1e-12);
  EXPECT_EQ(dec->count, m.layers);
  EXPECT_NEAR(fused->tpot_s - indexed->tpot_s, m.layers * dec->time_s, 1e-9);
  EXPECT_NEAR(fused->ttft_s - indexed->ttft_s, m.layers * pre->time_s, 1e-9);
  // Dense models have no such operator.
  InferConfig d;
  auto dense = EstimateInference(M("llama-3.1-8b"), C(g), d, E(g));
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(FindOp(dense->decode_ops, name), nullptr);
  // Indexed experts on a model without experts is a mistake, not a no-op.
  d.moe_impl = MoeImpl::kIndexed;
  auto dense_indexed = EstimateInference(M("llama-3.1-8b"), C(g), d, E(g));
  ASSERT_FALSE(dense_indexed.ok());
  EXPECT_NE(dense_indexed.status().message().find("--moe-impl indexed needs an MoE model"), std::string::npos)
      << dense_indexed.status().message();
  EXPECT_FALSE(ParseMoeImpl("fuse").ok());
  EXPECT_NE(ParseMoeImpl("fuse").status().message().find("did you mean 'fused'"), std::string::npos);
}

// Batch-1 decode of Mixtral on 8 GPUs: under TP 8 each GPU reads 1/8 of the 2 chosen experts (0.25 of an expert);
// under EP 8 one expert per GPU, and the GPUs holding the 2 chosen ones read them whole: 4x the expert bytes on
// the critical GPU. The per-GPU memory is the same (the experts are split 8 ways either way).
TEST_F(Perf, ExpertParallelDecodeReadsWholeExpertsOnTheBusiestRank) {
  const ModelSpec m = M("mixtral-8x7b");
  auto tp = MixtralOnEightH100(1, 1);
  auto ep = MixtralOnEightH100(1, 8);
  ASSERT_TRUE(tp.ok() && ep.ok()) << (tp.ok() ? ep.status().message() : tp.status().message());
  for (const char* name : {"experts up/gate", "experts down"}) {
    const OpCost* a = FindOp(tp->decode_ops, name);
    const OpCost* b = FindOp(ep->decode_ops, name);
    ASSERT_TRUE(a && b) << name;
    const double h = m.hidden, f = m.moe->expert_ffn, mats = std::string_view(name) == "experts down" ? 1 : 2;
    const double weight_bytes = mats * f * h * 2;  // one whole expert's matrices, bf16
    EXPECT_NEAR(a->bytes, 0.25 * weight_bytes, 0.01 * a->bytes) << name;
    EXPECT_NEAR(b->bytes, weight_bytes, 0.01 * b->bytes) << name;
  }
  EXPECT_GT(ep->tpot_s, 1.3 * tp->tpot_s);
  // EP serving is checked only inside serving benchmarks (closed loops and disaggregated decode workers): no decode
  // band, a note that quotes those runs.
  EXPECT_GT(tp->decode_error.cases, 0);
  EXPECT_EQ(ep->decode_error.cases, 0);
  bool noted = false;
  const std::string quoted =
      fmt::format("uncertain: expert parallelism in serving is checked only inside serving benchmarks: on {} "
                  "held-out closed-loop runs with EP > 1",
                  evidence::kMoeExpertParallelClosedLoopTpot.cases);
  const std::string disagg = fmt::format("and on {} disaggregated decode workers with EP 4 to 32",
                                         evidence::kDisaggExpertParallelTpot.cases);
  for (const auto& n : ep->notes) noted = noted || (n.rfind(quoted, 0) == 0 && n.find(disagg) != std::string::npos);
  EXPECT_TRUE(noted);
  EXPECT_DOUBLE_EQ(ep->per_gpu_peak_bytes, tp->per_gpu_peak_bytes);
  EXPECT_EQ(ep->max_batch, tp->max_batch);
}

// At a large decode batch every expert is busy on every rank, and the busiest EP rank carries only a few percent
// more than its share: EP and TP read the same expert bytes and the step times agree within 10%.
TEST_F(Perf, ExpertParallelDecodeAtLargeBatchCostsAboutWhatTpCosts) {
  auto tp = MixtralOnEightH100(256, 1);
  auto ep = MixtralOnEightH100(256, 4);  // EP 4 x ETP 2
  ASSERT_TRUE(tp.ok() && ep.ok());
  EXPECT_NEAR(ep->tpot_s, tp->tpot_s, 0.10 * tp->tpot_s);
  EXPECT_GE(ep->tpot_s, tp->tpot_s * 0.99);  // never cheaper: the same bytes, a busiest rank above the mean
}

// Training's imbalance factor, tokens and price are checked where they are used: NaN and out-of-range values are
// errors that name the flag (a NaN factor once gave a MoE step with 0 us of compute). The largest accepted values
// still give an answer.
TEST_F(Perf, TrainingRejectsNonFiniteFactors) {
  const GpuSpec& g = G("h100-sxm");
  const double nan = std::nan("");
  struct Bad {
    double imbalance, tokens, price;
    const char* flag;
  };
  for (const Bad& b : {Bad{nan, 0, 0, "--moe-imbalance"}, Bad{0.5, 0, 0, "--moe-imbalance"}, Bad{1.1, nan, 0, "--tokens"},
                       Bad{1.1, -1, 0, "--tokens"}, Bad{1.1, 0, INFINITY, "--price-per-gpu-hour"},
                       // A typo's exponent: an error, not a time to train with 300 digits.
                       Bad{1.1, 1e300, 0, "--tokens"}, Bad{1.1, 1e18 * 1.01, 0, "--tokens"},
                       Bad{1.1, 0, 1e7, "--price-per-gpu-hour"}}) {
    TrainConfig c = Train(8, 1, 1, 64);
    c.moe_imbalance = b.imbalance;
    c.tokens = b.tokens;
    c.price_per_gpu_hour = b.price;
    auto r = EstimateTraining(M("llama-3.1-8b"), C(g), c, E(g));
    ASSERT_FALSE(r.ok()) << b.flag;
    EXPECT_EQ(r.status().message().rfind(b.flag, 0), 0u) << r.status().message();
  }
  TrainConfig c = Train(8, 1, 1, 64);
  c.tokens = 1e18;
  c.price_per_gpu_hour = 1e6;
  auto r = EstimateTraining(M("llama-3.1-8b"), C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(std::isfinite(r->cost_usd) && r->cost_usd > 0);
}

// --moe-imbalance is a floor on the busiest rank's share over uniform routing: 1 changes nothing, a larger factor
// sets the pairs to factor x T k / EP, never more than T x min(k, experts per rank), and never below the whole
// numbers uniform routing already forces (one Mixtral token on 8 ranks: one pair, 4x the mean of 0.25).
TEST_F(Perf, MoeImbalanceRaisesTheBusiestRankAboveUniformRouting) {
  for (double tokens : {1.0, 64.0, 8192.0}) {
    const auto u = perf_detail::BusiestExpertRank(tokens, 8, 2, 8);
    const auto one = perf_detail::BusiestExpertRank(tokens, 8, 2, 8, 1.0);
    EXPECT_DOUBLE_EQ(one.assignments, u.assignments) << tokens;
    EXPECT_GE(u.assignments, tokens * 2 / 8) << tokens;  // uniform is never below the mean
  }
  EXPECT_DOUBLE_EQ(perf_detail::BusiestExpertRank(8192, 8, 2, 8, 2.0).assignments, 2.0 * 8192 * 2 / 8);
  EXPECT_DOUBLE_EQ(perf_detail::BusiestExpertRank(8192, 8, 2, 8, 64.0).assignments, 8192.0);  // one expert per rank
  EXPECT_DOUBLE_EQ(perf_detail::BusiestExpertRank(1, 8, 2, 8, 3.0).assignments, 1.0);
  // 256 experts, top 8, EP 8 (DeepSeek-V3's shape): 32 local experts, a cap of T x 8.
  EXPECT_DOUBLE_EQ(perf_detail::BusiestExpertRank(4096, 256, 8, 8, 64.0).assignments, 4096.0 * 8);
}

// In a compute-bound prefill the busiest GPU's expert GEMMs scale with its pairs: twice the mean costs about
// twice the expert FLOPs of uniform routing (which is 1.03x the mean at 64 x 128 tokens), and the result reports
// the factor used. Batch-1 decode, where uniform routing already puts 4x the mean on one GPU, does not move.
TEST_F(Perf, MoeImbalanceSlowsExpertParallelPrefill) {
  auto uniform = MixtralOnEightH100(64, 8);
  auto hot = MixtralOnEightH100(64, 8, 2.0);
  ASSERT_TRUE(uniform.ok() && hot.ok()) << (uniform.ok() ? hot.status().message() : uniform.status().message());
  EXPECT_GT(uniform->prefill_expert_imbalance, 1.0);
  EXPECT_LT(uniform->prefill_expert_imbalance, 1.1);
  EXPECT_DOUBLE_EQ(hot->prefill_expert_imbalance, 2.0);
  for (const char* name : {"experts up/gate", "experts down"}) {
    const OpCost* a = FindOp(uniform->prefill_ops, name);
    const OpCost* b = FindOp(hot->prefill_ops, name);
    ASSERT_TRUE(a && b) << name;
    EXPECT_NEAR(b->flops / a->flops, 2.0 / uniform->prefill_expert_imbalance, 0.01) << name;
  }
  EXPECT_GT(hot->ttft_s, 1.3 * uniform->ttft_s);
  auto one = MixtralOnEightH100(1, 8), one_hot = MixtralOnEightH100(1, 8, 3.0);
  ASSERT_TRUE(one.ok() && one_hot.ok());
  EXPECT_DOUBLE_EQ(one->decode_expert_imbalance, 4.0);
  EXPECT_DOUBLE_EQ(one_hot->tpot_s, one->tpot_s);
}

// The factor needs expert parallelism and a sane range; otherwise a clear error, not a silently ignored flag.
TEST_F(Perf, MoeImbalanceOutsideExpertParallelismIsAnError) {
  auto no_ep = MixtralOnEightH100(8, 1, 2.0);
  ASSERT_FALSE(no_ep.ok());
  EXPECT_NE(no_ep.status().message().find("needs expert parallelism"), std::string::npos) << no_ep.status().message();
  for (double bad : {0.5, 65.0}) {
    auto r = MixtralOnEightH100(8, 8, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("outside 1..64"), std::string::npos) << r.status().message();
  }
}

// Serving layouts the model does not cover get a clear error naming what would be valid.
TEST_F(Perf, ExpertParallelInferenceRejectsLayoutsOutsideTheTpGroup) {
  const GpuSpec& g = G("h100-sxm");
  InferConfig c;
  c.fit.batch = 1;
  c.fit.par.tp = 4;
  c.fit.par.ep = 8;
  auto r = EstimateInference(M("mixtral-8x7b"), C(g), c, E(g));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("EP x ETP = TP"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("valid EP for TP 4 and 8 experts: 1, 2, 4"), std::string::npos)
      << r.status().message();
  c.fit.par.ep = 2;
  c.fit.par.etp = 1;  // 2 x 1 != 4
  EXPECT_FALSE(EstimateInference(M("mixtral-8x7b"), C(g), c, E(g)).ok());
  c.fit.par.etp = -1;  // not silently the default
  auto neg = EstimateInference(M("mixtral-8x7b"), C(g), c, E(g));
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("--etp must be at least 1"), std::string::npos) << neg.status().message();
  c.fit.par.etp = 0;
  c.fit.par.tp = 8;
  c.fit.par.ep = 8;
  auto dense = EstimateInference(M("llama-3.1-70b"), C(g), c, E(g));
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("needs a mixture-of-experts model"), std::string::npos);
}

// torchtitan's per-op checkpointing reruns wk (4096 x 1024), wo (4096 x 4096), the up projection w3 (4096 x 14336)
// and the element-wise ops in the backward, once per layer and micro-batch: LLaMA-3.1 8B on 8 H100s, DP 8, 8
// micro-batches of 4096 tokens per GPU. It costs more than no recompute and less than full recompute, in time and
// (the other way) in memory, and HFU counts the three GEMMs. With TP 2 and SP it also repeats the two all-gathers.
TEST_F(Perf, RecomputeOpRerunsEveryOtherMatmulAndTheElementwiseOps) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  const Efficiency e = E(g);
  const auto run = [&](Recompute rc, int tp) {
    TrainConfig c = Train(8, tp, 1, 64 / tp, 4096);
    c.fit.par.sequence_parallel = tp > 1;
    c.fit.recompute = rc;
    auto r = EstimateTraining(m, C(g), c, e);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult none = run(Recompute::kNone, 1), op = run(Recompute::kOp, 1), full = run(Recompute::kFull, 1);
  ASSERT_EQ(none.num_micro_batches, 8);
  const double peak = *g.PeakFlops(Precision::kBf16);
  const auto gemm = [&](double n, double k) { return EstimateGemm(4096, n, k, 1, 2, peak, e.gemm, g, e); };
  const OpCost* ew = FindOp(none.ops, "norms, residuals, activation");
  ASSERT_NE(ew, nullptr);
  const GemmTime wk = gemm(1024, 4096), wo = gemm(4096, 4096), w3 = gemm(14336, 4096);
  const double per_layer_mb = 8.0 * 32;
  EXPECT_NEAR(op.breakdown_s.compute - none.breakdown_s.compute,
              per_layer_mb * (wk.time_s + wo.time_s + w3.time_s + ew->time_s), 1e-9);
  const OpCost* rc_row = FindOp(op.ops, "recompute: torchtitan per-op (wk, wo, up or fc2, element-wise)");
  ASSERT_NE(rc_row, nullptr);
  EXPECT_NEAR(rc_row->flops, per_layer_mb * 2.0 * 4096 * 4096 * (1024 + 4096 + 14336), 1e-6 * rc_row->flops);
  EXPECT_LT(none.step_time_s, op.step_time_s);
  EXPECT_LT(op.step_time_s, full.step_time_s);
  EXPECT_GT(none.memory.per_gpu_peak_bytes, op.memory.per_gpu_peak_bytes);
  EXPECT_GT(op.memory.per_gpu_peak_bytes, full.memory.per_gpu_peak_bytes);
  EXPECT_NEAR(op.mfu, none.mfu * none.step_time_s / op.step_time_s, 1e-12);
  EXPECT_GT(op.hfu, op.mfu);
  EXPECT_EQ(op.recompute, Recompute::kOp);

  const TrainResult none2 = run(Recompute::kNone, 2), op2 = run(Recompute::kOp, 2);
  const double ag = GroupCollectiveTime(C(g), e, NcclOp::kAllGather, 4096.0 * 4096 * 2, 2, 1);
  EXPECT_NEAR(op2.communication_total_s - none2.communication_total_s, none2.num_micro_batches * 32 * 2 * ag, 1e-9);

  TrainConfig lora = Train(8, 1, 1, 64, 4096);
  lora.fit.mode = Mode::kLora;
  lora.fit.recompute = Recompute::kOp;
  auto refused = EstimateTraining(m, C(g), lora, e);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--recompute op"), std::string::npos);
}


// --tp-overlap takes tp_overlap_hidden (0.65, torchtitan's async-TP measurements) of the TP collectives off the
// critical path, at the contention cost overlap_slowdown (0.40) on the part hidden, and leaves the rest exposed:
// LLaMA-3.1 70B on 8 H100s at TP 8 with SP, 8 micro-batches of 4096 tokens. With the share at 1 the old rule (all
// hidden but the contention) comes back, at 0 the overlap changes nothing.
TEST_F(Perf, TpOverlapHidesItsShareOfTheCollectives) {
  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& g = G("h100-sxm");
  const auto run = [&](bool overlap, double share) {
    TrainConfig c = Train(8, 8, 1, 8, 4096);
    c.fit.par.sequence_parallel = true;
    c.fit.recompute = Recompute::kFull;
    c.tp_overlap = overlap;
    c.tp_grad_overlap = false;  // every pass's collectives exposed but what --tp-overlap hides
    Efficiency e = E(g);
    e.tp_overlap_hidden = share;
    auto r = EstimateTraining(m, C(g), c, e);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  const TrainResult plain = run(false, 0.65), ovl = run(true, 0.65), all = run(true, 1.0), none = run(true, 0.0);
  ASSERT_EQ(plain.num_micro_batches, 8);
  EXPECT_NEAR(E(g).tp_overlap_hidden, 0.65, 1e-12);  // data/efficiency.toml
  const OpCost* tp = FindOp(plain.ops, "TP all-gather + reduce-scatter (x2)");
  ASSERT_NE(tp, nullptr);
  // Per layer and micro-batch: the forward's collectives (the row), the backward's and the recomputed forward's.
  const double per_mb = 80 * tp->time_s * 3;
  const double c_tp = plain.num_micro_batches * per_mb;
  const double sigma = E(g).overlap_slowdown;
  EXPECT_NEAR(plain.step_time_s - ovl.step_time_s, 0.65 * c_tp * (1 - sigma), 1e-6 * plain.step_time_s);
  EXPECT_NEAR(plain.step_time_s - all.step_time_s, c_tp * (1 - sigma), 1e-6 * plain.step_time_s);
  EXPECT_NEAR(none.step_time_s, plain.step_time_s, 1e-9 * plain.step_time_s);
  EXPECT_LT(all.step_time_s, ovl.step_time_s);
}


// Where tp_overlap_hidden comes from (data/efficiency.toml, source torchtitan_asynctp): torchtitan's async TP against
// vanilla TP on H100 (benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md), LLaMA 3 70B on 256 GPUs (FSDP 32, TP 8,
// full AC, local batch 16) and 8B on 64 (FSDP 8, TP 8, per-op AC, local batch 12), sequence 8192, BF16 and Float8
// tensorwise: speed-ups 652.4/597.3, 942.4/809.8, 4809.4/4378, 5570.1/5078.1. The share is the mean of what each run
// implies, so the model's speed-ups match the measured ones on average; each alone within 6% (at the contention cost
// 0.40 the four imply shares from 0.47 to 1.00, at 0.189 from 0.35 to 0.72: one share does not fit every run). (Their
// H100s are a 500 W, 96 GB part the catalog does not have; modelled as the H100 SXM.)
TEST_F(Perf, TpOverlapShareReproducesTorchtitansAsyncTpSpeedups) {
  const GpuSpec& g = G("h100-sxm");
  struct Run {
    const char* model;
    int gpus, local_batch;
    Recompute rc;
    bool fp8;
    double measured;
  };
  const Run runs[] = {{"llama-3.1-70b", 256, 16, Recompute::kFull, false, 652.4 / 597.3},
                      {"llama-3.1-70b", 256, 16, Recompute::kFull, true, 942.4 / 809.8},
                      {"llama-3.1-8b", 64, 12, Recompute::kOp, false, 4809.4 / 4378},
                      {"llama-3.1-8b", 64, 12, Recompute::kOp, true, 5570.1 / 5078.1}};
  double sum_model = 0, sum_measured = 0;
  for (const Run& r : runs) {
    const auto step = [&](bool overlap) {
      TrainConfig c = Train(r.gpus, 8, 1, int64_t(r.local_batch) * r.gpus / 8, 8192, r.local_batch);
      c.fit.par.zero = 3;
      c.fit.par.sequence_parallel = true;
      c.fit.recompute = r.rc;
      c.tp_overlap = overlap;
      c.tp_grad_overlap = false;  // torchtitan's DTensor TP runs its backward collectives exposed, unlike Megatron
      if (r.fp8) {
        c.dtype = Precision::kFp8;
        c.fp8_recipe = Fp8Recipe::kCurrent;
      }
      auto t = EstimateTraining(M(r.model), C(g), c, E(g));
      EXPECT_TRUE(t.ok()) << t.status().message();
      return t.ok() ? t->step_time_s : 0.0;
    };
    const double model = step(false) / step(true);
    EXPECT_NEAR(model / r.measured, 1.0, 0.06) << r.model << (r.fp8 ? " float8" : " bf16");
    sum_model += model;
    sum_measured += r.measured;
  }
  EXPECT_NEAR(sum_model / sum_measured, 1.0, 0.01);
}

// NVFP4 serving (W4A4 on FP4 tensor cores): weights and activations at 4.5 bits (4-bit E2M1 plus an E4M3 scale per
// 16), GEMMs at the FP4 peak times gemm_fp4; the head, kept 16-bit, at the 16-bit rate. Refused where there are no FP4
// tensor cores, with the formats that would work instead.
TEST_F(Perf, Nvfp4ServingRunsItsGemmsOnFp4TensorCores) {
  const auto nvfp4 = ParseWeightFormat("nvfp4");
  ASSERT_TRUE(nvfp4.ok());
  EXPECT_DOUBLE_EQ(nvfp4->bits_per_weight, 4.5);
  EXPECT_FALSE(nvfp4->quantizes_embeddings);
  EXPECT_EQ(ServingComputePrecision(*nvfp4), Precision::kFp4);
  EXPECT_EQ(ServingComputePrecision(*ParseWeightFormat("fp8")), Precision::kFp8);
  EXPECT_EQ(ServingComputePrecision(*ParseWeightFormat("int4")), Precision::kBf16);  // weight-only: dequantised

  const ModelSpec m = M("llama-3.1-70b");
  const GpuSpec& b200 = G("b200");
  const Efficiency e = E(b200);
  EXPECT_NEAR(e.gemm_fp4, 0.604, 1e-9);  // data/efficiency.toml, pytorch/ao's cuBLAS NVFP4 on a B200
  InferConfig c;
  c.fit.weights = *nvfp4;
  c.compute = Precision::kFp4;
  c.fit.batch = 8;
  c.input_len = 2048;
  c.output_len = 16;
  auto r = EstimateInference(m, C(b200), c, e);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The MLP's down projection of the prefill, one layer: 8 x 2048 rows, 8192 out, 28672 in, both operands NVFP4.
  const OpCost* down = FindOp(r->prefill_ops, "mlp down");
  ASSERT_NE(down, nullptr);
  const GemmTime want = EstimateGemm(8 * 2048, 8192, 28672, 1, 4.5 / 8, *b200.PeakFlops(Precision::kFp4), 0.604,
                                     b200, e, 4.5 / 8);
  EXPECT_NEAR(down->time_s, want.time_s, 1e-12);
  EXPECT_NEAR(down->bytes, want.bytes, 1);
  // The same run in FP8 is slower in the prefill (half the tensor rate) and reads twice the weight bytes per decode.
  InferConfig f8 = c;
  f8.fit.weights = *ParseWeightFormat("fp8");
  f8.compute = Precision::kFp8;
  auto r8 = EstimateInference(m, C(b200), f8, e);
  ASSERT_TRUE(r8.ok());
  EXPECT_LT(r->ttft_s, 0.75 * r8->ttft_s);
  EXPECT_LT(r->tpot_s, r8->tpot_s);
  // The head stays 16-bit: its prefill row is priced at the BF16 rate (one token per sequence: memory-bound here, so
  // its bytes are the 16-bit ones).
  const OpCost* head = FindOp(r->prefill_ops, "output head");
  ASSERT_NE(head, nullptr);
  EXPECT_NEAR(head->bytes, 128256.0 * 8192 * 2, 1e6);
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(),
                          [](const std::string& n) { return n.find("NVFP4 GEMMs run at") != std::string::npos; }));

  const GpuSpec& h100 = G("h100-sxm");
  auto refused = EstimateInference(m, C(h100), c, E(h100));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no FP4 tensor cores"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("fp8"), std::string::npos);
}

// --batch max: the largest batch whose whole-context KV cache fits (what a no-evict scheduler admits), optionally
// capped; the estimate is exactly a fixed-batch estimate at that batch, and the result says which limit applied.
TEST_F(Perf, BatchMaxServesTheLargestBatchThatFitsUpToTheCap) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.compute = Precision::kFp8;
  c.fit.kv_bytes_per_elem = 1;
  c.input_len = 1000;
  c.output_len = 1000;
  c.batch_max = true;
  auto r = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->batch, r->max_batch);
  EXPECT_EQ(r->batch_limit, "memory");
  EXPECT_TRUE(r->fits);
  EXPECT_GT(r->batch, 100);
  // One more sequence would not fit: the fixed-batch estimate at batch + 1 says so.
  InferConfig fixed = c;
  fixed.batch_max = false;
  fixed.fit.batch = r->batch + 1;
  auto over = EstimateInference(m, C(g), fixed, E(g));
  ASSERT_TRUE(over.ok());
  EXPECT_FALSE(over->fits);
  fixed.fit.batch = r->batch;
  auto same = EstimateInference(m, C(g), fixed, E(g));
  ASSERT_TRUE(same.ok());
  EXPECT_DOUBLE_EQ(same->output_tokens_per_s_per_gpu, r->output_tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(same->tpot_s, r->tpot_s);
  // Its band is the full-load group's, and the TTFT (the whole batch's prefill) carries none.
  EXPECT_STREQ(r->throughput_error.group, "max_throughput");
  EXPECT_EQ(r->ttft_error.cases, 0);
  EXPECT_EQ(same->throughput_error.cases, evidence::kThroughputDenseError.cases);

  c.batch_cap = 64;
  auto capped = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->batch, 64);
  EXPECT_EQ(capped->batch_limit, "cap");
  EXPECT_LT(capped->output_tokens_per_s_per_gpu, r->output_tokens_per_s_per_gpu);

  InferConfig bad = fixed;
  bad.batch_cap = 64;  // a cap without batch_max
  EXPECT_FALSE(EstimateInference(m, C(g), bad, E(g)).ok());
  InferConfig huge = c;
  huge.batch_cap = 0;
  huge.fit.weights = *ParseWeightFormat("bf16");
  huge.compute = Precision::kBf16;
  auto none = EstimateInference(M("llama-3.1-405b"), C(g), huge, E(g));  // 810 GB of weights on one 80 GB GPU
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("does not fit"), std::string::npos) << none.status().message();
}

// FP8 and NVFP4 weights are served in their own format: a configuration that names only the weights (as `tco --model
// --weights fp8` did) gets the same estimate as one that also sets the compute precision, not a weight-only
// dequantisation at 16-bit rates.
TEST_F(Perf, Fp8WeightsAloneComputeInFp8) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  InferConfig weights_only;
  weights_only.fit.weights = *ParseWeightFormat("fp8");
  weights_only.fit.batch = 16;
  InferConfig both = weights_only;
  both.compute = Precision::kFp8;
  auto a = EstimateInference(m, C(g), weights_only, E(g));
  auto b = EstimateInference(m, C(g), both, E(g));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ(a->output_tokens_per_s_per_gpu, b->output_tokens_per_s_per_gpu);
  EXPECT_EQ(FindOp(a->decode_ops, "dequantise weights"), nullptr);
  InferConfig fp4 = weights_only;
  fp4.fit.weights = *ParseWeightFormat("nvfp4");
  EXPECT_FALSE(EstimateInference(m, C(g), fp4, E(g)).ok());  // Hopper: no FP4 tensor cores
}

// A sliding-window model past its window: the KV cache holds the window per layer (and the estimate says so), unless
// the engine keeps every token (ModelSpec::DisableSlidingWindow, perf infer --no-sliding-window): then the cache is
// the whole context and fewer sequences fit, about context / window fewer where the cache dominates.
TEST_F(Perf, SlidingWindowBoundsTheKvCacheUnlessTheEngineIgnoresIt) {
  ModelSpec m = M("mistral-7b");
  ASSERT_EQ(m.sliding_window, 4096);
  const GpuSpec& g = G("h100-sxm");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.fit.kv_bytes_per_elem = 1;
  c.input_len = 20000;
  c.output_len = 2000;
  c.batch_max = true;
  auto windowed = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(windowed.ok());
  EXPECT_TRUE(std::any_of(windowed->notes.begin(), windowed->notes.end(), [](const std::string& n) {
    return n.find("--no-sliding-window") != std::string::npos;
  }));
  m.DisableSlidingWindow();
  EXPECT_EQ(m.sliding_window, 0);
  auto full = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(full.ok());
  EXPECT_LT(full->batch * 4, windowed->batch);  // 22,000 tokens against 4,096: about 5x fewer
  EXPECT_GT(full->batch * 6, windowed->batch);
  EXPECT_FALSE(std::any_of(full->notes.begin(), full->notes.end(), [](const std::string& n) {
    return n.find("--no-sliding-window") != std::string::npos;
  }));
}

// A GPU file with no 16-bit peak (here only FP64, as the catalog fuzzer wrote one) cannot be priced for serving:
// attention and 16-bit GEMMs run at that peak. The estimate says so instead of returning an infinite time.
TEST_F(Perf, AGpuWithoutASixteenBitPeakIsAnErrorForServing) {
  const char* text = R"(id = "t4x"
name = "no 16-bit peak"
vendor = "nvidia"
architecture = "turing"
form_factor = "pcie"
segment = "datacenter"
[sources]
x = "a source"
[dense]
fp64 = { value = "0.25 TFLOPS", source = "x" }
[memory]
capacity = { value = "16 GiB", source = "x" }
bandwidth = { value = "320 GB/s", source = "x" }
)";
  auto g = ParseGpuToml(text, "t4x.toml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto cl = MakeCluster(*hw_, *g, 8, "ib-ndr");
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  Efficiency eff;  // the defaults: a GPU outside the catalog has no entry of its own
  InferConfig ic;
  ic.input_len = 128;
  ic.output_len = 16;
  auto r = EstimateInference(M("llama-3.2-1b"), *cl, ic, eff);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t4x has no 16-bit peak"), std::string::npos) << r.status().message();
}

// A closed-loop benchmark at concurrency C (EstimateClosedLoop, docs/methodology.md section 9.6): the time per
// output token T is the decode step D at batch C plus the other clients' prefills, each adding E = max(0, P - (D - A))
// to the step it lands in, k of them per request: T = D + (C - 1) E T / (P + (O - 1) T). Checked against the two
// estimates it is built from, not against its own output.
struct LoopCase {
  InferConfig cfg;
  InferResult one, many;
  ClosedLoopResult loop;
};
TEST_F(Perf, ClosedLoopTpotSolvesTheInterferenceEquation) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-8b");
  auto run = [&](int64_t conc, int64_t in, int64_t out) {
    LoopCase lc;
    lc.cfg.input_len = in;
    lc.cfg.output_len = out;
    InferConfig one = lc.cfg, many = lc.cfg;
    one.fit.batch = 1;
    many.fit.batch = conc;
    lc.one = *EstimateInference(m, C(g), one, E(g));
    lc.many = *EstimateInference(m, C(g), many, E(g));
    auto l = EstimateClosedLoop(m, C(g), lc.cfg, conc, E(g));
    EXPECT_TRUE(l.ok()) << l.status().message();
    lc.loop = *l;
    return lc;
  };
  // One client: no other prefills, so T is the decode step at batch 1 and the TTFT the prefill.
  const LoopCase solo = run(1, 1024, 256);
  EXPECT_DOUBLE_EQ(solo.loop.tpot_s, solo.many.tpot_s);
  EXPECT_DOUBLE_EQ(solo.loop.ttft_s, solo.one.ttft_s);
  // Sixteen clients: P, D and A from the two estimates, then the equation holds at the returned T.
  const LoopCase lc = run(16, 4096, 128);
  double attention = 0;
  for (const OpCost& op : lc.many.decode_ops)
    if (op.name == "attention") attention += op.time_s * op.count;
  const double p = lc.one.ttft_s, d = lc.many.tpot_s, o = 127, t = lc.loop.tpot_s;
  const double e = std::max(0.0, p - (d - attention));
  EXPECT_DOUBLE_EQ(lc.loop.prefill_s, p);
  EXPECT_DOUBLE_EQ(lc.loop.decode_step_s, d);
  EXPECT_NEAR(lc.loop.mixed_step_extra_s, e, 1e-15);
  EXPECT_GT(e, 0);  // a 4,096-token prefill of an 8B model takes longer than a decode step's weight streaming
  EXPECT_NEAR(t, d + 15 * e * t / (p + o * t), 1e-9 * t);
  EXPECT_GT(t, d);
  EXPECT_NEAR(lc.loop.requests_per_s, 16 / (p + o * t), 1e-9 * lc.loop.requests_per_s);
  EXPECT_NEAR(lc.loop.output_tokens_per_s_per_gpu, lc.loop.requests_per_s * 128, 1e-9 * lc.loop.requests_per_s * 128);
  // More clients never shorten the time per output token; longer outputs dilute the prefills.
  EXPECT_GE(run(32, 4096, 128).loop.tpot_s, t);
  EXPECT_LT(run(16, 4096, 1024).loop.tpot_s - run(16, 4096, 1024).loop.decode_step_s, t - d);
}

// More clients than the KV cache holds at the whole context: the engine runs as many as fit (the batch-1 estimate's
// max_batch, as --batch max counts them) and queues the rest, whose wait (Little's law) joins the TTFT.
TEST_F(Perf, ClosedLoopRunsWhatTheCacheHoldsAndQueuesTheRest) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-70b");
  InferConfig c;
  c.fit.par.tp = 2;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.compute = ServingComputePrecision(c.fit.weights);
  c.input_len = 8192;
  c.output_len = 1024;
  InferConfig one = c;
  one.fit.batch = 1;
  const InferResult single = *EstimateInference(m, C(g), one, E(g));
  ASSERT_TRUE(single.fits);
  ASSERT_LT(single.max_batch, 256);
  auto l = EstimateClosedLoop(m, C(g), c, 256, E(g));
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->running, single.max_batch);
  EXPECT_TRUE(l->fits);
  // The same time per output token as a loop of exactly that many clients; the TTFT adds the queue's wait.
  auto just = EstimateClosedLoop(m, C(g), c, single.max_batch, E(g));
  ASSERT_TRUE(just.ok());
  EXPECT_DOUBLE_EQ(l->tpot_s, just->tpot_s);
  EXPECT_DOUBLE_EQ(l->requests_per_s, just->requests_per_s);
  EXPECT_DOUBLE_EQ(just->queue_wait_s, 0);
  EXPECT_NEAR(l->queue_wait_s, double(256 - single.max_batch) / l->requests_per_s, 1e-12);
  EXPECT_DOUBLE_EQ(l->ttft_s, l->prefill_s + l->queue_wait_s);
  ASSERT_FALSE(l->notes.empty());
  EXPECT_NE(l->notes.back().find("wait in its queue"), std::string::npos);
}

// Attention DP (methodology §9.7): each GPU runs attention, the projections and the head for its group's ceil(B / D)
// sequences at TP / D, exactly as a replica of TP / D GPUs at that batch would; the routed experts see all B
// sequences' tokens over EP x ETP = TP, exactly as without attention DP; the tokens are all-gathered before each MoE
// layer (in the GEMMs' FP8) and reduce-scattered after it (16-bit), and the MLA cache no longer repeats on every GPU.
TEST_F(Perf, AttentionDpRunsAttentionPerGroupAndTheExpertsOverAll) {
  const GpuSpec& g = G("b200");
  const ModelSpec m = M("deepseek-v3");
  auto run = [&](int64_t batch, int tp, int ep, int adp) {
    InferConfig c;
    c.fit.weights = *ParseWeightFormat("fp8");
    c.fit.kv_bytes_per_elem = 1;
    c.fit.batch = batch;
    c.fit.par.tp = tp;
    c.fit.par.ep = ep;
    c.fit.par.attention_dp = adp;
    c.input_len = 1024;
    c.output_len = 1024;
    auto r = EstimateInference(m, C(g), c, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : InferResult{};
  };
  const InferResult adp = run(64, 8, 8, 8), tp8 = run(64, 8, 8, 1), one = run(8, 1, 1, 1);
  for (const bool decode : {false, true}) {
    const auto& ops = [&](const InferResult& r) -> const std::vector<OpCost>& {
      return decode ? r.decode_ops : r.prefill_ops;
    };
    for (const char* name : {"attention", "qkv projection", "output projection", "mlp up/gate", "router",
                             "shared expert down", "output head"}) {
      const OpCost *a = FindOp(ops(adp), name), *b = FindOp(ops(one), name);
      ASSERT_TRUE(a && b) << name;
      EXPECT_DOUBLE_EQ(a->time_s, b->time_s) << name << (decode ? " decode" : " prefill");
    }
    for (const char* name : {"experts up/gate", "experts down", "MoE routing, row expansion and gather"}) {
      const OpCost *a = FindOp(ops(adp), name), *b = FindOp(ops(tp8), name);
      ASSERT_TRUE(a && b) << name;
      EXPECT_DOUBLE_EQ(a->time_s, b->time_s) << name << (decode ? " decode" : " prefill");
    }
    const OpCost* x = FindOp(ops(adp), "attention-DP token all-gather + reduce-scatter");
    ASSERT_NE(x, nullptr);
    const double tokens = decode ? 64 : 64 * 1024;
    EXPECT_DOUBLE_EQ(x->bytes, tokens * double(m.hidden) * (1 + 2));
    EXPECT_GT(x->time_s, 0);
    EXPECT_EQ(FindOp(ops(tp8), "attention-DP token all-gather + reduce-scatter"), nullptr);
    EXPECT_NE(FindOp(ops(tp8), "TP all-reduce (x2, one-shot)") ? FindOp(ops(tp8), "TP all-reduce (x2, one-shot)")
                                                                 : FindOp(ops(tp8), "TP all-reduce (x2, NCCL)"),
              nullptr);
    EXPECT_EQ(FindOp(ops(adp), "TP all-reduce (x2, one-shot)"), nullptr);
    EXPECT_EQ(FindOp(ops(adp), "TP all-reduce (x2, NCCL)"), nullptr);
  }
  // The busiest group of an uneven batch: 9 sequences over 8 groups run attention as 2.
  const InferResult uneven = run(9, 8, 8, 8), two = run(2, 1, 1, 1);
  EXPECT_DOUBLE_EQ(FindOp(uneven.decode_ops, "attention")->time_s, FindOp(two.decode_ops, "attention")->time_s);
  // The latent cache splits 8 ways, the attention weights repeat 8 times: many more sequences fit.
  EXPECT_GT(adp.max_batch, 4 * tp8.max_batch);
  EXPECT_TRUE(std::any_of(adp.notes.begin(), adp.notes.end(),
                          [](const std::string& n) { return n.find("attention DP 8: 8 attention groups") == 0; }));
  // No physical bound is derived for it (its GPUs read and compute different shares).
  EXPECT_EQ(adp.ttft_bound_s, 0);
  EXPECT_GT(tp8.ttft_bound_s, 0);
}

// DeepSeek-V3's serving setting in these tests: FP8 weights and KV cache, TP 8 with the experts spread (EP 8).
InferConfig DeepSeekFp8Ep8(int64_t input_len, int64_t output_len) {
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.compute = ServingComputePrecision(c.fit.weights);
  c.fit.kv_bytes_per_elem = 1;
  c.fit.par.tp = 8;
  c.fit.par.ep = 8;
  c.input_len = input_len;
  c.output_len = output_len;
  return c;
}

// A closed loop with attention DP (methodology sections 9.6 and 9.7): the prompts land k = min(D, C) at a time, one on
// each attention group, so P is the prefill at batch k (each group one prompt, the routed experts all k prompts'
// tokens) and a step carrying them comes (C - 1) / k times per cycle: T = D + (C - 1) / k x E x T / (P + (O - 1) T).
// Checked against the estimates it is built from.
TEST_F(Perf, AttentionDpClosedLoopLandsOnePromptPerGroup) {
  const GpuSpec& g = G("h200-sxm");
  const ModelSpec m = M("deepseek-v3");
  InferConfig c = DeepSeekFp8Ep8(8192, 1024);
  c.fit.par.attention_dp = 8;
  auto at = [&](int64_t batch) {
    InferConfig b = c;
    b.fit.batch = batch;
    auto r = EstimateInference(m, C(g), b, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  auto loop = EstimateClosedLoop(m, C(g), c, 128, E(g));
  ASSERT_TRUE(loop.ok()) << loop.status().message();
  EXPECT_EQ(loop->running, 128);
  EXPECT_EQ(loop->prefills_per_step, 8);
  const InferResult eight = at(8), one = at(1), many = at(128);
  // Eight prompts side by side take longer than one (the experts see eight prompts' tokens) but far less than eight
  // one after another (each group prefills its own).
  EXPECT_DOUBLE_EQ(loop->prefill_s, eight.ttft_s);
  EXPECT_GT(eight.ttft_s, one.ttft_s);
  EXPECT_LT(eight.ttft_s, 2 * one.ttft_s);
  double attention = 0;
  for (const OpCost& op : many.decode_ops)
    if (op.name == "attention") attention += op.time_s * op.count;
  const double p = eight.ttft_s, d = many.tpot_s, e = std::max(0.0, p - (d - attention)), t = loop->tpot_s;
  EXPECT_NEAR(loop->mixed_step_extra_s, e, 1e-12);
  EXPECT_NEAR(t, d + 127.0 / 8 * e * t / (p + 1023 * t), 1e-9 * t);
  EXPECT_GT(t, d);
  // Fewer clients than groups: as many prompts land together as there are clients.
  auto few = EstimateClosedLoop(m, C(g), c, 3, E(g));
  ASSERT_TRUE(few.ok()) << few.status().message();
  EXPECT_EQ(few->prefills_per_step, 3);
  EXPECT_DOUBLE_EQ(few->prefill_s, at(3).ttft_s);
  // Without attention DP one prompt lands at a time.
  c.fit.par.attention_dp = 1;
  auto plain = EstimateClosedLoop(m, C(g), c, 128, E(g));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->prefills_per_step, 1);
  EXPECT_DOUBLE_EQ(plain->prefill_s, at(1).ttft_s);
}

// A closed loop with attention DP quotes its own held-out evidence, by prompt length, not the other MoE runs'.
TEST_F(Perf, AttentionDpClosedLoopQuotesItsOwnEvidence) {
  const GpuSpec& g = G("b200");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("nvfp4");
  c.fit.kv_bytes_per_elem = 1;
  c.fit.par.tp = 8;
  c.fit.par.ep = 8;
  c.fit.par.attention_dp = 8;
  c.output_len = 1024;
  auto quoted = [&](int64_t in) {
    c.input_len = in;
    auto l = EstimateClosedLoop(M("deepseek-v3"), C(g), c, 64, E(g));
    EXPECT_TRUE(l.ok()) << l.status().message();
    std::string all;
    for (const auto& n : l->notes) all += n + "\n";
    return all;
  };
  const std::string short_prompts = quoted(1024), long_prompts = quoted(8192);
  EXPECT_NE(short_prompts.find(fmt::format("checked on {} held-out TensorRT-LLM runs of DeepSeek-R1 with 1,024-token",
                                           evidence::kMoeAttentionDpClosedLoopTpotShort.cases)),
            std::string::npos)
      << short_prompts;
  EXPECT_NE(long_prompts.find(fmt::format("checked on {} held-out TensorRT-LLM runs of DeepSeek-R1 with 8,192-token",
                                          evidence::kMoeAttentionDpClosedLoopTpotLong.cases)),
            std::string::npos)
      << long_prompts;
  EXPECT_EQ(short_prompts.find("for MoE models the closed-loop time per output token was checked on 374"),
            std::string::npos);
}

TEST_F(Perf, AttentionDpTakesADraftHeadAndEmitsEachEnginesFlags) {
  const GpuSpec& g = G("b200");
  const ModelSpec m = M("deepseek-v3");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.fit.batch = 64;
  c.fit.par.tp = 8;
  c.fit.par.ep = 8;
  c.fit.par.attention_dp = 8;
  // A separate draft model is refused; the MTP head runs in the target's layout: its routed experts over all 8 GPUs,
  // the rest of its layer whole on each, and each GPU's KV cache for its own 8 of the 64 sequences.
  InferConfig s = c;
  s.spec.tokens = 1;
  s.spec.acceptance_length = 1.8;
  s.spec.draft_model = M("llama-3.1-8b");
  auto refused = EstimateInference(m, C(g), s, E(g));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message()).find("a separate --draft-model with --attention-dp"),
            std::string::npos);
  s.spec.draft_model.reset();
  auto mtp = EstimateInference(m, C(g), s, E(g));
  ASSERT_TRUE(mtp.ok()) << mtp.status().message();
  ModelSpec head = m;  // one MoE layer of the target's shape (the MTP module)
  head.layers = 1;
  head.mtp_layers = 0;
  head.sliding_window_layers = 0;
  head.moe->first_dense_layers = 0;
  head.moe->layer_step = 1;
  const ParamCounts hp = CountParams(head);
  const double layer = hp.total - hp.non_layer_total;
  const double want = (layer - hp.moe_experts) * 1.0 + hp.moe_experts * 1.0 / 8 +
                      KvCacheBytes(head, c.fit.kv_bytes_per_elem, 8, c.input_len + c.output_len, 1);
  EXPECT_NEAR(mtp->draft_bytes_per_gpu, want, 1e-9 * want);
  EXPECT_LT(mtp->tpot_s, EstimateInference(m, C(g), c, E(g))->tpot_s);  // 1.8 tokens a round for about one step
  auto mtp_line = ServeCommand(ServeEngine::kTrtllm, m, g, "deepseek-ai/DeepSeek-V3", s, *mtp, false);
  ASSERT_TRUE(mtp_line.ok()) << mtp_line.status().message();
  EXPECT_NE(mtp_line->find("enable_attention_dp: true"), std::string::npos) << *mtp_line;
  EXPECT_NE(mtp_line->find("decoding_type: MTP"), std::string::npos) << *mtp_line;
  auto r = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto trt = ServeCommand(ServeEngine::kTrtllm, m, g, "deepseek-ai/DeepSeek-V3", c, *r, false);
  ASSERT_TRUE(trt.ok()) << trt.status().message();
  EXPECT_NE(trt->find("enable_attention_dp: true"), std::string::npos) << *trt;
  EXPECT_NE(trt->find("--max_batch_size 8"), std::string::npos) << *trt;  // one rank's sequences
  auto sg = ServeCommand(ServeEngine::kSglang, m, g, "deepseek-ai/DeepSeek-V3", c, *r, false);
  ASSERT_TRUE(sg.ok()) << sg.status().message();
  EXPECT_NE(sg->find("--dp-size 8"), std::string::npos) << *sg;
  EXPECT_NE(sg->find("--enable-dp-attention"), std::string::npos) << *sg;
  auto vl = ServeCommand(ServeEngine::kVllm, m, g, "deepseek-ai/DeepSeek-V3", c, *r, false);
  ASSERT_TRUE(vl.ok()) << vl.status().message();
  EXPECT_NE(vl->find("--tensor-parallel-size 1"), std::string::npos) << *vl;
  EXPECT_NE(vl->find("--data-parallel-size 8"), std::string::npos) << *vl;
  EXPECT_NE(vl->find("--enable-expert-parallel"), std::string::npos) << *vl;
  // TensorRT-LLM's attention DP is one GPU per group.
  c.fit.par.attention_dp = 2;
  auto half = EstimateInference(m, C(g), c, E(g));
  ASSERT_TRUE(half.ok()) << half.status().message();
  auto trt2 = ServeCommand(ServeEngine::kTrtllm, m, g, "deepseek-ai/DeepSeek-V3", c, *half, false);
  ASSERT_FALSE(trt2.ok());
  EXPECT_NE(std::string(trt2.status().message()).find("--attention-dp = --tp = 8"), std::string::npos);
}

TEST_F(Perf, ClosedLoopRefusesWhatItCannotDescribe) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-8b");
  InferConfig c;
  c.output_len = 1;
  auto r = EstimateClosedLoop(m, C(g), c, 8, E(g));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("--output-len of at least 2"), std::string::npos);
  c.output_len = 128;
  EXPECT_FALSE(EstimateClosedLoop(m, C(g), c, 0, E(g)).ok());
  c.batch_max = true;
  EXPECT_FALSE(EstimateClosedLoop(m, C(g), c, 8, E(g)).ok());
}

// Disaggregated serving (methodology section 9.8): the closed loop through the prefill workers and the decode
// workers, checked against the estimates it is built from. lambda = min(C / (P + X + (O - 1) T), mu, decode cache),
// B = lambda (O - 1) T / decode_workers, T the decode worker's step at B (rounded).
TEST_F(Perf, DisaggregatedLoopRunsThroughBothTiers) {
  const GpuSpec& g = G("h100-sxm");
  const ModelSpec m = M("llama-3.1-70b");
  InferConfig c;
  c.fit.weights = *ParseWeightFormat("fp8");
  c.compute = ServingComputePrecision(c.fit.weights);
  c.fit.kv_bytes_per_elem = 1;
  c.fit.par.tp = 4;
  c.input_len = 4096;
  c.output_len = 512;
  auto at = [&](const Parallelism& par, int64_t batch) {
    InferConfig x = c;
    x.fit.par = par;
    x.fit.batch = batch;
    auto r = EstimateInference(m, C(g), x, E(g));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  };
  DisaggConfig d;
  d.prefill.tp = 2;
  d.prefill_workers = 1;
  d.decode_workers = 2;
  const double o = 511;
  // One prefill worker for 256 clients: it binds. The decode workers hold what it feeds them.
  auto p = EstimateDisaggregated(m, C(g), c, d, 256, E(g));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->bound, "prefill");
  EXPECT_EQ(p->prompts_per_prefill, 1);
  EXPECT_DOUBLE_EQ(p->prefill_s, at(d.prefill, 1).ttft_s);
  EXPECT_NEAR(p->prefill_capacity_per_s, 1 / p->prefill_s, 1e-12);
  EXPECT_NEAR(p->requests_per_s, p->prefill_capacity_per_s, 1e-12);
  EXPECT_NEAR(p->decode_batch, p->requests_per_s * o * p->tpot_s / 2, 1e-9);
  EXPECT_LE(std::abs(double(p->decode_batch_evaluated) - p->decode_batch), 1.0);
  EXPECT_DOUBLE_EQ(p->tpot_s, at(c.fit.par, p->decode_batch_evaluated).tpot_s);
  EXPECT_LT(p->decode_batch * 2, 256);  // fewer decoding than clients: the rest wait for a prefill
  EXPECT_NEAR(p->ttft_s, 256 / p->requests_per_s - o * p->tpot_s, 1e-9 * p->ttft_s);
  EXPECT_EQ(p->gpus, 2 + 2 * 4);
  // How many prefill workers would keep up: the fewest at which the prefill tier no longer binds.
  ASSERT_TRUE(p->prefill_workers_to_keep_up.has_value());
  const int enough = *p->prefill_workers_to_keep_up;
  DisaggConfig fewer = d, just = d;
  fewer.prefill_workers = enough - 1;
  just.prefill_workers = enough;
  EXPECT_EQ(EstimateDisaggregated(m, C(g), c, fewer, 256, E(g))->bound, "prefill");
  EXPECT_NE(EstimateDisaggregated(m, C(g), c, just, 256, E(g))->bound, "prefill");
  EXPECT_NE(p->notes.front().find(fmt::format("with {} prefill workers they would keep up", enough)),
            std::string::npos)
      << p->notes.front();
  // The KV cache handed over: the prompt's cache per decode GPU (8 KV heads over TP 4), over NVLink (a prefill and a
  // decode worker, 2 + 4 GPUs, fit one 8-GPU node).
  EXPECT_NEAR(p->kv_transfer_bytes, KvBytesPerToken(m, 1, 4) * 4096, 1e-6);
  EXPECT_EQ(p->kv_link, C(g).intra_name);
  // Eight prefill workers: the clients bind; every client decodes but for its prefill and handover.
  d.prefill_workers = 8;
  auto q = EstimateDisaggregated(m, C(g), c, d, 64, E(g));
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->bound, "clients");
  const double head = q->prefill_s + q->kv_transfer_s;
  EXPECT_NEAR(q->requests_per_s, 64 / (head + o * q->tpot_s), 1e-9);
  EXPECT_DOUBLE_EQ(q->ttft_s, head);
  // Little's law: each of the 32 clients per worker decodes for (O - 1) T of its cycle and waits the rest.
  EXPECT_NEAR(q->decode_batch, 32 * o * q->tpot_s / (head + o * q->tpot_s), 1e-9);
  EXPECT_LT(q->decode_batch, 32);
  EXPECT_NEAR(q->output_tokens_per_s_per_gpu, q->requests_per_s * 512 / (8 * 2 + 2 * 4), 1e-9);
  // Ten thousand clients with ample prefill: the decode workers' caches bind at what one holds at the whole context.
  d.prefill_workers = 4096;
  auto r = EstimateDisaggregated(m, C(g), c, d, 10000, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->bound, "decode memory");
  EXPECT_EQ(r->decode_batch_evaluated, at(c.fit.par, 1).max_batch);
  EXPECT_NEAR(r->requests_per_s, 2 * double(r->decode_batch_max) / (o * r->tpot_s), 1e-9);
  // Refused: no clients, one output token, no decode worker, pipeline stages, speculation.
  EXPECT_FALSE(EstimateDisaggregated(m, C(g), c, d, 0, E(g)).ok());
  DisaggConfig none = d;
  none.decode_workers = 0;
  EXPECT_FALSE(EstimateDisaggregated(m, C(g), c, none, 8, E(g)).ok());
  InferConfig one_token = c;
  one_token.output_len = 1;
  EXPECT_FALSE(EstimateDisaggregated(m, C(g), one_token, d, 8, E(g)).ok());
  InferConfig pp = c;
  pp.fit.par.pp = 2;
  EXPECT_FALSE(EstimateDisaggregated(m, C(g), pp, d, 8, E(g)).ok());
}

// The prefill worker's layout: the decode worker's unless it has a TP of its own, which starts from plain TP; each
// given degree then applies (0: not given).
TEST(Disaggregated, PrefillLayoutCopiesTheDecodeWorkerOrStartsFromItsOwnTp) {
  Parallelism decode;
  decode.tp = 8;
  decode.ep = 8;
  decode.attention_dp = 8;
  const Parallelism same = PrefillLayout(decode, 0, 0, 0, 0);
  EXPECT_EQ(same.tp, 8);
  EXPECT_EQ(same.ep, 8);
  EXPECT_EQ(same.attention_dp, 8);
  const Parallelism own = PrefillLayout(decode, 4, 0, 0, 0);
  EXPECT_EQ(own.tp, 4);
  EXPECT_EQ(own.ep, 1);
  EXPECT_EQ(own.etp, 0);
  EXPECT_EQ(own.attention_dp, 1);
  const Parallelism wide = PrefillLayout(decode, 4, 4, 0, 4);
  EXPECT_EQ(wide.tp, 4);
  EXPECT_EQ(wide.ep, 4);
  EXPECT_EQ(wide.attention_dp, 4);
  EXPECT_EQ(PrefillLayout(decode, 0, 2, 0, 0).ep, 2);
  EXPECT_EQ(PrefillLayout(decode, 0, 0, 0, 2).attention_dp, 2);
}

// A worker that does not fit says which and by how much, and gives no times.
TEST_F(Perf, DisaggregatedSaysWhichWorkerDoesNotFit) {
  const GpuSpec& g = G("h200-sxm");
  const ModelSpec m = M("deepseek-v3");
  InferConfig c = DeepSeekFp8Ep8(1024, 1024);
  DisaggConfig d;
  d.prefill.tp = 1;  // 671B parameters on one GPU
  auto r = EstimateDisaggregated(m, C(g), c, d, 64, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->fits);
  EXPECT_EQ(r->tpot_s, 0);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.front().find("a prefill worker (TP 1) does not fit 1 prompt(s) of 1024 tokens"), std::string::npos)
      << r->notes.front();
  d.prefill.tp = 8;
  d.prefill.ep = 8;
  c.fit.par = Parallelism{};
  c.fit.par.tp = 1;  // the decode worker on one GPU
  r = EstimateDisaggregated(m, C(g), c, d, 64, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->fits);
  EXPECT_NE(r->notes.front().find("a decode worker (TP 1) does not fit one sequence"), std::string::npos)
      << r->notes.front();
}

// With attention DP on the prefill worker its groups take one prompt each, side by side (section 9.7): k = D_p prompts
// per prefill pass, priced at batch k; across nodes the handover crosses the network.
TEST_F(Perf, DisaggregatedPrefillTakesOnePromptPerAttentionGroup) {
  const GpuSpec& g = G("h200-sxm");
  const ModelSpec m = M("deepseek-v3");
  InferConfig c = DeepSeekFp8Ep8(8192, 1024);
  DisaggConfig d;
  d.prefill.tp = 8;
  d.prefill.ep = 8;
  d.prefill.attention_dp = 8;
  auto r = EstimateDisaggregated(m, C(g), c, d, 64, E(g));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->prompts_per_prefill, 8);
  InferConfig x = c;
  x.fit.par = d.prefill;
  x.fit.batch = 8;
  EXPECT_DOUBLE_EQ(r->prefill_s, EstimateInference(m, C(g), x, E(g))->ttft_s);
  EXPECT_NEAR(r->prefill_capacity_per_s, 8 / r->prefill_s, 1e-12);
  // 8 + 8 GPUs: two HGX nodes, so the MLA latent (replicated on each of the 8 decode GPUs) crosses the network.
  EXPECT_EQ(r->kv_link, C(g).inter_name);
  EXPECT_NEAR(r->kv_transfer_bytes, KvBytesPerToken(m, 1, 8) * 8192, 1e-6);
  EXPECT_NEAR(r->kv_transfer_s, r->kv_transfer_bytes / C(g).inter_bw_per_gpu + C(g).inter_latency_s, 1e-12);
}

}  // namespace
}  // namespace suanli
