#include "suanli/model.h"
#include "suanli/memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

namespace suanli {
namespace {

class Models : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = ModelCatalog::Load(CatalogOptions{});
    ASSERT_TRUE(c.ok()) << c.status().message();
    catalog_ = new ModelCatalog(std::move(c).value());
  }
  static void TearDownTestSuite() { delete catalog_; }
  static ModelSpec Get(const char* id) { return *catalog_->Resolve(id); }
  static ModelCatalog* catalog_;
};
ModelCatalog* Models::catalog_ = nullptr;

TEST_F(Models, BundlesEveryRequiredModel) {
  for (const char* id : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
                         "llama-3.2-1b", "llama-3.2-3b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b",
                         "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "deepseek-v3", "gemma-2-9b", "gemma-2-27b",
                         "phi-3-mini", "falcon-180b", "opt-13b", "opt-66b", "opt-175b", "gpt3-175b", "bloom-176b"}) {
    EXPECT_TRUE(catalog_->Find(id).ok()) << id;
  }
}

// Published counts are matched within 0.5%, except where the published figure is itself
// rounded more coarsely than that; each exception says why (docs/validation.md §1).
TEST_F(Models, ParameterCountsMatchPublishedCounts) {
  const std::map<std::string, std::pair<double, const char*>> looser = {
      {"falcon-180b", {0.01, "published as '180B' (two significant digits); computed 178.6B"}},
      {"qwen2.5-32b", {0.01, "model card's 32.5B disagrees with its own config (computed 32.76B)"}},
      {"opt-13b", {0.012, "published as '13B' (two significant digits); computed 12.85B"}},
      {"phi-3-mini", {0.006, "published as '3.8B' (two significant digits); computed 3.82B"}},
      {"llama-4-scout", {0.015, "109B counts the vision encoder suanli does not model; the text decoder is 107.77B"}},
  };
  int checked = 0;
  for (const auto& cm : catalog_->models()) {
    if (!cm.published_params) continue;
    const ParamCounts c = CountParams(cm.spec);
    double tol = 0.005;
    if (auto it = looser.find(cm.spec.id); it != looser.end()) tol = it->second.first;
    const double err = std::fabs(c.total - cm.published_params->value) / cm.published_params->value;
    EXPECT_LE(err, tol) << cm.spec.id << ": computed " << c.total << " vs published " << cm.published_params->value;
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

TEST_F(Models, HeadlineCountsFromTheIssue) {
  EXPECT_NEAR(CountParams(Get("llama-2-7b")).total, 6.74e9, 0.005 * 6.74e9);
  EXPECT_NEAR(CountParams(Get("llama-3.1-70b")).total, 70.6e9, 0.005 * 70.6e9);
  const auto mix = CountParams(Get("mixtral-8x7b"));
  EXPECT_NEAR(mix.total, 46.7e9, 0.005 * 46.7e9);
  EXPECT_NEAR(mix.active, 12.9e9, 0.005 * 12.9e9);
  const auto ds = CountParams(Get("deepseek-v3"));
  EXPECT_NEAR(ds.total, 671e9, 0.005 * 671e9);
  // "37B activated" is a two-digit figure; we count 37.55B including the 0.93B input-embedding table
  // (a lookup, not compute). Without it: 36.6B. Either side of 37B by < 1.5%.
  EXPECT_NEAR(ds.active, 37e9, 0.015 * 37e9);
}

// Qwen3 MoE: no shared expert, every layer sparse, RMSNorm on q and k. Per layer: attention 2*h*(a+n)*d
// = 2*2048*(32+4)*128, router 128*h, 128 experts of 3*h*768, norms 2h + 2d; 48 layers, untied 151936 x 2048
// embedding and head, final norm. Active: 8 of the 128 experts.
TEST_F(Models, Qwen3MoeCountsEveryExpertAndActivatesEight) {
  const ModelSpec m = Get("qwen3-30b-a3b");
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 128);
  EXPECT_EQ(m.moe->experts_per_token, 8);
  EXPECT_EQ(m.moe->num_shared_experts, 0);
  const double h = 2048, d = 128, e = 3 * h * 768;
  const double layer_dense = 2 * h * (32 + 4) * d + 128 * h + 2 * h + 2 * d;
  const double total = 48 * (layer_dense + 128 * e) + 2 * 151936 * h + h;
  const double active = 48 * (layer_dense + 8 * e) + 2 * 151936 * h + h;
  const auto c = CountParams(m);
  EXPECT_NEAR(c.total, total, 1e-6 * total);
  EXPECT_NEAR(c.active, active, 1e-6 * active);
  auto listed = ParseHfConfig(R"({"model_type":"qwen3_moe","hidden_size":2048,"num_hidden_layers":48,
      "num_attention_heads":32,"intermediate_size":6144,"vocab_size":151936,"num_experts":128,
      "num_experts_per_tok":8,"moe_intermediate_size":768,"mlp_only_layers":[0]})", "q.json");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("mlp_only_layers"), std::string::npos) << listed.status().message();
}

