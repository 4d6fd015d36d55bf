// `suanli plan` (the best parallel layout and its launch configuration) and `suanli select`
// (which GPU, how many).
#include <fmt/format.h>

#include <algorithm>

#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/cli.h"
#include "core/files.h"
#include "suanli/plan.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {
using json = nlohmann::json;

// "512", "64,128,256" or "64-1024" (doubling).
Result<std::vector<int>> ParseCounts(const std::string& s) {
  std::vector<int> out;
  auto num = [&](const std::string& x) -> Result<int> {
    try {
      size_t pos = 0;
      const long v = std::stol(x, &pos);
      if (pos != x.size() || v < 1 || v > (1 << 20)) throw std::invalid_argument(x);
      return static_cast<int>(v);
    } catch (const std::exception&) {
      return InvalidArgument(fmt::format("--gpus: '{}' is not a GPU count (use 512, 64,128,256 or 64-1024)", x));
    }
  };
  if (auto dash = s.find('-'); dash != std::string::npos) {
    SUANLI_ASSIGN_OR_RETURN(int lo, num(s.substr(0, dash)));
    SUANLI_ASSIGN_OR_RETURN(int hi, num(s.substr(dash + 1)));
    if (hi < lo) return InvalidArgument("--gpus range must go from low to high");
    for (int n = lo; n <= hi; n *= 2) out.push_back(n);
    return out;
  }
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    SUANLI_ASSIGN_OR_RETURN(int n, num(item));
    out.push_back(n);
  }
  if (out.empty()) return InvalidArgument("--gpus is empty");
  return out;
}

std::string Layout(const PlanCandidate& c) {
  const Parallelism& p = c.par;
  std::string s = fmt::format("TP={} PP={} DP={}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" CP={}", p.cp);
  if (p.ep > 1) s += fmt::format(" EP={}", p.ep);
  if (p.etp > 0 && p.etp != p.tp) s += fmt::format(" ETP={}", p.etp);
  if (p.zero) s += fmt::format(" ZeRO-{}", p.zero);
  if (p.sequence_parallel) s += " SP";
  if (p.interleave > 1) s += fmt::format(" v={}", p.interleave);
  if (p.embedding_loss_in_split) s += " E+L";
  if (c.tp_overlap) s += " TPo";
  if (c.ep_overlap) s += " EPo";
  if (c.par.ep > 1 && c.moe_dispatcher == MoeDispatcher::kFlex) s += " flex";
  if (c.par.cp > 1 && c.cp_comm == CpComm::kAllToAll) s += " a2a";
  if (c.offload_layers > 0) s += fmt::format(" off={}", c.offload_layers);
  return s;
}

// The closest two layouts the model can rank: the worst error of a same-job step-time ratio in the validation set.
const double kRankResolution =
    std::max(std::fabs(evidence::kSameJobRatio.lo), std::fabs(evidence::kSameJobRatio.hi));
// How many of the top candidates (counting #1) score within that resolution of #1.
int WithinResolution(const std::vector<PlanCandidate>& top) {
  int close = top.empty() ? 0 : 1;
  for (size_t k = 1; k < top.size(); ++k)
    if (top[k].score <= top[0].score * (1 + kRankResolution)) close = static_cast<int>(k) + 1;
  return close;
}

json CandidateJson(const PlanCandidate& c) {
  const TrainResult& r = c.result;
  return {{"layout", {{"tp", c.par.tp}, {"pp", c.par.pp}, {"dp", c.par.dp}, {"cp", c.par.cp}, {"ep", c.par.ep},
                      {"etp", c.par.expert_tp()},
                      {"zero", c.par.zero}, {"sequence_parallel", c.par.sequence_parallel},
                      {"interleave", c.par.interleave},
                      {"embedding_loss_in_split", c.par.embedding_loss_in_split},
                      {"tp_overlap", c.tp_overlap}, {"ep_overlap", c.ep_overlap},
                      {"moe_dispatcher", MoeDispatcherName(c.moe_dispatcher)},
                      {"cp_comm", CpCommName(c.cp_comm)}}},
          {"micro_batch", c.micro_batch},
          {"recompute", RecomputeName(c.recompute)},
          {"recompute_layers", c.recompute_layers},
          {"recompute_modules", c.recompute == Recompute::kSelective ? RecomputeModulesList(c.recompute_modules) : ""},
          {"offload_layers", c.offload_layers},
          {"score", c.score},
          {"step_time_s", r.step_time_s},
          {"tokens_per_s", r.tokens_per_s},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
          {"model_tflops_per_gpu", r.model_tflops_per_gpu},
          {"mfu", r.mfu},
          {"hfu", r.hfu},
          {"per_gpu_peak_bytes", r.memory.per_gpu_peak_bytes},
          {"breakdown_s", BreakdownJson(r.breakdown_s)},
          {"train_time_s", r.train_time_s},
          {"gpu_hours", r.gpu_hours},
          {"cost_usd", r.cost_usd},
          {"why", c.why}};
}

struct PlanFlags {
  std::string model = "gpt3-175b", gpu = "a100-sxm-80gb", gpus = "1024", inter_node, objective = "time";
  std::string dtype = "bf16", fp8_recipe, attention = "flash", emit, out_dir, host_memory, moe_dispatcher, cuda_graphs,
      cp_comm;
  std::string cross_entropy = "fused";
  std::string master_dtype, moments_dtype;
  int mtp_layers = 0;
  int gpus_per_node = 0, gpus_per_host = 0, nics_per_node = 0, top = 5, threads = 0, tp = 0, pp = 0, cp = 0, ep = 0, zero = -1;
  int64_t global_batch = 1024, seq = 2048;
  double tokens = 0, price = 0;
  double dp_bucket_mb = 0;  // 0: Megatron-Core's bucket rule
  bool no_dp_overlap = false, eager = false, no_nvls = false, tp_overlap = false, ep_overlap = false,
       offload = false, fp8_params = false;
};

}  // namespace

