#include "suanli/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/data_registry.h"
#include "core/files.h"
#include "core/toml_reader.h"
#include "suanli/text.h"

namespace suanli {

using json = nlohmann::json;

AttentionKind ModelSpec::attention() const {
  if (mla) return AttentionKind::kMla;
  if (kv_heads == 1 && heads > 1) return AttentionKind::kMqa;
  if (kv_heads < heads) return AttentionKind::kGqa;
  return AttentionKind::kMha;
}

bool ModelSpec::is_moe_layer(int i) const {
  return moe && i >= moe->first_dense_layers && i < layers && (i + 1) % std::max(1, moe->layer_step) == 0;
}

int ModelSpec::moe_layer_count() const {
  if (!moe) return 0;
  int n = 0;
  for (int i = 0; i < layers; ++i) n += is_moe_layer(i);
  return n;
}

ParamCounts CountParams(const ModelSpec& m) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden);
  const double norm_size = m.norm == NormKind::kLayerNorm ? 2 * h : h;

  // Attention, one layer.
  double attn = 0;
  if (m.mla) {
    const auto& a = *m.mla;
    const double qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      attn += h * a.q_lora_rank + a.q_lora_rank /*q_a_layernorm*/ + double(a.q_lora_rank) * m.heads * qk_head;
    } else {
      attn += h * m.heads * qk_head;
    }
    attn += h * (a.kv_lora_rank + a.qk_rope_head_dim);                                  // kv_a_proj_with_mqa
    attn += a.kv_lora_rank;                                                             // kv_a_layernorm
    attn += double(a.kv_lora_rank) * m.heads * (a.qk_nope_head_dim + a.v_head_dim);    // kv_b_proj
    attn += double(m.heads) * a.v_head_dim * h;                                          // o_proj
  } else {
    const double q_dim = double(m.heads) * m.head_dim;
    const double kv_dim = double(m.kv_heads) * m.head_dim;
    attn = h * q_dim + 2 * h * kv_dim + q_dim * h;
    if (m.qkv_bias) attn += q_dim + 2 * kv_dim;
    if (m.attn_out_bias) attn += h;
    attn += m.extra_head_norm_dim + m.attention_sinks;
  }
  const double mats = m.gated_mlp ? 3 : 2;
  // Biases: the up (and gate) projection's outputs and the down projection's.
  auto mlp_params = [&](double ffn) { return mats * h * ffn + (m.mlp_bias ? (mats - 1) * ffn + h : 0); };
  const double dense_mlp = mlp_params(static_cast<double>(m.ffn));
  const double layer_norms = m.norms_per_layer * norm_size;

  const int moe_layers = m.moe_layer_count();
  const int dense_layers = m.layers - moe_layers;
  c.attention = attn * m.layers;
  c.norms = layer_norms * m.layers + norm_size;  // + final norm
  c.mlp_dense = dense_mlp * dense_layers;
  double moe_active = 0;
  if (m.moe) {
    const auto& e = *m.moe;
    const double expert = mlp_params(static_cast<double>(e.expert_ffn));
    const double shared = e.num_shared_experts > 0 ? mlp_params(static_cast<double>(e.shared_ffn)) : 0.0;
    const double gate = e.shared_expert_gate ? h : 0.0;
    const double router = h * e.num_experts + (e.router_bias ? e.num_experts : 0);
    c.moe_experts = expert * e.num_experts * moe_layers;
    c.moe_shared = (shared + gate) * moe_layers;
    c.router = router * moe_layers;
    moe_active = (expert * e.experts_per_token + shared + gate + router) * moe_layers;
  }
  // Embeddings and head.
  const double vocab = static_cast<double>(m.vocab);
  const double emb_dim = m.embed_proj_dim > 0 ? static_cast<double>(m.embed_proj_dim) : h;
  c.embedding = vocab * emb_dim + static_cast<double>(m.learned_positions) * h;
  if (m.embed_proj_dim > 0 && m.embed_proj_dim != m.hidden) c.embedding += 2 * emb_dim * h;  // project_in/out
  if (m.embedding_norm) c.embedding += norm_size;
  c.lm_head = m.tie_embeddings ? 0.0 : vocab * emb_dim;

  c.total = c.embedding + c.lm_head + c.attention + c.mlp_dense + c.moe_experts + c.moe_shared + c.router + c.norms;
  c.active = c.total - c.moe_experts - c.moe_shared - c.router + moe_active;
  c.non_layer_total = c.embedding + c.lm_head + norm_size;
  c.per_layer_total = (c.total - c.non_layer_total) / std::max(1, m.layers);
  return c;
}

double KvBytesPerToken(const ModelSpec& m, double bytes_per_elem, int tp) {
  tp = std::max(1, tp);
  if (m.mla) {
    // MLA caches the compressed latent and the shared RoPE key: (d_c + d_rope) per layer,
    // identical on every TP rank (DeepSeek-V2 paper §2.1; vLLM/SGLang MLA backends).
    return double(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim) * m.layers * bytes_per_elem;
  }
  const int kv_per_gpu = std::max(1, (m.kv_heads + tp - 1) / tp);
  return 2.0 * m.layers * kv_per_gpu * m.head_dim * bytes_per_elem;
}

double KvCacheBytes(const ModelSpec& m, double bytes_per_elem, int64_t batch, int64_t context, int tp) {
  const double per_token_all_layers = KvBytesPerToken(m, bytes_per_elem, tp);
  const double per_layer = per_token_all_layers / std::max(1, m.layers);
  double tokens = 0;
  const int windowed = (m.sliding_window > 0) ? m.sliding_window_layers : 0;
  tokens += double(m.layers - windowed) * context;
  tokens += double(windowed) * std::min<int64_t>(context, m.sliding_window);
  return per_layer * tokens * batch;
}

