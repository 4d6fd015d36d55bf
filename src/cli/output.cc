#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli::cli {

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kOk: return kExitOk;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kParseError:
    case ErrorCode::kUnsupported: return kExitInvalid;
    case ErrorCode::kDoesNotFit: return kExitNoFit;
    case ErrorCode::kIoError:
    case ErrorCode::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

int PrintError(const Status& s) {
  std::fprintf(stderr, "suanli: error: %s\n", s.message().c_str());
  return ExitCodeFor(s);
}

void PrintJson(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

nlohmann::json BreakdownJson(const TrainBreakdown& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& term : kBreakdownTerms) j[term.key] = b.*term.value;
  return j;
}

nlohmann::json BreakdownJson(const MemoryBreakdown& b) {
  return {{"weights", b.weights},         {"gradients", b.gradients}, {"optimizer", b.optimizer},
          {"activations", b.activations}, {"logits", b.logits},       {"kv_cache", b.kv_cache},
          {"fp8_weight_cache", b.fp8_weight_cache}, {"overhead", b.overhead}};
}

// The links the estimate's collectives ran over (docs/methodology.md §7), with their datasheet rates and the bus
// bandwidth the efficiency data gives them; bits where the catalog quotes a line rate (NICs), bytes elsewhere.
std::string IntraNodeWords(const NetworkSummary& n, const std::string& default_for) {
  std::string words = fmt::format("{} GPUs per node{}; {}, {} per GPU per direction; NCCL bus bandwidth {}",
                                  n.gpus_per_node,
                                  default_for.empty() ? "" : fmt::format(" (the default for {})", default_for),
                                  n.intra_name, FormatBandwidth(n.intra_bytes_per_s),
                                  FormatBandwidth(n.intra_busbw_bytes_per_s));
  if (n.intra_nvls_busbw_bytes_per_s > 0)
    words += fmt::format(", {} for an all-reduce reduced in the switch (NVLS)",
                         FormatBandwidth(n.intra_nvls_busbw_bytes_per_s));
  return words;
}
std::string InterNodeWords(const NetworkSummary& n, const std::string& default_for) {
  return fmt::format("{}{}, {} x {:g} Gb/s per {}-GPU node = {} per GPU per direction; bus bandwidth {} per GPU (a "
                     "group with k GPUs on each node: k x that, at most the link inside the node)",
                     n.fabric,
                     default_for.empty() ? "" : fmt::format(" (the default for {}; --inter-node to change)", default_for),
                     n.nics_per_node, n.nic_bytes_per_s * 8 / 1e9, n.gpus_per_node,
                     FormatBandwidth(n.inter_bytes_per_s_per_gpu), FormatBandwidth(n.inter_busbw_bytes_per_s_per_gpu));
}
const char* BusBandwidthWords() {
  return "bus bandwidth is nccl-tests' busbw: a collective over n GPUs of an S-byte buffer (nccl-tests' size: the "
         "all-gather's output, the reduce-scatter's input) takes its latency + S / algbw, with busbw = algbw x 2(n-1)/n "
         "for all-reduce and x (n-1)/n for all-gather and reduce-scatter (docs/methodology.md section 7)";
}
nlohmann::json NetworkJson(const NetworkSummary& n, bool multi_node) {
  nlohmann::json j = {{"intra_node", {{"link", n.intra_name},
                            {"gpus_per_node", n.gpus_per_node},
                            {"bytes_per_s_per_direction", n.intra_bytes_per_s},
                            {"busbw_bytes_per_s", n.intra_busbw_bytes_per_s},
                            {"latency_s", n.intra_latency_s}}}};
  if (n.intra_nvls_busbw_bytes_per_s > 0) j["intra_node"]["nvls_allreduce_busbw_bytes_per_s"] = n.intra_nvls_busbw_bytes_per_s;
  j["inter_node"] = {{"fabric", n.fabric},
                     {"used", multi_node},
                     {"nic_bits_per_s", n.nic_bytes_per_s * 8},
                     {"nics_per_node", n.nics_per_node},
                     {"gpus_per_node", n.gpus_per_node},
                     {"bytes_per_s_per_direction_per_gpu", n.inter_bytes_per_s_per_gpu},
                     {"busbw_bytes_per_s_per_gpu", n.inter_busbw_bytes_per_s_per_gpu},
                     {"latency_s", n.inter_latency_s}};
  return j;
}