Action SetupPlan(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<PlanFlags>();
  sub->add_option("--model,-m", f->model, "Model id, alias or HF config.json")->capture_default_str();
  sub->add_option("--gpu,-g", f->gpu, "GPU id or alias")->capture_default_str();
  sub->add_option("--gpus", f->gpus, "GPU count: 512, a list 64,128,256 or a doubling range 64-1024")->capture_default_str();
  sub->add_option("--gpus-per-node", f->gpus_per_node,
                  "GPUs per node: the GPUs that share the GPU link (one NVLink domain); default: the GPU's reference "
                  "system's, as `suanli gpus GPU` shows (72 for GB200 NVL72), else 8")->check(NodeCount());
  sub->add_option("--gpus-per-host", f->gpus_per_host,
                  "With --emit: GPUs per host (one OS image) in the launch files; default: the GPU's reference "
                  "system's (4 for a GB200 compute tray), else --gpus-per-node")->check(NodeCount());
  sub->add_option("--inter-node", f->inter_node, "Fabric between nodes: ib-hdr ib-ndr ib-xdr roce-200g eth-100g ... (default: the GPU's reference system's, as `suanli gpus GPU` shows: ib-hdr for A100 SXM, ib-ndr for H100, H200, B200 and GB200; else ib-ndr)")->check(NonEmpty());
  sub->add_option("--nics-per-node", f->nics_per_node, "NICs per node (default: one per GPU)")->check(NodeCount());
  sub->add_option("--global-batch", f->global_batch, "Sequences per step")->capture_default_str();
  sub->add_option("--seq,-s", f->seq, "Sequence length")->capture_default_str();
  sub->add_option("--tokens", f->tokens, "Tokens to train: time, GPU-hours, cost");
  sub->add_option("--price-per-gpu-hour", f->price, "USD per GPU-hour (default: the catalog's indicative on-demand)");
  sub->add_option("--objective", f->objective, "time | cost | tokens-per-dollar")->capture_default_str();
  sub->add_option("--top", f->top, "How many configurations to show")->capture_default_str();
  sub->add_option("--threads", f->threads, "Worker threads (default: all cores)")->check(CLI::Range(1, kMaxPlanThreads));
  sub->add_flag("--fp8-params", f->fp8_params,
                "With --dtype fp8: FP8 parameters (Megatron-Core --fp8-param-gather, NeMo fp8_params; perf train --weights "
                "fp8): 1 B per layer weight in memory and in the parameter all-gathers");
  sub->add_option("--dtype", f->dtype, "bf16 | fp8 | fp4 (NVFP4 training on Blackwell: perf train --dtype fp4)")
      ->capture_default_str();
  sub->add_option("--fp8-recipe", f->fp8_recipe, kFp8RecipeHelp);
  sub->add_option("--attention", f->attention, kAttentionImplHelp)->capture_default_str();
  sub->add_option("--cross-entropy", f->cross_entropy, kCrossEntropyHelp)->capture_default_str();
  sub->add_option("--mtp-layers", f->mtp_layers,
                  "Multi-token-prediction modules trained on every candidate's last pipeline stage (Megatron-Core "
                  "--mtp-num-layers; DeepSeek-V3: 1)");
  sub->add_flag("--eager", f->eager, "Eager PyTorch (HF transformers, Composer, torchtitan without torch.compile)");
  AddOptimizerPrecisionOptions(sub, &f->master_dtype, &f->moments_dtype);
  sub->add_option("--tp", f->tp, "Fix TP (default: search)")->check(Count());
  sub->add_option("--pp", f->pp, "Fix PP (default: search)")->check(Count());
  sub->add_option("--cp", f->cp, "Fix CP (default: search)")->check(Count());
  sub->add_option("--ep", f->ep, "Fix EP (default: search)")->check(Count());
  sub->add_option("--zero", f->zero, "Fix the ZeRO stage (default: search)");
  sub->add_flag("--no-dp-overlap", f->no_dp_overlap, "Gradient reduction after backward (Megatron before Core)");
  sub->add_option("--dp-bucket-mb", f->dp_bucket_mb,
                  "Data-parallel buckets of this many MB of gradients, as perf train (default: Megatron-Core's "
                  "max(40M, 1M x DP) parameters); --emit megatron writes --ddp-bucket-size")
      ->check(BucketMb());
  sub->add_flag("--tp-overlap", f->tp_overlap,
                "Overlap TP communication with GEMMs on sequence-parallel layouts (emits --tp-comm-overlap)");
  sub->add_flag("--ep-overlap", f->ep_overlap,
                "Overlap the MoE all-to-all with another micro-batch where Megatron-Core allows it (EP > 1, "
                "interleaved under PP, no full recompute; emits --overlap-moe-expert-parallel-comm)");
  sub->add_option("--moe-dispatcher", f->moe_dispatcher, kMoeDispatcherHelp);
  sub->add_option("--cp-comm", f->cp_comm,
                  "p2p (default) | a2a: how layouts with CP > 1 exchange attention's inputs (as perf train; emits "
                  "--cp-comm-type a2a)");
  sub->add_option("--cuda-graphs", f->cuda_graphs, kCudaGraphsHelp);
  sub->add_flag("--offload", f->offload,
                "Also consider CPU activation offloading on PP 1 layouts where nothing fits without recompute (needs "
                "pinned host memory; emits --cpu-offloading-num-layers)");
  sub->add_option("--host-memory", f->host_memory, kHostMemoryHelp);
  sub->add_flag("--no-nvls", f->no_nvls,
                "All-reduce as a ring, without NVLink SHARP's in-switch reduction (as NCCL_NVLS_ENABLE=0)");
  sub->add_option("--emit", f->emit, "Launch configuration: megatron | torchrun | deepspeed | slurm | k8s | all");
  sub->add_option("--out-dir", f->out_dir, "Write the launch files here instead of printing them");
  return [ctx, f]() -> int {
    auto job = LoadJob(ctx, f->model, f->gpu, f->gpus_per_node, f->inter_node, f->nics_per_node);
    if (!job.ok()) return PrintError(job.status());
    const ModelSpec* model = &job->model;
    const GpuSpec* const* gpu = &job->gpu;
    if (f->no_nvls) job->cluster.nvls = false;
    const Cluster* cluster = &job->cluster;
    const Efficiency* eff = &job->eff;
    auto counts = ParseCounts(f->gpus);
    if (!counts.ok()) return PrintError(counts.status());
    auto obj = ParseObjective(f->objective);
    if (!obj.ok()) return PrintError(obj.status());
    PlanRequest req;
    req.model = &*model;
    req.cluster = *cluster;
    req.eff = *eff;
    req.gpu_counts = *counts;
    req.global_batch = f->global_batch;
    req.seq = f->seq;
    req.tokens = f->tokens;
    req.price_per_gpu_hour = f->price;
    req.objective = *obj;
    req.top_k = f->top;
    req.threads = f->threads;
    req.dp_overlap = !f->no_dp_overlap;
    req.dp_bucket_bytes = f->dp_bucket_mb * kMiB;
    req.tp_overlap = f->tp_overlap;
    req.ep_overlap = f->ep_overlap;
    if (!f->moe_dispatcher.empty()) {
      auto d = ParseMoeDispatcher(f->moe_dispatcher);
      if (!d.ok()) return PrintError(d.status());
      if (!model->moe)
        return PrintError(InvalidArgument(fmt::format(
            "--moe-dispatcher sets how tokens reach experts on other GPUs: it needs an MoE model ({} is dense)",
            model->id)));
      req.moe_dispatcher = *d;
    }
    if (!f->cuda_graphs.empty()) {
      auto g = ParseCudaGraphs(f->cuda_graphs);
      if (!g.ok()) return PrintError(g.status());
      req.cuda_graphs = *g;
    }
    if (!f->cp_comm.empty()) {
      auto cc = ParseCpComm(f->cp_comm);
      if (!cc.ok()) return PrintError(cc.status());
      req.cp_comm = *cc;
    }
    req.allow_offload = f->offload;
    auto host = ParseHostMemoryFlag(f->host_memory);
    if (!host.ok()) return PrintError(host.status());
    if (*host > 0 && !f->offload) return PrintError(InvalidArgument("--host-memory applies to --offload"));
    req.host_memory_per_gpu_bytes = *host;
    auto dtype = ParseTrainDtype(f->dtype);
    if (!dtype.ok()) return PrintError(dtype.status());
    if (*dtype == Precision::kFp16)
      return PrintError(InvalidArgument("plan --dtype fp16 is not searched: use bf16, fp8 or fp4 (perf train prices fp16)"));
    req.dtype = *dtype;
    req.fp8_params = f->fp8_params;
    if (!f->fp8_recipe.empty()) {
      if (req.dtype != Precision::kFp8) return PrintError(InvalidArgument("--fp8-recipe needs --dtype fp8"));
      auto recipe = ParseFp8Recipe(f->fp8_recipe);
      if (!recipe.ok()) return PrintError(recipe.status());
      req.fp8_recipe = *recipe;
    }
    auto attn = ParseAttentionImpl(f->attention);
    if (!attn.ok()) return PrintError(attn.status());
    req.attention = *attn;
    auto ce = ParseCrossEntropyImpl(f->cross_entropy);
    if (!ce.ok()) return PrintError(ce.status());
    req.cross_entropy = *ce;
    req.mtp_layers = f->mtp_layers;
    req.eager = f->eager;
    {
      FitRequest opt;
      if (auto st = ApplyOptimizerPrecision(opt, f->master_dtype, f->moments_dtype, false); !st.ok())
        return PrintError(st);
      req.master = opt.master;
      req.moments = opt.moments;
    }
    req.fixed_tp = f->tp;
    req.fixed_pp = f->pp;
    req.fixed_cp = f->cp;
    req.fixed_ep = f->ep;
    req.fixed_zero = f->zero;
    if (!f->emit.empty() && f->emit != "megatron" && f->emit != "torchrun" && f->emit != "deepspeed" &&
        f->emit != "slurm" && f->emit != "k8s" && f->emit != "all")
      return PrintError(InvalidArgument("--emit must be megatron, torchrun, deepspeed, slurm, k8s or all"));
    // Where the launch files go is checked before the search, so a bad --out-dir costs nothing and is named as such.
    if (!f->out_dir.empty()) {
      if (f->emit.empty()) return PrintError(InvalidArgument("--out-dir holds the launch files: give --emit too"));
      std::error_code ec;
      if (std::filesystem::exists(f->out_dir, ec) && !std::filesystem::is_directory(f->out_dir, ec))
        return PrintError(InvalidArgument(fmt::format("--out-dir {}: exists and is not a directory", f->out_dir)));
      std::filesystem::create_directories(f->out_dir, ec);
      if (!std::filesystem::is_directory(f->out_dir, ec))
        return PrintError(InvalidArgument(
            fmt::format("--out-dir {}: cannot create it: {}", f->out_dir, ec ? ec.message() : "unknown error")));
    }
    // Launch files say what the estimate assumed: an optimizer precision the stack cannot run is refused up front.
    if (!f->emit.empty() && f->emit != "deepspeed") {
      if (auto st = CheckMegatronOptimizer(req.master, req.moments); !st.ok()) return PrintError(st);
    }
    if ((f->emit == "deepspeed" || f->emit == "all") &&
        (req.master != MasterCopy::kFp32 || req.moments != MomentsDtype::kFp32))
      return PrintError(InvalidArgument(
          "--emit deepspeed: DeepSpeed's bf16 ZeRO optimizer keeps FP32 master weights and FP32 moments; drop "
          "--master-dtype and --moments-dtype, or emit megatron"));
    auto res = Plan(req);
    if (!res.ok()) return PrintError(res.status());
    const PlanForCount* best_count = nullptr;
    for (const auto& c : res->counts)
      if (!c.top.empty() && (!best_count || c.top[0].score < best_count->top[0].score)) best_count = &c;

    if (ctx->options().json) {
      json j = JsonEnvelope("suanli.plan/1");
      j["model"] = model->id;
      j["gpu"] = (*gpu)->id;
      j["objective"] = f->objective;
      j["configs_evaluated"] = res->configs_evaluated;
      j["configs_valid"] = res->configs_valid;
      j["elapsed_s"] = res->elapsed_s;
      j["threads"] = res->threads;
      j["counts"] = json::array();
      for (const auto& c : res->counts) {
        json e = {{"gpus", c.gpus}, {"configs_evaluated", c.configs_evaluated}, {"configs_valid", c.configs_valid},
                  {"scaling_efficiency", c.scaling_efficiency}, {"top", json::array()},
                  {"within_resolution_of_best", WithinResolution(c.top)}, {"rank_resolution", kRankResolution}};
        for (const auto& t : c.top) e["top"].push_back(CandidateJson(t));
        if (!c.nearest_miss.empty()) e["nearest_miss"] = c.nearest_miss;
        j["counts"].push_back(e);
      }
      j["top"] = best_count ? j["counts"][best_count - res->counts.data()]["top"] : json::array();
      j["network"] = NetworkJson(DescribeNetwork(*cluster, *eff),
                                 *std::max_element(counts->begin(), counts->end()) > cluster->gpus_per_node);
      j["validation_error"] = {
          {"step_time_s", model->moe ? nlohmann::json(nullptr) : BandJson(evidence::kTrainingError, **gpu)}};
      PrintJson(j);
      return best_count ? kExitOk : kExitNoFit;
    }
    std::cout << fmt::format("{} on {} ({} per node, {}), global batch {} x {} tokens, objective {}\n", model->id,
                             (*gpu)->id, cluster->gpus_per_node, cluster->inter_name, f->global_batch, f->seq, f->objective);
    {
      const NetworkSummary net = DescribeNetwork(*cluster, *eff);
      std::cout << "intra-node: " << IntraNodeWords(net, f->gpus_per_node > 0 ? "" : (*gpu)->id) << "\n";
      if (*std::max_element(counts->begin(), counts->end()) > cluster->gpus_per_node)
        std::cout << "inter-node: " << InterNodeWords(net, f->inter_node.empty() ? (*gpu)->id : "") << "\n";
    }
    std::cout << fmt::format("searched {} configurations ({} fit memory) in {:.3f} s on {} threads\n\n",
                             res->configs_evaluated, res->configs_valid, res->elapsed_s, res->threads);
    for (const auto& c : res->counts) {
      if (res->counts.size() > 1) std::cout << fmt::format("== {} GPUs ==\n", c.gpus);
      if (c.top.empty()) {
        std::cout << "no configuration fits: " << (c.nearest_miss.empty() ? "no valid layout" : c.nearest_miss)
                  << "\n\n";
        continue;
      }
      Table t({"#", "layout", "mb", "recompute", "step", "MFU", "tok/s/GPU", "memory", "why"});
      int i = 1;
      for (const auto& x : c.top) {
        t.Row({std::to_string(i++), Layout(x), std::to_string(x.micro_batch),
               x.recompute_layers > 0 ? fmt::format("full/{}", x.recompute_layers)
               : NamesRecomputeModules(x.recompute, x.recompute_modules)
                   ? "selective/" + RecomputeModulesList(x.recompute_modules)
                   : std::string(RecomputeName(x.recompute)),
               FormatSeconds(x.result.step_time_s), fmt::format("{:.1f}%", 100 * x.result.mfu),
               fmt::format("{:.0f}", x.result.tokens_per_s_per_gpu), FormatBytes(x.result.memory.per_gpu_peak_bytes),
               x.why});
      }
      std::cout << t.Render();
      const int close = WithinResolution(c.top);
      if (close > 1)
        std::cout << fmt::format(
            "note: #2-#{} are within {:.0f}% of #1, closer than the model resolves: on the one job published "
            "two ways ({} pairs, Korthikanti et al. 2022, selective against full recompute) its ratio of the two "
            "step times was off by {:.1f}-{:.1f}%. Prefer the simplest of them, or measure.\n",
            close, 100 * kRankResolution, evidence::kSameJobRatio.cases, 100 * std::fabs(evidence::kSameJobRatio.hi),
            100 * std::fabs(evidence::kSameJobRatio.lo));
      if (c.top[0].result.train_time_s > 0)
        std::cout << fmt::format("time to train: {} ({:.0f} GPU-hours{})\n", FormatSeconds(c.top[0].result.train_time_s),
                                 c.top[0].result.gpu_hours,
                                 c.top[0].result.cost_usd > 0 ? fmt::format(", ${:.0f}", c.top[0].result.cost_usd) : "");
      if (res->counts.size() > 1) std::cout << fmt::format("scaling efficiency vs the smallest count: {:.0f}%\n", 100 * c.scaling_efficiency);
      std::cout << "\n";
    }
    if (model->moe) {
      const auto& e = evidence::kMoeTrainingHoldout;
      std::cout << fmt::format(
          "uncertain: MoE step times carry a calibrated MoE-layer overhead; against {} held-out Megatron-Core runs "
          "the model's throughput was {:+.0f}% to {:+.0f}% off, positive meaning too fast (docs/validation.md section 5); "
          "the ranking of layouts is less certain too\n",
          e.cases, 100 * e.lo, 100 * e.hi);
    } else {
      std::cout << "step times validated against published runs (docs/validation.md): "
                << BandWords("", evidence::kTrainingError, "dense-model training runs", **gpu) << "\n";
      // The winner's caveats for its class of configuration (FP8, 16-bit on H100, eager FSDP), as `perf train` gives them.
      if (best_count)
        for (const auto& n : best_count->top[0].result.notes)
          if (n.rfind("uncertain:", 0) == 0) std::cout << "note: " << n << "\n";
    }
    if (!best_count) return kExitNoFit;
    if (!f->emit.empty()) {
      const PlanCandidate& w = best_count->top[0];
      LaunchContext lc;
      lc.model = &*model;
      lc.gpu = *gpu;
      lc.gpus_per_node = cluster->gpus_per_node;
      lc.gpus_per_host = f->gpus_per_host > 0 ? std::min(f->gpus_per_host, cluster->gpus_per_node)
                                              : HardwareCatalog::GpusPerHost(**gpu, cluster->gpus_per_node);
      lc.global_batch = f->global_batch;
      lc.seq = f->seq;
      lc.fp8_recipe = req.fp8_recipe;
      lc.fp8_params = req.fp8_params;
      lc.cuda_graphs = req.cuda_graphs;
      lc.cross_entropy = req.cross_entropy;
      lc.mtp_layers = req.mtp_layers;
      lc.dp_bucket_bytes = req.dp_bucket_bytes;
      lc.master = req.master;
      lc.moments = req.moments;
      if (f->tokens > 0) lc.train_iters = f->tokens / (double(f->global_batch) * f->seq);
      std::vector<std::pair<std::string, std::string>> files;
      if (f->emit == "megatron" || f->emit == "all") files.push_back({"megatron_args.txt", MegatronArgs(w, lc)});
      if (f->emit == "torchrun" || f->emit == "all") files.push_back({"torchrun.sh", TorchrunCommand(w, lc)});
      if (f->emit == "deepspeed" || f->emit == "all") {
        // DeepSpeed's pipeline engine takes ZeRO 0 or 1 only: where the winner needs more, the fastest layout it runs
        // (DeepSpeedConfig writes stage 1 and a warning if the search finds none).
        const PlanCandidate* ds = &w;
        Result<PlanResult> ds_plan = InvalidArgument("not searched");
        if (!DeepSpeedRuns(w.par.pp, w.par.zero)) {
          PlanRequest dreq = req;
          dreq.deepspeed_runnable = true;
          dreq.gpu_counts = {w.par.gpus()};
          dreq.top_k = 1;
          ds_plan = Plan(dreq);
          if (ds_plan.ok() && !ds_plan->counts.empty() && !ds_plan->counts[0].top.empty()) {
            ds = &ds_plan->counts[0].top[0];
            std::cout << fmt::format(
                "note: --emit deepspeed writes the fastest layout DeepSpeed's pipeline engine runs ({}, step {}); the "
                "winner ({}) uses ZeRO-{} with PP {}, which it refuses\n",
                Layout(*ds), FormatSeconds(ds->result.step_time_s), FormatSeconds(w.result.step_time_s),
                w.par.zero, w.par.pp);
          }
        }
        files.push_back({"deepspeed_config.json", DeepSpeedConfig(*ds, lc)});
      }
      if (f->emit == "slurm" || f->emit == "all") files.push_back({"slurm.sbatch", SlurmScript(w, lc)});
      if (f->emit == "k8s" || f->emit == "all") files.push_back({"pytorchjob.yaml", KubernetesPyTorchJob(w, lc)});
      for (const auto& [name, text] : files) {
        if (f->out_dir.empty()) {
          std::cout << "----- " << name << "\n" << text;
        } else {
          std::error_code ec;
          std::filesystem::create_directories(f->out_dir, ec);
          auto st = detail::WriteFileAtomic(f->out_dir + "/" + name, text);
          if (!st.ok()) return PrintError(st);
          std::cout << "wrote " << f->out_dir << "/" << name << "\n";
        }
      }
    }
    return kExitOk;
  };
}