// ---------------------------------------------------------------------------------------
// Hugging Face config.json import.

namespace {

const std::vector<std::string> kSupportedTypes = {"llama",  "mistral", "mixtral",  "qwen2",     "qwen2_moe",
                                                  "qwen3",  "qwen3_moe", "minimax_m2", "deepseek_v3", "gemma2", "phi3", "gpt_oss", "gpt2",
                                                  "gpt_neox", "gptj",  "opt",      "bloom",   "falcon",
                                                  "mpt", "nemotron", "llama4", "llama4_text"};

class JsonReader {
 public:
  JsonReader(const json& j, std::string name) : j_(j), name_(std::move(name)) {}

  std::string Where(std::string_view key) const { return fmt::format("{}: key '{}'", name_, key); }

  // First present key among `keys`, as a positive integer within [1, max].
  Result<int64_t> Int(std::initializer_list<const char*> keys, int64_t max = int64_t(1) << 40) const {
    for (const char* k : keys) {
      if (j_.contains(k) && !j_[k].is_null()) return CheckedInt(k, max);
    }
    std::string list;
    for (const char* k : keys) list += (list.empty() ? "'" : " or '") + std::string(k) + "'";
    return ParseError(fmt::format("{}: required key {} is missing", name_, list));
  }
  Result<int64_t> IntOr(const char* key, int64_t fallback, int64_t max = int64_t(1) << 40) const {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    return CheckedInt(key, max, /*allow_zero=*/true);
  }
  Result<bool> BoolOr(const char* key, bool fallback) const {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    if (!j_[key].is_boolean()) return ParseError(Where(key) + " must be true or false");
    return j_[key].get<bool>();
  }
  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

