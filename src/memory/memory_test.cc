#include "suanli/memory.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_catalogs.h"

namespace suanli {
namespace {

class Memory : public testing::CatalogTest {
 protected:
  // A training request with the given pipeline layout (the rest as FitRequest's defaults).
  static FitRequest Train(int64_t seq, int64_t batch, int tp, int pp) {
    FitRequest r;
    r.mode = Mode::kTrain;
    r.seq = seq;
    r.batch = batch;
    r.par.tp = tp;
    r.par.pp = pp;
    return r;
  }
  static FitResult Est(const ModelSpec& m, const FitRequest& r) {
    auto e = EstimateMemory(m, r);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? *e : FitResult{};
  }
};

FitRequest Infer(const char* weights = "bf16", int64_t batch = 1, int64_t seq = 4096) {
  FitRequest r;
  r.weights = *ParseWeightFormat(weights);
  r.batch = batch;
  r.seq = seq;
  return r;
}

// Attention DP (serving): each of the D attention groups holds the KV cache of its 1/D of the sequences only, at the
// group's TP / D, and the non-expert weights split over TP / D instead of TP; the routed experts stay split over all
// TP GPUs. DeepSeek-V3's latent cache is one per layer whatever the TP, so on TP 8 every GPU holds all 64 sequences'
// caches, and at attention DP 8 each holds 8.
TEST_F(Memory, AttentionDpSplitsTheKvCacheAndReplicatesTheNonExpertWeights) {
  const ModelSpec m = M("deepseek-v3");
  FitRequest r = Infer("fp8", 64, 2048);
  r.kv_bytes_per_elem = 1;
  r.par.tp = 8;
  r.par.ep = 8;
  const FitResult tp = Est(m, r);
  r.par.attention_dp = 8;
  const FitResult adp = Est(m, r);
  EXPECT_DOUBLE_EQ(tp.breakdown.kv_cache, KvCacheBytes(m, 1, 64, 2048, 8));
  EXPECT_DOUBLE_EQ(adp.breakdown.kv_cache, KvCacheBytes(m, 1, 8, 2048, 1));
  EXPECT_NEAR(adp.breakdown.kv_cache, tp.breakdown.kv_cache / 8, 1e-6 * tp.breakdown.kv_cache);
  // The non-expert layer weights (1 B each in FP8) and the 16-bit embedding and head: whole instead of 1/8.
  const ParamCounts& c = tp.params;
  const double layer = c.attention + c.norms + c.mlp_dense + c.moe_shared + c.router;
  const double nonlayer = c.embedding + (m.tie_embeddings ? 0.0 : c.lm_head);
  EXPECT_NEAR(adp.breakdown.weights - tp.breakdown.weights, (layer * 1 + nonlayer * 2) * (1 - 1.0 / 8),
              1e-9 * tp.breakdown.weights);
  // The TP layout says what attention DP would save; the attention-DP one does not.
  const auto says = [](const FitResult& f) {
    return std::any_of(f.notes.begin(), f.notes.end(), [](const std::string& n) {
      return n.find("the KV cache is held 8 times over the 8 TP GPUs (MLA keeps one latent per layer") == 0 &&
             n.find("--attention-dp 8") != std::string::npos;
    });
  };
  EXPECT_TRUE(says(tp));
  EXPECT_FALSE(says(adp));
  // Uneven groups: the busiest holds ceil(batch / D) sequences.
  r.batch = 9;
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.kv_cache, KvCacheBytes(m, 1, 2, 2048, 1));
  // Attention DP 2 of TP 8: groups of 4 GPUs, each with half the sequences.
  r.batch = 64;
  r.par.attention_dp = 2;
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.kv_cache, KvCacheBytes(m, 1, 32, 2048, 4));
}

TEST_F(Memory, AttentionDpOutsideServingAnMoeOrTheTpGroupIsAnError) {
  auto err = [](const ModelSpec& m, const FitRequest& r) {
    auto e = EstimateMemory(m, r);
    return e.ok() ? std::string("ok") : std::string(e.status().message());
  };
  FitRequest r = Infer("fp8", 8, 2048);
  r.par.tp = 8;
  r.par.ep = 8;
  r.par.attention_dp = 3;
  EXPECT_NE(err(M("deepseek-v3"), r).find("--attention-dp 3 must divide --tp 8"), std::string::npos)
      << err(M("deepseek-v3"), r);
  EXPECT_NE(err(M("deepseek-v3"), r).find("valid: 1, 2, 4, 8"), std::string::npos);
  r.par.attention_dp = 16;
  EXPECT_NE(err(M("deepseek-v3"), r).find("must divide --tp 8"), std::string::npos);
  r.par.attention_dp = 8;
  r.par.ep = 1;
  EXPECT_NE(err(M("llama-3.1-70b"), r).find("needs a mixture-of-experts model"), std::string::npos)
      << err(M("llama-3.1-70b"), r);
  FitRequest t = Train(4096, 64, 8, 1);
  t.par.attention_dp = 8;
  EXPECT_NE(err(M("deepseek-v3"), t).find("serving layout"), std::string::npos) << err(M("deepseek-v3"), t);
}

// A context past max_position_embeddings: an error where the positions are a learned table (OPT's 2048 rows have
// nothing to look up past them), a note where they are rotary (LLaMA 3.1: a rope-scaled variant can run longer);
// within the maximum, neither.
TEST_F(Memory, ContextPastTheModelMaximumIsAnErrorForLearnedPositionsAndANoteForRotary) {
  const ModelSpec opt = M("opt-13b");
  ASSERT_GT(opt.learned_positions, 0);
  EXPECT_TRUE(EstimateMemory(opt, Infer("bf16", 1, opt.max_positions)).ok());
  auto past = EstimateMemory(opt, Infer("bf16", 1, opt.max_positions + 1));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("learned position table (2048 positions)"), std::string::npos)
      << past.status().message();
  EXPECT_NE(past.status().message().find("prompt + output"), std::string::npos);
  EXPECT_FALSE(EstimateMemory(opt, Train(4096, 8, 1, 1)).ok());

  const ModelSpec llama = M("llama-3.1-8b");
  ASSERT_EQ(llama.learned_positions, 0);
  auto has_note = [](const FitResult& f) {
    for (const auto& n : f.notes)
      if (n.find("max_position_embeddings (131072)") != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(has_note(Est(llama, Infer("bf16", 1, 131072))));
  EXPECT_TRUE(has_note(Est(llama, Infer("bf16", 1, 131073))));
  EXPECT_TRUE(ContextBeyondModelNote(llama, 262144).has_value());
  EXPECT_FALSE(ContextBeyondModelNote(llama, 8192).has_value());
  EXPECT_FALSE(ContextBeyondModelNote(opt, 4096).has_value());  // learned positions: an error, not a note
}

// CPU activation offloading (Megatron-Core --cpu-offloading --cpu-offloading-num-layers N): at most layers - N layers'
// activations are on the GPU; the offloaded ones are in pinned host memory. Megatron-Core's rules: PP 1, no
// recompute, N below the layer count; and only for pretraining.
TEST_F(Memory, OffloadedLayersLeaveTheGpuAndNeedHostMemory) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r = Train(4096, 16, 1, 1);
  r.par.dp = 8;
  r.micro_batch = 2;
  const FitResult none = Est(m, r);
  r.offload_layers = 24;
  const FitResult off = Est(m, r);
  const double a_layer = LayerActivationBytes(m, 4096, 2, 1, false, Recompute::kNone, true, false);
  EXPECT_NEAR(none.breakdown.activations - off.breakdown.activations, 24 * a_layer, 1e-6 * a_layer);
  EXPECT_NEAR(off.breakdown.activations, 8 * a_layer, 1e-6 * a_layer);
  EXPECT_NEAR(off.host_offload_bytes, 24 * a_layer, 1e-6 * a_layer);
  EXPECT_NEAR(off.offload_layer_bytes, a_layer, 1e-9 * a_layer);
  EXPECT_EQ(none.host_offload_bytes, 0);
  EXPECT_LT(off.per_gpu_peak_bytes, none.per_gpu_peak_bytes);

  auto error = [&](FitRequest q) {
    auto e = EstimateMemory(m, q);
    EXPECT_FALSE(e.ok());
    return e.ok() ? std::string() : std::string(e.status().message());
  };
  FitRequest q = r;
  q.offload_layers = 32;
  EXPECT_NE(error(q).find("between 1 and 31"), std::string::npos) << error(q);
  q.offload_layers = -1;
  EXPECT_NE(error(q).find("between 1 and 31"), std::string::npos);
  q = r;
  q.par.pp = 2;
  q.par.dp = 4;
  EXPECT_NE(error(q).find("--pp 1"), std::string::npos) << error(q);
  q = r;
  q.recompute = Recompute::kSelective;
  EXPECT_NE(error(q).find("--recompute none"), std::string::npos) << error(q);
  q = Infer();
  q.offload_layers = 4;
  EXPECT_NE(error(q).find("--mode train"), std::string::npos) << error(q);
  q = r;
  q.host_memory_per_gpu_bytes = -1;
  EXPECT_NE(error(q).find("--host-memory"), std::string::npos) << error(q);
}

