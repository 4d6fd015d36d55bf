#include "suanli/validate.h"

#include <fmt/format.h>

#include "suanli/units.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "core/data_registry.h"
#include "core/toml_reader.h"
#include "suanli/perf.h"
#include "suanli/text.h"
#include "perf/internal.h"

namespace suanli {

namespace {

struct Targets {
  double mean, worst;
};
// Issue 3's targets per group.
const std::map<std::string, Targets> kTargets = {
    {"training", {0.07, 0.15}}, {"decode", {0.10, 0.20}}, {"ttft", {0.10, 0.20}}};

// The keys a case may have, and their TOML types. A misspelt key would otherwise be ignored and the case
// evaluated with a default: a silently wrong row.
enum class KeyType { kString, kInteger, kNumber, kBool };
enum class CaseKind { kTrain, kInfer, kGemm, kAttention, kCollective, kMoe, kServingAttention };
const std::map<std::string, KeyType>& CaseKeys(CaseKind kind) {
  static const std::map<std::string, KeyType> base = {
      {"group", KeyType::kString},  {"role", KeyType::kString},      {"name", KeyType::kString},
      {"source", KeyType::kString}, {"metric", KeyType::kString},    {"published", KeyType::kNumber},
      {"gpu", KeyType::kString}};
  static const std::map<std::string, KeyType> common = [] {
    auto m = base;
    m.insert({{"config", KeyType::kString}, {"model", KeyType::kString}, {"tp", KeyType::kInteger},
              {"nvls", KeyType::kBool}});
    return m;
  }();
  static const std::map<std::string, KeyType> train_keys = [] {
    auto m = common;
    m.insert({{"gpus", KeyType::kInteger},
              {"pp", KeyType::kInteger},
              {"zero", KeyType::kInteger},
              {"micro_batch", KeyType::kInteger},
              {"global_batch", KeyType::kInteger},
              {"seq", KeyType::kInteger},
              {"recompute", KeyType::kString},
              {"recompute_layers", KeyType::kInteger},
              {"recompute_modules", KeyType::kString},
              {"offload_layers", KeyType::kInteger},
              {"sequence_parallel", KeyType::kBool},
              {"attention", KeyType::kString},
              {"cross_entropy", KeyType::kString},
              {"dropout", KeyType::kBool},
              {"dp_overlap", KeyType::kBool},
              {"dp_bucket_mb", KeyType::kNumber},
              {"dp_bucket_params", KeyType::kNumber},
              {"cp", KeyType::kInteger},
              {"interleave", KeyType::kInteger},
              {"interleave_auto", KeyType::kBool},
              {"dtype", KeyType::kString},
              {"fp8_recipe", KeyType::kString},
              {"tp_only_amax_red", KeyType::kBool},
              {"tp_overlap", KeyType::kBool},
              {"tp_grad_overlap", KeyType::kBool},
              {"ep_overlap", KeyType::kBool},
              {"moe_dispatcher", KeyType::kString},
              {"cp_comm", KeyType::kString},
              {"cuda_graphs", KeyType::kString},
              {"eager", KeyType::kBool},
              {"fp8_weight_cache", KeyType::kBool},
              {"nvfp4_rht", KeyType::kBool},
              {"fp8_attention", KeyType::kBool},
              {"inter_node", KeyType::kString},
              {"gpus_per_node", KeyType::kInteger},
              {"embedding_loss_in_split", KeyType::kBool},
              {"pp_layout", KeyType::kString},
              {"mtp_layers", KeyType::kInteger},
              {"ep", KeyType::kInteger},
              {"etp", KeyType::kInteger},
              {"moe_imbalance", KeyType::kNumber},
              {"fp32_grads", KeyType::kBool},
              {"optimizer", KeyType::kString},
              {"master_dtype", KeyType::kString},
              {"moments_dtype", KeyType::kString},
              {"mode", KeyType::kString},
              {"lora_rank", KeyType::kInteger},
              {"lora_dropout", KeyType::kNumber},
              {"lora_targets", KeyType::kString},
              {"weights", KeyType::kString},
              {"activation_fp8_input", KeyType::kBool},
              {"packed_doc_tokens", KeyType::kInteger}});
    return m;
  }();
  static const std::map<std::string, KeyType> infer_keys = [] {
    auto m = common;
    m.insert({{"weights", KeyType::kString},
              {"quantize_head", KeyType::kBool},
              {"replicated_embeddings", KeyType::kBool},
              {"kv_dtype", KeyType::kString},
              {"batch", KeyType::kInteger},
              {"batch_max", KeyType::kBool},
              {"concurrency", KeyType::kInteger},
              {"sliding_window", KeyType::kBool},
              {"batch_cap", KeyType::kInteger},
              {"input_len", KeyType::kInteger},
              {"output_len", KeyType::kInteger},
              {"decode_attention", KeyType::kString},
              {"moe_impl", KeyType::kString},
              {"ep", KeyType::kInteger},
              {"etp", KeyType::kInteger},
              {"attention_dp", KeyType::kInteger},
              {"gpus_per_node", KeyType::kInteger},
              {"prefill_workers", KeyType::kInteger},
              {"decode_workers", KeyType::kInteger},
              {"prefill_tp", KeyType::kInteger},
              {"prefill_ep", KeyType::kInteger},
              {"prefill_attention_dp", KeyType::kInteger},
              {"moe_imbalance", KeyType::kNumber},
              {"request_overhead_ms", KeyType::kNumber},
              {"step_overhead_ms", KeyType::kNumber},
              {"speculative_tokens", KeyType::kInteger},
              {"acceptance_length", KeyType::kNumber},
              {"draft_model", KeyType::kString},
              {"draft_layers", KeyType::kInteger},
              {"draft_vocab", KeyType::kInteger},
              {"speculative_topk", KeyType::kInteger},
              {"verify_tokens", KeyType::kInteger}});
    return m;
  }();
  static const std::map<std::string, KeyType> gemm_keys = [] {
    auto m = base;
    m.insert({{"dtype", KeyType::kString}, {"m", KeyType::kInteger}, {"n", KeyType::kInteger}, {"k", KeyType::kInteger}});
    return m;
  }();
  static const std::map<std::string, KeyType> attention_keys = [] {
    auto m = base;
    m.insert({{"dtype", KeyType::kString},
              {"batch", KeyType::kInteger},
              {"heads", KeyType::kInteger},
              {"kv_heads", KeyType::kInteger},
              {"head_dim", KeyType::kInteger},
              {"seq", KeyType::kInteger},
              {"causal", KeyType::kBool},
              {"head_dim_v", KeyType::kInteger},
              {"window", KeyType::kInteger},
              {"pass", KeyType::kString}});
    return m;
  }();
  static const std::map<std::string, KeyType> collective_keys = [] {
    auto m = base;
    m.insert({{"op", KeyType::kString},
              {"gpus", KeyType::kInteger},
              {"bytes", KeyType::kInteger},
              {"gpus_per_node", KeyType::kInteger},
              {"nvls", KeyType::kBool}});
    return m;
  }();
  static const std::map<std::string, KeyType> moe_keys = [] {
    auto m = base;
    m.insert({{"dtype", KeyType::kString},
              {"tokens", KeyType::kInteger},
              {"hidden", KeyType::kInteger},
              {"expert_ffn", KeyType::kInteger},
              {"pairs", KeyType::kInteger},
              {"experts_touched", KeyType::kInteger},
              {"etp", KeyType::kInteger},
              {"gated", KeyType::kBool}});
    return m;
  }();
  static const std::map<std::string, KeyType> serving_attention_keys = [] {
    auto m = base;
    m.insert({{"phase", KeyType::kString},
              {"batch", KeyType::kInteger},
              {"context", KeyType::kInteger},
              {"heads", KeyType::kInteger},
              {"kv_heads", KeyType::kInteger},
              {"head_dim", KeyType::kInteger},
              {"window", KeyType::kInteger},
              {"kv_dtype", KeyType::kString},
              {"attn_dtype", KeyType::kString},
              {"decode_attention", KeyType::kString},
              {"kv_lora_rank", KeyType::kInteger},
              {"qk_nope_head_dim", KeyType::kInteger},
              {"qk_rope_head_dim", KeyType::kInteger},
              {"v_head_dim", KeyType::kInteger}});
    return m;
  }();
  switch (kind) {
    case CaseKind::kTrain: return train_keys;
    case CaseKind::kServingAttention: return serving_attention_keys;
    case CaseKind::kMoe: return moe_keys;
    case CaseKind::kInfer: return infer_keys;
    case CaseKind::kAttention: return attention_keys;
    case CaseKind::kCollective: return collective_keys;
    case CaseKind::kGemm: break;
  }
  return gemm_keys;
}

Status CheckCaseKeys(const toml::table& t, CaseKind kind, const std::string& where) {
  const auto& keys = CaseKeys(kind);
  std::vector<std::string> names;
  for (const auto& [k, _] : keys) names.push_back(k);
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    auto it = keys.find(key);
    if (it == keys.end())
      return ParseError(fmt::format("{}: unknown key '{}'{}", where, key, DidYouMean(key, names)));
    const bool ok = (it->second == KeyType::kString && v.is_string()) ||
                    (it->second == KeyType::kInteger && v.is_integer()) ||
                    (it->second == KeyType::kNumber && (v.is_integer() || v.is_floating_point())) ||
                    (it->second == KeyType::kBool && v.is_boolean());
    if (!ok) {
      static const char* kNames[] = {"a string", "an integer", "a number", "true or false"};
      return ParseError(fmt::format("{}: '{}' must be {}", where, key, kNames[static_cast<int>(it->second)]));
    }
  }
  const std::string role = t["role"].value_or(std::string("holdout"));
  if (role != "calibration" && role != "holdout")
    return ParseError(fmt::format("{}: role '{}' must be calibration or holdout", where, role));
  return Status::Ok();
}

// An integer key as an int: a value outside int's range is an error naming the key, not a wrapped number.
Result<int> IntKey(const toml::table& t, const char* key, int64_t fallback) {
  const int64_t v = t[key].value_or(fallback);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return ParseError(fmt::format("'{}' = {} is out of range", key, v));
  return static_cast<int>(v);
}

// The case's GPU: a missing key says so instead of looking up an empty name.
Result<const GpuSpec*> CaseGpu(const toml::table& t, const HardwareCatalog& hw) {
  auto id = t["gpu"].value<std::string>();
  if (!id) return ParseError("case has no 'gpu' (a catalog id or alias; `suanli gpus` lists them)");
  return hw.FindGpu(*id);
}

Result<ModelSpec> LoadModel(const toml::table& t, const ModelCatalog& models, const CaseFileReader& read) {
  if (auto cfg = t["config"].value<std::string>()) {
    SUANLI_ASSIGN_OR_RETURN(std::string text, read(*cfg));
    return ParseHfConfig(text, *cfg);
  }
  auto id = t["model"].value<std::string>();
  if (!id) return ParseError("case has neither 'config' nor 'model'");
  return models.Resolve(*id);
}

Result<Efficiency> CaseEfficiency(const GpuSpec& gpu, const EfficiencyTable* table) {
  if (!table) return LoadEfficiency(gpu.id);
  return ParseEfficiencyToml(table->text, table->file, gpu.id);
}

// A comma-separated list's items, spaces dropped, empty items skipped ("qkv, o" -> qkv, o).
std::vector<std::string> CommaList(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  for (char ch : std::string(text) + ",") {
    if (ch == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (ch != ' ') {
      item += ch;
    }
  }
  return out;
}

// The `suanli` arguments that run a training or serving case's estimate from the command line
// (ValidationCase::command): every setting the case's evaluation uses, the defaults where the validation's and the
// CLI's differ (zero, seq, recompute, gpus_per_node, inter_node, input_len) written out. `model` is what --model
// takes (a catalog id, or the config file's path); `interleave` the depth an interleave_auto case chose.
std::vector<std::string> CaseCommand(const toml::table& t, CaseKind kind, const std::string& model, int interleave) {
  std::vector<std::string> a;
  const auto add = [&a](std::string flag, const std::string& value) {
    a.push_back(std::move(flag));
    a.push_back(value);
  };
  const auto num = [](double v) { return fmt::format("{:.17g}", v); };
  const auto str = [&t](const char* k, const char* fallback) { return t[k].value_or(std::string(fallback)); };
  const auto integer = [&t](const char* k, int64_t fallback) { return std::to_string(t[k].value_or(fallback)); };
  const auto flag_if = [&](const char* k, bool when, const char* flag) {
    if (t.contains(k) && t[k].value_or(!when) == when) a.push_back(flag);
  };
  const auto opt = [&](const char* k, const char* flag) {
    if (!t.contains(k)) return;
    const auto node = t[k];
    if (node.is_string()) add(flag, node.value_or(std::string()));
    else if (node.is_integer()) add(flag, std::to_string(node.value_or(int64_t{0})));
    else if (node.is_floating_point()) add(flag, num(node.value_or(0.0)));
  };
  a.push_back("perf");
  a.push_back(kind == CaseKind::kTrain ? "train" : "infer");
  add("--model", model);
  add("--gpu", str("gpu", ""));
  if (kind == CaseKind::kTrain) {
    add("--gpus", integer("gpus", 1));
    add("--gpus-per-node", integer("gpus_per_node", 8));
    add("--inter-node", str("inter_node", "ib-ndr"));
  } else {
    add("--gpus-per-node", integer("gpus_per_node", 8));  // a serving case's node: 8 GPUs unless it says, ib-ndr
    add("--inter-node", "ib-ndr");
  }
  flag_if("nvls", false, "--no-nvls");
  add("--tp", integer("tp", 1));
  opt("ep", "--ep");
  opt("etp", "--etp");
  opt("moe_imbalance", "--moe-imbalance");
  if (kind == CaseKind::kTrain) {
    add("--pp", integer("pp", 1));
    add("--cp", integer("cp", 1));
    if (t["interleave_auto"].value_or(false)) add("--interleave", std::to_string(interleave));
    opt("interleave", "--interleave");
    opt("pp_layout", "--pp-layout");
    flag_if("embedding_loss_in_split", true, "--account-for-embedding-loss");
    opt("mtp_layers", "--mtp-layers");
    add("--zero", integer("zero", 0));
    flag_if("sequence_parallel", true, "--sequence-parallel");
    add("--global-batch", integer("global_batch", 1));
    add("--seq", integer("seq", 2048));
    opt("micro_batch", "--micro-batch");
    add("--recompute", str("recompute", "none"));
    opt("recompute_layers", "--recompute-layers");
    opt("recompute_modules", "--recompute-modules");
    opt("offload_layers", "--offload-layers");
    opt("dtype", "--dtype");
    opt("fp8_recipe", "--fp8-recipe");
    flag_if("nvfp4_rht", false, "--no-nvfp4-rht");
    flag_if("fp8_attention", true, "--fp8-attention");
    flag_if("tp_only_amax_red", true, "--tp-only-amax-red");
    flag_if("fp8_weight_cache", false, "--no-fp8-weight-cache");
    opt("weights", "--weights");
    flag_if("activation_fp8_input", true, "--activation-func-fp8-input-store");
    opt("attention", "--attention");
    opt("cross_entropy", "--cross-entropy");
    flag_if("dropout", true, "--dropout");
    flag_if("eager", true, "--eager");
    flag_if("fp32_grads", true, "--fp32-grads");
    opt("optimizer", "--optimizer");
    opt("master_dtype", "--master-dtype");
    opt("moments_dtype", "--moments-dtype");
    flag_if("dp_overlap", false, "--no-dp-overlap");
    opt("dp_bucket_mb", "--dp-bucket-mb");
    if (auto n = t["dp_bucket_params"].value<double>())  // parameters -> MB of gradients at their width (EvalTrain)
      add("--dp-bucket-mb", num(*n * (t["fp32_grads"].value_or(false) ? 4.0 : 2.0) / kMiB));
    flag_if("tp_overlap", true, "--tp-overlap");
    flag_if("tp_grad_overlap", false, "--no-tp-grad-overlap");
    flag_if("ep_overlap", true, "--ep-overlap");
    opt("moe_dispatcher", "--moe-dispatcher");
    opt("cp_comm", "--cp-comm");
    opt("cuda_graphs", "--cuda-graphs");
    opt("mode", "--mode");
    opt("lora_rank", "--lora-rank");
    opt("lora_dropout", "--lora-dropout");
    if (auto targets = t["lora_targets"].value<std::string>()) {
      a.push_back("--lora-targets");
      for (auto& item : CommaList(*targets)) a.push_back(std::move(item));
    }
    opt("packed_doc_tokens", "--packed-doc-tokens");
    // The MFU the case's metrics read: Megatron's convention, 6N for LoRA and packed rows (EvalTrain).
    const bool six_n_only = str("mode", "train") == "lora" || t.contains("packed_doc_tokens");
    add("--flops", six_n_only ? "6n" : "megatron");
  } else {
    opt("weights", "--weights");
    flag_if("quantize_head", true, "--quantize-head");
    flag_if("replicated_embeddings", true, "--replicated-embeddings");
    opt("kv_dtype", "--kv-dtype");
    opt("attention_dp", "--attention-dp");
    opt("prefill_workers", "--prefill-workers");
    opt("decode_workers", "--decode-workers");
    opt("prefill_tp", "--prefill-tp");
    opt("prefill_ep", "--prefill-ep");
    opt("prefill_attention_dp", "--prefill-attention-dp");
    if (t.contains("concurrency"))
      add("--concurrency", integer("concurrency", 1));
    else
      add("--batch", t["batch_max"].value_or(false) ? std::string("max") : integer("batch", 1));
    opt("batch_cap", "--max-batch");
    add("--input-len", integer("input_len", 128));
    add("--output-len", integer("output_len", 128));
    flag_if("sliding_window", false, "--no-sliding-window");
    opt("decode_attention", "--decode-attention");
    opt("moe_impl", "--moe-impl");
    opt("request_overhead_ms", "--request-overhead-ms");
    opt("step_overhead_ms", "--step-overhead-ms");
    opt("speculative_tokens", "--speculative-tokens");
    opt("acceptance_length", "--acceptance-length");
    opt("draft_model", "--draft-model");
    opt("draft_layers", "--draft-layers");
    opt("draft_vocab", "--draft-vocab");
    opt("speculative_topk", "--speculative-topk");
    opt("verify_tokens", "--verify-tokens");
  }
  return a;
}

Result<double> EvalTrain(const toml::table& t, const HardwareCatalog& hw, const ModelCatalog& models,
                         const CaseFileReader& read, const EfficiencyTable* table, std::string* detail, bool* moe,
                         bool* fits, double* bound, double* step_time_s, int* interleave) {
  SUANLI_ASSIGN_OR_RETURN(ModelSpec m, LoadModel(t, models, read));
  *moe = m.moe.has_value();
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  SUANLI_ASSIGN_OR_RETURN(const int gpus_per_node, IntKey(t, "gpus_per_node", 8));
  SUANLI_ASSIGN_OR_RETURN(Cluster cl, MakeCluster(hw, *gpu, gpus_per_node, t["inter_node"].value_or(std::string("ib-ndr"))));
  cl.nvls = t["nvls"].value_or(true);
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  TrainConfig c;
  SUANLI_ASSIGN_OR_RETURN(const int gpus, IntKey(t, "gpus", 1));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.tp, IntKey(t, "tp", 1));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.pp, IntKey(t, "pp", 1));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.cp, IntKey(t, "cp", 1));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.ep, IntKey(t, "ep", 1));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.etp, IntKey(t, "etp", 0));
  c.moe_imbalance = t["moe_imbalance"].value_or(c.moe_imbalance);
  if (!(c.moe_imbalance >= 1.0 && c.moe_imbalance <= 64.0))
    return InvalidArgument(fmt::format("moe_imbalance {} is outside 1..64 (busiest expert's tokens / mean)", c.moe_imbalance));
  if (t.contains("moe_imbalance") && c.fit.par.ep <= 1)  // as `perf train` refuses it
    return InvalidArgument(fmt::format(
        "moe_imbalance {} needs expert parallelism (ep > 1): with EP 1 every GPU runs every token-expert pair",
        c.moe_imbalance));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.interleave, IntKey(t, "interleave", 1));
  c.fit.par.embedding_loss_in_split = t["embedding_loss_in_split"].value_or(false);
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.zero, IntKey(t, "zero", 0));
  const int model_parallel = c.fit.par.tp * c.fit.par.pp * c.fit.par.cp;
  if (model_parallel < 1 || gpus % model_parallel != 0)
    return ParseError(fmt::format("gpus = {} is not a multiple of tp x pp x cp = {}", gpus, model_parallel));
  c.fit.par.dp = gpus / model_parallel;
  c.fit.par.sequence_parallel = t["sequence_parallel"].value_or(false);
  // Megatron-Core's pipeline_model_parallel_layout string (sets the interleaving) and --mtp-num-layers.
  if (auto layout = t["pp_layout"].value<std::string>()) {
    if (t.contains("interleave")) return ParseError("pp_layout sets the interleaving; drop interleave");
    SUANLI_RETURN_IF_ERROR(ApplyPipelineLayout(c.fit.par, *layout));
  }
  SUANLI_ASSIGN_OR_RETURN(c.fit.mtp_layers, IntKey(t, "mtp_layers", 0));
  c.fit.batch = t["global_batch"].value_or(int64_t{1});
  c.fit.seq = t["seq"].value_or(int64_t{2048});
  c.fit.dropout = t["dropout"].value_or(false);
  c.fit.fp32_grads = t["fp32_grads"].value_or(false);
  if (auto v = t["optimizer"].value<std::string>()) {
    auto o = ParseOptimizer(*v);
    if (!o.ok()) return ParseError("optimizer: " + std::string(o.status().message()));
    c.fit.optimizer = *o;
  }
  if (auto v = t["master_dtype"].value<std::string>()) {
    auto mc = ParseMasterCopy(*v);
    if (!mc.ok()) return ParseError("master_dtype: " + std::string(mc.status().message()));
    c.fit.master = *mc;
  }
  if (auto v = t["moments_dtype"].value<std::string>()) {
    auto md = ParseMomentsDtype(*v);
    if (!md.ok()) return ParseError("moments_dtype: " + std::string(md.status().message()));
    c.fit.moments = *md;
  }
  SUANLI_ASSIGN_OR_RETURN(c.attention, ParseAttentionImpl(t["attention"].value_or(std::string("flash"))));
  c.fit.flash_attention = c.attention != AttentionImpl::kUnfused;
  if (auto ce = t["cross_entropy"].value<std::string>()) {
    auto v = ParseCrossEntropyImpl(*ce);
    if (!v.ok()) return ParseError("cross_entropy: " + std::string(v.status().message()));
    c.cross_entropy = *v;
  }
  c.dp_overlap = t["dp_overlap"].value_or(true);
  if (auto mb = t["dp_bucket_mb"].value<double>()) {
    if (!(*mb > 0 && *mb <= kMaxDpBucketMb))
      return ParseError(fmt::format("dp_bucket_mb {} is outside (0, 1e6] MB", *mb));
    c.dp_bucket_bytes = *mb * kMiB;
  }
  // Megatron-Core's DDP bucket_size (--ddp-bucket-size), in parameters of the gradients it reduces.
  if (auto n = t["dp_bucket_params"].value<double>()) {
    if (t["dp_bucket_mb"]) return ParseError("dp_bucket_mb and dp_bucket_params both set: give the bucket once");
    const double width = c.fit.fp32_grads ? 4.0 : 2.0;
    const double most = kMaxDpBucketMb * kMiB / width;
    if (!(*n >= 1 && *n <= most))
      return ParseError(fmt::format("dp_bucket_params {} is outside 1..{:.4g} (1e6 MB of gradients)", *n, most));
    c.dp_bucket_bytes = *n * width;
  }
  c.tp_overlap = t["tp_overlap"].value_or(false);
  c.tp_grad_overlap = t["tp_grad_overlap"].value_or(true);
  c.ep_overlap = t["ep_overlap"].value_or(false);
  if (auto d = t["moe_dispatcher"].value<std::string>()) {
    auto v = ParseMoeDispatcher(*d);
    if (!v.ok()) return ParseError("moe_dispatcher: " + std::string(v.status().message()));
    if (!m.moe || c.fit.par.ep <= 1)  // as perf train's --moe-dispatcher
      return ParseError(fmt::format("moe_dispatcher sets how tokens reach experts on other GPUs: it needs an MoE model "
                                    "and ep > 1{}",
                                    m.moe ? "" : fmt::format(" ({} is dense)", m.id)));
    c.moe_dispatcher = *v;
  }
  if (auto cc = t["cp_comm"].value<std::string>()) {
    auto v = ParseCpComm(*cc);
    if (!v.ok()) return ParseError("cp_comm: " + std::string(v.status().message()));
    if (c.fit.par.cp <= 1)  // as perf train's --cp-comm
      return ParseError("cp_comm sets how context-parallel ranks exchange attention's inputs: it needs cp > 1");
    c.cp_comm = *v;
  }
  if (auto g = t["cuda_graphs"].value<std::string>()) {
    auto v = ParseCudaGraphs(*g);
    if (!v.ok()) return ParseError("cuda_graphs: " + std::string(v.status().message()));
    c.cuda_graphs = *v;
  }
  c.eager = t["eager"].value_or(false);
  c.fp8_weight_cache = t["fp8_weight_cache"].value_or(true);
  SUANLI_ASSIGN_OR_RETURN(c.dtype, ParseTrainDtype(t["dtype"].value_or(std::string("bf16"))));
  if (auto recipe = t["fp8_recipe"].value<std::string>()) {
    if (c.dtype != Precision::kFp8) return ParseError("fp8_recipe is set but dtype is not \"fp8\"");
    SUANLI_ASSIGN_OR_RETURN(c.fp8_recipe, ParseFp8Recipe(*recipe));
  }
  if (auto rht = t["nvfp4_rht"].value<bool>()) {
    if (c.dtype != Precision::kFp4) return ParseError("nvfp4_rht is set but dtype is not \"fp4\"");
    c.nvfp4_rht = *rht;
  }
  c.fp8_attention = t["fp8_attention"].value_or(false);  // EstimateTraining refuses it outside FP8/FP4 training
  c.tp_only_amax_reduction = t["tp_only_amax_red"].value_or(false);
  if (auto st = CheckTpOnlyAmaxReduction(c); !st.ok())
    return ParseError("tp_only_amax_red: " + std::string(st.message()));
  if (auto mb = t["micro_batch"].value<int64_t>()) {
    c.fit.micro_batch = *mb;
  } else {
    c.micro_batch_auto = true;
  }
  SUANLI_ASSIGN_OR_RETURN(c.fit.recompute, ParseRecompute(t["recompute"].value_or(std::string("none"))));
  SUANLI_ASSIGN_OR_RETURN(c.fit.recompute_layers, IntKey(t, "recompute_layers", 0));
  // Megatron-Core's --recompute-modules, comma-separated ("layernorm,moe_act"), with recompute = "selective".
  if (auto mods = t["recompute_modules"].value<std::string>()) {
    SUANLI_ASSIGN_OR_RETURN(c.fit.recompute_modules, ParseRecomputeModules(*mods));
  }
  SUANLI_ASSIGN_OR_RETURN(c.fit.offload_layers, IntKey(t, "offload_layers", 0));
  const std::string metric = t["metric"].value_or(std::string());
  // Fine-tuning: mode "lora" with lora_rank and lora_targets (comma-separated: "q,k,v"), packed_doc_tokens.
  const std::string mode = t["mode"].value_or(std::string("train"));
  if (mode == "lora") {
    c.fit.mode = Mode::kLora;
  } else if (mode != "train") {
    return ParseError(fmt::format("mode \"{}\" is not one of train, lora", mode));
  }
  if (c.fit.mode != Mode::kLora && (t.contains("lora_rank") || t.contains("lora_targets") || t.contains("lora_dropout")))
    return ParseError("lora_rank, lora_targets and lora_dropout need mode = \"lora\"");
  SUANLI_ASSIGN_OR_RETURN(c.fit.lora_rank, IntKey(t, "lora_rank", 16));
  c.fit.lora_dropout = t["lora_dropout"].value_or(0.0);
  if (auto targets = t["lora_targets"].value<std::string>()) {
    if (targets->find_first_not_of(" ,") == std::string::npos)
      return ParseError("lora_targets is empty (comma-separated: q, k, v, o, gate, up, down, or all)");
    c.fit.lora_targets = CommaList(*targets);
  }
  // The frozen base weights' format (mode "lora": "fp8" for NeMo's fp8_params) and Megatron-Core's
  // activation_func_fp8_input_store.
  if (auto w = t["weights"].value<std::string>()) {
    // Full training: "fp8" for FP8 parameters (MLPerf's FP8_PARAMS, Megatron-Core --fp8-param-gather); EstimateTraining
    // checks it against the dtype.
    if (c.fit.mode != Mode::kLora && *w != "fp8" && *w != "nvfp4")
      return ParseError("weights: the frozen base weights' format needs mode = \"lora\"; full training takes only "
                        "\"fp8\" (FP8 parameters) or \"nvfp4\" (NVFP4 parameters)");
    auto wf = ParseWeightFormat(*w);
    if (!wf.ok()) return ParseError("weights: " + std::string(wf.status().message()));
    c.fit.weights = *wf;
  }
  c.fit.swiglu_input_fp8 = t["activation_fp8_input"].value_or(false);
  c.packed_doc_tokens = t["packed_doc_tokens"].value_or(int64_t{0});
  const bool six_n_only = c.fit.mode == Mode::kLora || c.packed_doc_tokens > 0;
  if (six_n_only && (metric == "mfu_megatron" || metric == "model_tflops_megatron" || metric == "narayanan_tflops"))
    return ParseError(fmt::format("metric {} counts pretraining over the whole sequence; LoRA and packed rows take "
                                  "step_time_s, tokens_per_s_per_gpu or model_tflops_6n", metric));
  c.convention = six_n_only ? FlopConvention::k6N : FlopConvention::kMegatron;
  // interleave_auto: a run whose interleaving was not published takes the fastest depth that fits among those
  // that divide the layers per stage (as an unpublished micro-batch takes the fastest that fits).
  const bool interleave_auto = t["interleave_auto"].value_or(false);
  if (interleave_auto && t.contains("interleave")) return ParseError("interleave_auto and interleave are both set");
  if (interleave_auto && c.fit.par.pp < 2) return ParseError("interleave_auto needs pp > 1");
  SUANLI_ASSIGN_OR_RETURN(const TrainResult r,
                          interleave_auto ? FastestInterleave(m, cl, c, eff) : EstimateTraining(m, cl, c, eff));
  *detail = fmt::format("micro-batch {}{}, step {:.3f} s, MFU {:.1f}%, memory {:.0f}%{}", r.micro_batch,
                        interleave_auto ? fmt::format(", interleave {}", r.interleave) : "", r.step_time_s,
                        100 * r.mfu, 100 * r.memory.per_gpu_peak_bytes / gpu->memory_bytes.value,
                        r.fits ? "" : ", DOES NOT FIT");
  *fits = r.fits;
  *step_time_s = r.step_time_s;
  *interleave = r.interleave;
  const double gpus_d = gpus;
  // The physical bound (ValidationCase::bound): the step's least work, 6 FLOPs per matmul weight per token (4 with
  // frozen base weights: no weight gradients; attention, recompute and the rest left out), at the GPU's dense peak
  // for the run's precision; MFU at most 1, TFLOP/s per GPU at most the peak.
  if (r.peak_flops_per_gpu > 0) {
    const double per_token = (c.fit.mode == Mode::kLora ? 4.0 : 6.0) * MatmulParamsPerToken(m);
    const double tokens = double(c.fit.batch) * double(c.fit.seq);
    if (metric == "step_time_s" && per_token > 0) *bound = tokens * per_token / (r.peak_flops_per_gpu * gpus_d);
    if (metric == "tokens_per_s_per_gpu" && per_token > 0) *bound = r.peak_flops_per_gpu / per_token;
    if (metric == "mfu_megatron") *bound = 1;
    if (metric == "narayanan_tflops" || metric == "model_tflops_6n" || metric == "model_tflops_megatron")
      *bound = r.peak_flops_per_gpu / 1e12;
  }
  if (metric == "step_time_s") return r.step_time_s;
  if (metric == "mfu_megatron") return r.mfu;
  if (metric == "tokens_per_s_per_gpu") return r.tokens_per_s_per_gpu;
  if (metric == "narayanan_tflops") {
    const double h = double(m.hidden), l = m.layers, V = double(m.vocab), s = double(c.fit.seq), B = double(c.fit.batch);
    const double f = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    return f / r.step_time_s / gpus_d / 1e12;
  }
  // Model TFLOP/s per GPU by the 6N + 12·L·d_attn·s convention (PaLM appendix B; what Llama 3 reports).
  if (metric == "model_tflops_6n")
    return ModelFlopsPerToken(m, double(c.fit.seq), FlopConvention::k6N) * r.tokens_per_s_per_gpu / 1e12;
  // Model TFLOP/s per GPU by Korthikanti et al.'s formula, which Megatron-LM's own throughput log uses for MHA models.
  if (metric == "model_tflops_megatron")
    return ModelFlopsPerToken(m, double(c.fit.seq), FlopConvention::kMegatron) * r.tokens_per_s_per_gpu / 1e12;
  return ParseError("unknown training metric '" + metric +
                    "' (valid: step_time_s, mfu_megatron, tokens_per_s_per_gpu, narayanan_tflops, model_tflops_6n, "
                    "model_tflops_megatron)");
}