 private:
  Result<int64_t> CheckedInt(const char* k, int64_t max, bool allow_zero = false) const {
    const json& v = j_[k];
    if (v.is_number_float()) {
      const double d = v.get<double>();
      // Range check before the cast: casting an out-of-range double is undefined behaviour.
      if (!(d >= -1e15 && d <= 1e15) || d != std::floor(d))
        return ParseError(fmt::format("{} must be an integer, got {}", Where(k), v.dump()));
    } else if (!v.is_number_integer()) {
      return ParseError(fmt::format("{} must be an integer, got {}", Where(k), v.dump()));
    }
    const int64_t x = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
    if (x < 0 || (x == 0 && !allow_zero)) return ParseError(fmt::format("{} must be positive, got {}", Where(k), x));
    if (x > max) return ParseError(fmt::format("{} = {} is implausibly large (limit {})", Where(k), x, max));
    return x;
  }
  const json& j_;
  std::string name_;
};

constexpr int64_t kMaxHidden = 1 << 20;
constexpr int64_t kMaxLayers = 10000;
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxVocab = int64_t(1) << 26;

// The shape every multi-head architecture below states, each under its own key names: hidden size, layers and
// attention heads; one KV head per query head (falcon overrides it) and a head dimension of hidden / heads.
Status ReadMultiHeadShape(const JsonReader& r, ModelSpec& m, std::initializer_list<const char*> hidden,
                          std::initializer_list<const char*> layers, std::initializer_list<const char*> heads) {
  SUANLI_ASSIGN_OR_RETURN(m.hidden, r.Int(hidden, kMaxHidden));
  SUANLI_ASSIGN_OR_RETURN(const int64_t l, r.Int(layers, kMaxLayers));
  SUANLI_ASSIGN_OR_RETURN(const int64_t h, r.Int(heads, kMaxHeads));
  m.layers = static_cast<int>(l);
  m.heads = m.kv_heads = static_cast<int>(h);
  m.head_dim = static_cast<int>(m.hidden / m.heads);
  return Status::Ok();
}

Status ValidateSpec(const ModelSpec& m, const std::string& name) {
  if (m.kv_heads > m.heads)
    return ParseError(fmt::format("{}: num_key_value_heads ({}) exceeds num_attention_heads ({})", name, m.kv_heads, m.heads));
  if (!m.mla && m.heads % m.kv_heads != 0)
    return ParseError(fmt::format("{}: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})", name,
                                  m.heads, m.kv_heads));
  if (!m.mla && m.head_dim <= 0)
    return ParseError(fmt::format("{}: head dimension is zero (hidden {} / heads {})", name, m.hidden, m.heads));
  if (m.moe) {
    if (m.moe->experts_per_token > m.moe->num_experts)
      return ParseError(fmt::format("{}: experts per token ({}) exceeds the number of experts ({})", name,
                                    m.moe->experts_per_token, m.moe->num_experts));
    // A step past the last layer leaves no layer with experts: a dense model mislabelled as MoE.
    if (m.moe_layer_count() == 0)
      return ParseError(fmt::format("{}: no layer has experts ({} layers, {} of them dense first, MoE layer step {}); "
                                    "valid: a step of at most the layers after the dense ones",
                                    name, m.layers, m.moe->first_dense_layers, m.moe->layer_step));
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& SupportedModelTypes() { return kSupportedTypes; }

// config.json's quantization_config (transformers' convention, also written by vLLM's and NVIDIA's quantisers): which
// of suanli's weight formats the checkpoint is stored in. Informational: the estimate's format is the user's
// --weights; a mismatch gets a note. An unrecognised or malformed entry is described, never an error.
static void ReadQuantizationConfig(const json& j, ModelSpec* m) {
  if (!j.contains("quantization_config") || !j["quantization_config"].is_object()) return;
  const json& q = j["quantization_config"];
  auto str = [&](const char* k) { return q.contains(k) && q[k].is_string() ? ToLower(q[k].get<std::string>()) : ""; };
  auto num = [&](const char* k) { return q.contains(k) && q[k].is_number_integer() ? q[k].get<int64_t>() : 0; };
  auto flag = [&](const char* k) { return q.contains(k) && q[k].is_boolean() && q[k].get<bool>(); };
  const std::string method = str("quant_method");
  std::string desc = method.empty() ? "a quantization_config without quant_method" : "quant_method " + method;
  if (method == "fp8") {
    m->stored_weights = "fp8";
    if (q.contains("weight_block_size") && q["weight_block_size"].is_array() && q["weight_block_size"].size() == 2 &&
        q["weight_block_size"][0].is_number_integer() && q["weight_block_size"][1].is_number_integer())
      desc += fmt::format(", {} x {} blocks", q["weight_block_size"][0].get<int64_t>(),
                          q["weight_block_size"][1].get<int64_t>());
  } else if (method == "modelopt") {
    const std::string algo = str("quant_algo");
    if (!algo.empty()) desc += ", quant_algo " + algo;
    if (algo == "fp8") m->stored_weights = "fp8";
    if (algo == "nvfp4") m->stored_weights = "nvfp4";
  } else if (method == "awq" || method == "gptq") {
    const int64_t bits = num("bits");
    if (bits) desc += fmt::format(", {} bits", bits);
    if (bits == 4) m->stored_weights = method;
    if (bits == 8) m->stored_weights = "int8";
  } else if (method == "bitsandbytes") {
    if (flag("load_in_4bit")) {
      desc += ", 4-bit";
      m->stored_weights = str("bnb_4bit_quant_type") == "fp4" ? "" : "nf4";
    } else if (flag("load_in_8bit")) {
      desc += ", 8-bit";
      m->stored_weights = "int8";
    }
  }
  m->stored_quantization = desc;
}

namespace {
// The routed experts every MoE family states, under its own key for their number: how many per layer and top-k.
Result<MoeSpec> ReadRoutedExperts(const JsonReader& r, const char* experts_key) {
  MoeSpec e;
  SUANLI_ASSIGN_OR_RETURN(int64_t ne, r.Int({experts_key}, 1 << 16));
  SUANLI_ASSIGN_OR_RETURN(int64_t k, r.Int({"num_experts_per_tok"}, 1 << 16));
  e.num_experts = static_cast<int>(ne);
  e.experts_per_token = static_cast<int>(k);
  return e;
}
}  // namespace

Result<ModelSpec> ParseHfConfig(std::string_view text, std::string_view name_sv) {
  const std::string name(name_sv);
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return ParseError(fmt::format("{}: not valid JSON (byte {}): {}", name, e.byte, e.what()));
  } catch (const json::exception& e) {  // e.g. a number too large for any numeric type
    return ParseError(fmt::format("{}: not usable JSON: {}", name, e.what()));
  }
  if (!j.is_object()) return ParseError(name + ": a config.json must be a JSON object");
  if (!j.contains("model_type") || !j["model_type"].is_string())
    return ParseError(name + ": required key 'model_type' is missing or not a string");
  ModelSpec m;
  m.model_type = j["model_type"].get<std::string>();
  m.id = name;
  m.name = name;
  m.source = name;
  const std::string& t = m.model_type;
  if (std::find(kSupportedTypes.begin(), kSupportedTypes.end(), t) == kSupportedTypes.end()) {
    std::string list;
    for (const auto& s : kSupportedTypes) list += (list.empty() ? "" : ", ") + s;
    return Unsupported(fmt::format("{}: model_type '{}' is not supported (supported: {}){}", name, t, list,
                                   DidYouMean(t, kSupportedTypes)));
  }
  // Llama 4 (Llama4ForConditionalGeneration): the text decoder's keys sit under text_config; the vision encoder is not
  // modelled (about 0.9B parameters, not counted).
  if (t == "llama4") {
    if (!j.contains("text_config") || !j["text_config"].is_object())
      return ParseError(name + ": model_type 'llama4' needs a 'text_config' object (the text decoder's keys)");
    ReadQuantizationConfig(j, &m);  // a quantised checkpoint states it beside text_config (e.g. Maverick's FP8 one)
    json text = j["text_config"];
    j = std::move(text);
  }
  const bool llama4 = t == "llama4" || t == "llama4_text";
  JsonReader r(j, llama4 && t == "llama4" ? name + " text_config" : name);
  const bool llama_like = t == "llama" || t == "mistral" || t == "mixtral" || t == "qwen2" || t == "qwen2_moe" ||
                          t == "qwen3" || t == "qwen3_moe" || t == "phi3" || t == "gemma2" || t == "deepseek_v3" ||
                          t == "gpt_oss" || t == "nemotron" || t == "minimax_m2" || llama4;
  if (llama_like) {
    SUANLI_ASSIGN_OR_RETURN(m.hidden, r.Int({"hidden_size"}, kMaxHidden));
    SUANLI_ASSIGN_OR_RETURN(int64_t layers, r.Int({"num_hidden_layers"}, kMaxLayers));
    SUANLI_ASSIGN_OR_RETURN(int64_t heads, r.Int({"num_attention_heads"}, kMaxHeads));
    m.layers = static_cast<int>(layers);
    m.heads = static_cast<int>(heads);
    SUANLI_ASSIGN_OR_RETURN(int64_t kv, r.IntOr("num_key_value_heads", heads, kMaxHeads));
    if (kv == 0) return ParseError(r.Where("num_key_value_heads") + " must be positive");
    m.kv_heads = static_cast<int>(kv);
    SUANLI_ASSIGN_OR_RETURN(m.ffn, r.Int({"intermediate_size"}, kMaxHidden * 16));
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.IntOr("max_position_embeddings", 0));
    SUANLI_ASSIGN_OR_RETURN(int64_t hd, r.IntOr("head_dim", m.hidden / m.heads, kMaxHidden));
    if (hd == 0 && r.Has("head_dim")) return ParseError(r.Where("head_dim") + " must be positive, got 0");
    m.head_dim = static_cast<int>(hd);
    // Nemotron (NVIDIA's Nemotron-4 and Minitron; transformers' NemotronForCausalLM): the LLaMA layout with a plain
    // squared-ReLU MLP (up and down projections, no gate) and LayerNorm1P norms (weight and bias).
    const bool nemotron = t == "nemotron";
    m.norm = nemotron ? NormKind::kLayerNorm : NormKind::kRmsNorm;
    m.gated_mlp = !nemotron;
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", t == "gemma2"));
    const bool gpt_oss = t == "gpt_oss";
    SUANLI_ASSIGN_OR_RETURN(m.qkv_bias, r.BoolOr("attention_bias", t == "qwen2" || t == "qwen2_moe" || gpt_oss));
    SUANLI_ASSIGN_OR_RETURN(m.mlp_bias, r.BoolOr("mlp_bias", gpt_oss));
    const bool qwen3 = t == "qwen3" || t == "qwen3_moe";
    m.attn_out_bias = (t == "llama" || qwen3 || gpt_oss) && m.qkv_bias;  // attention_bias covers o_proj too
    if (gpt_oss) m.attention_sinks = m.heads;
    if (qwen3) m.extra_head_norm_dim = 2 * m.head_dim;  // RMSNorm on each head's q and k
    // MiniMax-M2 (MiniMaxM2ForCausalLM): its q and k norms are one RMSNorm over each layer's whole projected q and k
    // (qk_norm_type "per_layer"), or per head like Qwen3's.
    if (t == "minimax_m2") {
      SUANLI_ASSIGN_OR_RETURN(const bool qk_norm, r.BoolOr("use_qk_norm", true));
      const std::string norm_type = j.value("qk_norm_type", std::string("per_layer"));
      if (qk_norm)
        m.extra_head_norm_dim = norm_type == "per_head" ? 2 * m.head_dim : (m.heads + m.kv_heads) * m.head_dim;
    }
    if (t == "gemma2") m.norms_per_layer = 4;
    // Sliding windows.
    bool use_sw = true;
    if (t == "qwen2" || t == "qwen2_moe" || qwen3) {
      SUANLI_ASSIGN_OR_RETURN(use_sw, r.BoolOr("use_sliding_window", false));
    }
    if (use_sw && r.Has("sliding_window")) {
      SUANLI_ASSIGN_OR_RETURN(int64_t sw, r.IntOr("sliding_window", 0, std::numeric_limits<int>::max()));
      if (sw > 0 && (m.max_positions == 0 || sw < m.max_positions)) {
        m.sliding_window = static_cast<int>(sw);
        m.sliding_window_layers = (t == "gemma2") ? (m.layers + 1) / 2 : m.layers;  // Gemma 2 alternates local/global
        if (gpt_oss) {
          // GPT-OSS alternates windowed and full attention, starting windowed; layer_types says so per layer.
          m.sliding_window_layers = (m.layers + 1) / 2;
          if (r.Has("layer_types")) {
            if (!j["layer_types"].is_array() || j["layer_types"].size() != size_t(m.layers))
              return ParseError(r.Where("layer_types") + fmt::format(" must list one type per layer ({} layers)", m.layers));
            int windowed = 0;
            for (const auto& v : j["layer_types"]) {
              if (!v.is_string() || (v != "sliding_attention" && v != "full_attention"))
                return ParseError(r.Where("layer_types") +
                                  ": entries must be \"sliding_attention\" or \"full_attention\"");
              windowed += v == "sliding_attention";
            }
            m.sliding_window_layers = windowed;
          }
        }
      }
    }
    if (llama4) {
      // Llama 4: every interleave_moe_layer_step-th layer is MoE (one routed expert of intermediate_size per token, top-k,
      // and one shared expert of the same width; no router bias); the others are dense MLPs of intermediate_size_mlp.
      // iRoPE: the RoPE layers attend within chunks of attention_chunk_size tokens, every no_rope_layer_interval-th
      // layer (NoPE) attends to the whole context; no_rope_layers lists 1 for a RoPE layer, 0 for NoPE (empty: the
      // interval). The QK norm has no weights.
      SUANLI_ASSIGN_OR_RETURN(m.ffn, r.IntOr("intermediate_size_mlp", m.ffn, kMaxHidden * 16));
      SUANLI_ASSIGN_OR_RETURN(MoeSpec e, ReadRoutedExperts(r, "num_local_experts"));
      SUANLI_ASSIGN_OR_RETURN(e.expert_ffn, r.Int({"intermediate_size"}, kMaxHidden * 16));
      e.num_shared_experts = 1;
      e.shared_ffn = e.expert_ffn;
      SUANLI_ASSIGN_OR_RETURN(int64_t step, r.IntOr("interleave_moe_layer_step", 1, kMaxLayers));
      if (step < 1) return ParseError(r.Where("interleave_moe_layer_step") + " must be at least 1");
      e.layer_step = static_cast<int>(step);
      if (r.Has("moe_layers") && !(j["moe_layers"].is_array() && j["moe_layers"].empty())) {
        if (!j["moe_layers"].is_array())
          return ParseError(r.Where("moe_layers") + " must be a list of layer indices");
        std::vector<int> want;
        for (int i = 0; i < m.layers; ++i)
          if ((i + 1) % e.layer_step == 0) want.push_back(i);
        std::vector<int> got;
        for (const auto& v : j["moe_layers"]) {
          if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= m.layers)
            return ParseError(r.Where("moe_layers") + fmt::format(": entries must be layer indices from 0 to {}", m.layers - 1));
          got.push_back(static_cast<int>(v.get<int64_t>()));
        }
        if (got != want)
          return Unsupported(r.Where("moe_layers") +
                             ": MoE layers other than every interleave_moe_layer_step-th are not supported");
      }
      m.moe = e;
      SUANLI_ASSIGN_OR_RETURN(int64_t chunk, r.IntOr("attention_chunk_size", 0, std::numeric_limits<int>::max()));
      if (chunk > 0) {
        int rope_layers = 0;
        const bool listed = r.Has("no_rope_layers") && j["no_rope_layers"].is_array() && !j["no_rope_layers"].empty();
        if (listed) {
          if (j["no_rope_layers"].size() != size_t(m.layers))
            return ParseError(r.Where("no_rope_layers") + fmt::format(" must list one entry per layer ({} layers)", m.layers));
          for (const auto& v : j["no_rope_layers"]) {
            if (!v.is_number_integer() || (v.get<int64_t>() != 0 && v.get<int64_t>() != 1))
              return ParseError(r.Where("no_rope_layers") + ": entries must be 1 (RoPE, chunked) or 0 (NoPE, full)");
            rope_layers += static_cast<int>(v.get<int64_t>());
          }
        } else if (r.Has("no_rope_layers") && !j["no_rope_layers"].is_array()) {
          return ParseError(r.Where("no_rope_layers") + " must be a list (one 0 or 1 per layer)");
        } else {
          SUANLI_ASSIGN_OR_RETURN(int64_t interval, r.IntOr("no_rope_layer_interval", 4, kMaxLayers));
          if (interval < 1) return ParseError(r.Where("no_rope_layer_interval") + " must be at least 1");
          for (int i = 0; i < m.layers; ++i) rope_layers += (i + 1) % interval != 0;
        }
        if (rope_layers > 0 && (m.max_positions == 0 || chunk < m.max_positions)) {
          m.sliding_window = static_cast<int>(chunk);
          m.sliding_window_layers = rope_layers;
          m.chunked_window = true;
        }
      }
    } else if (t == "minimax_m2") {
      // MiniMax-M2: every layer MoE, routed experts of intermediate_size, sigmoid routing with a per-expert bias
      // (use_routing_bias), no shared expert (shared_intermediate_size 0). Its MTP modules are not counted (as
      // DeepSeek-V3's are not).
      SUANLI_ASSIGN_OR_RETURN(MoeSpec e, ReadRoutedExperts(r, "num_local_experts"));
      e.expert_ffn = m.ffn;
      SUANLI_ASSIGN_OR_RETURN(e.shared_ffn, r.IntOr("shared_intermediate_size", 0, kMaxHidden * 16));
      e.num_shared_experts = e.shared_ffn > 0 ? 1 : 0;
      SUANLI_ASSIGN_OR_RETURN(e.router_bias, r.BoolOr("use_routing_bias", false));
      m.moe = e;
    } else if (t == "mixtral" || gpt_oss) {
      // GPT-OSS: every layer MoE, experts of intermediate_size with biases, a router with a bias.
      SUANLI_ASSIGN_OR_RETURN(MoeSpec e, ReadRoutedExperts(r, "num_local_experts"));
      e.expert_ffn = m.ffn;
      e.router_bias = gpt_oss;
      m.moe = e;
    } else if (t == "qwen2_moe" || t == "qwen3_moe") {
      // Qwen3 MoE is Qwen2 MoE without the shared expert (no shared_expert_intermediate_size) and with q/k norms.
      if (r.Has("mlp_only_layers") && !(j["mlp_only_layers"].is_array() && j["mlp_only_layers"].empty()))
        return Unsupported(r.Where("mlp_only_layers") +
                           ": dense layers at listed positions are not supported (only [] or absent); "
                           "decoder_sparse_step expresses a regular pattern");
      SUANLI_ASSIGN_OR_RETURN(MoeSpec e, ReadRoutedExperts(r, "num_experts"));
      SUANLI_ASSIGN_OR_RETURN(e.expert_ffn, r.Int({"moe_intermediate_size"}, kMaxHidden * 16));
      SUANLI_ASSIGN_OR_RETURN(e.shared_ffn, r.IntOr("shared_expert_intermediate_size", 0, kMaxHidden * 16));
      e.num_shared_experts = e.shared_ffn > 0 ? 1 : 0;
      e.shared_expert_gate = e.shared_ffn > 0;
      SUANLI_ASSIGN_OR_RETURN(int64_t step, r.IntOr("decoder_sparse_step", 1, kMaxLayers));
      e.layer_step = static_cast<int>(std::max<int64_t>(1, step));
      m.moe = e;
    } else if (t == "deepseek_v3") {
      SUANLI_ASSIGN_OR_RETURN(MoeSpec e, ReadRoutedExperts(r, "n_routed_experts"));
      SUANLI_ASSIGN_OR_RETURN(e.expert_ffn, r.Int({"moe_intermediate_size"}, kMaxHidden * 16));
      SUANLI_ASSIGN_OR_RETURN(int64_t ns, r.IntOr("n_shared_experts", 0, 1 << 16));
      e.num_shared_experts = static_cast<int>(ns);
      e.shared_ffn = e.expert_ffn * ns;
      SUANLI_ASSIGN_OR_RETURN(int64_t fk, r.IntOr("first_k_dense_replace", 0, kMaxLayers));
      e.first_dense_layers = static_cast<int>(fk);
      SUANLI_ASSIGN_OR_RETURN(int64_t step, r.IntOr("moe_layer_freq", 1, kMaxLayers));
      e.layer_step = static_cast<int>(std::max<int64_t>(1, step));
      e.router_bias = j.contains("topk_method") && j["topk_method"].is_string() &&
                      j["topk_method"].get<std::string>() == "noaux_tc";
      m.moe = e;
      MlaSpec a;
      SUANLI_ASSIGN_OR_RETURN(int64_t ql, r.IntOr("q_lora_rank", 0, kMaxHidden));
      SUANLI_ASSIGN_OR_RETURN(int64_t kl, r.Int({"kv_lora_rank"}, kMaxHidden));
      SUANLI_ASSIGN_OR_RETURN(int64_t nope, r.Int({"qk_nope_head_dim"}, kMaxHidden));
      SUANLI_ASSIGN_OR_RETURN(int64_t rope, r.Int({"qk_rope_head_dim"}, kMaxHidden));
      SUANLI_ASSIGN_OR_RETURN(int64_t vd, r.Int({"v_head_dim"}, kMaxHidden));
      a.q_lora_rank = static_cast<int>(ql);
      a.kv_lora_rank = static_cast<int>(kl);
      a.qk_nope_head_dim = static_cast<int>(nope);
      a.qk_rope_head_dim = static_cast<int>(rope);
      a.v_head_dim = static_cast<int>(vd);
      m.mla = a;
      m.head_dim = static_cast<int>(nope + rope);
      SUANLI_ASSIGN_OR_RETURN(int64_t mtp, r.IntOr("num_nextn_predict_layers", 0, 64));
      m.mtp_layers = static_cast<int>(mtp);
    }
  } else if (t == "gpt2" || t == "gptj") {
    // GPT-2 and GPT-J (EleutherAI) share the key names and the plain GELU MLP of n_inner (null: 4 x n_embd).
    // GPT-2: learned positions, biases everywhere, tied embeddings. GPT-J: attention and MLP in parallel off one
    // LayerNorm (ln_1), rotary on the first rotary_dim dimensions of each head (no position table), q/k/v/out
    // without bias, untied lm_head (its vocab-sized bias is not counted).
    const bool gptj = t == "gptj";
    SUANLI_RETURN_IF_ERROR(
        ReadMultiHeadShape(r, m, {"n_embd", "hidden_size"}, {"n_layer", "num_hidden_layers"},
                           {"n_head", "num_attention_heads"}));
    SUANLI_ASSIGN_OR_RETURN(m.ffn, r.IntOr("n_inner", 4 * m.hidden, kMaxHidden * 16));
    if (m.ffn == 0) m.ffn = 4 * m.hidden;
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    m.norm = NormKind::kLayerNorm;
    m.gated_mlp = false;
    m.mlp_bias = true;
    if (gptj) {
      SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.IntOr("n_positions", 2048));
      m.norms_per_layer = 1;
      m.parallel_block = true;
      m.qkv_bias = m.attn_out_bias = false;
    } else {
      SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.Int({"n_positions", "max_position_embeddings"}, int64_t(1) << 24));
      m.learned_positions = m.max_positions;
      m.qkv_bias = m.attn_out_bias = true;
    }
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", !gptj));
  } else if (t == "gpt_neox") {
    SUANLI_RETURN_IF_ERROR(ReadMultiHeadShape(r, m, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"}));
    SUANLI_ASSIGN_OR_RETURN(m.ffn, r.Int({"intermediate_size"}, kMaxHidden * 16));
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.IntOr("max_position_embeddings", 0));
    m.norm = NormKind::kLayerNorm;
    m.gated_mlp = false;
    SUANLI_ASSIGN_OR_RETURN(bool bias, r.BoolOr("attention_bias", true));
    m.qkv_bias = m.attn_out_bias = bias;
    m.mlp_bias = true;
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", false));
  } else if (t == "opt") {
    SUANLI_RETURN_IF_ERROR(ReadMultiHeadShape(r, m, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"}));
    SUANLI_ASSIGN_OR_RETURN(m.ffn, r.Int({"ffn_dim"}, kMaxHidden * 16));
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.Int({"max_position_embeddings"}, int64_t(1) << 24));
    m.learned_positions = m.max_positions + 2;  // OPTLearnedPositionalEmbedding keeps an offset of 2
    m.norm = NormKind::kLayerNorm;
    m.gated_mlp = false;
    SUANLI_ASSIGN_OR_RETURN(bool bias, r.BoolOr("enable_bias", true));
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = bias;
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", true));
    SUANLI_ASSIGN_OR_RETURN(int64_t proj, r.IntOr("word_embed_proj_dim", m.hidden, kMaxHidden));
    if (proj != m.hidden) m.embed_proj_dim = proj;
    // The final LayerNorm only exists when do_layer_norm_before (all sizes except 350m).
  } else if (t == "bloom") {
    SUANLI_RETURN_IF_ERROR(
        ReadMultiHeadShape(r, m, {"hidden_size", "n_embed"}, {"n_layer", "num_hidden_layers"},
                           {"n_head", "num_attention_heads"}));
    m.ffn = 4 * m.hidden;
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.IntOr("seq_length", 2048));
    m.norm = NormKind::kLayerNorm;
    m.gated_mlp = false;
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
    m.embedding_norm = true;
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", true));
  } else if (t == "mpt") {
    // MosaicML MPT: plain GELU MLP of expansion_ratio x d_model; ALiBi (no position table) unless the config
    // turns ALiBi off and keeps llm-foundry's learned position table (learned_pos_emb, max_seq_len x d_model).
    SUANLI_RETURN_IF_ERROR(ReadMultiHeadShape(r, m, {"d_model"}, {"n_layers"}, {"n_heads"}));
    SUANLI_ASSIGN_OR_RETURN(int64_t ratio, r.IntOr("expansion_ratio", 4, 64));
    m.ffn = ratio * m.hidden;
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.IntOr("max_seq_len", 2048));
    m.norm = NormKind::kLayerNorm;
    m.gated_mlp = false;
    SUANLI_ASSIGN_OR_RETURN(bool no_bias, r.BoolOr("no_bias", true));
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = !no_bias;
    if (no_bias) m.norm = NormKind::kRmsNorm;  // LayerNorm without bias: one weight vector, as RMSNorm
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", true));
    bool alibi = true;  // transformers' MptConfig default
    if (j.contains("attn_config") && !j["attn_config"].is_null()) {
      if (!j["attn_config"].is_object()) return ParseError(r.Where("attn_config") + " must be an object");
      JsonReader ac(j["attn_config"], name + ": attn_config");
      SUANLI_ASSIGN_OR_RETURN(alibi, ac.BoolOr("alibi", true));
    }
    SUANLI_ASSIGN_OR_RETURN(bool learned, r.BoolOr("learned_pos_emb", false));
    if (learned && !alibi) m.learned_positions = m.max_positions;
  } else if (t == "falcon") {
    SUANLI_RETURN_IF_ERROR(
        ReadMultiHeadShape(r, m, {"hidden_size"}, {"num_hidden_layers", "n_layer"}, {"num_attention_heads", "n_head"}));
    SUANLI_ASSIGN_OR_RETURN(bool new_arch, r.BoolOr("new_decoder_architecture", false));
    SUANLI_ASSIGN_OR_RETURN(bool mq, r.BoolOr("multi_query", true));
    if (new_arch) {
      SUANLI_ASSIGN_OR_RETURN(int64_t kv, r.Int({"num_kv_heads", "n_head_kv"}, kMaxHeads));
      m.kv_heads = static_cast<int>(kv);
      m.norms_per_layer = 2;  // ln_attn + ln_mlp
      m.parallel_block = true;
    } else {
      m.kv_heads = mq ? 1 : m.heads;
      SUANLI_ASSIGN_OR_RETURN(bool parallel, r.BoolOr("parallel_attn", true));
      m.norms_per_layer = parallel ? 1 : 2;
      m.parallel_block = parallel;
    }
    SUANLI_ASSIGN_OR_RETURN(m.ffn, r.IntOr("ffn_hidden_size", 4 * m.hidden, kMaxHidden * 16));
    SUANLI_ASSIGN_OR_RETURN(m.vocab, r.Int({"vocab_size"}, kMaxVocab));
    SUANLI_ASSIGN_OR_RETURN(m.max_positions, r.IntOr("max_position_embeddings", 2048));
    m.norm = NormKind::kLayerNorm;
    m.gated_mlp = false;
    SUANLI_ASSIGN_OR_RETURN(bool bias, r.BoolOr("bias", false));
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = bias;
    SUANLI_ASSIGN_OR_RETURN(m.tie_embeddings, r.BoolOr("tie_word_embeddings", true));
  }
  if (m.stored_quantization.empty()) ReadQuantizationConfig(j, &m);
  SUANLI_RETURN_IF_ERROR(ValidateSpec(m, name));
  return m;
}