// MiniMax-M2.5 (model_type minimax_m2; the config.json aiconfigurator 095f58a5 keeps, as tests/validation/configs/
// minimax-m2.5.json): GQA 48/8 heads of 128 with one RMSNorm over each layer's whole q and k ("per_layer"), 256
// gated experts of 1536, top 8, a sigmoid router with a per-expert bias, no shared expert, untied embedding and head.
// Its model card: 230B total, 10B active (the active count without the 1.2B embedding and head).
TEST_F(Models, MiniMaxM2CountsPerLayerQkNormsAndBiasedRouter) {
  auto m = ParseHfConfig(R"({"model_type":"minimax_m2","hidden_size":3072,"num_hidden_layers":62,
      "num_attention_heads":48,"num_key_value_heads":8,"head_dim":128,"intermediate_size":1536,"vocab_size":200064,
      "num_experts_per_tok":8,"num_local_experts":256,"use_qk_norm":true,"qk_norm_type":"per_layer",
      "use_routing_bias":true,"shared_intermediate_size":0,"tie_word_embeddings":false})", "minimax.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->num_experts, 256);
  EXPECT_EQ(m->moe->experts_per_token, 8);
  EXPECT_EQ(m->moe->expert_ffn, 1536);
  EXPECT_EQ(m->moe->num_shared_experts, 0);
  EXPECT_TRUE(m->moe->router_bias);
  const double h = 3072, d = 128, e = 3 * h * 1536;
  const double layer_dense = 2 * h * (48 + 8) * d + 256 * h + 256 + 2 * h + (48 + 8) * d;
  const double total = 62 * (layer_dense + 256 * e) + 2 * 200064 * h + h;
  const double active = 62 * (layer_dense + 8 * e) + 2 * 200064 * h + h;
  const auto c = CountParams(*m);
  EXPECT_NEAR(c.total, total, 1e-9 * total);
  EXPECT_NEAR(c.active, active, 1e-9 * active);
  EXPECT_NEAR(c.total / 1e9, 230, 2);                      // the card's 230B
  EXPECT_NEAR((c.active - 2 * 200064 * h) / 1e9, 10, 0.5);  // the card's 10B, embedding and head apart
}