namespace {
struct SelectFlags {
  std::string model = "llama-3.1-8b", weights = "bf16", kv_dtype = "bf16", inter_node;
  std::string decode_attention = "grouped";
  int64_t input_len = 1024, output_len = 256, users = 16, global_batch = 1024, seq = 4096;
  double rps = 0, ttft_ms = 0, tpot_ms = 0, tokens = 0, deadline_days = 0, budget = 0;
  double request_overhead_ms = 0, step_overhead_ms = 0;
  int gpus_per_node = 0;
  std::string emit;  // select serve --emit ENGINE: the launch line of row --rank
  int rank = 1;
  SpeculationFlags spec;  // select serve: speculative decoding in every replica
};

// Whether published end-to-end runs of this kind (serving or training) were on this GPU (docs/validation.md).
// The bands are over dense models: MoE estimates are never "validated" (their runs are quoted in notes instead).
bool Validated(const SelectRow& r, bool serving, bool moe) {
  if (moe || (serving && r.replica.spec.tokens > 0)) return false;  // no band covers MoE or speculative serving
  if (!serving) return BandCoversGpu(evidence::kTrainingError, r.gpu);
  return BandCoversGpu(evidence::kThroughputDenseError, r.gpu) || BandCoversGpu(evidence::kMaxThroughputError, r.gpu);
}

json RowJson(const SelectRow& r, bool serving, bool moe) {
  return {{"gpu", r.gpu},
          {"validated_end_to_end", Validated(r, serving, moe)},
          {"eligible", r.eligible},
          {"exclusion", r.exclusion},
          {"memory_note", r.memory_note},
          {"gpus", r.gpus},
          {"tp", r.tp},
          {"pp", r.pp},
          {"attention_dp", r.layout.attention_dp},
          {"replicas", r.replicas},
          {"batch_per_replica", r.batch_per_replica},
          {"ttft_s", r.ttft_s},
          {"tpot_s", r.tpot_s},
          {"tokens_per_s", r.output_tokens_per_s},
          {"train_time_s", r.train_time_s},
          {"gpu_hours", r.gpu_hours},
          {"price_per_gpu_hour_usd", r.price_per_gpu_hour},
          {"cost_per_hour_usd", r.cost_per_hour_usd},
          {"cost_usd", r.cost_usd},
          {"cost_per_million_tokens_usd", r.cost_per_million_tokens_usd},
          {"memory_bandwidth_bytes_per_s", r.memory_bandwidth_bytes_per_s},
          {"dense_16bit_flops_per_s", r.peak_flops}};
}
}  // namespace