// ---------------------------------------------------------------------------------------
// Catalog.

namespace {
Result<std::vector<CatalogModel>> ParseCatalog(std::string_view text, const std::string& file,
                                               const std::function<Result<std::string>(const std::string&)>& read) {
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  const toml::array* arr = root.Array("model");
  SUANLI_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  std::vector<CatalogModel> out;
  if (!arr) return out;
  std::size_t i = 0;
  for (const auto& node : *arr) {
    const toml::table* t = node.as_table();
    const std::string path = fmt::format("model[{}]", i++);
    if (!t) return ParseError(file + ": " + path + " must be a table");
    detail::TableReader r(*t, file, path);
    CatalogModel cm;
    SUANLI_ASSIGN_OR_RETURN(std::string id, r.String("id"));
    // Names resolve lowercased: an id with capitals or spaces could never be asked for (as GPU ids).
    if (id.empty() || id != ToLower(id) || id.find_first_of(" \t") != std::string::npos)
      return ParseError(r.Where("id") + ": ids are lowercase without spaces, got '" + id + "'");
    SUANLI_ASSIGN_OR_RETURN(std::string config, r.String("config"));
    SUANLI_ASSIGN_OR_RETURN(auto name, r.OptString("name"));
    SUANLI_ASSIGN_OR_RETURN(auto repo, r.OptString("hf_repo"));
    SUANLI_ASSIGN_OR_RETURN(cm.aliases, r.StringList("aliases"));
    for (auto& a : cm.aliases) a = ToLower(a);
    SUANLI_ASSIGN_OR_RETURN(cm.published_params, r.OptSourcedNumber("published_params"));
    SUANLI_ASSIGN_OR_RETURN(auto cs, r.OptString("config_source"));
    SUANLI_ASSIGN_OR_RETURN(cm.published_active_params, r.OptSourcedNumber("published_active_params"));
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    SUANLI_ASSIGN_OR_RETURN(std::string cfg_text, read(config));
    SUANLI_ASSIGN_OR_RETURN(cm.spec, ParseHfConfig(cfg_text, config));
    cm.spec.id = id;
    cm.spec.name = name.value_or(id);
    cm.spec.source = cs.value_or(config);
    cm.hf_repo = repo.value_or("");
    cm.config_source = cs.value_or("");
    out.push_back(std::move(cm));
  }
  return out;
}
}  // namespace