// GPT-OSS 120B, from its architecture: per layer q/k/v/o with biases and 64 sinks, two RMSNorms, 128 gated
// experts of 2880 with biases (gate/up 2 x 2880, down 2880), a router with a bias; untied embedding and head,
// final norm. The model card's Table 1 gives 116.83B total; its active count (5.13B) leaves out the embedding.
TEST_F(Models, GptOssCountsBiasesSinksAndAlternatingWindows) {
  const ModelSpec m = Get("gpt-oss-120b");
  ASSERT_TRUE(m.moe.has_value());
  EXPECT_EQ(m.moe->num_experts, 128);
  EXPECT_EQ(m.moe->experts_per_token, 4);
  EXPECT_EQ(m.sliding_window, 128);
  EXPECT_EQ(m.sliding_window_layers, 18);
  const double h = 2880, q = 64 * 64, kv = 8 * 64, f = 2880, V = 201088;
  const double attn = 2 * h * q + 2 * h * kv + q + 2 * kv + h + 64;
  const double expert = 3 * h * f + 2 * f + h;
  const double router = 128 * h + 128;
  const double layer = attn + 2 * h + router;
  const auto c = CountParams(m);
  EXPECT_DOUBLE_EQ(c.total, 36 * (layer + 128 * expert) + 2 * V * h + h);
  EXPECT_DOUBLE_EQ(c.active, 36 * (layer + 4 * expert) + 2 * V * h + h);
  EXPECT_NEAR(c.total, 116.83e9, 0.005e9);
  EXPECT_NEAR(c.active - V * h, 5.13e9, 0.005e9);
  // layer_types must list every layer, with known kinds.
  auto bad = ParseHfConfig(R"({"model_type":"gpt_oss","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
      "intermediate_size":64,"vocab_size":100,"num_local_experts":4,"num_experts_per_tok":2,"sliding_window":8,
      "max_position_embeddings":1024,"layer_types":["sliding_attention","local"]})", "o.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("layer_types"), std::string::npos) << bad.status().message();
}