Result<double> EvalInfer(const toml::table& t, const HardwareCatalog& hw, const ModelCatalog& models,
                         const CaseFileReader& read, const EfficiencyTable* table, std::string* detail, bool* moe,
                         bool* fits, double* bound, double* ttft_s, double* tpot_s) {
  SUANLI_ASSIGN_OR_RETURN(ModelSpec m, LoadModel(t, models, read));
  *moe = m.moe.has_value();
  // sliding_window = false: the engine kept every token in the KV cache (perf infer --no-sliding-window).
  if (!t["sliding_window"].value_or(true)) m.DisableSlidingWindow();
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  // A serving case's NVLink domain: 8 GPUs unless it says (GB200/GB300 NVL72 racks: 72).
  SUANLI_ASSIGN_OR_RETURN(const int gpus_per_node, IntKey(t, "gpus_per_node", 8));
  SUANLI_ASSIGN_OR_RETURN(Cluster cl, MakeCluster(hw, *gpu, gpus_per_node, "ib-ndr"));
  cl.nvls = t["nvls"].value_or(true);
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  InferConfig c;
  SUANLI_ASSIGN_OR_RETURN(c.fit.weights, ParseWeightFormat(t["weights"].value_or(std::string("bf16"))));
  c.fit.quantize_head = t["quantize_head"].value_or(false);
  c.fit.replicated_embeddings = t["replicated_embeddings"].value_or(false);
  SUANLI_ASSIGN_OR_RETURN(c.fit.kv_bytes_per_elem, ParseKvDtype(t["kv_dtype"].value_or(std::string("bf16"))));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.tp, IntKey(t, "tp", 1));
  // batch_max: as many sequences as fit (continuous batching at full load), at most batch_cap (the engine's limit).
  c.batch_max = t["batch_max"].value_or(false);
  c.batch_cap = t["batch_cap"].value_or(int64_t{0});
  if (c.batch_max && t.contains("batch")) return ParseError("batch and batch_max are both set");
  if (t.contains("batch_cap") && !c.batch_max) return ParseError("batch_cap needs batch_max = true");
  if (t.contains("batch_cap") && c.batch_cap < 1)
    return ParseError(fmt::format("batch_cap must be a positive number of sequences, got {}", c.batch_cap));
  c.fit.batch = t["batch"].value_or(int64_t{1});
  c.input_len = t["input_len"].value_or(int64_t{128});
  c.output_len = t["output_len"].value_or(int64_t{128});
  SUANLI_ASSIGN_OR_RETURN(c.decode_attention,
                          ParseDecodeAttention(t["decode_attention"].value_or(std::string("grouped"))));
  SUANLI_ASSIGN_OR_RETURN(c.moe_impl, ParseMoeImpl(t["moe_impl"].value_or(std::string("fused"))));
  // Expert parallelism inside the TP group; EstimateInference checks the layout and the imbalance's range.
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.ep, IntKey(t, "ep", 1));
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.etp, IntKey(t, "etp", 0));
  // Attention DP over the TP GPUs (ValidateRequest checks it divides TP and the model has experts).
  SUANLI_ASSIGN_OR_RETURN(c.fit.par.attention_dp, IntKey(t, "attention_dp", 1));
  c.moe_imbalance = t["moe_imbalance"].value_or(1.0);
  // A user's own engine's host costs (none in the bundled cases: the model has no such term, docs/methodology.md
  // §9.2); EstimateInference checks the range.
  c.request_overhead_s = t["request_overhead_ms"].value_or(0.0) * 1e-3;
  c.step_overhead_s = t["step_overhead_ms"].value_or(0.0) * 1e-3;
  // Speculative decoding (perf infer --speculative-tokens ...); EstimateInference checks the values.
  SUANLI_ASSIGN_OR_RETURN(c.spec.tokens, IntKey(t, "speculative_tokens", 0));
  c.spec.acceptance_length = t["acceptance_length"].value_or(0.0);
  SUANLI_ASSIGN_OR_RETURN(c.spec.draft_layers, IntKey(t, "draft_layers", 1));
  c.spec.draft_vocab = t["draft_vocab"].value_or(int64_t{0});
  SUANLI_ASSIGN_OR_RETURN(c.spec.topk, IntKey(t, "speculative_topk", 1));
  SUANLI_ASSIGN_OR_RETURN(c.spec.verify_tokens, IntKey(t, "verify_tokens", 0));
  if (auto d = t["draft_model"].value<std::string>()) {
    auto dm = models.Resolve(*d);
    if (!dm.ok()) return dm.status().WithContext("draft_model");
    c.spec.draft_model = *dm;
  }
  const std::string metric = t["metric"].value_or(std::string());
  // concurrency: a closed-loop benchmark's C clients (EstimateClosedLoop, docs/methodology.md section 9.6); only its
  // time per output token is a case metric (the TTFT it gives leaves out queueing behind other clients' prefills).
  // decode_workers: disaggregated serving's closed loop (EstimateDisaggregated, docs/methodology.md section 9.8), the
  // case's tp/ep/attention_dp the decode worker's, prefill_* the prefill worker's; its time per output token only.
  if (t.contains("decode_workers") || t.contains("prefill_workers")) {
    if (!t.contains("concurrency") || t.contains("batch") || c.batch_max)
      return ParseError("a disaggregated case (decode_workers, prefill_workers) takes concurrency and no batch");
    if (metric != "tpot_s")
      return ParseError(fmt::format("metric {} with decode_workers: a disaggregated case takes tpot_s", metric));
    SUANLI_ASSIGN_OR_RETURN(const int64_t conc, IntKey(t, "concurrency", 1));
    DisaggConfig d;
    SUANLI_ASSIGN_OR_RETURN(d.prefill_workers, IntKey(t, "prefill_workers", 1));
    SUANLI_ASSIGN_OR_RETURN(d.decode_workers, IntKey(t, "decode_workers", 1));
    for (const char* key : {"prefill_tp", "prefill_ep", "prefill_attention_dp"})
      if (t.contains(key) && t[key].value_or(int64_t{0}) < 1)
        return ParseError(fmt::format("'{}' = {} is not a parallel degree (at least 1; leave it out for the decode "
                                      "worker's)",
                                      key, t[key].value_or(int64_t{0})));
    SUANLI_ASSIGN_OR_RETURN(const int prefill_tp, IntKey(t, "prefill_tp", 0));  // 0: not given
    SUANLI_ASSIGN_OR_RETURN(const int prefill_ep, IntKey(t, "prefill_ep", 0));
    SUANLI_ASSIGN_OR_RETURN(const int prefill_adp, IntKey(t, "prefill_attention_dp", 0));
    d.prefill = PrefillLayout(c.fit.par, prefill_tp, prefill_ep, 0, prefill_adp);
    SUANLI_ASSIGN_OR_RETURN(const DisaggResult dr, EstimateDisaggregated(m, cl, c, d, conc, eff));
    *detail = fmt::format("TPOT {:.2f} ms at {} sequences per decode worker (bound: {}; prefill {:.2f} ms for {}, "
                          "{:.2f} requests/s){}",
                          dr.tpot_s * 1e3, dr.decode_batch_evaluated, dr.bound, dr.prefill_s * 1e3,
                          dr.prompts_per_prefill, dr.requests_per_s, dr.fits ? "" : ", DOES NOT FIT");
    *fits = dr.fits;
    *ttft_s = dr.ttft_s;
    *tpot_s = dr.tpot_s;
    if (dr.decode.decode_step_bound_s > 0) *bound = dr.decode.decode_step_bound_s;
    return dr.tpot_s;
  }
  if (t.contains("concurrency")) {
    if (t.contains("batch") || c.batch_max)
      return ParseError("concurrency sets the batch (the sequences in flight): drop batch and batch_max");
    if (metric != "tpot_s")
      return ParseError(fmt::format("metric {} with concurrency: a closed-loop case takes tpot_s (the estimate's TTFT "
                                    "leaves out the queueing a benchmark's TTFT includes)",
                                    metric));
    SUANLI_ASSIGN_OR_RETURN(const int64_t conc, IntKey(t, "concurrency", 1));
    if (conc < 1) return ParseError(fmt::format("concurrency must be at least 1 (the benchmark's clients), got {}", conc));
    SUANLI_ASSIGN_OR_RETURN(const ClosedLoopResult cr, EstimateClosedLoop(m, cl, c, conc, eff));
    *detail = fmt::format("TPOT {:.2f} ms = decode step {:.2f} ms at batch {} + other clients' prefills ({:.2f} ms "
                          "each, {:.2f} ms added to a step){}{}",
                          cr.tpot_s * 1e3, cr.decode_step_s * 1e3, cr.running, cr.prefill_s * 1e3,
                          cr.mixed_step_extra_s * 1e3,
                          cr.running < conc ? fmt::format(", {} of {} in flight (KV cache)", cr.running, conc) : "",
                          cr.fits ? "" : ", DOES NOT FIT");
    *fits = cr.fits;
    *ttft_s = cr.ttft_s;
    *tpot_s = cr.tpot_s;
    if (cr.decode.decode_step_bound_s > 0) *bound = cr.decode.decode_step_bound_s;
    return cr.tpot_s;
  }
  SUANLI_ASSIGN_OR_RETURN(InferResult r, EstimateInference(m, cl, c, eff));
  *detail = fmt::format("{}TTFT {:.2f} ms ({}), TPOT {:.2f} ms ({}){}",
                        c.batch_max ? fmt::format("batch {} ({}), ", r.batch, r.batch_limit) : "", r.ttft_s * 1e3,
                        r.prefill_bound, r.tpot_s * 1e3, r.decode_bound, r.fits ? "" : ", DOES NOT FIT");
  *fits = r.fits;
  *ttft_s = r.ttft_s;
  *tpot_s = r.tpot_s;
  // The physical bound (ValidationCase::bound), at the case's own batch: not under batch_max, where the batch is the
  // model's choice rather than the engine's.
  if (!c.batch_max && r.decode_step_bound_s > 0) {
    // A static batch's run: the prefill, then output_len - 1 decode steps (the prefill emits the first token);
    // output throughput counts the whole run (gptSessionBenchmark's batch x output / latency).
    const double b = double(c.fit.batch), out = double(c.output_len);
    const double run = r.ttft_bound_s + (out - 1) * r.decode_step_bound_s;
    if (metric == "ttft_s") *bound = r.ttft_bound_s;
    else if (metric == "tpot_s") *bound = r.decode_step_bound_s;
    else if (metric == "e2e_latency_s") *bound = run;
    else if (metric == "decode_tokens_per_s") *bound = r.decode_tokens_per_s_bound;
    else if (metric == "output_tokens_per_s") *bound = b * out / run;
    else if (metric == "output_tokens_per_s_per_gpu") *bound = b * out / run / (double(c.fit.par.tp) * c.fit.par.pp);
  }
  if (metric == "decode_tokens_per_s") return r.decode_tokens_per_s;
  if (metric == "ttft_s") return r.ttft_s;
  if (metric == "tpot_s") return r.tpot_s;
  if (metric == "output_tokens_per_s_per_gpu") return r.output_tokens_per_s_per_gpu;
  // The replica's output tokens/s over all its GPUs (what trtllm-bench reports as Total Output Throughput).
  if (metric == "output_tokens_per_s")
    return r.output_tokens_per_s_per_gpu * double(c.fit.par.tp) * double(c.fit.par.pp);
  if (metric == "e2e_latency_s") return r.e2e_latency_s;
  // TPOT without speculation / TPOT with it: the same configuration estimated both ways.
  if (metric == "speculative_speedup") {
    if (c.spec.tokens == 0) return ParseError("speculative_speedup needs speculative_tokens");
    InferConfig plain = c;
    plain.spec = {};
    SUANLI_ASSIGN_OR_RETURN(InferResult p, EstimateInference(m, cl, plain, eff));
    *detail += fmt::format(", without speculation {:.2f} ms; round {:.2f} ms = {} x draft {:.3f} ms + verify {:.2f} ms",
                           p.tpot_s * 1e3, r.spec_round_s * 1e3, c.spec.tokens, r.spec_draft_step_s * 1e3,
                           r.spec_verify_s * 1e3);
    return p.tpot_s / r.tpot_s;
  }
  return ParseError("unknown inference metric '" + metric +
                    "' (valid: decode_tokens_per_s, ttft_s, tpot_s, output_tokens_per_s_per_gpu, "
                    "output_tokens_per_s, e2e_latency_s, speculative_speedup)");
}