Result<ModelCatalog> ModelCatalog::Load(const CatalogOptions& options) {
  std::map<std::string, CatalogModel> by_id;
  if (options.use_embedded) {
    if (const auto* f = detail::FindEmbeddedFile("data/models/catalog.toml")) {
      auto read = [](const std::string& cfg) -> Result<std::string> {
        const auto* e = detail::FindEmbeddedFile("data/models/" + cfg);
        if (!e) return NotFound("embedded:data/models/catalog.toml: config file '" + cfg + "' is not bundled");
        return std::string(e->content);
      };
      SUANLI_ASSIGN_OR_RETURN(auto v, ParseCatalog(f->content, "embedded:data/models/catalog.toml", read));
      for (auto& m : v) by_id[m.spec.id] = std::move(m);
    }
  }
  namespace fs = std::filesystem;
  for (const auto& dir : options.user_dirs) {
    std::error_code ec;
    const fs::path cat = fs::path(dir) / "models" / "catalog.toml";
    if (!fs::is_regular_file(cat, ec)) continue;
    SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(cat.string()));
    const fs::path base = fs::path(dir) / "models";
    auto read = [&](const std::string& cfg) { return detail::ReadFile((base / cfg).string(), 16u << 20); };
    SUANLI_ASSIGN_OR_RETURN(auto v, ParseCatalog(text, cat.string(), read));
    for (auto& m : v) by_id[m.spec.id] = std::move(m);
  }
  ModelCatalog c;
  std::map<std::string, std::string> owner;
  for (auto& [id, m] : by_id) {
    std::vector<std::string> names = m.aliases;
    names.push_back(id);
    for (const auto& n : names) {
      auto [it, ok] = owner.emplace(n, id);
      if (!ok) return ParseError(fmt::format("model name '{}' is used by both '{}' and '{}'", n, it->second, id));
    }
    c.models_.push_back(std::move(m));
  }
  return c;
}