// Llama 4 (model_type llama4, the text decoder under text_config): every interleave_moe_layer_step-th layer has 1
// routed expert of intermediate_size per token out of num_local_experts plus one shared expert of the same width and
// a router without bias; the other layers a dense MLP of intermediate_size_mlp; untied 202048 x 5120 embedding and
// head; the QK norm has no weights. The RoPE layers (all but every fourth) attend within 8192-token chunks.
TEST_F(Models, Llama4CountsSharedAndRoutedExpertsAndChunksThreeLayersInFour) {
  const double h = 5120, q = 40 * 128, kv = 8 * 128, f = 8192, fd = 16384, V = 202048;
  const double attn = 2 * h * q + 2 * h * kv;
  const double expert = 3 * h * f;
  const ModelSpec s = Get("llama-4-scout");
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_EQ(s.moe->num_experts, 16);
  EXPECT_EQ(s.moe->experts_per_token, 1);
  EXPECT_EQ(s.moe->num_shared_experts, 1);
  EXPECT_EQ(s.moe->shared_ffn, 8192);
  EXPECT_EQ(s.moe_layer_count(), 48);
  EXPECT_EQ(s.ffn, 16384);
  EXPECT_TRUE(s.chunked_window);
  EXPECT_EQ(s.sliding_window, 8192);
  EXPECT_EQ(s.sliding_window_layers, 36);
  const double moe_layer = attn + 2 * h + 16 * h /*router*/ + expert /*shared*/;
  const auto cs = CountParams(s);
  EXPECT_DOUBLE_EQ(cs.total, 48 * (moe_layer + 16 * expert) + 2 * V * h + h);
  EXPECT_DOUBLE_EQ(cs.active, 48 * (moe_layer + expert) + 2 * V * h + h);
  // Maverick: 128 experts on every other layer (1, 3, ..., 47), dense MLPs of 16384 between them.
  const ModelSpec mv = Get("llama-4-maverick");
  ASSERT_TRUE(mv.moe.has_value());
  EXPECT_EQ(mv.moe_layer_count(), 24);
  EXPECT_FALSE(mv.is_moe_layer(0));
  EXPECT_TRUE(mv.is_moe_layer(1));
  const double mv_moe = attn + 2 * h + 128 * h + expert, mv_dense = attn + 2 * h + 3 * h * fd;
  const auto cm = CountParams(mv);
  EXPECT_DOUBLE_EQ(cm.total, 24 * (mv_moe + 128 * expert) + 24 * mv_dense + 2 * V * h + h);
  EXPECT_DOUBLE_EQ(cm.active, 24 * (mv_moe + expert) + 24 * mv_dense + 2 * V * h + h);
  // The cache keeps one chunk on the 36 chunked layers and every token on the 12 NoPE layers.
  EXPECT_DOUBLE_EQ(KvCacheBytes(s, 2, 1, 65536, 1), 2.0 * 8 * 128 * 2 * (36 * 8192.0 + 12 * 65536.0));
  // Errors: the nested text_config is required; listed MoE layers must follow the step; no_rope_layers lists every layer.
  auto no_text = ParseHfConfig(R"({"model_type":"llama4","hidden_size":64})", "l4.json");
  ASSERT_FALSE(no_text.ok());
  EXPECT_NE(no_text.status().message().find("text_config"), std::string::npos) << no_text.status().message();
  const std::string base = R"({"model_type":"llama4_text","hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":16,"intermediate_size":32,"intermediate_size_mlp":64,"vocab_size":100,
      "num_local_experts":4,"num_experts_per_tok":1,"interleave_moe_layer_step":2,"attention_chunk_size":8,
      "max_position_embeddings":1024)";
  auto ok = ParseHfConfig(base + R"(,"no_rope_layers":[1,1,1,0]})", "t.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->moe_layer_count(), 2);
  EXPECT_EQ(ok->sliding_window_layers, 3);
  auto odd = ParseHfConfig(base + R"(,"moe_layers":[0,2]})", "t.json");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("moe_layers"), std::string::npos) << odd.status().message();
  // A quantised Llama 4 checkpoint states its format beside text_config, not inside it.
  auto fp8 = ParseHfConfig(R"({"model_type":"llama4","quantization_config":{"quant_method":"fp8"},"text_config":)" +
                               base + "}}",
                           "m.json");
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  EXPECT_EQ(fp8->stored_weights, "fp8");
  // A chunk of 2^31 tokens does not fit the window's int (it wrapped to a negative window); a step past the last
  // layer leaves no layer with experts (it was accepted as an MoE model without one).
  auto huge_chunk = ParseHfConfig(base + R"(,"attention_chunk_size":2147483648})", "t.json");
  ASSERT_FALSE(huge_chunk.ok());
  EXPECT_NE(huge_chunk.status().message().find("attention_chunk_size"), std::string::npos)
      << huge_chunk.status().message();
  std::string far_step = base;
  far_step.replace(far_step.find(R"("interleave_moe_layer_step":2)"), 29, R"("interleave_moe_layer_step":9)");
  auto no_moe = ParseHfConfig(far_step + "}", "t.json");
  ASSERT_FALSE(no_moe.ok());
  EXPECT_NE(no_moe.status().message().find("no layer has experts"), std::string::npos) << no_moe.status().message();
  auto short_list = ParseHfConfig(base + R"(,"no_rope_layers":[1,0]})", "t.json");
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.status().message().find("no_rope_layers"), std::string::npos) << short_list.status().message();
}

TEST_F(Models, ExactLlama2SevenBCount) {
  // 32 x (4h^2 + 3*h*ffn + 2h) + 2*V*h + h, with h=4096, ffn=11008, V=32000.
  const double h = 4096, f = 11008, V = 32000;
  EXPECT_DOUBLE_EQ(CountParams(Get("llama-2-7b")).total, 32 * (4 * h * h + 3 * h * f + 2 * h) + 2 * V * h + h);
}