// The offloaded activations must fit in host memory too: the request's --host-memory, else the catalog's (GB200:
// 240 GB per GPU, half a Grace CPU's 480 GB), else unchecked (a PCIe card's host is the server's).
TEST_F(Memory, OffloadedActivationsMustFitInHostMemory) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r = Train(4096, 16, 1, 1);
  r.par.dp = 8;
  r.par.zero = 3;
  r.micro_batch = 2;
  r.offload_layers = 24;
  const FitResult off = Est(m, r);
  const FitVerdict h100 = CheckFit(off, G("h100-sxm"));
  EXPECT_EQ(h100.host_capacity_bytes, 0);  // unknown: unchecked
  EXPECT_TRUE(h100.host_fits);
  EXPECT_TRUE(h100.fits);
  const FitVerdict gb200 = CheckFit(off, G("gb200"));
  EXPECT_DOUBLE_EQ(gb200.host_capacity_bytes, 240e9);
  EXPECT_TRUE(gb200.host_fits);
  r.host_memory_per_gpu_bytes = 0.5 * off.host_offload_bytes;  // the request's figure wins over the catalog's
  const FitResult small = Est(m, r);
  for (const char* g : {"h100-sxm", "gb200"}) {
    const FitVerdict v = CheckFit(small, G(g));
    EXPECT_DOUBLE_EQ(v.host_capacity_bytes, 0.5 * off.host_offload_bytes) << g;
    EXPECT_FALSE(v.host_fits) << g;
    EXPECT_FALSE(v.fits) << g;
    EXPECT_GT(v.headroom_bytes, 0) << g;  // the GPU itself holds it
  }
  r.offload_layers = 0;  // nothing offloaded: host memory is not the GPU's concern
  EXPECT_TRUE(CheckFit(Est(m, r), G("h100-sxm")).host_fits);
}

// Block recompute (Megatron-Core --recompute-method block --recompute-num-layers N): the first N layers of each
// model chunk keep only their input, the others everything; one layer's full activations for the recompute.
// LLaMA-2 7B (32 layers) on one stage, and on PP 2 x interleave 2 (chunks of 8 layers), where N counts per chunk.
TEST_F(Memory, BlockRecomputeKeepsTheOtherLayersActivations) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r = Train(4096, 8, 1, 1);
  r.par.dp = 8;
  r.recompute = Recompute::kNone;
  const double none = Est(m, r).breakdown.activations;
  r.recompute = Recompute::kFull;
  const double full = Est(m, r).breakdown.activations;
  r.recompute_layers = 5;
  const double five = Est(m, r).breakdown.activations;
  const double a_none = LayerActivationBytes(m, 4096, 1, 1, false, Recompute::kNone, true, false);
  const double a_full = LayerActivationBytes(m, 4096, 1, 1, false, Recompute::kFull, true, false);
  EXPECT_NEAR(full, 32 * a_full + a_none, 1e-6 * full);
  EXPECT_NEAR(five, 5 * a_full + 27 * a_none + a_none, 1e-6 * five);
  EXPECT_LT(full, five);
  EXPECT_LT(five, none + a_none);
  r.recompute_layers = 32;
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.activations, full);

  EXPECT_DOUBLE_EQ(RecomputedLayerShare(m, r.par, Recompute::kFull, 0), 1.0);
  EXPECT_DOUBLE_EQ(RecomputedLayerShare(m, r.par, Recompute::kFull, 8), 0.25);
  EXPECT_DOUBLE_EQ(RecomputedLayerShare(m, r.par, Recompute::kSelective, 8), 0.0);
  Parallelism vp = r.par;
  vp.pp = 2;
  vp.interleave = 2;
  EXPECT_DOUBLE_EQ(RecomputedLayerShare(m, vp, Recompute::kFull, 2), 0.25);  // 2 of a chunk's 8 layers
  EXPECT_TRUE(CheckRecomputeLayers(m, vp, Recompute::kFull, 8).ok());
  const Status over = CheckRecomputeLayers(m, vp, Recompute::kFull, 9);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("more than the 8 layers of a model chunk"), std::string::npos) << over.message();
  const Status sel = CheckRecomputeLayers(m, vp, Recompute::kSelective, 2);
  ASSERT_FALSE(sel.ok());
  EXPECT_NE(sel.message().find("needs --recompute full"), std::string::npos);
  // Outside pretraining it is refused rather than ignored.
  FitRequest lora = Infer();
  lora.mode = Mode::kLora;
  lora.recompute_layers = 3;
  auto e = EstimateMemory(m, lora);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("applies to --mode train"), std::string::npos) << e.status().message();
}

// scenarios.md: "A 7B model in FP16: about 14 GB; INT8 about 7 GB; INT4 under 5 GB."
TEST_F(Memory, SevenBWeightsByFormat) {
  const ModelSpec m = M("llama-2-7b");
  EXPECT_NEAR(Est(m, Infer("fp16")).breakdown.weights / 1e9, 13.5, 0.5);
  EXPECT_NEAR(Est(m, Infer("int8")).breakdown.weights / 1e9, 7.0, 0.5);
  EXPECT_LT(Est(m, Infer("int4")).breakdown.weights / 1e9, 5.0);
  EXPECT_LT(Est(m, Infer("q4_k_m")).breakdown.weights, Est(m, Infer("q8_0")).breakdown.weights);
  // "A 7B INT8 model serves comfortably in 12-16 GB": a 16 GB T4 holds it with a 4k context.
  EXPECT_TRUE(CheckFit(Est(m, Infer("int8", 1, 4096)), G("t4")).fits);
}

// torchao's README (pytorch/ao at fd6e4b1f): LLaMA-2 7B int4wo-64 is 3.74 GB of linear weights, which is 4.5 bits
// for each of its 6.61 B linear weights (4 bits + a bf16 scale and a bf16 zero per group of 64). suanli keeps the
// embedding table and the output head 16-bit, as GPTQ/AWQ checkpoints do (torchao also quantises the head).
TEST_F(Memory, Int4Group64IsFourAndAHalfBitsPerLayerWeight) {
  const ModelSpec m = M("llama-2-7b");
  const ParamCounts pc = CountParams(m);
  const double layer_params = pc.total - pc.embedding - pc.lm_head;
  const double w = Est(m, Infer("int4-g64")).breakdown.weights;
  EXPECT_NEAR((w - 2 * (pc.embedding + pc.lm_head)) * 8 / layer_params, 4.5, 0.01);
  EXPECT_LT(w, Est(m, Infer("int4-g32")).breakdown.weights);
  // With the head quantised too (--quantize-head), the weights without the embedding table are the table's size.
  FitRequest q = Infer("int4-g64");
  q.quantize_head = true;
  const double wq = Est(m, q).breakdown.weights;
  EXPECT_NEAR((wq - 2 * pc.embedding) / 1e9, 3.74, 0.04);
  EXPECT_NEAR(w - wq, pc.lm_head * (2 - 4.5 / 8), 1e3);
  // A tied head is the embedding table, which stays 16-bit; a 16-bit format has nothing to quantise the head to.
  const ModelSpec tied = M("llama-3.2-1b");
  ASSERT_TRUE(tied.tie_embeddings);
  EXPECT_DOUBLE_EQ(Est(tied, q).breakdown.weights, Est(tied, Infer("int4-g64")).breakdown.weights);
  FitRequest bf16 = Infer("bf16");
  bf16.quantize_head = true;
  auto e = EstimateMemory(m, bf16);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("--quantize-head"), std::string::npos) << e.status().message();
  FitRequest qlora = Infer("nf4");
  qlora.mode = Mode::kQlora;
  qlora.quantize_head = true;
  auto eq = EstimateMemory(m, qlora);
  ASSERT_FALSE(eq.ok());
  EXPECT_NE(eq.status().message().find("--mode qlora"), std::string::npos) << eq.status().message();
}

// scenarios.md: "Can a 70B model in FP16 run on one H100 80GB?" No; two at TP=2.
TEST_F(Memory, SeventyBDoesNotFitOneH100) {
  const ModelSpec m = M("llama-2-70b");
  const FitResult f = Est(m, Infer("fp16"));
  EXPECT_GT(f.breakdown.weights / 1e9, 135);
  EXPECT_FALSE(CheckFit(f, G("h100-sxm")).fits);
  const MinGpus mg = FindMinGpus(m, Infer("fp16"), G("h100-sxm"));
  EXPECT_EQ(mg.gpus, 2);
  EXPECT_EQ(mg.layout.tp * mg.layout.pp, 2);
}

// scenarios.md: 7B full fine-tune does not fit a 24 GB card; LoRA and QLoRA do.
TEST_F(Memory, SevenBFineTuningOnA24GBCard) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r;
  r.seq = 512;
  r.mode = Mode::kTrain;
  EXPECT_FALSE(CheckFit(Est(m, r), G("rtx-4090")).fits);
  r.mode = Mode::kLora;
  EXPECT_TRUE(CheckFit(Est(m, r), G("rtx-4090")).fits);
  EXPECT_TRUE(CheckFit(Est(m, r), G("rtx-3090")).fits);
  r.mode = Mode::kQlora;
  const FitResult q = Est(m, r);
  EXPECT_TRUE(CheckFit(q, G("rtx-4090")).fits);
  EXPECT_LT(q.per_gpu_peak_bytes, 10e9);  // "comfortably"
}