// A validation band as JSON (null where none applies) and in words.
nlohmann::json BandJson(const ErrorBand& b, const GpuSpec& gpu) {
  if (b.cases == 0) return nullptr;
  return nlohmann::json{{"group", b.group},
                        {"cases", b.cases},
                        {"mean_abs_error", b.mean_abs},
                        {"p90_abs_error", b.p90_abs},
                        {"worst_abs_error", b.worst_abs},
                        {"too_fast_cases", b.fast_cases},
                        {"mean_bias_fast", b.mean_fast},
                        {"gpus", std::vector<std::string>(b.gpus.begin(), b.gpus.end())},
                        {"covers_gpu", BandCoversGpu(b, gpu.id)}};
}
Result<double> ParseHostMemoryFlag(const std::string& text) {
  if (text.empty()) return 0.0;
  auto q = ParseQuantity(text, Dimension::kBytes);
  if (!q.ok()) return InvalidArgument(fmt::format("--host-memory '{}': {}", text, q.status().message()));
  if (*q <= 0) return InvalidArgument(fmt::format("--host-memory '{}': must be more than zero", text));
  return *q;
}

void AddSpeculationOptions(CLI::App* app, SpeculationFlags* f) {
  app->add_option("--speculative-tokens", f->spec.tokens,
                  "Speculative decoding: tokens the draft proposes per round (vLLM num_speculative_tokens)");
  app->add_option("--acceptance-length", f->spec.acceptance_length,
                  "Speculative decoding: mean tokens a round emits per sequence, accepted drafts + the target's own "
                  "(1..K+1; vLLM's and SGLang's 'mean acceptance length')");
  app->add_option("--draft-model", f->draft_model,
                  "Speculative decoding: a separate draft model (id, alias or config.json) on the same GPUs; without "
                  "it the draft is --draft-layers layers of the target's shape (EAGLE, MTP)");
  app->add_option("--draft-layers", f->spec.draft_layers, "Speculative decoding: decoder layers of the draft head (EAGLE and "
                                                     "MTP: 1)")
      ->capture_default_str();
  app->add_option("--draft-vocab", f->spec.draft_vocab,
                  "Speculative decoding: the draft head's own output vocabulary (EAGLE-3: 32000); default: the "
                  "target's output head")
      ->check(NotZero());
  app->add_option("--speculative-topk", f->spec.topk,
                  "Speculative decoding with a draft tree: candidates per sequence each draft pass after the first "
                  "expands (SGLang --speculative-eagle-topk)")
      ->capture_default_str();
  app->add_option("--draft-repo", f->draft_repo,
                  "Speculative decoding with a draft head: its checkpoint (Hugging Face repository or directory), for "
                  "the --emit launch lines (EAGLE; EAGLE-3 with --draft-vocab); an MTP head ships in the target's");
  app->add_option("--verify-tokens", f->spec.verify_tokens,
                  "Speculative decoding with a draft tree: tokens per sequence the target verifies in a round (SGLang "
                  "--speculative-num-draft-tokens); default K+1")
      ->check(NotZero());
}

Result<Speculation> ParseSpeculation(Context* ctx, const SpeculationFlags& f) {
  Speculation s = f.spec;
  if (!f.draft_model.empty()) {
    SUANLI_ASSIGN_OR_RETURN(const ModelCatalog* mc, ctx->models());
    auto d = mc->Resolve(f.draft_model);
    if (!d.ok()) return d.status().WithContext("--draft-model");
    s.draft_model = *std::move(d);
    SUANLI_ASSIGN_OR_RETURN(s.draft_ref, ServingModelRef(ctx, f.draft_model, *s.draft_model));
  }
  if (!f.draft_repo.empty()) {
    if (!f.draft_model.empty())
      return InvalidArgument("--draft-repo names a draft head's checkpoint; a --draft-model's repository comes from the "
                             "model itself: give one or the other");
    if (s.tokens <= 0) return InvalidArgument("--draft-repo needs --speculative-tokens and --acceptance-length");
    s.draft_ref = f.draft_repo;
  }
  return s;
}

Result<std::string> ServingModelRef(Context* ctx, const std::string& arg, const ModelSpec& m) {
  std::error_code ec;
  const std::filesystem::path path(arg);
  if (std::filesystem::is_directory(path, ec)) return arg;
  if (std::filesystem::is_regular_file(path, ec)) {
    const auto dir = path.parent_path();
    return dir.empty() ? std::string(".") : dir.string();
  }
  SUANLI_ASSIGN_OR_RETURN(const ModelCatalog* mc, ctx->models());
  if (auto cm = mc->Find(arg); cm.ok() && !(*cm)->hf_repo.empty()) return (*cm)->hf_repo;
  return m.id;
}