TEST_F(Models, KvCachePerTokenByAttentionKind) {
  // MHA: 2 (K,V) x L x heads x d_head x 2 bytes.
  EXPECT_DOUBLE_EQ(KvBytesPerToken(Get("llama-2-7b"), 2), 2.0 * 32 * 32 * 128 * 2);
  // GQA with 8 KV heads.
  EXPECT_DOUBLE_EQ(KvBytesPerToken(Get("llama-3.1-70b"), 2), 2.0 * 80 * 8 * 128 * 2);
  // MLA: (kv_lora_rank + rope dim) per layer, not per head.
  EXPECT_DOUBLE_EQ(KvBytesPerToken(Get("deepseek-v3"), 2), (512.0 + 64) * 61 * 2);
  // TP shards KV heads down to one per GPU: 8 KV heads at TP=16 keep 1 head each.
  EXPECT_DOUBLE_EQ(KvBytesPerToken(Get("llama-3.1-70b"), 2, 16), 2.0 * 80 * 1 * 128 * 2);
  EXPECT_DOUBLE_EQ(KvBytesPerToken(Get("llama-3.1-70b"), 2, 4), 2.0 * 80 * 2 * 128 * 2);
}

TEST_F(Models, SlidingWindowCapsTheCache) {
  const ModelSpec m = Get("mistral-7b");
  ASSERT_EQ(m.sliding_window, 4096);
  EXPECT_DOUBLE_EQ(KvCacheBytes(m, 2, 1, 32768, 1), KvCacheBytes(m, 2, 1, 4096, 1));
  // Gemma 2 windows only every other layer.
  const ModelSpec g = Get("gemma-2-9b");
  EXPECT_LT(KvCacheBytes(g, 2, 1, 8192, 1), KvCacheBytes(g, 2, 1, 4096, 1) * 2);
  EXPECT_GT(KvCacheBytes(g, 2, 1, 8192, 1), KvCacheBytes(g, 2, 1, 4096, 1));
  // Qwen2.5 declares sliding_window but disables it.
  EXPECT_EQ(Get("qwen2.5-7b").sliding_window, 0);
}

TEST(ParseHfConfig, EveryTypeNeedsItsKeys) {
  auto r = ParseHfConfig(R"({"model_type": "llama", "hidden_size": 4096})", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("num_hidden_layers"), std::string::npos);
}

TEST(ParseHfConfig, UnsupportedTypeListsSupported) {
  auto r = ParseHfConfig(R"({"model_type": "lama"})", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("did you mean 'llama'"), std::string::npos);
}

TEST(ParseHfConfig, MalformedTruncatedAndAbsurdInput) {
  EXPECT_EQ(ParseHfConfig("{\"model_type\": \"llama\", \"hidden", "t.json").status().code(), ErrorCode::kParseError);
  EXPECT_FALSE(ParseHfConfig("[]", "a.json").ok());
  EXPECT_FALSE(ParseHfConfig("", "e.json").ok());
  const char* neg = R"({"model_type":"llama","hidden_size":-4096,"num_hidden_layers":32,"num_attention_heads":32,
                       "intermediate_size":11008,"vocab_size":32000})";
  EXPECT_FALSE(ParseHfConfig(neg, "n.json").ok());
  const char* huge = R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":1000000000,
                        "num_attention_heads":32,"intermediate_size":11008,"vocab_size":32000})";
  EXPECT_FALSE(ParseHfConfig(huge, "h.json").ok());
  const char* badkv = R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
                         "num_key_value_heads":5,"intermediate_size":11008,"vocab_size":32000})";
  auto r = ParseHfConfig(badkv, "kv.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a multiple"), std::string::npos);
  const char* str = R"({"model_type":"llama","hidden_size":"4096","num_hidden_layers":32,"num_attention_heads":32,
                       "intermediate_size":11008,"vocab_size":32000})";
  EXPECT_FALSE(ParseHfConfig(str, "s.json").ok());
}