// scenarios.md: an 8 GB RTX 4060 Laptop runs 1.5B-3B quantised inference, and 7B QLoRA only with
// gradient checkpointing and short sequences.
TEST_F(Memory, LaptopGpu) {
  const GpuSpec& laptop = G("rtx-4060-laptop");
  EXPECT_TRUE(CheckFit(Est(M("llama-3.2-3b"), Infer("int4", 1, 4096)), laptop).fits);
  FitRequest r;
  r.mode = Mode::kQlora;
  r.seq = 512;
  EXPECT_TRUE(CheckFit(Est(M("llama-2-7b"), r), laptop).fits);
  r.seq = 4096;
  r.gradient_checkpointing = false;
  EXPECT_FALSE(CheckFit(Est(M("llama-2-7b"), r), laptop).fits);
}

TEST_F(Memory, AdamConventionIsExplicitAndSelectable) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 512;
  const FitResult a16 = Est(m, r);
  EXPECT_DOUBLE_EQ(a16.bytes_per_param_states, 16);
  r.fp32_grads = true;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 18);
  r.fp32_grads = false;
  r.optimizer = Optimizer::kAdam8bit;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 10);
  r.optimizer = Optimizer::kSgd;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 12);
}

// The optimizer's precision, by hand: weights 2 B + gradients 2 B + master copy + two moments.
TEST_F(Memory, OptimizerPrecisionSetsTheStateBytes) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 512;
  // Apex DistributedFusedAdam with dtype bf16 (NeMo optim.dtype: bf16): a bf16 copy and bf16 moments, 2 + 2 + 6.
  r.master = MasterCopy::kBf16;
  r.moments = MomentsDtype::kBf16;
  FitResult f = Est(m, r);
  EXPECT_DOUBLE_EQ(f.bytes_per_param_states, 10);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes_per_param, 6);
  // Megatron-Core's precision-aware optimizer with its defaults: FP32 master as 16-bit remainders, FP32 moments.
  r.master = MasterCopy::kRemainder;
  r.moments = MomentsDtype::kFp32;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 14);
  // DeepSeek-V3-style: FP32 master, BF16 moments; FP8 moments; no master copy.
  r.master = MasterCopy::kFp32;
  r.moments = MomentsDtype::kBf16;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 12);
  r.moments = MomentsDtype::kFp8;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 10);
  r.master = MasterCopy::kNone;
  r.moments = MomentsDtype::kFp32;
  EXPECT_DOUBLE_EQ(Est(m, r).bytes_per_param_states, 12);
  // The optimizer term scales with the bytes, sharded the same way: ZeRO-1 over 8 ranks.
  r.master = MasterCopy::kFp32;
  r.par.dp = 8;
  r.par.zero = 1;
  r.batch = 8;
  const double fp32_states = Est(m, r).breakdown.optimizer;
  r.master = MasterCopy::kBf16;
  r.moments = MomentsDtype::kBf16;
  EXPECT_NEAR(Est(m, r).breakdown.optimizer / fp32_states, 6.0 / 12.0, 1e-12);
}

TEST_F(Memory, OptimizerPrecisionRefusesWhatNoFrameworkDoes) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 512;
  r.master = MasterCopy::kRemainder;
  r.weights = *ParseWeightFormat("fp16");
  auto e = EstimateMemory(m, r);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.status().message()).find("BF16"), std::string::npos) << e.status().message();
  r.weights = *ParseWeightFormat("fp32");
  r.master = MasterCopy::kBf16;
  e = EstimateMemory(m, r);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.status().message()).find("own master"), std::string::npos) << e.status().message();
  r.weights = *ParseWeightFormat("bf16");
  r.master = MasterCopy::kFp32;
  r.moments = MomentsDtype::kBf16;
  r.optimizer = Optimizer::kSgd;
  EXPECT_FALSE(EstimateMemory(m, r).ok());
  r.optimizer = Optimizer::kAdam;
  r.mode = Mode::kLora;
  EXPECT_FALSE(EstimateMemory(m, r).ok());
  // Another optimizer with LoRA would be ignored (the adapters' states are the mode's): refused instead.
  r.moments = MomentsDtype::kFp32;
  r.optimizer = Optimizer::kSgd;
  auto lora_sgd = EstimateMemory(m, r);
  ASSERT_FALSE(lora_sgd.ok());
  EXPECT_NE(std::string(lora_sgd.status().message()).find("applies to --mode train"), std::string::npos);
  // Names parse, with a suggestion for a near miss.
  EXPECT_EQ(*ParseMasterCopy("remainder"), MasterCopy::kRemainder);
  EXPECT_EQ(*ParseMomentsDtype("FP8"), MomentsDtype::kFp8);
  auto bad = ParseMasterCopy("remainders");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("remainder"), std::string::npos);
}

TEST_F(Memory, ZeroShardsOverDataParallelNotGpuCount) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 1024;
  r.par.dp = 8;
  r.batch = 8;
  double prev = 1e300;
  for (int z = 0; z <= 3; ++z) {
    r.par.zero = z;
    const FitResult f = Est(m, r);
    EXPECT_LT(f.breakdown.weights + f.breakdown.gradients + f.breakdown.optimizer, prev) << "ZeRO-" << z;
    prev = f.breakdown.weights + f.breakdown.gradients + f.breakdown.optimizer;
  }
  // With TP=2 and the same DP, the optimizer shard is halved again by TP, not by the GPU count.
  r.par.zero = 1;
  const double opt_dp8 = Est(m, r).breakdown.optimizer;
  r.par.tp = 2;
  EXPECT_NEAR(Est(m, r).breakdown.optimizer, opt_dp8 / 2, opt_dp8 * 0.01);
}

TEST_F(Memory, RecomputeOrdersActivations) {
  const ModelSpec m = M("llama-2-13b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 4096;
  r.flash_attention = false;
  r.recompute = Recompute::kNone;
  const double none = Est(m, r).breakdown.activations;
  r.recompute = Recompute::kSelective;
  const double sel = Est(m, r).breakdown.activations;
  r.recompute = Recompute::kFull;
  const double full = Est(m, r).breakdown.activations;
  EXPECT_GT(none, sel);
  EXPECT_GT(sel, full);
}

TEST_F(Memory, PipelineFirstStageHoldsInFlightMicroBatches) {
  const ModelSpec m = M("llama-2-70b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 4096;
  r.par.tp = 8;
  r.par.pp = 4;
  r.batch = 16;  // 16 micro-batches of 1
  const FitResult f = Est(m, r);
  EXPECT_EQ(f.in_flight_micro_batches, 4);
  EXPECT_EQ(f.peak_stage, "first pipeline stage");
  // Same total activations as PP=1 (p micro-batches x L/p layers = L layers' worth) at TP=8.
  FitRequest one = r;
  one.par.pp = 1;
  EXPECT_NEAR(f.breakdown.activations, Est(m, one).breakdown.activations, 0.05 * f.breakdown.activations);
}

TEST_F(Memory, KvCacheScalesWithBatchContextAndDtype) {
  const ModelSpec m = M("llama-3.1-8b");
  const double kv1 = Est(m, Infer("bf16", 1, 8192)).breakdown.kv_cache;
  EXPECT_DOUBLE_EQ(Est(m, Infer("bf16", 4, 8192)).breakdown.kv_cache, 4 * kv1);
  FitRequest r = Infer("bf16", 1, 8192);
  r.kv_bytes_per_elem = 1;
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.kv_cache, kv1 / 2);
  EXPECT_DOUBLE_EQ(kv1, 8192.0 * 2 * 32 * 8 * 128 * 2);
}

TEST_F(Memory, BadLayoutsGetSpecificErrors) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r = Infer();
  r.par.tp = 3;
  auto e = EstimateMemory(m, r);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("does not divide the 32 attention heads"), std::string::npos);
  EXPECT_NE(e.status().message().find("valid TP: 1, 2, 4, 8, 16, 32"), std::string::npos);
  r.par.tp = 1;
  r.par.pp = 64;
  EXPECT_NE(EstimateMemory(m, r).status().message().find("exceeds the 32 layers"), std::string::npos);
  r.par.pp = 1;
  r.par.ep = 2;
  EXPECT_NE(EstimateMemory(m, r).status().message().find("mixture-of-experts"), std::string::npos);
  r.par.ep = 1;
  r.seq = 0;
  EXPECT_FALSE(EstimateMemory(m, r).ok());
  r.seq = int64_t(1) << 40;
  EXPECT_FALSE(EstimateMemory(m, r).ok());
  FitRequest t;
  t.mode = Mode::kTrain;
  t.par.dp = 4;
  t.batch = 6;
  EXPECT_NE(EstimateMemory(m, t).status().message().find("not divisible"), std::string::npos);
  t.batch = 8;
  t.weights = *ParseWeightFormat("int4");
  EXPECT_NE(EstimateMemory(m, t).status().message().find("qlora"), std::string::npos);
  EXPECT_NE(ParseWeightFormat("nf3").status().message().find("did you mean"), std::string::npos);
}

