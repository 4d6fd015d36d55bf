// Transformer model architectures: import from Hugging Face config.json, exact parameter
// counts (total, and active per token for mixture-of-experts), KV-cache geometry, and the
// bundled model catalog (data/models/).
//
// Parameter counts are computed from the architecture, tensor by tensor (see
// docs/methodology.md §1); they are not read from anywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/status.h"

namespace suanli {

enum class NormKind { kLayerNorm, kRmsNorm };  // LayerNorm has weight + bias; RMSNorm weight only
enum class AttentionKind { kMha, kGqa, kMqa, kMla };

struct MoeSpec {
  int num_experts = 0;            // routed experts per MoE layer
  int experts_per_token = 0;      // top-k
  int64_t expert_ffn = 0;         // intermediate size of one routed expert
  int num_shared_experts = 0;     // always-active experts (DeepSeek, Qwen-MoE)
  int64_t shared_ffn = 0;         // intermediate size of the shared expert block (total)
  bool shared_expert_gate = false;  // Qwen2-MoE: a sigmoid gate h->1 on the shared expert
  int first_dense_layers = 0;     // DeepSeek first_k_dense_replace: these layers use a dense MLP
  int layer_step = 1;             // every k-th layer is MoE (Qwen2-MoE decoder_sparse_step)
  bool router_bias = false;       // DeepSeek-V3 e_score_correction_bias
};

struct MlaSpec {
  int q_lora_rank = 0;            // 0: no low-rank query projection
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct ModelSpec {
  std::string id;                 // catalog id, or the config file name for imports
  std::string name;
  std::string model_type;         // HF model_type: llama, mixtral, deepseek_v3, ...
  std::string source;             // where the config came from

  int64_t hidden = 0;             // h
  int layers = 0;                 // L
  int heads = 0;                  // a (query heads)
  int kv_heads = 0;               // n_kv (== heads for MHA, 1 for MQA)
  int head_dim = 0;               // d_head (may differ from h/a, e.g. Gemma 2)
  int64_t ffn = 0;                // dense MLP intermediate size
  int64_t vocab = 0;
  int64_t max_positions = 0;      // context length the model was built for
  int64_t learned_positions = 0;  // rows of a learned absolute position table (0 = rotary/ALiBi)
  bool tie_embeddings = false;
  bool gated_mlp = true;          // SwiGLU/GeGLU: 3 matrices; else 2
  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  NormKind norm = NormKind::kRmsNorm;
  int norms_per_layer = 2;
  // Attention and MLP read the same layer input and their outputs are summed (GPT-J; Falcon with parallel_attn or
  // new_decoder_architecture), so a tensor-parallel engine all-reduces the sum once per layer (TensorRT-LLM's GPT-J
  // and Falcon, vLLM's Falcon) instead of after each. GPT-NeoX's parallel residual stays at two: TensorRT-LLM's
  // GPT-NeoX layer reduces attention and MLP each.
  bool parallel_block = false;
  int extra_head_norm_dim = 0;    // per-layer q/k norms (Qwen3): 2 * head_dim weights
  int attention_sinks = 0;        // per-layer learned softmax sinks (GPT-OSS): one per query head
  bool embedding_norm = false;    // BLOOM word_embeddings_layernorm
  int64_t embed_proj_dim = 0;     // OPT word_embed_proj_dim when != hidden (project_in/out)
  int sliding_window = 0;         // tokens; 0 = full attention on every layer
  int sliding_window_layers = 0;  // how many layers use the window (Gemma 2: every other)
  // The window is chunked (Llama 4's attention_chunk_size): a query attends to the keys of its own chunk, which
  // starts at a multiple of `sliding_window`, not to the `sliding_window` keys before it. The cache holds at most one
  // chunk per such layer, as it holds a window.
  bool chunked_window = false;
  int mtp_layers = 0;             // DeepSeek multi-token-prediction modules (not counted in params)
  // The checkpoint's own storage format from config.json's quantization_config: a --weights id where suanli has
  // that format ("fp8", "nvfp4", "awq", "gptq", "nf4", "int8"), "" where it has none or the config names none; and a
  // short description for notes ("quant_method fp8, 128 x 128 blocks"), "" without a quantization_config.
  std::string stored_weights;
  std::string stored_quantization;
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;

  AttentionKind attention() const;
  bool is_moe() const { return moe.has_value(); }
  // Every layer attends to the whole context and keeps it in the KV cache: what an engine does that ignores the
  // config's sliding window (vLLM --disable-sliding-window; TensorRT-LLM without max_attention_window_size).
  void DisableSlidingWindow() {
    sliding_window = 0;
    sliding_window_layers = 0;
    chunked_window = false;
  }
  int moe_layer_count() const;    // layers with routed experts
  bool is_moe_layer(int i) const;  // layer i (from 0) has routed experts: past the first dense ones, every layer_step-th
};

// Parameter counts by part. All counts are numbers of parameters.
struct ParamCounts {
  double embedding = 0;       // token (+ learned position) embeddings, embedding norm
  double lm_head = 0;         // 0 when tied
  double attention = 0;       // all layers
  double mlp_dense = 0;       // dense MLPs, all layers
  double moe_experts = 0;     // routed experts, all layers (total)
  double moe_shared = 0;      // shared experts + gates
  double router = 0;
  double norms = 0;           // per-layer and final norms
  double total = 0;
  double active = 0;          // per token: routed experts counted at top-k
  // Parameters of one "average" layer (attention + MLP/MoE + norms), used for sharding.
  double per_layer_total = 0;
  double non_layer_total = 0;     // embedding + head + final norm
};

ParamCounts CountParams(const ModelSpec& m);

// KV cache bytes per token, summed over layers, for `bytes_per_elem` (e.g. 2 for bf16),
// for the part held by one GPU at tensor-parallel degree `tp` (KV heads shard by TP down
// to one per GPU; MLA's latent is replicated). Sliding-window layers are counted in full
// here; use KvCacheBytes for a real context.
double KvBytesPerToken(const ModelSpec& m, double bytes_per_elem, int tp = 1);
// KV cache bytes for `batch` sequences of `context` tokens on one GPU (sliding windows capped).
double KvCacheBytes(const ModelSpec& m, double bytes_per_elem, int64_t batch, int64_t context, int tp = 1);

// Pure importer: HF config.json text -> ModelSpec. `name` labels errors and the spec.
// Unsupported model_type and missing keys are errors naming the key.
Result<ModelSpec> ParseHfConfig(std::string_view json_text, std::string_view name);
const std::vector<std::string>& SupportedModelTypes();

// A bundled model with the parameter count its authors published.
struct CatalogModel {
  ModelSpec spec;
  std::vector<std::string> aliases;
  std::string hf_repo;
  std::optional<Sourced<double>> published_params;
  std::optional<Sourced<double>> published_active_params;
  std::string config_source;
};

class ModelCatalog {
 public:
  static Result<ModelCatalog> Load(const CatalogOptions& options);
  const std::vector<CatalogModel>& models() const { return models_; }
  // Finds a model by id or alias; if `id` names an existing file (*.json or a directory
  // holding config.json), imports it instead. A path under tests/validation/configs/ that is not on disk is read
  // from the bundled validation configs built into the binary (`suanli validate --command` names them so).
  // NotFound carries "did you mean".
  Result<ModelSpec> Resolve(std::string_view id) const;
  Result<const CatalogModel*> Find(std::string_view id) const;
  std::vector<std::vector<std::string>> Names() const;  // per model: its id, then its aliases

 private:
  std::vector<CatalogModel> models_;
};

}  // namespace suanli