// A kernel case's `dtype` (fp16, bf16, fp8, fp4) as the precision its GEMMs run at, and the bytes of one operand
// element as the estimates take them: FP4 at NVFP4's bits per element with its scales (kFormats), FP8 1 B, else 2.
Result<Precision> CaseGemmPrecision(const toml::table& t) {
  const std::string dtype = t["dtype"].value_or(std::string("bf16"));
  if (dtype == "fp8") return Precision::kFp8;
  if (dtype == "fp4") return Precision::kFp4;
  if (dtype == "bf16") return Precision::kBf16;
  if (dtype == "fp16") return Precision::kFp16;
  return ParseError(fmt::format("dtype '{}' must be fp16, bf16, fp8 or fp4", dtype));
}
double OperandBytes(Precision p) {
  return p == Precision::kFp4 ? ParseWeightFormat("nvfp4")->bits_per_weight / 8 : p == Precision::kFp8 ? 1 : 2;
}

// One GEMM micro-benchmark (a published TFLOP/s at a stated M x N x K) against EstimateGemm, the shape model
// every operator of the training and serving estimates goes through (docs/methodology.md §6.2).
Result<double> EvalGemm(const toml::table& t, const HardwareCatalog& hw, const EfficiencyTable* table,
                        std::string* detail, double* bound) {
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  SUANLI_ASSIGN_OR_RETURN(const Precision p, CaseGemmPrecision(t));
  const std::string dtype = t["dtype"].value_or(std::string("bf16"));
  const double peak = gpu->PeakFlops(p).value_or(0);
  if (peak <= 0) return InvalidArgument(fmt::format("{} has no {} peak in the catalog", gpu->id, dtype));
  const double gemm_eff = perf_detail::GemmEfficiencyFor(eff, p);
  double dims[3];
  const char* names[3] = {"m", "n", "k"};
  for (int i = 0; i < 3; ++i) {
    const auto v = t[names[i]].value<int64_t>();
    if (!v || *v < 1) return ParseError(fmt::format("'{}' must be a positive integer", names[i]));
    dims[i] = double(*v);
  }
  const double elem = OperandBytes(p);
  const GemmTime g = EstimateGemm(dims[0], dims[1], dims[2], 1, elem, peak, gemm_eff, *gpu, eff);
  *detail = fmt::format("{:.1f} us, utilisation {:.3f}, {}-bound", g.time_s * 1e6, g.utilisation, BoundName(g.bound));
  if (t["metric"].value_or(std::string()) != "tflops")
    return ParseError("unknown GEMM metric '" + t["metric"].value_or(std::string()) + "' (valid: tflops)");
  *bound = peak / 1e12;  // a GEMM's TFLOP/s at most the dense peak of its precision
  return g.flops / g.time_s / 1e12;
}