// Regression: found by fuzz_catalog. A number too large for any JSON numeric type threw an uncaught
// nlohmann::out_of_range, and an out-of-range float was cast to an integer (undefined behaviour).
TEST(ParseHfConfig, HugeNumbersAreErrorsNotCrashes) {
  const std::string digits(400, '9');
  auto overflow = ParseHfConfig("{\"model_type\":\"llama\",\"hidden_size\":" + digits + "}", "o.json");
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), ErrorCode::kParseError);
  const char* huge_float = R"({"model_type":"llama","hidden_size":1e300,"num_hidden_layers":32,"num_attention_heads":32,
                              "intermediate_size":11008,"vocab_size":32000})";
  auto f = ParseHfConfig(huge_float, "f.json");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("hidden_size"), std::string::npos);
}

// An explicit head_dim of 0 is named as the key at fault, not reported as hidden / heads (which were fine).
TEST(ParseHfConfig, ZeroHeadDimNamesTheKey) {
  auto m = ParseHfConfig(R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
                             "head_dim":0,"intermediate_size":11008,"vocab_size":32000})",
                         "z.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("z.json: key 'head_dim' must be positive, got 0"), std::string::npos)
      << m.status().message();
}

TEST(ParseHfConfig, Gpt2DefaultsMatchGpt2Small) {
  // GPT-2 small: 124,439,808 parameters (tied embeddings, learned positions).
  auto m = ParseHfConfig(R"({"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"n_positions":1024,
                             "vocab_size":50257})",
                         "gpt2.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_DOUBLE_EQ(CountParams(*m).total, 124439808.0);
}

TEST(ParseHfConfig, GptjHasParallelBlocksAndNoAttentionBias) {
  // GPT-J 6B by hand: embeddings 50400 x 4096 = 206,438,400, untied lm_head the same; per layer ln_1 8,192 + q/k/v/out
  // 4 x 4096^2 = 67,108,864 (no bias) + fc_in 4096 x 16384 + 16384 + fc_out 16384 x 4096 + 4096 = 134,238,208, so
  // 201,355,264 x 28 = 5,637,947,392; final LayerNorm 8,192. Total 6,050,832,384 (lm_head's bias not counted).
  auto m = ParseHfConfig(R"({"model_type":"gptj","n_embd":4096,"n_layer":28,"n_head":16,"n_inner":null,
                             "n_positions":2048,"rotary_dim":64,"vocab_size":50400,"tie_word_embeddings":false})",
                         "gptj.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->ffn, 4 * 4096);
  EXPECT_EQ(m->norms_per_layer, 1);  // attention and MLP read the same ln_1 output
  EXPECT_EQ(m->head_dim, 256);
  EXPECT_EQ(m->learned_positions, 0);  // rotary
  EXPECT_DOUBLE_EQ(CountParams(*m).total, 6050832384.0);
}

TEST(ParseHfConfig, NemotronHasAPlainSquaredReluMlpAndLayerNorms) {
  // Nemotron-4 15B by hand (transformers' NemotronForCausalLM): embeddings 256000 x 6144 = 1,572,864,000 and an untied
  // head the same; per layer two LayerNorm1P (weight and bias) 24,576, q and o 2 x 6144^2 = 75,497,472, k and v
  // 2 x 6144 x 1024 = 12,582,912, up and down (no gate) 2 x 6144 x 24576 = 301,989,888: 390,094,848 x 32 =
  // 12,483,035,136; final norm 12,288. Total 15,628,775,424.
  auto m = ParseHfConfig(R"({"model_type":"nemotron","hidden_size":6144,"intermediate_size":24576,
      "num_hidden_layers":32,"num_attention_heads":48,"num_key_value_heads":8,"head_dim":null,"hidden_act":"relu2",
      "vocab_size":256000,"max_position_embeddings":4096,"partial_rotary_factor":0.5,"tie_word_embeddings":false})",
                         "nemotron.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(m->gated_mlp);
  EXPECT_EQ(m->norm, NormKind::kLayerNorm);
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_DOUBLE_EQ(CountParams(*m).total, 15628775424.0);
}