std::vector<std::vector<std::string>> ModelCatalog::Names() const {
  std::vector<std::vector<std::string>> n;
  for (const auto& m : models_) {
    n.push_back({m.spec.id});
    n.back().insert(n.back().end(), m.aliases.begin(), m.aliases.end());
  }
  return n;
}

Result<const CatalogModel*> ModelCatalog::Find(std::string_view id_in) const {
  const std::string id = ToLower(id_in);
  for (const auto& m : models_) {
    if (m.spec.id == id) return &m;
    for (const auto& a : m.aliases)
      if (a == id) return &m;
  }
  return NotFound(fmt::format("unknown model '{}'{}; `suanli models` lists the catalog, or pass a path to a "
                              "Hugging Face config.json",
                              id_in, DidYouMean(id, Names())));
}

namespace {
constexpr std::string_view kBundledConfigs = "tests/validation/configs/";
}  // namespace

Result<ModelSpec> ModelCatalog::Resolve(std::string_view id) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p{std::string(id)};
  const bool looks_like_path = id.find('/') != std::string_view::npos || p.extension() == ".json";
  if (looks_like_path || fs::exists(p, ec)) {
    fs::path file = p;
    if (fs::is_directory(p, ec)) file = p / "config.json";
    if (!fs::is_regular_file(file, ec)) {
      // A bundled validation case's config (tests/validation/configs/...), named as `suanli validate --command` names
      // it, is read from the copy built into the binary where the source tree is not at hand.
      const std::string rel = file.lexically_normal().generic_string();
      if (const auto* e = rel.rfind(kBundledConfigs, 0) == 0 ? detail::FindEmbeddedFile(rel) : nullptr) {
        SUANLI_ASSIGN_OR_RETURN(ModelSpec m, ParseHfConfig(std::string(e->content), rel));
        m.id = rel;
        return m;
      }
      if (looks_like_path) {
        std::string hint;
        if (rel.rfind(kBundledConfigs, 0) == 0) {  // a bundled validation config's name, misspelt
          std::vector<std::string> names;
          for (const auto& e : detail::EmbeddedFilesUnder(kBundledConfigs, ".json")) names.emplace_back(e.path);
          hint = DidYouMean(rel, names);
        }
        return NotFound(fmt::format("{}: no such config file{}", file.string(), hint));
      }
    } else {
      SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(file.string(), 16u << 20));
      SUANLI_ASSIGN_OR_RETURN(ModelSpec m, ParseHfConfig(text, file.string()));
      m.id = file.parent_path().filename().string().empty() ? file.stem().string() : file.string();
      return m;
    }
  }
  SUANLI_ASSIGN_OR_RETURN(const CatalogModel* m, Find(id));
  return m->spec;
}

}  // namespace suanli