// A kernel case's optional `window`: a causal sliding window of that many keys on the case's one layer.
Status SetCaseWindow(const toml::table& t, ModelSpec* shape) {
  if (!t.contains("window")) return Status::Ok();
  const auto x = t["window"].value<int64_t>();
  if (!x || *x < 1 || *x > (int64_t(1) << 24)) return ParseError("'window' must be an integer from 1 to 16777216");
  shape->sliding_window = static_cast<int>(*x);
  shape->sliding_window_layers = 1;
  return Status::Ok();
}

// One fused-attention kernel benchmark (a published TFLOP/s for a forward or backward pass of self-attention over
// `batch` sequences of `seq` tokens) against FusedAttentionForward, the time the training model gives the kernel
// (docs/methodology.md §6). FLOPs as the benchmarks count them: 4 x queries x attended keys x head_dim x heads
// forward (two GEMMs; causal: each query attends to the keys up to itself), kFlashBackwardFactor times that backward.
Result<double> EvalAttention(const toml::table& t, const HardwareCatalog& hw, const EfficiencyTable* table,
                             std::string* detail, double* bound) {
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  const std::string dtype = t["dtype"].value_or(std::string("bf16"));
  if (dtype != "bf16" && dtype != "fp16")
    return ParseError(fmt::format("dtype '{}' must be bf16 or fp16 (the model has no FP8 attention kernel)", dtype));
  double v[5];
  const char* names[5] = {"batch", "heads", "kv_heads", "head_dim", "seq"};
  for (int i = 0; i < 5; ++i) {
    const auto x = t[names[i]].value<int64_t>();
    if (!x || *x < 1 || *x > (int64_t(1) << 24))
      return ParseError(fmt::format("'{}' must be an integer from 1 to 16777216", names[i]));
    v[i] = double(*x);
  }
  const double batch = v[0], heads = v[1], kv_heads = v[2], head_dim = v[3], seq = v[4];
  if (std::fmod(heads, kv_heads) != 0)
    return ParseError(fmt::format("'heads' ({}) must be a multiple of 'kv_heads' ({})", heads, kv_heads));
  const bool causal = t["causal"].value_or(true);
  const std::string pass = t["pass"].value_or(std::string());
  if (pass != "fwd" && pass != "bwd") return ParseError(fmt::format("'pass' is '{}'; valid: fwd, bwd", pass));
  // The value head dimension where it differs from the query's (MLA: 192 for Q and K, 128 for V and the output).
  double head_dim_v = head_dim;
  if (t.contains("head_dim_v")) {
    const auto x = t["head_dim_v"].value<int64_t>();
    if (!x || *x < 1 || *x > (int64_t(1) << 24))
      return ParseError("'head_dim_v' must be an integer from 1 to 16777216");
    head_dim_v = double(*x);
  }
  // A causal sliding window: each query attends to at most the `window` keys before it (cuDNN's diagonal band).
  ModelSpec shape;
  if (t.contains("window") && !causal)
    return ParseError("'window' needs causal = true (a sliding window is a causal band)");
  shape.layers = 1;
  SUANLI_RETURN_IF_ERROR(SetCaseWindow(t, &shape));
  const double tokens = batch * seq;
  // Keys per query as the training model counts them (a causal pass sees seq / 2 on average, a full one seq, a window
  // at most its width), and per key 2 x (qk + v head dim) FLOPs per head, as the training model and cuDNN count them.
  const double keys = perf_detail::MeanAttendedKeys(shape, seq, /*decode=*/!causal);
  const double flops = 2.0 * tokens * keys * (head_dim + head_dim_v) * heads;
  // Q, K, V and the output, 16-bit.
  const double bytes = tokens * ((heads + kv_heads) * head_dim + (kv_heads + heads) * head_dim_v) * 2;
  const perf_detail::FusedAttentionTime fa = perf_detail::FusedAttentionForward(*gpu, eff, flops, bytes, false);
  const double scale = pass == "bwd" ? perf_detail::kFlashBackwardFactor : 1.0;
  *detail = fmt::format("{} {:.3f} ms, {}-bound at attention {:.3f}", pass, fa.time_s * scale * 1e3,
                        fa.compute_bound ? "compute" : "memory", eff.attention);
  if (t["metric"].value_or(std::string()) != "tflops")
    return ParseError("unknown attention metric '" + t["metric"].value_or(std::string()) + "' (valid: tflops)");
  *bound = perf_detail::PeakFor(*gpu, Precision::kBf16) / 1e12;
  return flops / fa.time_s / 1e12;  // the backward's FLOPs and time are both kFlashBackwardFactor times: one rate
}