TEST(ParseHfConfig, MptAsLlmFoundryBenchmarkedIt) {
  // llm-foundry's benchmark table lists MPT-7b at sequence 2048 with NumParams 6,658,859,008: biases on, ALiBi
  // off and a learned position table of max_seq_len x d_model (scripts/train/benchmarking/README.md, 061f2c7c).
  const std::string base = R"({"model_type":"mpt","d_model":4096,"n_layers":32,"n_heads":32,"expansion_ratio":4,
      "vocab_size":50368,"max_seq_len":2048,"no_bias":false,"learned_pos_emb":true,"attn_config":{"alibi":)";
  auto learned = ParseHfConfig(base + "false}}", "mpt.json");
  ASSERT_TRUE(learned.ok()) << learned.status().message();
  EXPECT_DOUBLE_EQ(CountParams(*learned).total, 6658859008.0);
  // With ALiBi there is no position table, whatever learned_pos_emb says (llm-foundry turns it off).
  auto alibi = ParseHfConfig(base + "true}}", "mpt.json");
  ASSERT_TRUE(alibi.ok()) << alibi.status().message();
  EXPECT_DOUBLE_EQ(CountParams(*alibi).total, 6658859008.0 - 2048.0 * 4096);
  auto bad = ParseHfConfig(base + "\"yes\"}}", "mpt.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("attn_config"), std::string::npos) << bad.status().message();
  auto not_object = ParseHfConfig(R"({"model_type":"mpt","d_model":64,"n_layers":2,"n_heads":2,"vocab_size":100,
      "attn_config":"alibi"})", "mpt.json");
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("'attn_config' must be an object"), std::string::npos)
      << not_object.status().message();
}

// config.json's quantization_config says how the checkpoint is stored: recognised methods map to suanli's --weights
// ids; anything else is described, never an error (the estimate's format stays the user's choice).
TEST(ParseHfConfig, ReadsTheCheckpointsQuantizationConfig) {
  const std::string base = R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256)";
  auto parse = [&](const std::string& q) { return ParseHfConfig(base + (q.empty() ? "" : ", " + q) + "}", "t"); };
  auto none = parse("");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(none->stored_quantization, "");
  const std::pair<std::string, std::string> cases[] = {
      {R"("quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]})", "fp8"},
      {R"("quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"})", "nvfp4"},
      {R"("quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128})", "awq"},
      {R"("quantization_config": {"quant_method": "gptq", "bits": 8})", "int8"},
      {R"("quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4"})",
       "nf4"},
      {R"("quantization_config": {"quant_method": "mxfp4"})", ""},
      {R"("quantization_config": {"quant_method": 7})", ""},
  };
  for (const auto& [q, want] : cases) {
    auto m = parse(q);
    ASSERT_TRUE(m.ok()) << q << ": " << m.status().message();
    EXPECT_EQ(m->stored_weights, want) << q;
    EXPECT_FALSE(m->stored_quantization.empty()) << q;
  }
  EXPECT_EQ(parse(cases[0].first)->stored_quantization, "quant_method fp8, 128 x 128 blocks");
  // The note names the format that prices it as stored, and is silent when the estimate already uses it.
  const ModelSpec fp8 = *parse(cases[0].first);
  auto note = StoredFormatNote(fp8, *ParseWeightFormat("bf16"));
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("--weights fp8 prices it as stored"), std::string::npos) << *note;
  EXPECT_FALSE(StoredFormatNote(fp8, *ParseWeightFormat("fp8")).has_value());
  // int4, awq and gptq are one 4-bit group-128 format: an AWQ checkpoint estimated as int4 is priced as stored.
  EXPECT_FALSE(StoredFormatNote(*parse(cases[2].first), *ParseWeightFormat("int4")).has_value());
  EXPECT_TRUE(SameStoredFormat("gptq", "awq"));
  EXPECT_FALSE(SameStoredFormat("int8", "int4"));
  EXPECT_NE(StoredFormatNote(*parse(cases[5].first), *ParseWeightFormat("bf16"))->find("does not model"),
            std::string::npos);
}