// Megatron-Core's account_for_embedding/loss_in_pipeline_split: LLaMA-3.1 405B's 126 layers + embedding + loss =
// 128 units, 16 per stage at PP 8, so the first and last stages hold 15 transformer layers and the others 16.
// Without the flag, 126 layers cannot be interleaved 8 x 8, and the error says the flag would make it work.
TEST_F(Memory, EmbeddingAndLossCountAsLayersInThePipelineSplit) {
  const ModelSpec m = M("llama-3.1-405b");
  ASSERT_EQ(m.layers, 126);
  Parallelism p;
  p.pp = 8;
  EXPECT_EQ(LayersOnStage(m, p, 0), 16);  // plain split: the remainder of 6 goes to the first six stages
  EXPECT_EQ(LayersOnStage(m, p, 6), 15);
  p.embedding_loss_in_split = true;
  int total = 0;
  for (int st = 0; st < p.pp; ++st) total += LayersOnStage(m, p, st);
  EXPECT_EQ(total, 126);
  EXPECT_EQ(LayersOnStage(m, p, 0), 15);
  EXPECT_EQ(LayersOnStage(m, p, 3), 16);
  EXPECT_EQ(LayersOnStage(m, p, 7), 15);

  FitRequest r = Train(8192, 16, 8, 8);
  r.par.interleave = 8;
  auto plain = EstimateMemory(m, r);
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("--account-for-embedding-loss: 126 + 2 = 64 x 2"), std::string::npos)
      << plain.status().message();
  r.par.embedding_loss_in_split = true;
  EXPECT_TRUE(EstimateMemory(m, r).ok());
  r.par.interleave = 3;  // 128 units over 24 virtual stages
  EXPECT_NE(EstimateMemory(m, r).status().message().find("= 128 are not divisible by PP x interleave = 8 x 3"),
            std::string::npos);
  r.par.interleave = 1;
  r.par.pp = 1;
  EXPECT_NE(EstimateMemory(m, r).status().message().find("needs PP > 1"), std::string::npos);
}

// FP8 training with Transformer Engine stores each FP8 GEMM's input for backward in FP8: the attention and MLP
// inputs (h each), the output projection's input (a*d) and the down projection's input (f) take 1 byte instead of
// 2. LLaMA-2 7B, one GPU: 2*4096 + 4096 + 11008 = 23296 bytes less per token and layer. Full recompute keeps only
// the 16-bit layer input, so it saves nothing; the default (16-bit) form is Korthikanti's, unchanged.
TEST_F(Memory, Fp8TrainingStoresGemmInputsInOneByte) {
  const ModelSpec m = M("llama-2-7b");
  const double s = 4096, b = 2;
  const double bf16 = LayerActivationBytes(m, s, b, 1, false, Recompute::kNone, true, false);
  const double fp8 = LayerActivationBytes(m, s, b, 1, false, Recompute::kNone, true, false, true);
  EXPECT_DOUBLE_EQ(bf16 - fp8, s * b * (2 * 4096 + 4096 + 11008));
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, s, b, 1, false, Recompute::kFull, true, false, true),
                   LayerActivationBytes(m, s, b, 1, false, Recompute::kFull, true, false));
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 4096;
  r.micro_batch = 2;
  r.batch = 2;
  const double act16 = Est(m, r).breakdown.activations;
  r.fp8_activations = true;
  EXPECT_LT(Est(m, r).breakdown.activations, act16);
  r.mode = Mode::kInfer;  // inference has no stored activations to shrink
  r.batch = 1;
  const double inf8 = Est(m, r).breakdown.activations;
  r.fp8_activations = false;
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.activations, inf8);
}

// Transformer Engine's FP8 weight cache (FitRequest::fp8_weight_cache_bytes_per_param): the given bytes for every
// transformer-layer parameter the GPU holds (LLaMA-2 7B at TP 2 and PP 2: a quarter of the layers' parameters), none
// for the embedding and head, a term of its own in the total. Under ZeRO-3 sharding nothing is cached step-long; a
// cache in inference, or a value outside 0..4 or nan, is an error.
TEST_F(Memory, Fp8WeightCacheCountsTheLayerWeightsThisGpuHolds) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r = Train(4096, 8, 2, 2);
  r.par.dp = 2;
  r.micro_batch = 1;
  r.fp8_activations = true;
  const FitResult none = Est(m, r);
  EXPECT_EQ(none.breakdown.fp8_weight_cache, 0);
  r.fp8_weight_cache_bytes_per_param = 2;
  const FitResult cached = Est(m, r);
  const ParamCounts c = CountParams(m);
  // (per_layer_total leaves out the final norm, which the layers' share of the norms carries: 4,096 parameters)
  EXPECT_NEAR(cached.breakdown.fp8_weight_cache, 2 * c.per_layer_total * 32 / 2 / 2, 2 * 4096);
  EXPECT_NEAR(cached.per_gpu_peak_bytes - none.per_gpu_peak_bytes, cached.breakdown.fp8_weight_cache, 1);
  EXPECT_DOUBLE_EQ(cached.breakdown.weights, none.breakdown.weights);
  bool noted = false;
  for (const auto& n : cached.notes) noted |= n.find("FP8 weight cache") != std::string::npos;
  EXPECT_TRUE(noted);
  r.par.zero = 3;
  EXPECT_EQ(Est(m, r).breakdown.fp8_weight_cache, 0);
  for (double bad : {-1.0, 4.5, std::nan("")}) {
    r.fp8_weight_cache_bytes_per_param = bad;
    auto e = EstimateMemory(m, r);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(std::string(e.status().message()).find("outside 0..4"), std::string::npos) << e.status().message();
  }
  FitRequest inf = Infer();
  inf.fp8_weight_cache_bytes_per_param = 1;
  auto e = EstimateMemory(m, inf);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.status().message()).find("inference"), std::string::npos) << e.status().message();
}

// LoRA adapter dropout: each adapter keeps a 1-byte mask per input element and its dropped input in place of the
// input, so adapters sharing an input (separate q, k, v) keep a dropped copy each beyond the first. LLaMA-2 7B
// (4096 wide, 32 layers), one 4096-token sequence, no checkpointing: fused qkv + o add 32 x 4096 x (4096 + 4096) bytes;
// separate q, k, v add 32 x 4096 x (3 x 4096 + 2 x 2 x 4096). Outside LoRA, or at p >= 1, it is an error.
TEST_F(Memory, LoraDropoutKeepsAMaskPerAdapterAndADroppedCopyPerSharedInput) {
  const ModelSpec m = M("llama-2-7b");
  FitRequest r;
  r.mode = Mode::kLora;
  r.seq = 4096;
  r.gradient_checkpointing = false;
  auto act = [&](std::vector<std::string> targets, double p) {
    FitRequest q = r;
    q.lora_targets = std::move(targets);
    q.lora_dropout = p;
    return Est(m, q).breakdown.activations;
  };
  const double T = 4096, h = 4096, layers = 32;
  EXPECT_NEAR(act({"qkv", "o"}, 0.1) - act({"qkv", "o"}, 0), layers * T * (h + h), 1);
  EXPECT_NEAR(act({"q", "k", "v"}, 0.1) - act({"q", "k", "v"}, 0), layers * T * (3 * h + 2 * 2 * h), 1);
  r.lora_dropout = 1;
  auto one = EstimateMemory(m, r);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(std::string(one.status().message()).find("outside [0, 1)"), std::string::npos);
  r.lora_dropout = 0.1;
  r.mode = Mode::kTrain;
  auto train = EstimateMemory(m, r);
  ASSERT_FALSE(train.ok());
  EXPECT_NE(std::string(train.status().message()).find("needs --mode lora"), std::string::npos);
}

// Megatron-Core's module names: parsed in any order with commas or spaces, listed in Megatron-Core's order; a
// repeated, unknown or empty list is an error that says what is valid.
// LoRA: a frozen linear layer saves no input for the backward pass (its weight gets no gradient; Transformer
// Engine's Linear saves the input only when weight.requires_grad, PyTorch's autograd likewise); an adapted one's
// adapter takes the same input. LLaMA-2 7B, one GPU, adapters on q, k, v, o: the MLP input (2h) and the down
// projection's input (2f) are not kept, 2*4096 + 2*11008 bytes less per token and layer; the attention input and
// the output projection's input stay. With adapters on every matrix nothing is dropped; on q alone the output
// projection's input (2*4096) goes too.
TEST_F(Memory, LoraKeepsOnlyTheAdaptedMatricesInputs) {
  const ModelSpec m = M("llama-2-7b");
  const double s = 4096, b = 1;
  const auto act = [&](const std::vector<std::string>& targets) {
    return LayerActivationBytes(m, s, b, 1, false, Recompute::kNone, true, false, false, {}, 0,
                                LoraSavedForBackward(targets));
  };
  const double full = LayerActivationBytes(m, s, b, 1, false, Recompute::kNone, true, false);
  EXPECT_DOUBLE_EQ(full - act({"q", "k", "v", "o"}), s * b * (2 * 4096 + 2 * 11008));
  EXPECT_DOUBLE_EQ(act({}), act({"q", "k", "v", "o"}));  // the default targets
  EXPECT_DOUBLE_EQ(act({"all"}), full);
  EXPECT_DOUBLE_EQ(act({"q", "k", "v", "o"}) - act({"q"}), s * b * 2 * 4096);
  // The fit of a LoRA request uses it: its activations sit below full fine-tuning's at the same layout.
  FitRequest r;
  r.seq = 4096;
  r.batch = 1;
  r.micro_batch = 1;
  r.gradient_checkpointing = false;
  r.mode = Mode::kTrain;
  const FitResult train = Est(m, r);
  r.mode = Mode::kLora;
  const FitResult lora = Est(m, r);
  EXPECT_NEAR(train.breakdown.activations - lora.breakdown.activations, m.layers * s * (2 * 4096 + 2 * 11008),
              1e-6 * train.breakdown.activations);
}