// One collective micro-benchmark (nccl-tests: the time of one collective of `bytes`, nccl-tests' size, over `gpus`
// ranks of one node) against the time the training and serving estimates give it: NcclCollective for all-reduce,
// all-gather and reduce-scatter, GroupAllToAllTime for all-to-all (docs/methodology.md §7).
Result<double> EvalCollective(const toml::table& t, const HardwareCatalog& hw, const EfficiencyTable* table,
                              std::string* detail, double* bound) {
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  SUANLI_ASSIGN_OR_RETURN(const int gpus_per_node, IntKey(t, "gpus_per_node", 8));
  SUANLI_ASSIGN_OR_RETURN(const int n, IntKey(t, "gpus", 0));
  if (n < 2 || n > gpus_per_node)
    return ParseError(fmt::format("'gpus' = {} must be from 2 to 'gpus_per_node' ({}): the cases are one node's", n,
                                  gpus_per_node));
  const auto b = t["bytes"].value<int64_t>();
  if (!b || *b < 1 || *b > (int64_t(1) << 40)) return ParseError("'bytes' must be an integer from 1 to 2^40");
  const double bytes = double(*b);
  SUANLI_ASSIGN_OR_RETURN(Cluster cl, MakeCluster(hw, *gpu, gpus_per_node, "ib-ndr"));
  cl.nvls = t["nvls"].value_or(true);
  const std::string op = t["op"].value_or(std::string());
  double time_s = 0;
  if (op == "all_to_all") {
    time_s = GroupAllToAllTime(cl, eff, bytes, n, 1);
    *detail = fmt::format("{:.1f} us, all-to-all over {}", time_s * 1e6, cl.intra_name);
  } else {
    NcclOp nop;
    if (op == "all_reduce") nop = NcclOp::kAllReduce;
    else if (op == "all_gather") nop = NcclOp::kAllGather;
    else if (op == "reduce_scatter") nop = NcclOp::kReduceScatter;
    else
      return ParseError(fmt::format(
          "op '{}' is not one of all_reduce, all_gather, reduce_scatter, all_to_all{}", op,
          DidYouMean(op, std::vector<std::string>{"all_reduce", "all_gather", "reduce_scatter", "all_to_all"})));
    const CollectiveCall call = DescribeCollective(cl, eff, nop, bytes, n, 1, "", "");
    time_s = call.time_s;
    *detail = fmt::format("{:.1f} us, {} {}, busbw {:.1f} GB/s over {}", time_s * 1e6, call.algorithm, call.protocol,
                          call.busbw_bytes_per_s / 1e9, cl.intra_name);
  }
  if (t["metric"].value_or(std::string()) != "time_s")
    return ParseError("unknown collective metric '" + t["metric"].value_or(std::string()) + "' (valid: time_s)");
  // Every rank sends (or receives) at least (n - 1) / n of the buffer over its link, at the datasheet rate.
  *bound = double(n - 1) / n * bytes / cl.intra_bw_per_dir;
  if (!(time_s > 0) || !std::isfinite(time_s)) return Internal(fmt::format("no time for {} over {} ranks", op, n));
  return time_s;
}