// A user catalog's model id with capitals or spaces could never be asked for (names resolve lowercased): an error
// naming the file and the key, not a model that "did you mean" points back to itself.
TEST(ModelCatalog, UserIdsAreLowercaseWithoutSpaces) {
  const std::string dir = ::testing::TempDir() + "/suanli_model_ids_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/models");
  std::filesystem::copy_file(std::string(SUANLI_SOURCE_DIR) + "/data/models/llama-2-7b.json", dir + "/models/my.json",
                             std::filesystem::copy_options::overwrite_existing);
  for (const char* id : {"My Model", "MyModel", "my model"}) {
    std::ofstream(dir + "/models/catalog.toml") << "[[model]]\nid = \"" << id << "\"\nconfig = \"my.json\"\n";
    CatalogOptions o;
    o.user_dirs = {dir};
    auto c = ModelCatalog::Load(o);
    ASSERT_FALSE(c.ok()) << id;
    EXPECT_NE(c.status().message().find("catalog.toml: key 'model[0].id': ids are lowercase without spaces"),
              std::string::npos)
        << c.status().message();
  }
  std::ofstream(dir + "/models/catalog.toml") << "[[model]]\nid = \"my-model\"\nconfig = \"my.json\"\n";
  CatalogOptions o;
  o.user_dirs = {dir};
  auto ok = ModelCatalog::Load(o);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->Resolve("my-model").ok());
  std::filesystem::remove_all(dir);
}

TEST(ModelCatalog, ResolvesPathsAndSuggestsNames) {
  auto c = ModelCatalog::Load(CatalogOptions{});
  ASSERT_TRUE(c.ok());
  auto miss = c->Resolve("llama-2-7");
  ASSERT_FALSE(miss.ok());
  EXPECT_NE(miss.status().message().find("did you mean"), std::string::npos);
  auto nofile = c->Resolve("/nonexistent/config.json");
  ASSERT_FALSE(nofile.ok());
  EXPECT_NE(nofile.status().message().find("/nonexistent/config.json"), std::string::npos);
  auto path = c->Resolve(std::string(SUANLI_SOURCE_DIR) + "/data/models/mixtral-8x7b.json");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_TRUE(path->is_moe());
  // A bundled validation case's config, as `validate --command` names it, from a folder where that path is not on
  // disk: read from the binary, the same spec as the source tree's file; another missing path under that folder, or
  // one that only ends the same way, is still an error.
  const auto here = std::filesystem::current_path();
  const auto dir = std::filesystem::temp_directory_path() / "suanli_resolve_bundled";
  std::filesystem::create_directories(dir);
  std::filesystem::current_path(dir);
  auto bundled = c->Resolve("tests/validation/configs/gpt-oss-20b.json");
  auto typo = c->Resolve("tests/validation/configs/gpt-oss-21b.json");
  auto elsewhere = c->Resolve("other/tests/validation/configs/gpt-oss-20b.json");
  std::filesystem::current_path(here);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(bundled.ok()) << bundled.status().message();
  auto source = c->Resolve(std::string(SUANLI_SOURCE_DIR) + "/tests/validation/configs/gpt-oss-20b.json");
  ASSERT_TRUE(source.ok()) << source.status().message();
  EXPECT_EQ(bundled->id, "tests/validation/configs/gpt-oss-20b.json");
  EXPECT_EQ(bundled->hidden, source->hidden);
  EXPECT_EQ(bundled->layers, source->layers);
  EXPECT_EQ(bundled->vocab, source->vocab);
  EXPECT_TRUE(bundled->is_moe());
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("no such config file"), std::string::npos) << typo.status().message();
  EXPECT_NE(typo.status().message().find("did you mean 'tests/validation/configs/gpt-oss-20b.json'"), std::string::npos)
      << typo.status().message();
  EXPECT_FALSE(elsewhere.ok());
}

}  // namespace
}  // namespace suanli