// Megatron-Core's activation_func_fp8_input_store keeps a gated MLP's SwiGLU input (gate and up, 2f per token in
// 16-bit) in FP8: LLaMA-2 7B saves 2 x 11008 bytes per token and layer; a plain MLP has no SwiGLU and is refused,
// as is inference (nothing is kept for a backward pass).
TEST_F(Memory, SwigluInputInFp8HalvesTheGateAndUpActivations) {
  const ModelSpec m = M("llama-2-7b");
  const double s = 4096, b = 2;
  SavedForBackward fp8_in;
  fp8_in.swiglu_input_fp8 = true;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, s, b, 1, false, Recompute::kNone, true, false) -
                       LayerActivationBytes(m, s, b, 1, false, Recompute::kNone, true, false, false, {}, 0, fp8_in),
                   s * b * 2 * 11008);
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 4096;
  r.batch = 8;
  r.micro_batch = 2;
  r.recompute = Recompute::kNone;
  const FitResult plain = Est(m, r);
  r.swiglu_input_fp8 = true;
  const FitResult stored = Est(m, r);
  EXPECT_NEAR(plain.breakdown.activations - stored.breakdown.activations, 32 * s * b * 2 * 11008,
              1e-6 * plain.breakdown.activations);
  auto gptj = EstimateMemory(M("gpt-j-6b"), r);
  ASSERT_FALSE(gptj.ok());
  EXPECT_NE(gptj.status().message().find("plain MLP"), std::string::npos);
  r.mode = Mode::kInfer;
  ASSERT_FALSE(EstimateMemory(m, r).ok());
}

TEST(RecomputeModules, ParseListAndErrors) {
  auto mods = ParseRecomputeModules("layernorm, moe_act");
  ASSERT_TRUE(mods.ok()) << mods.status().message();
  EXPECT_TRUE(mods->layernorm && mods->moe_act);
  EXPECT_FALSE(mods->core_attn || mods->mlp || mods->moe || mods->shared_experts || mods->mla_up_proj);
  EXPECT_EQ(RecomputeModulesList(*mods), "moe_act,layernorm");
  auto all = ParseRecomputeModules("shared_experts moe mlp mla_up_proj layernorm moe_act core_attn");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(RecomputeModulesList(*all), "core_attn,moe_act,layernorm,mla_up_proj,mlp,moe,shared_experts");
  auto twice = ParseRecomputeModules("layernorm,layernorm");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("twice"), std::string::npos);
  auto typo = ParseRecomputeModules("layernom");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'layernorm'"), std::string::npos) << typo.status().message();
  EXPECT_FALSE(ParseRecomputeModules(" , ").ok());
  // Selective with no module named is core_attn, Megatron-Core's default; other settings recompute no module.
  EXPECT_TRUE(EffectiveRecomputeModules(Recompute::kSelective, {}).core_attn);
  EXPECT_FALSE(EffectiveRecomputeModules(Recompute::kFull, *mods).any());
  EXPECT_EQ(RecomputeWords(Recompute::kSelective, 0, *mods), "selective (moe_act layernorm)");
  EXPECT_EQ(RecomputeWords(Recompute::kSelective, 0, EffectiveRecomputeModules(Recompute::kSelective, {})), "selective");
}

// What each module drops from one layer's stored activations, per token (LLaMA-2 7B: h 4096, 32 heads, gated MLP
// of 11008, two norms; FlashAttention, TP 1): layernorm the two norm outputs (2 x 2h, or 2 x h when FP8 GEMM inputs
// are kept), mlp the MLP's inner tensors (gate, up and product: 6f), core_attn FlashAttention's log-sum-exp (4 B per
// head).
TEST_F(Memory, RecomputeModulesDropTheirOwnActivations) {
  const ModelSpec m = M("llama-2-7b");
  const double s = 4096, b = 2, h = 4096, f = 11008;
  const auto act = [&](const char* list, bool fp8 = false) {
    const Recompute rc = list[0] ? Recompute::kSelective : Recompute::kNone;
    return LayerActivationBytes(m, s, b, 1, false, rc, true, false, fp8,
                                list[0] ? *ParseRecomputeModules(list) : RecomputeModules{});
  };
  const double none = act("");
  EXPECT_DOUBLE_EQ(none - act("layernorm"), s * b * 2 * 2 * h);
  EXPECT_DOUBLE_EQ(none - act("mlp"), s * b * 6 * f);
  EXPECT_DOUBLE_EQ(none - act("core_attn"), s * b * 4 * 32);
  EXPECT_DOUBLE_EQ(none - act("layernorm,mlp"), s * b * (4 * h + 6 * f));
  EXPECT_DOUBLE_EQ(act("", true) - act("layernorm", true), s * b * 2 * h);
  // Selective with no module named is core_attn.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, s, b, 1, false, Recompute::kSelective, true, false), act("core_attn"));
}

// An MoE layer keeps each token's k dispatched copies (the grouped GEMM's input, 2 k h; a GPU holds ETP / TP of its
// TP group's copies) and the experts' inner tensors (6 k f). Qwen3 30B-A3B: h 2048, k 8, f 768, no shared expert,
// every layer MoE. moe_act drops the activation's output (2 k f); moe drops the copies and all the inner tensors.
TEST_F(Memory, MoeLayersKeepTheDispatchedTokensAndRecomputeModulesDropThem) {
  const ModelSpec m = M("qwen3-30b-a3b");
  const double s = 4096, b = 1, h = 2048, k = 8, f = 768;
  const auto act = [&](const char* list, int tp = 1, int etp = 0) {
    const Recompute rc = list[0] ? Recompute::kSelective : Recompute::kNone;
    return LayerActivationBytes(m, s, b, tp, false, rc, true, false, false,
                                list[0] ? *ParseRecomputeModules(list) : RecomputeModules{}, etp);
  };
  const double none = act("");
  EXPECT_DOUBLE_EQ(none - act("moe_act"), s * b * 2 * k * f);
  EXPECT_DOUBLE_EQ(none - act("moe"), s * b * (2 * k * h + 6 * k * f));
  // TP 2: with the experts on TP 2 each GPU holds all of its group's copies, folded to ETP 1 half of them.
  EXPECT_DOUBLE_EQ(act("", 2, 2) - act("", 2, 1), s * b * 2 * k * h / 2);
}

// A module the model or the mode has nothing for is an error naming it, as is any module without selective
// recompute (Megatron-Core's --recompute-granularity selective).
TEST_F(Memory, RecomputeModulesThatDoNotApplyAreErrors) {
  const auto err = [&](const char* model, const char* list, Recompute rc = Recompute::kSelective,
                       Mode mode = Mode::kTrain) {
    FitRequest r = Train(4096, 8, 1, 1);
    r.mode = mode;
    r.recompute = rc;
    r.recompute_modules = *ParseRecomputeModules(list);
    auto e = EstimateMemory(M(model), r);
    return e.ok() ? std::string() : std::string(e.status().message());
  };
  EXPECT_EQ(err("llama-2-7b", "layernorm,mlp"), "");
  EXPECT_EQ(err("qwen3-30b-a3b", "layernorm,moe_act"), "");
  EXPECT_NE(err("llama-2-7b", "layernorm", Recompute::kFull).find("needs --recompute selective"), std::string::npos);
  EXPECT_NE(err("llama-2-7b", "moe_act").find("has no MoE layers"), std::string::npos);
  EXPECT_NE(err("qwen3-30b-a3b", "mlp").find("every layer of"), std::string::npos);
  EXPECT_NE(err("qwen3-30b-a3b", "shared_experts").find("no shared experts"), std::string::npos);
  EXPECT_NE(err("llama-2-7b", "mla_up_proj").find("multi-head latent attention"), std::string::npos);
  EXPECT_EQ(err("deepseek-v3", "mla_up_proj,mlp,shared_experts"), "");
  EXPECT_NE(err("llama-2-7b", "layernorm", Recompute::kSelective, Mode::kLora).find("applies to --mode train"),
            std::string::npos);
}

TEST_F(Memory, MoreTensorParallelismNeverRaisesPerGpuWeights) {
  const ModelSpec m = M("llama-3.1-70b");
  double prev = 1e300;
  for (int tp : {1, 2, 4, 8}) {
    FitRequest r = Infer();
    r.par.tp = tp;
    const double w = Est(m, r).breakdown.weights;
    EXPECT_LT(w, prev);
    prev = w;
  }
}