// One MoE block micro-benchmark (a serving engine's fused MoE operator on one rank: routing, the routed experts' GEMMs
// and activation and the row gathers around them; the router GEMM and any communication outside it) against what the
// inference estimate charges the routed experts for the same load, RoutedExperts (docs/methodology.md §9). The case
// states that load as the benchmark's routing made it: `pairs` token-expert pairs on the measured rank over
// `experts_touched` of its experts.
Result<double> EvalMoe(const toml::table& t, const HardwareCatalog& hw, const EfficiencyTable* table,
                       std::string* detail, double* bound) {
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  SUANLI_ASSIGN_OR_RETURN(Precision p, CaseGemmPrecision(t));
  if (p == Precision::kFp16) p = Precision::kBf16;  // serving's 16-bit GEMMs (PeakFor falls back to FP16's peak)
  const std::string dtype = t["dtype"].value_or(std::string("bf16"));
  const double peak = perf_detail::PeakFor(*gpu, p);
  if (peak <= 0) return InvalidArgument(fmt::format("{} has no {} peak in the catalog", gpu->id, dtype));
  double v[5];
  const char* names[5] = {"tokens", "hidden", "expert_ffn", "pairs", "experts_touched"};
  for (int i = 0; i < 5; ++i) {
    const auto x = t[names[i]].value<int64_t>();
    if (!x || *x < 1 || *x > (int64_t(1) << 24))
      return ParseError(fmt::format("'{}' must be an integer from 1 to 16777216", names[i]));
    v[i] = double(*x);
  }
  const double tokens = v[0], hidden = v[1], ffn = v[2], pairs = v[3], touched = v[4];
  // Each token picks an expert at most once, and a touched expert has at least one pair.
  if (pairs > tokens * touched || touched > pairs)
    return ParseError(fmt::format("'pairs' ({}) must lie between 'experts_touched' ({}) and 'tokens' x "
                                  "'experts_touched' ({})",
                                  pairs, touched, tokens * touched));
  SUANLI_ASSIGN_OR_RETURN(const int etp, IntKey(t, "etp", 1));
  if (etp < 1 || std::fmod(ffn, etp) != 0)
    return ParseError(fmt::format("'etp' = {} must be a positive divisor of 'expert_ffn' ({})", etp, ffn));
  const bool gated = t["gated"].value_or(true);
  const double elem = OperandBytes(p);  // as the inference estimate takes them
  const perf_detail::ExpertLoad load{touched, pairs, std::max(1.0, pairs / touched), 1.0};
  const perf_detail::RoutedExpertsTime r = perf_detail::RoutedExperts(
      load, tokens, hidden, ffn, etp, gated, elem, elem, peak, perf_detail::GemmEfficiencyFor(eff, p), *gpu, eff);
  const double bw = gpu->memory_bandwidth_bytes_per_s.value;
  const double act_s = perf_detail::kGatedActivationBytesPerElement * r.activation_elements / (bw * eff.memory);
  const double time_s = r.up.time_s + r.down.time_s + act_s + r.permute_s;
  *detail = fmt::format("up/gate {:.1f} us ({}) + down {:.1f} us ({}) + activation {:.1f} us + routing and "
                        "gathers {:.1f} us",
                        r.up.time_s * 1e6, BoundName(r.up.bound), r.down.time_s * 1e6, BoundName(r.down.bound),
                        act_s * 1e6, r.permute_s * 1e6);
  if (t["metric"].value_or(std::string()) != "time_s")
    return ParseError("unknown MoE metric '" + t["metric"].value_or(std::string()) + "' (valid: time_s)");
  // The least work: the touched experts' weights read once at the datasheet bandwidth, or their FLOPs at the peak. A
  // benchmark that repeats one operator keeps weights that fit in L2 there (L40S's 96 MiB hold Qwen3 30B-A3B's eight
  // BF16 experts), so then only the FLOPs bound it; a serving step, whose layers' weights follow one another, does not.
  const double mats = gated ? 3.0 : 2.0, width = ffn / etp;
  const double weight_bytes = touched * mats * hidden * width * elem;
  const bool l2_resident = gpu->l2_bytes && weight_bytes <= gpu->l2_bytes->value;
  *bound = std::max(l2_resident ? 0.0 : weight_bytes / bw, 2 * pairs * mats * hidden * width / peak);
  if (!(time_s > 0) || !std::isfinite(time_s)) return Internal("no time for the MoE block");
  return time_s;
}