Status ApplyServingBatch(const std::string& batch, int64_t max_batch, InferConfig* cfg) {
  if (ToLower(batch) == "max") {
    cfg->batch_max = true;
    cfg->batch_cap = max_batch;
    return Status::Ok();
  }
  int64_t v = 0;
  const char* end = batch.data() + batch.size();
  const auto [p, ec] = std::from_chars(batch.data(), end, v);
  if (ec != std::errc() || p != end || v < 1)
    return InvalidArgument(fmt::format("--batch must be a positive number of sequences or max, got '{}'", batch));
  if (max_batch != 0) return InvalidArgument("--max-batch caps --batch max; with a fixed --batch leave it out");
  cfg->fit.batch = v;
  return Status::Ok();
}

void AddOptimizerPrecisionOptions(CLI::App* app, std::string* master, std::string* moments) {
  app->add_option("--master-dtype", *master, kMasterDtypeHelp);
  app->add_option("--moments-dtype", *moments, kMomentsDtypeHelp);
}

Status ApplyOptimizerPrecision(FitRequest& r, const std::string& master, const std::string& moments, bool no_master) {
  if (no_master && !master.empty() && master != "none")
    return InvalidArgument(fmt::format("--no-master-weights and --master-dtype {} disagree; give one", master));
  if (no_master) r.master = MasterCopy::kNone;
  if (!master.empty()) {
    auto c = ParseMasterCopy(master);
    if (!c.ok()) return InvalidArgument(fmt::format("--master-dtype: {}", c.status().message()));
    r.master = *c;
  }
  if (!moments.empty()) {
    auto d = ParseMomentsDtype(moments);
    if (!d.ok()) return InvalidArgument(fmt::format("--moments-dtype: {}", d.status().message()));
    r.moments = *d;
  }
  return Status::Ok();
}

// A band in words; where its runs were all on other GPUs, it says so (the band then speaks for the model, not
// for this GPU's rates, which come from data/efficiency.toml).
std::string BandWords(const char* what, const ErrorBand& b, const char* runs, const GpuSpec& gpu) {
  std::string where;
  if (!BandCoversGpu(b, gpu.id)) {
    for (const char* g : b.gpus) where += (where.empty() ? "" : ", ") + std::string(g);
    where = fmt::format("; on {}, none on {}", where, gpu.id);
  }
  return fmt::format("{}{}{:.1f}% mean error, 9 in 10 within {:.0f}% ({} {}{}; {} predicted too fast, on average "
                     "{:.1f}% {})",
                     what, *what ? " " : "", 100 * b.mean_abs, 100 * b.p90_abs, b.cases, runs, where, b.fast_cases,
                     100 * std::fabs(b.mean_fast), b.mean_fast >= 0 ? "fast" : "slow");
}

nlohmann::json JsonEnvelope(const char* schema) {
  nlohmann::json j;
  j["schema"] = schema;
  j["suanli_version"] = SUANLI_VERSION;
  return j;
}

static std::size_t DisplayWidth(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;  // count UTF-8 code points
  return w;
}

std::string Table::Render() const {
  std::vector<std::size_t> w(header_.size(), 0);
  for (std::size_t i = 0; i < header_.size(); ++i) w[i] = DisplayWidth(header_[i]);
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], DisplayWidth(r[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? cells[i] : "";
      out += c;
      if (i + 1 < w.size()) out += std::string(w[i] - DisplayWidth(c) + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::string rule;
  for (std::size_t i = 0; i < w.size(); ++i) rule += std::string(w[i], '-') + (i + 1 < w.size() ? "  " : "");
  out += rule + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string MemoryBreakdownTable(const MemoryBreakdown& b, double peak_bytes, bool inference) {
  Table t({"term", "GB", "GiB"});
  auto row = [&](const char* name, double v) {
    if (v > 0) t.Row({name, fmt::format("{:.2f}", v / 1e9), fmt::format("{:.2f}", v / kGiB)});
  };
  row("weights", b.weights);
  row("gradients", b.gradients);
  row("optimizer states", b.optimizer);
  row(inference ? "activations (workspace)" : "activations", b.activations);
  row("logits", b.logits);
  row("KV cache", b.kv_cache);
  row("FP8 weight cache", b.fp8_weight_cache);
  row("overhead", b.overhead);
  t.Row({"peak", fmt::format("{:.2f}", peak_bytes / 1e9), fmt::format("{:.2f}", peak_bytes / kGiB)});
  return t.Render();
}

}  // namespace suanli::cli