TEST_F(Memory, MaxBatchAndContextAreTheLargestThatFit) {
  const ModelSpec m = M("llama-3.1-8b");
  const GpuSpec& g = G("h100-sxm");
  FitRequest r = Infer("bf16", 1, 8192);
  const int64_t b = MaxBatchThatFits(m, r, g);
  ASSERT_GT(b, 1);
  r.batch = b;
  EXPECT_TRUE(CheckFit(Est(m, r), g).fits);
  r.batch = b + 1;
  EXPECT_FALSE(CheckFit(Est(m, r), g).fits);
}

TEST_F(Memory, MixtureOfExpertsShardsExpertsByEp) {
  const ModelSpec m = M("mixtral-8x7b");
  FitRequest r;
  r.mode = Mode::kTrain;
  r.seq = 2048;
  r.par.dp = 8;
  r.batch = 8;
  const double w1 = Est(m, r).breakdown.weights;
  r.par.ep = 8;
  const double w8 = Est(m, r).breakdown.weights;
  EXPECT_LT(w8, w1 / 3);  // experts are ~97% of Mixtral's parameters
}

// ZeRO-3 gathers the current and the prefetched layer's parameters. An MoE layer's experts are gathered only where
// ZeRO shards them over expert data parallelism: with EP over the whole DP group (Qwen3 30B-A3B, EP 8 on DP 8, as
// NeMo AutoModel runs it) each GPU holds its experts whole already, and only the attention and router are gathered.
TEST_F(Memory, ZeroThreeGathersOnlyTheShardedPartOfAnMoeLayer) {
  const ModelSpec m = M("qwen3-30b-a3b");
  const ParamCounts c = CountParams(m);
  FitRequest r = Train(4096, 64, 1, 1);
  r.par.dp = 8;
  r.par.zero = 3;
  r.par.ep = 8;
  const double dense_layer = c.per_layer_total - c.moe_experts / m.layers;
  const double expected = 2.0 * (c.total - c.moe_experts) / 8 + 2.0 * c.moe_experts / 8 + 2 * 2.0 * dense_layer;
  EXPECT_NEAR(Est(m, r).breakdown.weights, expected, 1e-6 * expected);
  // EP 4 on DP 8: each expert is held by 2 GPUs, which shard it and gather it layer by layer.
  r.par.ep = 4;
  const double expected4 =
      2.0 * (c.total - c.moe_experts) / 8 + 2.0 * c.moe_experts / 8 + 2 * 2.0 * (dense_layer + c.moe_experts / 48 / 4);
  EXPECT_NEAR(Est(m, r).breakdown.weights, expected4, 1e-6 * expected4);
}

// Megatron-Core's layout strings: commas are cosmetic, (...)*n and x*n repeat (the docstring's example and
// DeepSeek-V3's 16-stage layout), and what cannot be read is an error that names it.
TEST(PipelineLayouts, ParseAsMegatronCoreDoes) {
  auto doc = ParsePipelineLayout("Ettt|(tt|)*29,m|L");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc->stages.size(), 32u);
  EXPECT_EQ(doc->stages[0].embedding, 1);
  EXPECT_EQ(doc->stages[0].layers, 3);
  EXPECT_EQ(doc->stages[29].layers, 2);
  EXPECT_EQ(doc->stages[30].layers + doc->stages[30].mtp, 1);
  EXPECT_EQ(doc->stages[30].mtp, 1);
  EXPECT_EQ(doc->stages[31].loss, 1);
  auto ds = ParsePipelineLayout("Et*4|(t*4|)*14tmL");
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_EQ(ds->stages.size(), 16u);
  int t = 0;
  for (const auto& st : ds->stages) t += st.layers;
  EXPECT_EQ(t, 61);
  EXPECT_EQ(ds->stages[15].layers, 1);
  EXPECT_EQ(ds->stages[15].mtp, 1);
  EXPECT_EQ(ds->stages[15].loss, 1);
  for (const char* bad : {"Ext|L", "(tt|L", "*3t|L", "(t(t)*2)*2|L", "Et*|L"}) {
    auto r = ParsePipelineLayout(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
    }
  }
}

// The layout sets VP (stages / PP) and where layers and MTP modules sit: DeepSeek-V3's 16 stages on PP 4 give ranks
// of 16, 16, 16 and 13 layers with the MTP module on the last; the checks Megatron-Core makes are errors here.
TEST_F(Memory, PipelineLayoutPlacesLayersAndMtpModules) {
  const ModelSpec m = M("deepseek-v3");
  Parallelism p;
  p.pp = 4;
  ASSERT_TRUE(ApplyPipelineLayout(p, "Et*4|(t*4|)*14tmL").ok());
  EXPECT_EQ(p.interleave, 4);
  EXPECT_EQ(LayersOnStage(m, p, 0), 16);
  EXPECT_EQ(LayersOnStage(m, p, 3), 13);
  EXPECT_EQ(MtpOnStage(p, 1, 3), 1);
  EXPECT_EQ(MtpOnStage(p, 1, 0), 0);
  EXPECT_DOUBLE_EQ(RecomputeChunkLayers(m, p), 4);
  Parallelism three;
  three.pp = 3;
  EXPECT_FALSE(ApplyPipelineLayout(three, "Et*4|(t*4|)*14tmL").ok());  // 16 stages on 3 ranks
  Parallelism fixed;
  fixed.pp = 4;
  fixed.interleave = 2;
  EXPECT_FALSE(ApplyPipelineLayout(fixed, "Et*4|(t*4|)*14tmL").ok());  // says VP 4
  const auto err = [&](const char* layout, int mtp) {
    FitRequest r = Train(4096, 4096, 1, 4);
    r.par.dp = 64;
    r.par.ep = 64;
    r.mtp_layers = mtp;
    EXPECT_TRUE(ApplyPipelineLayout(r.par, layout).ok()) << layout;
    auto e = EstimateMemory(m, r);
    return e.ok() ? std::string() : std::string(e.status().message());
  };
  EXPECT_EQ(err("Et*4|(t*4|)*14tmL", 1), "");
  EXPECT_NE(err("Et*4|(t*4|)*14tmL", 0).find("places 1 MTP modules"), std::string::npos);
  EXPECT_NE(err("Et*4|(t*4|)*14mL", 1).find("places 60 transformer layers"), std::string::npos);
  EXPECT_NE(err("t*4|E(t*4|)*14tmL", 1).find("the embedding (E) must appear once, in the first stage"),
            std::string::npos);
  // An MTP module adds its layer's activations and its own logits to its rank.
  FitRequest with = Train(4096, 4096, 1, 4), without = with;
  with.par.dp = without.par.dp = 64;
  with.par.ep = without.par.ep = 64;
  with.mtp_layers = 1;
  ASSERT_TRUE(ApplyPipelineLayout(with.par, "Et*4|(t*4|)*14tmL").ok());
  ASSERT_TRUE(ApplyPipelineLayout(without.par, "Et*4|(t*4|)*14tL").ok());
  EXPECT_GT(Est(m, with).per_gpu_peak_bytes, 0.0);
  EXPECT_GE(Est(m, with).per_gpu_peak_bytes, Est(m, without).per_gpu_peak_bytes);
}

// DeepSeek-V3's first three layers are dense: under its 16-stage layout on PP 8 (VP 2) rank 0 runs virtual stages 0
// (layers 0-3) and 8 (layers 32-35), so 5 of its 8 layers are MoE; under the even split on PP 4 rank 0 holds
// layers 0-14 (12 MoE). Every MoE layer is on exactly one rank, and rank 0 holds fewer routed experts than rank 1.
TEST_F(Memory, MoeLayersSitWhereTheLayoutPutsThem) {
  const ModelSpec m = M("deepseek-v3");
  ASSERT_EQ(m.moe_layer_count(), 58);
  EXPECT_FALSE(m.is_moe_layer(2));
  EXPECT_TRUE(m.is_moe_layer(3));
  Parallelism lay;
  lay.pp = 8;
  ASSERT_TRUE(ApplyPipelineLayout(lay, "Et*4|(t*4|)*14tmL").ok());
  EXPECT_EQ(LayersOnStage(m, lay, 0), 8);
  EXPECT_EQ(MoeLayersOnStage(m, lay, 0), 5);
  EXPECT_EQ(MoeLayersOnStage(m, lay, 1), 8);
  EXPECT_EQ(MoeLayersOnStage(m, lay, 7), 5);  // virtual stages 7 (layers 28-31) and 15 (layer 60)
  Parallelism even;
  even.pp = 4;
  const auto total = [&](const Parallelism& p) {
    int n = 0;
    for (int st = 0; st < p.pp; ++st) n += MoeLayersOnStage(m, p, st);
    return n;
  };
  EXPECT_EQ(MoeLayersOnStage(m, even, 0), LayersOnStage(m, even, 0) - 3);
  EXPECT_EQ(total(even), 58);
  EXPECT_EQ(total(lay), 58);
  even.interleave = 2;  // chunks: rank 0 runs virtual stages 0 and 4, the dense layers are still its own
  EXPECT_EQ(MoeLayersOnStage(m, even, 0), LayersOnStage(m, even, 0) - 3);
  EXPECT_EQ(total(even), 58);
  // Memory: rank 0 holds the three dense MLPs and 5 MoE layers' shared expert, router and 8 of 32 experts' shares
  // (not 8 layers of the model's mean), beside the embedding; with short sequences (parameters dominate) it is the
  // fullest rank.
  FitRequest r = Train(128, 256, 1, 8);
  r.par = lay;
  r.par.dp = 32;
  r.par.ep = 32;
  r.mtp_layers = 1;
  const auto e = EstimateMemory(m, r);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->peak_stage, "first pipeline stage");
  const ParamCounts& c = e->params;
  const double rank0 = (c.attention + c.norms) / 61 * 8 + c.mlp_dense +
                       (c.moe_shared + c.router + c.moe_experts / 32) / 58 * 5 + c.embedding;
  EXPECT_NEAR(e->params_per_gpu, rank0, 1e-9 * rank0);
}