// One serving attention kernel benchmark (an engine's attention operator for one layer on one GPU: `batch` sequences,
// decode: one new token each over a cache of `context` tokens, prefill: a causal prompt of `context` tokens) against
// ServingAttention, the time the inference estimate gives the layer's attention (docs/methodology.md §9). `heads`
// and `kv_heads` are the GPU's (after tensor parallelism).
Result<double> EvalServingAttention(const toml::table& t, const HardwareCatalog& hw, const EfficiencyTable* table,
                                    std::string* detail, double* bound) {
  SUANLI_ASSIGN_OR_RETURN(const GpuSpec* gpu, CaseGpu(t, hw));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, CaseEfficiency(*gpu, table));
  const std::string phase = t["phase"].value_or(std::string());
  if (phase != "decode" && phase != "prefill")
    return ParseError(fmt::format("'phase' is '{}'; valid: decode, prefill", phase));
  const bool decode = phase == "decode";
  double v[5];
  const char* names[5] = {"batch", "context", "heads", "kv_heads", "head_dim"};
  for (int i = 0; i < 5; ++i) {
    const auto x = t[names[i]].value<int64_t>();
    if (!x || *x < 1 || *x > (int64_t(1) << 24))
      return ParseError(fmt::format("'{}' must be an integer from 1 to 16777216", names[i]));
    v[i] = double(*x);
  }
  const double batch = v[0], context = v[1];
  if (std::fmod(v[2], v[3]) != 0)
    return ParseError(fmt::format("'heads' ({}) must be a multiple of 'kv_heads' ({})", v[2], v[3]));
  SUANLI_ASSIGN_OR_RETURN(const double kv_bytes, ParseKvDtype(t["kv_dtype"].value_or(std::string("bf16"))));
  // The attention kernel's own precision (an FP8 prefill kernel where the engine runs one): the model prices attention
  // at the 16-bit rate whatever it is, so it only sets the FLOP bound.
  const std::string attn_dtype = t["attn_dtype"].value_or(std::string("bf16"));
  if (attn_dtype != "bf16" && attn_dtype != "fp16" && attn_dtype != "fp8")
    return ParseError(fmt::format("'attn_dtype' is '{}'; valid: bf16, fp16, fp8", attn_dtype));
  SUANLI_ASSIGN_OR_RETURN(const DecodeAttention kernel,
                          ParseDecodeAttention(t["decode_attention"].value_or(std::string("grouped"))));
  const bool per_head = kernel == DecodeAttention::kPerHead;
  if (per_head && !decode) return ParseError("'decode_attention' applies to phase = \"decode\" only");
  double issue_rate = 0;
  if (per_head) {
    SUANLI_ASSIGN_OR_RETURN(issue_rate, InstructionIssueRate(*gpu));
  }
  // One layer of the stated shape (a sliding window, where given, on that layer).
  ModelSpec shape;
  shape.layers = 1;
  shape.heads = static_cast<int>(v[2]);
  shape.kv_heads = static_cast<int>(v[3]);
  shape.head_dim = static_cast<int>(v[4]);
  shape.hidden = shape.heads * shape.head_dim;
  SUANLI_RETURN_IF_ERROR(SetCaseWindow(t, &shape));
  // Multi-head latent attention (DeepSeek-V2/V3): a latent cache of kv_lora_rank + qk_rope_head_dim per token,
  // query and key heads of qk_nope_head_dim + qk_rope_head_dim (`head_dim`), values of v_head_dim.
  const char* mla_keys[4] = {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
  int mla_given = 0;
  for (const char* k : mla_keys) mla_given += t.contains(k) ? 1 : 0;
  if (mla_given > 0) {
    if (mla_given < 4)
      return ParseError("an MLA layer needs all of kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim");
    int v_mla[4];
    for (int i = 0; i < 4; ++i) {
      const auto x = t[mla_keys[i]].value<int64_t>();
      if (!x || *x < 1 || *x > 65536) return ParseError(fmt::format("'{}' must be an integer from 1 to 65536", mla_keys[i]));
      v_mla[i] = static_cast<int>(*x);
    }
    if (shape.kv_heads != shape.heads)
      return ParseError(fmt::format("an MLA layer has one key and value head per query head: 'kv_heads' ({}) must "
                                    "equal 'heads' ({})",
                                    shape.kv_heads, shape.heads));
    if (shape.head_dim != v_mla[1] + v_mla[2])
      return ParseError(fmt::format("'head_dim' ({}) must be qk_nope_head_dim + qk_rope_head_dim ({})",
                                    shape.head_dim, v_mla[1] + v_mla[2]));
    MlaSpec mla;
    mla.kv_lora_rank = v_mla[0];
    mla.qk_nope_head_dim = v_mla[1];
    mla.qk_rope_head_dim = v_mla[2];
    mla.v_head_dim = v_mla[3];
    shape.mla = mla;
  }
  const perf_detail::ServingAttentionTime a = perf_detail::ServingAttention(
      shape, 1, kv_bytes, batch, decode ? 1.0 : context, context, decode, per_head, issue_rate, *gpu, eff);
  // The engines' operators also write the new tokens' K and V into the paged cache (TensorRT-LLM's QKV preprocessing,
  // which applies the rotary embedding too; vLLM's cache update) in a kernel of its own, which the estimate charges
  // among the element-wise row's launches: one kernel's fixed time (its bytes are a few per cent of the cache's).
  const double cache_write_s = eff.kernel_launch_s;
  const double time_s = a.time_s + cache_write_s;
  *detail = fmt::format("{:.1f} us ({}-bound: compute {:.1f} us, memory {:.1f} us, fixed {:.1f} us; cache write "
                        "{:.1f} us)",
                        time_s * 1e6, BoundName(a.bound), a.compute_s * 1e6, a.memory_s * 1e6,
                        (a.time_s - std::max(a.compute_s, a.memory_s)) * 1e6, cache_write_s * 1e6);
  if (t["metric"].value_or(std::string()) != "time_s")
    return ParseError("unknown serving attention metric '" + t["metric"].value_or(std::string()) +
                      "' (valid: time_s)");
  // The least time: the FLOPs at the kernel precision's dense peak, or the cache read once at the datasheet bandwidth,
  // unless the cache fits in L2: a benchmark that replays one layer's kernel keeps it there.
  const double peak = perf_detail::PeakFor(*gpu, attn_dtype == "fp8" ? Precision::kFp8 : Precision::kBf16);
  if (peak <= 0) return InvalidArgument(fmt::format("{} has no {} peak in the catalog", gpu->id, attn_dtype));
  const double cache = KvCacheBytes(shape, kv_bytes, static_cast<int64_t>(batch), static_cast<int64_t>(context), 1);
  const bool l2_resident = gpu->l2_bytes && cache <= gpu->l2_bytes->value;
  *bound = std::max(a.flops / peak, l2_resident ? 0.0 : cache / gpu->memory_bandwidth_bytes_per_s.value);
  if (!(time_s > 0) || !std::isfinite(time_s)) return Internal("no time for the attention kernel");
  return time_s;
}
}  // namespace