Action SetupSelect(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<SelectFlags>();
  sub->require_subcommand(1);
  auto* serve = sub->add_subcommand("serve", "Which GPU, how many, for a serving target");
  auto* train = sub->add_subcommand("train", "Which GPU, how many, for a training job");
  for (CLI::App* a : {serve, train}) {
    a->add_option("--model,-m", f->model, "Model id, alias or HF config.json")->capture_default_str();
    a->add_option("--gpus-per-node", f->gpus_per_node,
                  "GPUs per node (one NVLink domain); default: each GPU's reference system's (72 for GB200 NVL72, "
                  "counted in 4-GPU hosts), else 8")->check(NodeCount());
  }
  serve->add_option("--weights", f->weights, "Weight format (bf16, fp8, int8, int4, ...)")->capture_default_str();
  serve->add_option("--kv-dtype", f->kv_dtype, "KV-cache dtype")->capture_default_str();
  serve->add_option("--decode-attention", f->decode_attention, kDecodeAttentionHelp)->capture_default_str();
  serve->add_option("--input-len", f->input_len, "Prompt tokens")->capture_default_str();
  serve->add_option("--output-len", f->output_len, "Generated tokens")->capture_default_str();
  serve->add_option("--users", f->users, "Concurrent sequences")->capture_default_str();
  serve->add_option("--rps", f->rps, "Requests per second (raises the concurrency by Little's law)")->check(Positive());
  serve->add_option("--ttft-ms", f->ttft_ms, "Time-to-first-token objective, ms")->check(Positive());
  serve->add_option("--tpot-ms", f->tpot_ms, "Time-per-output-token objective, ms")->check(Positive());
  serve->add_option("--request-overhead-ms", f->request_overhead_ms,
                    "Serving engine's host time per request, added to the TTFT (as perf infer)")
      ->capture_default_str();
  serve->add_option("--step-overhead-ms", f->step_overhead_ms,
                    "Serving engine's host time per forward pass, added to prefill and each decode step")
      ->capture_default_str();
  AddSpeculationOptions(serve, &f->spec);
  auto* emit = serve->add_option(
      "--emit", f->emit, "Launch line for one replica of a ranked GPU: vllm (vllm serve) | trtllm (trtllm-serve) | sglang");
  serve->add_option("--rank", f->rank, "The ranking's row --emit writes the line for (1 = the top)")
      ->capture_default_str()
      ->needs(emit);
  train->add_option("--tokens", f->tokens, "Tokens to train")->required();
  train->add_option("--global-batch", f->global_batch, "Sequences per step")->capture_default_str();
  train->add_option("--seq,-s", f->seq, "Sequence length")->capture_default_str();
  train->add_option("--deadline-days", f->deadline_days, "Finish within this many days")->check(Positive());
  train->add_option("--budget", f->budget, "USD budget")->check(Positive());
  train->add_option("--inter-node", f->inter_node, "Fabric between nodes (default: each GPU's reference system's, as `suanli gpus GPU` shows; else ib-ndr)")->check(NonEmpty());
  return [ctx, f, serve]() -> int {
    auto mc = ctx->models();
    if (!mc.ok()) return PrintError(mc.status());
    auto hw = ctx->hardware();
    if (!hw.ok()) return PrintError(hw.status());
    auto model = (*mc)->Resolve(f->model);
    if (!model.ok()) return PrintError(model.status());
    const bool serving = serve->parsed();
    Result<std::vector<SelectRow>> rows = Internal("not run");
    std::optional<ServeEngine> engine;
    if (serving && !f->emit.empty()) {
      auto e = ParseServeEngine(f->emit);
      if (!e.ok()) return PrintError(e.status());
      engine = *e;
    }
    if (f->rank < 1) return PrintError(InvalidArgument(fmt::format("--rank {}: rows are numbered from 1", f->rank)));
    if (serving) {
      ServeTarget t;
      t.model = &*model;
      auto wf = ParseWeightFormat(f->weights);
      if (!wf.ok()) return PrintError(wf.status());
      t.weights = *wf;
      auto kv = ParseKvDtype(f->kv_dtype);
      if (!kv.ok()) return PrintError(kv.status());
      t.kv_bytes_per_elem = *kv;
      auto da = ParseDecodeAttention(f->decode_attention);
      if (!da.ok()) return PrintError(da.status());
      t.decode_attention = *da;
      t.input_len = f->input_len;
      t.output_len = f->output_len;
      t.concurrent_users = f->users;
      t.requests_per_s = f->rps;
      t.ttft_slo_s = f->ttft_ms / 1000;
      t.tpot_slo_s = f->tpot_ms / 1000;
      t.request_overhead_s = f->request_overhead_ms / 1000;
      t.step_overhead_s = f->step_overhead_ms / 1000;
      t.gpus_per_node = f->gpus_per_node;
      auto spec = ParseSpeculation(ctx, f->spec);
      if (!spec.ok()) return PrintError(spec.status());
      t.spec = *std::move(spec);
      rows = SelectForServing(**hw, t);
    } else {
      TrainTarget t;
      t.model = &*model;
      t.tokens = f->tokens;
      t.global_batch = f->global_batch;
      t.seq = f->seq;
      t.deadline_s = f->deadline_days * 86400;
      t.budget_usd = f->budget;
      t.gpus_per_node = f->gpus_per_node;
      t.inter_node = f->inter_node;
      rows = SelectForTraining(**hw, t);
    }
    if (!rows.ok()) return PrintError(rows.status());
    // --emit: the launch line of one replica of the row numbered --rank in the table (eligible rows only).
    std::string launch;
    const SelectRow* emitted = nullptr;
    if (engine) {
      std::vector<const SelectRow*> eligible;
      for (const auto& r : *rows)
        if (r.eligible) eligible.push_back(&r);
      if (f->rank > static_cast<int>(eligible.size()))
        return PrintError(InvalidArgument(fmt::format("--rank {}: {} GPU(s) meet the target; choose 1 to {}", f->rank,
                                                      eligible.size(), eligible.size())));
      emitted = eligible[f->rank - 1];
      auto ref = ServingModelRef(ctx, f->model, *model);
      if (!ref.ok()) return PrintError(ref.status());
      auto g = (*hw)->FindGpu(emitted->gpu);
      if (!g.ok()) return PrintError(g.status());
      auto cmd = ServeCommand(*engine, *model, **g, *ref, emitted->replica, emitted->replica_result, false);
      if (!cmd.ok()) return PrintError(cmd.status());
      launch = fmt::format("# select serve #{}: {}, {} replica(s) of this line on {} GPU(s) in all, behind a load "
                           "balancer\n{}",
                           f->rank, emitted->gpu, emitted->replicas, emitted->gpus, *cmd);
    }
    const bool moe = model->moe.has_value();
    // The footnotes: what the validation says of these rows, for the table and for --json.
    std::vector<std::string> notes;
    if (serving && f->spec.spec.tokens > 0)
      notes.push_back(fmt::format(
          "validated: none end to end with speculative decoding. At the published acceptance length its speed-up was "
          "{:+.1f}% to {:+.1f}% off TensorRT-LLM's MTP and {:+.0f}% to {:+.0f}% off EAGLE in vLLM and SGLang "
          "(docs/validation.md section 5), so the TPOTs are likely low and the ranking less certain.",
          100 * evidence::kSpeculativeMtpTrtllm.lo, 100 * evidence::kSpeculativeMtpTrtllm.hi,
          100 * evidence::kSpeculativeEagle.lo, 100 * evidence::kSpeculativeEagle.hi));
    else if (moe && serving)
      notes.push_back(
          "validated: none for a mixture-of-experts model. Against published MoE serving runs the model was mostly "
          "too fast (docs/validation.md section 5), so these times are likely lower bounds and the ranking is less "
          "certain.");
    else if (moe)
      notes.push_back(fmt::format(
          "validated: none end to end for a mixture-of-experts model. Its MoE layers carry a calibrated overhead; "
          "against {} held-out Megatron-Core MoE training runs the model was {:+.0f}% to {:+.0f}% off, and up to "
          "{:+.0f}% on an older stack (docs/validation.md section 5), so the ranking is less certain.",
          evidence::kMoeTrainingHoldout.cases, 100 * evidence::kMoeTrainingHoldout.lo,
          100 * evidence::kMoeTrainingHoldout.hi, 100 * evidence::kMoeTrainingMegatronBridge2511.hi));
    else
      notes.push_back(fmt::format(
          "validated: published end-to-end {} runs on that GPU are in the validation set (docs/validation.md). The "
          "others are estimated with the same model from micro-benchmark fractions or stated assumptions "
          "(data/efficiency.toml), untested end to end.",
          serving ? "serving (static batches or full load)" : "training"));
    // Classes of held-out training runs the model was optimistic on (perf train's notes): those rows' times and
    // costs are likely low, so they may rank too high.
    auto optimistic_on = [&](auto on_gpu, const ValidationEvidence& e, std::string_view runs, std::string_view rows_of) {
      if (serving || moe ||
          std::none_of(rows->begin(), rows->end(), [&](const SelectRow& r) { return r.eligible && on_gpu(r.gpu); }))
        return;
      notes.push_back(fmt::format(
          "uncertain: on {} published {} the model was {:+.0f}% to {:+.0f}% off (mean {:+.0f}% too fast; "
          "docs/validation.md section 5): {} times and costs are likely low, and they may rank higher than they "
          "should.",
          e.cases, runs, 100 * e.lo, 100 * e.hi, 100 * e.mean, rows_of));
    };
    optimistic_on(evidence::IsH100Gpu, evidence::kH100Bf16FusedTraining, "16-bit training runs of fused stacks on H100",
                  "the H100 rows'");
    optimistic_on(evidence::IsBlackwellTrainingGpu, evidence::kBlackwellDenseTraining,
                  "dense-model training runs on B200 and GB200", "the B200 and GB200 rows'");
    optimistic_on(evidence::IsAmdInstinctGpu, evidence::kAmdInstinctTraining,
                  "dense-model training runs on MI300X (torchtitan; with MI300X's measured rates)",
                  "the AMD Instinct rows'");
    // Serving on AMD Instinct: the measured latency was longer than predicted (signed on the time).
    if (serving && !moe && std::any_of(rows->begin(), rows->end(), [&](const SelectRow& r) {
          return r.eligible && evidence::IsAmdInstinctGpu(r.gpu);
        })) {
      const auto& e = evidence::kAmdInstinctServingLatency;
      notes.push_back(fmt::format(
          "uncertain: on {} published vLLM latency runs on MI300X (LLaMA 3.1 70B and 405B FP8, 8 GPUs) the measured "
          "time was {:.0f}% to {:.0f}% longer than the model's (mean {:.0f}%; docs/validation.md section 5): the AMD "
          "Instinct rows' latencies are likely low, and they may rank higher than they should.",
          e.cases, 100 * e.lo, 100 * e.hi, 100 * e.mean));
    }
    if (ctx->options().json) {
      json j = JsonEnvelope(serving ? "suanli.select.serve/1" : "suanli.select.train/1");
      j["model"] = model->id;
      j["ranking"] = json::array();
      for (const auto& r : *rows) j["ranking"].push_back(RowJson(r, serving, model->moe.has_value()));
      j["notes"] = notes;
      if (emitted)
        j["launch"] = {{ServeEngineName(*engine), launch}, {"rank", f->rank}, {"gpu", emitted->gpu},
                       {"replicas", emitted->replicas}};
      PrintJson(j);
      return kExitOk;
    }
    std::cout << "Ranked by memory fit, then bandwidth and compute (latency or time), then cost. Prices are indicative "
                 "(catalog on-demand USD per GPU-hour).\n\n";
    Table t(serving ? std::vector<std::string>{"#", "gpu", "validated", "GPUs", "replica", "TTFT", "TPOT", "out tok/s",
                                               "$/h", "$/M tokens", "memory"}
                    : std::vector<std::string>{"#", "gpu", "validated", "GPUs", "layout", "time", "GPU-hours", "cost",
                                               "memory"});
    int i = 1;
    for (const auto& r : *rows) {
      if (!r.eligible) continue;
      const std::string cost_h = r.price_per_gpu_hour > 0 ? fmt::format("{:.2f}", r.cost_per_hour_usd) : "n/a";
      if (serving) {
        t.Row({std::to_string(i++), r.gpu, Validated(r, true, moe) ? "yes" : "-", std::to_string(r.gpus),
               fmt::format("{} x TP={}{}{} batch {}", r.replicas, r.tp, r.pp > 1 ? fmt::format(" PP={}", r.pp) : "",
                           r.layout.attention_dp > 1 ? fmt::format(" attention-DP={}", r.layout.attention_dp) : "",
                           r.batch_per_replica),
               FormatSeconds(r.ttft_s), FormatSeconds(r.tpot_s), fmt::format("{:.0f}", r.output_tokens_per_s), cost_h,
               r.price_per_gpu_hour > 0 ? fmt::format("{:.3f}", r.cost_per_million_tokens_usd) : "n/a",
               r.memory_note});
      } else {
        t.Row({std::to_string(i++), r.gpu, Validated(r, false, moe) ? "yes" : "-", std::to_string(r.gpus),
               fmt::format("TP={} PP={} DP={}{}", r.layout.tp, r.layout.pp, r.layout.dp,
                           r.layout.zero ? fmt::format(" ZeRO-{}", r.layout.zero) : ""),
               FormatSeconds(r.train_time_s), fmt::format("{:.0f}", r.gpu_hours),
               r.price_per_gpu_hour > 0 ? fmt::format("${:.0f}", r.cost_usd) : "n/a", r.memory_note});
      }
    }
    std::cout << t.Render();
    for (const auto& n : notes) std::cout << n << "\n";
    bool any = false;
    for (const auto& r : *rows) {
      if (r.eligible) continue;
      if (!any) std::cout << "\nexcluded:\n";
      any = true;
      std::cout << "  " << r.gpu << ": " << r.exclusion << "\n";
    }
    if (emitted) std::cout << "\nlaunch (" << ServeEngineName(*engine) << "):\n" << launch;
    return kExitOk;
  };
}

}  // namespace suanli::cli