// Activations by layer kind: DeepSeek-V3's MoE layer keeps each token's 8 dispatched copies and the experts' and
// shared expert's inner tensors, a third more than a dense layer's 18,432-wide MLP. Under the 16-stage layout on PP 8 (VP 2), rank 0 holds 11.5 micro-batches'
// worth of its 3 dense and 5 MoE layers, rank 1 10.5 of 8 MoE layers: rank 1 holds the most (with the model's mean
// layer, rank 0 did).
TEST_F(Memory, EachRankKeepsItsOwnLayersActivations) {
  const ModelSpec m = M("deepseek-v3");
  FitRequest r = Train(4096, 4096, 1, 8);
  r.par.dp = 32;
  r.par.ep = 32;
  r.par.zero = 1;
  r.recompute = Recompute::kSelective;
  r.mtp_layers = 1;
  ASSERT_TRUE(ApplyPipelineLayout(r.par, "Et*4|(t*4|)*14tmL").ok());
  const auto a = LayerActivationBytesByKind(m, 4096, 1, 1, false, Recompute::kSelective, r.flash_attention, r.dropout);
  EXPECT_GT(a.moe, 1.3 * a.dense);
  EXPECT_NEAR(LayerActivationBytes(m, 4096, 1, 1, false, Recompute::kSelective, r.flash_attention, r.dropout),
              (3 * a.dense + 58 * a.moe) / 61, 1e-9 * a.moe);
  const auto e = EstimateMemory(m, r);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->peak_stage, "a middle pipeline stage");
  EXPECT_NEAR(e->breakdown.activations, 8 * a.moe * 10.5, 1e-9 * e->breakdown.activations);
  EXPECT_LT((3 * a.dense + 5 * a.moe) * 11.5, 8 * a.moe * 10.5);
}

// The uneven split written as a layout reads back as the same split: every rank holds the layers LayersOnStage gives
// it, the MTP modules sit on the last rank, and an even split, interleaving or a layout of its own need none.
TEST_F(Memory, UnevenSplitLayoutReadsBackAsTheSameSplit) {
  for (const char* id : {"deepseek-v3", "llama-3.1-8b", "gpt-oss-120b", "llama-3.1-405b"}) {
    const ModelSpec m = M(id);
    for (int pp = 2; pp <= 16; ++pp) {
      if (pp > m.layers) continue;
      Parallelism p;
      p.pp = pp;
      const std::string text = UnevenSplitLayout(m, p, 1);
      EXPECT_EQ(text.empty(), m.layers % pp == 0) << id << " PP " << pp;
      if (text.empty()) continue;
      Parallelism q;
      q.pp = pp;
      ASSERT_TRUE(ApplyPipelineLayout(q, text).ok()) << text;
      EXPECT_EQ(q.interleave, 1);
      for (int st = 0; st < pp; ++st) {
        EXPECT_EQ(LayersOnStage(m, q, st), LayersOnStage(m, p, st)) << id << " " << text << " rank " << st;
        EXPECT_EQ(MtpOnStage(q, 1, st), st == pp - 1 ? 1 : 0);
      }
      q.pp = pp;
      EXPECT_EQ(UnevenSplitLayout(m, q, 1), "");  // a layout of its own is written as given
    }
  }
  Parallelism inter;
  inter.pp = 4;
  inter.interleave = 2;
  EXPECT_EQ(UnevenSplitLayout(M("deepseek-v3"), inter, 0), "");
}

// With explain, every pipeline rank's peak is reported: under 1F1B rank r keeps PP - r micro-batches, the largest
// is the reported peak, and the planner's mode (no explain, only the ranks that can hold the most) finds the same.
TEST_F(Memory, EveryPipelineRanksPeakWithExplain) {
  const ModelSpec m = M("llama-3.1-70b");
  FitRequest r = Train(4096, 64, 4, 4);
  r.par.dp = 2;
  r.recompute = Recompute::kSelective;
  const FitResult e = Est(m, r);
  ASSERT_EQ(e.ranks.size(), 4u);
  double most = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(e.ranks[i].layers, 20);
    EXPECT_DOUBLE_EQ(e.ranks[i].in_flight_micro_batches, 4.0 - i);
    most = std::max(most, e.ranks[i].peak_bytes);
  }
  EXPECT_DOUBLE_EQ(e.per_gpu_peak_bytes, most);
  EXPECT_GT(e.ranks[0].peak_bytes, e.ranks[1].peak_bytes);
  r.explain = false;
  const FitResult quiet = Est(m, r);
  EXPECT_TRUE(quiet.ranks.empty());
  EXPECT_DOUBLE_EQ(quiet.per_gpu_peak_bytes, e.per_gpu_peak_bytes);
  // The same for a model whose first layers are dense, where the quiet mode skips ranks that repeat the one before.
  const ModelSpec ds = M("deepseek-v3");
  for (int pp : {2, 3, 4, 8, 16}) {
    for (const char* layout : {"", "Et*4|(t*4|)*14tmL"}) {
      FitRequest q = Train(4096, 4096, 1, pp);
      q.par.dp = 32;
      q.par.ep = 16;
      q.mtp_layers = 1;
      if (layout[0] && (16 % pp != 0 || !ApplyPipelineLayout(q.par, layout).ok())) continue;
      const FitResult all = Est(ds, q);
      q.explain = false;
      EXPECT_DOUBLE_EQ(Est(ds, q).per_gpu_peak_bytes, all.per_gpu_peak_bytes) << "PP " << pp << " " << layout;
    }
  }
}

// Serving: expert parallelism splits the tensor-parallel group (TensorRT-LLM moe_ep_size x moe_tp_size = tp_size),
// so --ep 8 on TP 8 means ETP 1 without saying so, and each GPU holds 1 of Mixtral's 8 experts whole: the same
// bytes as 1/8 of each. Training keeps Megatron-Core's ETP = TP, which that layout does not satisfy.
TEST_F(Memory, ServingExpertParallelismDefaultsToSplittingTheTpGroup) {
  const ModelSpec m = M("mixtral-8x7b");
  FitRequest r = Infer();
  r.par.tp = 8;
  const double tp_only = Est(m, r).breakdown.weights;
  r.par.ep = 8;
  EXPECT_EQ(ExpertTpFor(r.par, Mode::kInfer), 1);
  EXPECT_EQ(ExpertTpFor(r.par, Mode::kTrain), 8);
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.weights, tp_only);
  r.par.ep = 2;  // EP 2 x ETP 4
  EXPECT_EQ(ExpertTpFor(r.par, Mode::kInfer), 4);
  EXPECT_DOUBLE_EQ(Est(m, r).breakdown.weights, tp_only);
  r.par.tp = 4;
  r.par.ep = 8;  // EP larger than TP with one replica: nowhere to put 8 expert ranks
  auto refused = EstimateMemory(m, r);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("in serving, expert parallelism splits the tensor-parallel group"),
            std::string::npos)
      << refused.status().message();
  FitRequest t = Train(2048, 8, 8, 1);
  t.par.ep = 8;
  EXPECT_FALSE(EstimateMemory(m, t).ok());
}

// MoE parallel folding: expert layers lay their own grid over the same ranks, ETP x EP x expert-DP = TP x DP x CP.
// Megatron-Bridge's Qwen3 235B recipe on 256 H100s runs TP 2, PP 8, DP 16 with EP 32: with ETP = TP that EP does
// not divide DP and is refused (the error points at --etp 1); with ETP 1 it folds in the TP ranks. Each GPU then
// holds 1/32 of the experts, exactly as with ETP 2 and EP 16 (1/2 of each of 1/16).
TEST_F(Memory, ExpertTensorParallelismFoldsTheExpertGrid) {
  const ModelSpec m = M("qwen3-235b-a22b");
  FitRequest r = Train(4096, 16, 2, 8);
  r.par.dp = 16;
  r.par.sequence_parallel = true;
  r.par.embedding_loss_in_split = true;
  r.par.ep = 32;
  auto refused = EstimateMemory(m, r);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("with --etp 1 the expert-parallel group can take in the 2 tensor-parallel"),
            std::string::npos) << refused.status().message();
  r.par.etp = 1;
  const FitResult folded = Est(m, r);
  r.par.etp = 0;
  r.par.ep = 16;
  const FitResult plain = Est(m, r);
  EXPECT_NEAR(folded.breakdown.weights, plain.breakdown.weights, 1e-6 * plain.breakdown.weights);
  EXPECT_NEAR(folded.breakdown.optimizer, plain.breakdown.optimizer, 1e-6 * plain.breakdown.optimizer);
  r.par.etp = 3;  // must divide TP
  EXPECT_NE(EstimateMemory(m, r).status().message().find("--etp 3 must divide TP = 2"), std::string::npos);
  FitRequest dense;
  dense.mode = Mode::kTrain;
  dense.par.tp = 2;
  dense.par.etp = 1;
  EXPECT_NE(EstimateMemory(M("llama-2-7b"), dense).status().message().find("--etp 1 needs a mixture-of-experts model"),
            std::string::npos);
}