namespace {
bool IsTimeMetric(const std::string& metric) {
  return metric == "step_time_s" || metric == "ttft_s" || metric == "tpot_s" || metric == "e2e_latency_s" ||
         metric == "time_s";
}
}  // namespace

bool ValidationCase::within_bound() const {
  if (bound <= 0) return true;
  return IsTimeMetric(metric) ? published >= bound : published <= bound;
}

double ValidationCase::fast_error() const { return IsTimeMetric(metric) ? -error : error; }

Result<ValidationReport> RunPerfValidation(std::string_view text, std::string_view file_sv, const HardwareCatalog& hw,
                                           const ModelCatalog& models, const CaseFileReader& read,
                                           const EfficiencyTable* efficiency) {
  // A replacement table is checked for every GPU of the catalog (each GPU's entry over the defaults) before any case
  // runs, so a bad value is reported once, with its file and key, not as a failure on every case.
  if (efficiency)
    for (const GpuSpec& g : hw.gpus())
      SUANLI_RETURN_IF_ERROR(ParseEfficiencyToml(efficiency->text, efficiency->file, g.id).status());
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  // A case's model config as --model takes it: relative to the cases file (the bundled one's folder in the source tree).
  const std::string embedded = "embedded:";
  const std::string on_disk = file.rfind(embedded, 0) == 0 ? file.substr(embedded.size()) : file;
  const std::string base = std::filesystem::path(on_disk).parent_path().string();
  const auto config_path = [&base](const std::string& rel) {
    return base.empty() ? rel : (std::filesystem::path(base) / rel).string();
  };
  ValidationReport rep;
  for (const char* kind : {"train", "infer", "gemm", "attention", "collective", "moe", "serving_attention"}) {
    const std::string k(kind);
    const CaseKind ck = k == "train"        ? CaseKind::kTrain
                        : k == "infer"      ? CaseKind::kInfer
                        : k == "gemm"       ? CaseKind::kGemm
                        : k == "attention"  ? CaseKind::kAttention
                        : k == "collective" ? CaseKind::kCollective
                        : k == "moe"        ? CaseKind::kMoe
                                            : CaseKind::kServingAttention;
    const toml::array* arr = doc[kind].as_array();
    if (!arr) continue;
    for (const auto& node : *arr) {
      const toml::table* t = node.as_table();
      if (!t) return ParseError(file + ": every [[" + kind + "]] must be a table");
      const std::string where =
          fmt::format("{}: [[{}]] '{}'", file, kind, (*t)["name"].value_or(std::string("(no name)")));
      SUANLI_RETURN_IF_ERROR(CheckCaseKeys(*t, ck, where));
      ValidationCase vc;
      vc.group = t->get("group") ? (*t)["group"].value_or(std::string()) : std::string(kind);
      vc.role = (*t)["role"].value_or(std::string("holdout"));
      vc.name = (*t)["name"].value_or(std::string("?"));
      vc.gpu = (*t)["gpu"].value_or(std::string());
      if (auto g = hw.FindGpu(vc.gpu); g.ok()) vc.gpu = (*g)->id;
      vc.source = (*t)["source"].value_or(std::string());
      vc.metric = (*t)["metric"].value_or(std::string());
      vc.published = (*t)["published"].value_or(0.0);
      if (vc.published <= 0) return ParseError(fmt::format("{}: case '{}' has no positive 'published'", file, vc.name));
      int interleave = 1;
      auto v = ck == CaseKind::kTrain   ? EvalTrain(*t, hw, models, read, efficiency, &vc.detail, &vc.moe, &vc.fits,
                                                    &vc.bound, &vc.step_time_s, &interleave)
               : ck == CaseKind::kInfer ? EvalInfer(*t, hw, models, read, efficiency, &vc.detail, &vc.moe, &vc.fits,
                                                    &vc.bound, &vc.ttft_s, &vc.tpot_s)
               : ck == CaseKind::kGemm  ? EvalGemm(*t, hw, efficiency, &vc.detail, &vc.bound)
               : ck == CaseKind::kAttention  ? EvalAttention(*t, hw, efficiency, &vc.detail, &vc.bound)
               : ck == CaseKind::kCollective ? EvalCollective(*t, hw, efficiency, &vc.detail, &vc.bound)
               : ck == CaseKind::kMoe        ? EvalMoe(*t, hw, efficiency, &vc.detail, &vc.bound)
                                             : EvalServingAttention(*t, hw, efficiency, &vc.detail, &vc.bound);
      if (!v.ok()) {
        vc.failure = v.status().message();
      } else {
        vc.predicted = *v;
        vc.error = (vc.predicted - vc.published) / vc.published;
        if (ck == CaseKind::kTrain || ck == CaseKind::kInfer) {
          const auto config = (*t)["config"].value<std::string>();
          vc.command = CaseCommand(*t, ck, config ? config_path(*config) : (*t)["model"].value_or(std::string()),
                                   interleave);
        }
      }
      rep.cases.push_back(std::move(vc));
    }
  }
  rep.groups = SummarizeValidation(rep.cases);
  return rep;
}

std::vector<ValidationGroup> SummarizeValidation(const std::vector<ValidationCase>& cases) {
  std::vector<ValidationGroup> out;
  std::map<std::string, ValidationGroup> groups;
  std::map<std::string, int> calib_n;
  for (const auto& c : cases) {
    auto& g = groups[c.group];
    g.group = c.group;
    const double e = c.failure.empty() ? std::fabs(c.error) : 1.0;  // an unevaluable case counts as 100%
    g.cases++;
    if (c.failure.empty() && !c.within_bound()) g.beyond_bound++;
    g.mean_abs_error += e;
    g.worst_abs_error = std::max(g.worst_abs_error, e);
    if (c.role == "holdout") {
      g.holdout_cases++;
      g.mean_abs_error_holdout += e;
    } else {
      calib_n[c.group]++;
      g.mean_abs_error_calibration += e;
    }
  }
  for (auto& [name, g] : groups) {
    g.mean_abs_error /= std::max(1, g.cases);
    if (g.holdout_cases) g.mean_abs_error_holdout /= g.holdout_cases;
    if (calib_n[name]) g.mean_abs_error_calibration /= calib_n[name];
    if (auto it = kTargets.find(name); it != kTargets.end()) {
      g.target_mean = it->second.mean;
      g.target_worst = it->second.worst;
    }
    out.push_back(g);
  }
  return out;
}

Result<ValidationReport> RunBundledPerfValidation(const HardwareCatalog& hw, const ModelCatalog& models,
                                                  const EfficiencyTable* efficiency) {
  const auto* f = detail::FindEmbeddedFile("tests/validation/perf_cases.toml");
  if (!f) return Internal("tests/validation/perf_cases.toml is not embedded");
  auto read = [](const std::string& rel) -> Result<std::string> {
    const auto* e = detail::FindEmbeddedFile("tests/validation/" + rel);
    if (!e) return NotFound("tests/validation/" + rel + " is not embedded");
    return std::string(e->content);
  };
  return RunPerfValidation(f->content, "embedded:tests/validation/perf_cases.toml", hw, models, read, efficiency);
}

}  // namespace suanli