// torchtitan's per-op checkpointing keeps, per token and layer of LLaMA-3.1 8B (h 4096, 32 query heads and 8 KV heads
// of 128, SwiGLU 14336), without TP: the block input 2h, wq's output 2 x 4096, wv's 2 x 1024, the attention output
// 2 x 4096 with its FP32 log-sum-exp 4 x 32, w1's output 2 x 14336 and w2's 2h: 63,616 B. With TP 2 and SP the input
// and the two reduce-scatter outputs (2h each) are on the sequence shard, the head-sharded tensors halve, and w2's
// partial sums stay whole on each rank: (3 x 8192) / 2 + (8192 + 2048 + 8192 + 128 + 28672) / 2 + 8192 = 44,096 B.
// Between no recompute and full recompute in memory; refused for MoE and MLA layers and for unfused attention.
TEST_F(Memory, RecomputeOpKeepsTorchtitansSavedTensors) {
  const ModelSpec m = M("llama-3.1-8b");
  const double s = 8192;
  const auto op = LayerActivationBytesByKind(m, s, 1, 1, false, Recompute::kOp, true, false, false);
  EXPECT_DOUBLE_EQ(op.dense, s * 63616);
  EXPECT_DOUBLE_EQ(op.moe, op.dense);
  const auto tp = LayerActivationBytesByKind(m, s, 1, 2, true, Recompute::kOp, true, false, false);
  EXPECT_DOUBLE_EQ(tp.dense, s * 44096);
  // FP8 GEMMs return 16-bit outputs: nothing changes.
  EXPECT_DOUBLE_EQ(LayerActivationBytesByKind(m, s, 1, 1, false, Recompute::kOp, true, false, true).dense, op.dense);
  const double none = LayerActivationBytesByKind(m, s, 1, 1, false, Recompute::kNone, true, false, false).dense;
  const double full = LayerActivationBytesByKind(m, s, 1, 1, false, Recompute::kFull, true, false, false).dense;
  EXPECT_LT(full, op.dense);
  EXPECT_LT(op.dense, none);

  FitRequest r = Train(8192, 1, 1, 1);
  r.recompute = Recompute::kOp;
  ASSERT_TRUE(EstimateMemory(m, r).ok());
  r.flash_attention = false;
  auto unfused = EstimateMemory(m, r);
  ASSERT_FALSE(unfused.ok());
  EXPECT_NE(unfused.status().message().find("--attention flash"), std::string::npos);
  r.flash_attention = true;
  auto moe = EstimateMemory(M("qwen3-30b-a3b"), r);
  ASSERT_FALSE(moe.ok());
  EXPECT_NE(moe.status().message().find("MoE"), std::string::npos);
  auto mla = EstimateMemory(M("deepseek-v3"), r);
  ASSERT_FALSE(mla.ok());
  EXPECT_TRUE(ParseRecompute("op").ok());
  EXPECT_EQ(*ParseRecompute("selective-op"), Recompute::kOp);
  EXPECT_STREQ(RecomputeName(Recompute::kOp), "op");
}


// Compares memory estimates against a base request's over a grid: a request that is an error is skipped (the grid
// holds layouts the model refuses), any other that needs more (or less, where it should need more) is a failure.
struct MonotoneMemory {
  int checked = 0;
  std::vector<std::string> bad;
  static double Peak(const ModelSpec& m, const FitRequest& r) {
    auto x = EstimateMemory(m, r);
    return x.ok() ? x->per_gpu_peak_bytes : -1.0;
  }
  // `more`: q should need at least base's bytes; otherwise at most.
  void Check(const std::string& label, const ModelSpec& m, double base, const FitRequest& q, bool more) {
    const double b = Peak(m, q);
    if (b < 0) return;
    ++checked;
    if (more ? b < base * (1 - 1e-9) : b > base * (1 + 1e-9))
      bad.push_back(fmt::format("{}: {:.4g} -> {:.4g} GB", label, base / 1e9, b / 1e9));
  }
  void Expect(int min_checked) const {
    EXPECT_GT(checked, min_checked);
    std::string first;
    for (size_t i = 0; i < bad.size() && i < 20; ++i) first += bad[i] + "\n";
    EXPECT_TRUE(bad.empty()) << bad.size() << " of " << checked << ":\n" << first;
  }
};
// Properties of the training memory model over a grid (dense and MoE models, TP/PP/CP/EP, ZeRO 0-3, the three
// recompute settings, 16-bit and FP8 activations): a larger micro-batch or sequence never needs less memory per GPU;
// more ZeRO sharding, more recompute, more TP (with sequence parallelism), more data parallelism and, where the
// layers split evenly, more pipeline stages never need more. (An uneven split may: 36 layers on 8 stages put 5 on
// the first, which holds 8 micro-batches in flight, 40 layers' worth against 9 x 4 = 36 on 4 stages.)
TEST_F(Memory, TrainingMemoryIsMonotoneInTheLayout) {
  MonotoneMemory grid;
  for (const char* mid : {"llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3"})
    for (int tp : {1, 2, 8})
      for (int pp : {1, 2, 4})
        for (int cp : {1, 2})
          for (int ep : {1, 8})
            for (int zero : {0, 1, 2, 3})
              for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
                for (int64_t mb : {1, 4})
                  for (bool fp8 : {false, true}) {
                    const ModelSpec m = M(mid);
                    if (ep > 1 && !m.is_moe()) continue;
                    FitRequest r = Train(8192, 64 * mb, tp, pp);
                    r.par.cp = cp;
                    r.par.ep = ep;
                    r.par.dp = 8;
                    r.par.zero = zero;
                    r.par.sequence_parallel = tp > 1;
                    r.recompute = rc;
                    r.micro_batch = mb;
                    r.fp8_activations = fp8;
                    r.explain = false;
                    const double base = MonotoneMemory::Peak(m, r);
                    if (base < 0) continue;
                    auto check = [&](const char* what, const FitRequest& q, bool more) {
                      grid.Check(fmt::format("{} TP{} PP{} CP{} EP{} ZeRO-{} recompute {} mb{} fp8 {}, {}", mid, tp, pp,
                                             cp, ep, zero, RecomputeName(rc), mb, fp8, what),
                                 m, base, q, more);
                    };
                    FitRequest q = r;
                    q.micro_batch *= 2;
                    q.batch *= 2;
                    check("micro-batch x2", q, true);
                    q = r;
                    q.seq *= 2;
                    check("sequence x2", q, true);
                    if (zero < 3) {
                      q = r;
                      q.par.zero += 1;
                      check("ZeRO stage + 1", q, false);
                    }
                    if (rc != Recompute::kFull) {
                      q = r;
                      q.recompute = rc == Recompute::kNone ? Recompute::kSelective : Recompute::kFull;
                      check("more recompute", q, false);
                    }
                    q = r;
                    q.par.tp *= 2;
                    q.par.sequence_parallel = true;
                    if (r.par.sequence_parallel) check("TP x2", q, false);
                    q = r;
                    q.par.dp *= 2;
                    q.batch *= 2;
                    check("DP x2", q, false);
                    q = r;
                    q.par.pp *= 2;
                    if (m.layers % q.par.pp == 0) check("PP x2", q, false);
                  }
  grid.Expect(20000);
}

// Serving memory: a larger batch or context never needs less per GPU; more TP or an 8-bit KV cache never more.
TEST_F(Memory, ServingMemoryIsMonotone) {
  MonotoneMemory grid;
  for (const char* mid : {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "gpt-oss-120b", "deepseek-v3", "gemma-2-27b"})
    for (int tp : {1, 2, 8})
      for (int ep : {1, 2})
        for (const char* w : {"bf16", "fp8", "int8", "int4", "nf4", "q4_k_m"})
          for (int64_t batch : {1, 8, 64})
            for (int64_t seq : {512, 8192}) {
              const ModelSpec m = M(mid);
              if (ep > 1 && (!m.is_moe() || ep > tp)) continue;
              FitRequest r = Infer(w, batch, seq);
              r.par.tp = tp;
              r.par.ep = ep;
              r.explain = false;
              const double base = MonotoneMemory::Peak(m, r);
              if (base < 0) continue;
              auto check = [&](const char* what, const FitRequest& q, bool more) {
                grid.Check(fmt::format("{} TP{} EP{} {} batch {} context {}, {}", mid, tp, ep, w, batch, seq, what), m,
                           base, q, more);
              };
              FitRequest q = r;
              q.batch *= 2;
              check("batch x2", q, true);
              q = r;
              q.seq *= 2;
              check("context x2", q, true);
              q = r;
              q.par.tp *= 2;
              check("TP x2", q, false);
              q = r;
              q.kv_bytes_per_elem = 1;
              check("8-bit KV cache", q, false);
            }
  grid.Expect(3000);
}

}  // namespace
}  // namespace suanli
