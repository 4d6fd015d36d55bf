// `suanli fit`: memory per GPU and whether it fits.
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "suanli/memory.h"
#include "suanli/perf.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {

using json = nlohmann::json;

struct FitFlags {
  std::string model = "llama-3.1-8b";
  std::string gpu;
  int gpus = 0;
  std::string mode = "infer";
  std::string weights = "bf16";
  std::string kv_dtype = "bf16";
  std::string dtype = "bf16", fp8_recipe;  // training: the GEMMs' precision; fp8 with Transformer Engine
  bool no_fp8_weight_cache = false;
  int64_t batch = 1;
  int64_t seq = 4096;
  int64_t micro_batch = 1;
  int tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, etp = 0, attention_dp = 1, zero = 0, interleave = 1, recompute_layers = 0,
      offload_layers = 0;
  bool sequence_parallel = false, embedding_loss_in_split = false;
  std::string recompute, recompute_modules, pp_layout;
  int mtp_layers = 0;  // recompute empty: none, or selective when modules are given
  std::string optimizer = "adam";
  bool fp32_grads = false;
  bool swiglu_fp8 = false;
  bool no_master = false;
  std::string master_dtype, moments_dtype;
  bool no_flash = false;
  bool dropout = false;
  int lora_rank = 16;
  double lora_dropout = 0;
  std::vector<std::string> lora_targets;
  bool no_checkpointing = false;
  std::string host_memory;
  bool quantize_head = false, replicated_embeddings = false, no_sliding_window = false;
  double cuda_context_gib = 0.5;
  double fragmentation = 0.10;
};

Result<FitRequest> BuildRequest(const FitFlags& f, const ModelSpec& m) {
  FitRequest r;
  SUANLI_ASSIGN_OR_RETURN(r.mode, ParseMode(f.mode));
  SUANLI_ASSIGN_OR_RETURN(r.weights, ParseWeightFormat(f.weights));
  SUANLI_ASSIGN_OR_RETURN(r.kv_bytes_per_elem, ParseKvDtype(f.kv_dtype));
  if (!f.recompute_modules.empty()) {
    SUANLI_ASSIGN_OR_RETURN(r.recompute_modules, ParseRecomputeModules(f.recompute_modules));
  }
  r.recompute = f.recompute_modules.empty() ? Recompute::kNone : Recompute::kSelective;
  if (!f.recompute.empty()) {
    SUANLI_ASSIGN_OR_RETURN(r.recompute, ParseRecompute(f.recompute));
  }
  r.recompute_layers = f.recompute_layers;
  r.offload_layers = f.offload_layers;
  r.quantize_head = f.quantize_head;
  r.replicated_embeddings = f.replicated_embeddings;
  SUANLI_ASSIGN_OR_RETURN(r.host_memory_per_gpu_bytes, ParseHostMemoryFlag(f.host_memory));
  if (r.host_memory_per_gpu_bytes > 0 && r.offload_layers == 0)
    return InvalidArgument("--host-memory applies to --offload-layers");
  SUANLI_ASSIGN_OR_RETURN(r.optimizer, ParseOptimizer(f.optimizer));
  r.batch = f.batch;
  r.seq = f.seq;
  r.micro_batch = f.micro_batch;
  r.par.tp = f.tp;
  r.par.pp = f.pp;
  r.par.cp = f.cp;
  r.par.ep = f.ep;
  r.par.etp = f.etp;
  r.par.attention_dp = f.attention_dp;
  r.par.zero = f.zero;
  r.par.interleave = f.interleave;
  r.par.embedding_loss_in_split = f.embedding_loss_in_split;
  r.par.sequence_parallel = f.sequence_parallel;
  if (!f.pp_layout.empty()) SUANLI_RETURN_IF_ERROR(ApplyPipelineLayout(r.par, f.pp_layout));
  r.mtp_layers = f.mtp_layers;
  if (f.tp < 1 || f.pp < 1 || f.cp < 1) return InvalidArgument("--tp, --pp and --cp must be at least 1");
  const int model_parallel = f.tp * f.pp * f.cp;
  if (f.dp > 0) {
    r.par.dp = f.dp;
    if (f.gpus > 0 && f.gpus != model_parallel * f.dp)
      return InvalidArgument(fmt::format("--gpus {} contradicts TP x PP x CP x DP = {} x {} x {} x {} = {}", f.gpus, f.tp,
                                         f.pp, f.cp, f.dp, model_parallel * f.dp));
  } else if (f.gpus > 0) {
    if (f.gpus % model_parallel != 0)
      return InvalidArgument(fmt::format("--gpus {} is not divisible by TP x PP x CP = {}; valid GPU counts are "
                                         "multiples of {}",
                                         f.gpus, model_parallel, model_parallel));
    r.par.dp = f.gpus / model_parallel;
  } else {
    r.par.dp = 1;
  }
  if (r.mode == Mode::kTrain && f.batch == 1 && r.par.dp * f.micro_batch > 1) {
    r.batch = r.par.dp * f.micro_batch;  // default global batch: one micro-batch per rank
  }
  r.fp32_grads = f.fp32_grads;
  r.swiglu_input_fp8 = f.swiglu_fp8;
  SUANLI_ASSIGN_OR_RETURN(const Precision dtype, ParseTrainDtype(f.dtype));
  r.fp8_activations = QuantizedTraining(dtype);  // NVFP4's kept inputs counted at FP8's byte (perf train does too)
  if (dtype != Precision::kBf16 && r.mode != Mode::kTrain && r.mode != Mode::kLora)
    return InvalidArgument(fmt::format("--dtype {} sets the training GEMMs' precision (--mode train or lora), not "
                                       "--mode {}; serving in FP8 is --weights fp8 --kv-dtype fp8, in 16 bits --weights "
                                       "bf16 or fp16",
                                       f.dtype, ModeName(r.mode)));
  if (r.fp8_activations && r.weights.id != "bf16" && r.weights.id != "fp16" && r.weights.id != "fp32" &&
      r.weights.id != "fp8" && !(dtype == Precision::kFp4 && r.weights.id == "nvfp4"))
  {
    const bool fp4 = dtype == Precision::kFp4;
    return InvalidArgument(fmt::format("--dtype {} with --weights {}: Transformer Engine's {} training casts 16- or "
                                       "32-bit weights, or keeps {} ones (--weights {}); quantised base weights are "
                                       "QLoRA's (--mode qlora) or serving's",
                                       f.dtype, r.weights.id, fp4 ? "NVFP4" : "FP8", fp4 ? "NVFP4" : "FP8",
                                       fp4 ? "nvfp4" : "fp8"));
  }
  if (r.mode == Mode::kTrain && r.weights.id == "nvfp4" && dtype != Precision::kFp4)
    return InvalidArgument("--weights nvfp4 in full training is NVFP4 parameters (Megatron-Core --fp4-param-gather): "
                           "it needs --dtype fp4");
  if (!f.fp8_recipe.empty() && dtype != Precision::kFp8) return InvalidArgument("--fp8-recipe needs --dtype fp8");
  if (f.no_fp8_weight_cache && !r.fp8_activations)
    return InvalidArgument("--no-fp8-weight-cache needs --dtype fp8 or fp4");
  if (dtype == Precision::kFp4 && r.weights.id == "fp8")
    return InvalidArgument("--weights fp8 (FP8 parameters) with --dtype fp4: NVFP4 training keeps 16-bit weights "
                           "(cast each step) or NVFP4 parameters (--weights nvfp4)");
  SUANLI_RETURN_IF_ERROR(ApplyOptimizerPrecision(r, f.master_dtype, f.moments_dtype, f.no_master));
  r.flash_attention = !f.no_flash;
  r.dropout = f.dropout;
  r.lora_rank = f.lora_rank;
  r.lora_dropout = f.lora_dropout;
  if (!f.lora_targets.empty()) r.lora_targets = f.lora_targets;
  r.gradient_checkpointing = !f.no_checkpointing;
  if (f.cuda_context_gib < 0 || f.cuda_context_gib > 64) return InvalidArgument("--cuda-context-gib must be within 0..64");
  if (f.fragmentation < 0 || f.fragmentation > 1) return InvalidArgument("--fragmentation must be within 0..1");
  r.overhead.cuda_context_bytes = f.cuda_context_gib * kGiB;
  r.overhead.fragmentation = f.fragmentation;
  (void)m;
  return r;
}

std::string Layout(const Parallelism& p) {
  std::string s = fmt::format("TP={} PP={} DP={}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" CP={}", p.cp);
  if (p.ep > 1) s += fmt::format(" EP={}", p.ep);
  if (p.attention_dp > 1) s += fmt::format(", attention DP={} at TP {}", p.attention_dp, p.attention_tp());
  if (p.zero > 0) s += fmt::format(" ZeRO-{}", p.zero);
  return s;
}

json LayoutJson(const Parallelism& p) {
  return {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}, {"attention_dp", p.attention_dp},
          {"zero", p.zero},
          {"sequence_parallel", p.sequence_parallel}, {"gpus", p.gpus()}};
}

}  // namespace

Action SetupFit(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<FitFlags>();
  sub->add_option("--model,-m", f->model, "Model id, alias or path to a HF config.json")->capture_default_str();
  sub->add_option("--gpu,-g", f->gpu, "GPU id or alias; 'all' or omitted: a table across the catalog");
  sub->add_option("--gpus", f->gpus, "Total GPUs (DP = GPUs / (TP x PP x CP))")->check(Count());
  sub->add_option("--mode", f->mode, "infer | train | lora | qlora")->capture_default_str();
  sub->add_option("--weights", f->weights,
                  "Weight format: fp32 bf16 fp16 fp8 int8 int4 (gptq/awq) nf4 nf4-nodq q8_0 q4_0 q4_k_m")
      ->capture_default_str();
  sub->add_option("--kv-dtype", f->kv_dtype, "KV-cache dtype: fp32 bf16 fp16 fp8 int8")->capture_default_str();
  sub->add_option("--dtype", f->dtype,
                  "--mode train or lora: bf16 | fp16 | fp8 (Transformer Engine FP8 training: GEMM inputs kept in FP8 for "
                  "the backward pass, and the FP8 weight cache, which depends on the GPU: needs one --gpu) | fp4 (NVFP4: the "
                  "same inputs counted at one byte, an overestimate, and both NVFP4 layouts of every layer weight)")
      ->capture_default_str();
  sub->add_option("--fp8-recipe", f->fp8_recipe, kFp8RecipeHelp);
  sub->add_flag("--no-fp8-weight-cache", f->no_fp8_weight_cache,
                "With --dtype fp8: Transformer Engine keeps no FP8 copy of the weights between micro-batches "
                "(Megatron-Core disable_parameter_transpose_cache=True)");
  sub->add_option("--batch,-b", f->batch, "Inference: concurrent sequences; training: global batch in sequences")
      ->capture_default_str();
  sub->add_option("--seq,--context,-s", f->seq, "Sequence length / context in tokens")->capture_default_str();
  sub->add_option("--micro-batch", f->micro_batch, "Training: sequences per micro-batch")->capture_default_str();
  sub->add_option("--tp", f->tp, "Tensor-parallel degree")->capture_default_str();
  sub->add_option("--pp", f->pp, "Pipeline-parallel degree")->capture_default_str();
  sub->add_option("--dp", f->dp, "Data-parallel degree (default: from --gpus, else 1)")->check(Count());
  sub->add_option("--cp", f->cp, "Context-parallel degree")->capture_default_str();
  sub->add_option("--ep", f->ep, "Expert-parallel degree (MoE)")->capture_default_str();
  sub->add_option("--etp", f->etp, "Expert tensor-parallel degree (MoE; default: TP in training, TP / EP in serving)")
      ->check(NotZero());
  sub->add_option("--attention-dp", f->attention_dp,
                  "Serving an MoE model: attention data parallelism over the TP GPUs (D groups of TP / D GPUs, each "
                  "with its own 1/D of the sequences and their KV cache; docs/methodology.md section 9.7)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--zero", f->zero, "ZeRO stage 0-3 (3 = FSDP full shard)")->capture_default_str();
  sub->add_option("--interleave", f->interleave, "Virtual pipeline stages per GPU")->capture_default_str();
  sub->add_option("--pp-layout", f->pp_layout, kPpLayoutHelp);
  sub->add_option("--mtp-layers", f->mtp_layers, kMtpLayersHelp);
  sub->add_flag("--account-for-embedding-loss", f->embedding_loss_in_split,
                "Count the embedding and the loss as one layer each when splitting layers into pipeline stages "
                "(Megatron-Core's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split)");
  sub->add_flag("--sequence-parallel", f->sequence_parallel, "Megatron sequence parallelism (needs TP > 1)");
  sub->add_option("--recompute", f->recompute, "Activation recompute: none | selective | full | op (torchtitan's per-op checkpointing) (default: none)");
  sub->add_option("--recompute-modules", f->recompute_modules, kRecomputeModulesHelp);
  sub->add_option("--recompute-layers", f->recompute_layers,
                  "With --recompute full: recompute only the first N layers of each pipeline chunk (Megatron-Core "
                  "--recompute-method block --recompute-num-layers N)")
      ->check(NotZero());
  sub->add_option("--offload-layers", f->offload_layers,
                  "--mode train: offload the first N layers' activations to host memory (Megatron-Core "
                  "--cpu-offloading --cpu-offloading-num-layers N; needs --pp 1 and --recompute none)")
      ->check(NotZero());
  sub->add_option("--host-memory", f->host_memory, kHostMemoryHelp);
  sub->add_flag("--quantize-head", f->quantize_head, kQuantizeHeadHelp);
  sub->add_flag("--replicated-embeddings", f->replicated_embeddings, kReplicatedEmbeddingsHelp);
  sub->add_flag("--no-sliding-window", f->no_sliding_window, kNoSlidingWindowHelp);
  sub->add_option("--optimizer", f->optimizer, "adam | adam8bit | sgd")->capture_default_str();
  sub->add_flag("--fp32-grads", f->fp32_grads, "FP32 gradients: 18 B/param Adam (Megatron) instead of 16 (ZeRO paper)");
  sub->add_flag("--activation-func-fp8-input-store", f->swiglu_fp8, kSwigluFp8InputHelp);
  sub->add_flag("--no-master-weights", f->no_master, "No FP32 master copy (pure 16-bit training; = --master-dtype none)");
  AddOptimizerPrecisionOptions(sub, &f->master_dtype, &f->moments_dtype);
  sub->add_flag("--no-flash-attention", f->no_flash, "Store attention scores (s^2 term)");
  sub->add_flag("--dropout", f->dropout, "Store dropout masks (GPT-style training)");
  sub->add_option("--lora-rank", f->lora_rank, "LoRA rank")->capture_default_str();
  sub->add_option("--lora-dropout", f->lora_dropout, kLoraDropoutHelp)->capture_default_str();
  sub->add_option("--lora-targets", f->lora_targets, kLoraTargetsHelp);
  sub->add_flag("--no-gradient-checkpointing", f->no_checkpointing, "Fine-tuning without activation checkpointing");
  sub->add_option("--cuda-context-gib", f->cuda_context_gib, "CUDA context + library handles per GPU, GiB")
      ->capture_default_str();
  sub->add_option("--fragmentation", f->fragmentation, "Allocator slack as a fraction of tensor bytes")
      ->capture_default_str();

  return [ctx, f]() -> int {
    auto mc = ctx->models();
    if (!mc.ok()) return PrintError(mc.status());
    auto hw = ctx->hardware();
    if (!hw.ok()) return PrintError(hw.status());
    auto model = (*mc)->Resolve(f->model);
    if (!model.ok()) return PrintError(model.status());
    if (f->no_sliding_window) model->DisableSlidingWindow();
    auto req = BuildRequest(*f, *model);
    if (!req.ok()) return PrintError(req.status());
    std::vector<const GpuSpec*> gpus;
    const bool all = f->gpu.empty() || f->gpu == "all";
    if (all) {
      for (const auto& g : (*hw)->gpus()) gpus.push_back(&g);
    } else {
      auto g = (*hw)->FindGpu(f->gpu);
      if (!g.ok()) return PrintError(g.status());
      gpus.push_back(*g);
    }
    // FP8 training: the weight cache follows the GPU's FP8 layouts (Hopper keeps a transpose, Blackwell does not).
    // BuildRequest has parsed --dtype already.
    Fp8Recipe recipe = *ParseTrainDtype(f->dtype) == Precision::kFp4 ? Fp8Recipe::kNvfp4 : Fp8Recipe::kDelayed;
    if (req->fp8_activations) {
      if (all)
        return PrintError(InvalidArgument(fmt::format(
            "--dtype {} needs one --gpu: Transformer Engine's weight cache depends on the GPU's FP8 layouts (2 B per "
            "layer weight on Hopper, 1 B on Blackwell) and GPUs without FP4 tensor cores cannot train in NVFP4",
            f->dtype)));
      if (!f->fp8_recipe.empty()) {
        auto r = ParseFp8Recipe(f->fp8_recipe);
        if (!r.ok()) return PrintError(r.status());
        recipe = *r;
      }
      if (auto st = CheckFp8Training(*gpus[0], recipe); !st.ok()) return PrintError(st);
      req->fp8_weight_cache_bytes_per_param =
          f->no_fp8_weight_cache ? 0.0 : Fp8WeightCacheBytesPerParam(*gpus[0], recipe, QuantizedParameters(req->weights.id));
    }
    auto est = EstimateMemory(*model, *req);
    if (!est.ok()) return PrintError(est.status());
    const bool json_out = ctx->options().json;
    const ParamCounts& pc = est->params;

    json j = JsonEnvelope("suanli.fit/1");
    j["model"] = model->id;
    j["mode"] = ModeName(req->mode);
    j["weights"] = req->mode == Mode::kQlora ? "nf4" : req->weights.id;
    if (req->mode == Mode::kTrain || req->mode == Mode::kLora) {
      j["dtype"] = f->dtype;
      if (req->fp8_activations && recipe != Fp8Recipe::kNvfp4) j["fp8_recipe"] = Fp8RecipeName(recipe);
    }
    j["quantize_head"] = req->quantize_head;
    j["replicated_embeddings"] = req->replicated_embeddings;
    j["params_total"] = pc.total;
    j["params_active"] = pc.active;
    j["trainable_params"] = est->trainable_params;
    if (req->mode == Mode::kLora || req->mode == Mode::kQlora) {
      j["lora_rank"] = req->lora_rank;
      j["lora_targets"] = req->lora_targets.empty() ? std::vector<std::string>{"q", "k", "v", "o"} : req->lora_targets;
      j["lora_dropout"] = req->lora_dropout;
    }
    j["kv_cache_bytes_per_token"] = est->kv_cache_bytes_per_token;
    j["layout"] = LayoutJson(req->par);
    j["per_gpu_peak_bytes"] = est->per_gpu_peak_bytes;
    if (req->mode == Mode::kTrain) {
      j["master_dtype"] = MasterCopyName(req->master);
      j["moments_dtype"] = MomentsDtypeName(req->moments);
      j["model_state_bytes_per_param"] = est->bytes_per_param_states;
    }
    j["breakdown_bytes"] = BreakdownJson(est->breakdown);
    j["peak_moment"] = est->peak_moment;
    j["peak_stage"] = est->peak_stage;
    if (!est->ranks.empty()) {
      json ranks = json::array();
      for (const auto& rk : est->ranks)
        ranks.push_back({{"layers", rk.layers}, {"mtp", rk.mtp}, {"in_flight_micro_batches", rk.in_flight_micro_batches},
                         {"peak_bytes", rk.peak_bytes}});
      j["pipeline_ranks"] = ranks;
    }
    if (req->offload_layers > 0) {
      j["offload_layers"] = req->offload_layers;
      j["host_offload_bytes"] = est->host_offload_bytes;
    }
    j["notes"] = est->notes;
    json rows = json::array();
    bool any_fits = false;
    for (const GpuSpec* g : gpus) {
      const FitVerdict v = CheckFit(*est, *g);
      any_fits |= v.fits;
      const MinGpus mg = FindMinGpus(*model, *req, *g);
      json row = {{"gpu", g->id},
                  {"capacity_bytes", v.capacity_bytes},
                  {"fits", v.fits},
                  {"headroom_bytes", v.headroom_bytes},
                  {"min_gpus", mg.gpus}};
      if (est->host_offload_bytes > 0) {
        row["host_capacity_bytes"] = v.host_capacity_bytes;  // 0: unknown, unchecked
        row["host_fits"] = v.host_fits;
      }
      if (mg.gpus > 0) {
        row["min_gpus_layout"] = LayoutJson(mg.layout);
        row["min_gpus_per_gpu_peak_bytes"] = mg.per_gpu_peak_bytes;
      } else {
        row["min_gpus_reason"] = mg.reason;
      }
      if (!all) {
        if (req->mode == Mode::kInfer) {
          row["max_batch"] = MaxBatchThatFits(*model, *req, *g);
        } else {
          row["max_micro_batch"] = MaxBatchThatFits(*model, *req, *g);
        }
        row["max_context"] = MaxContextThatFits(*model, *req, *g);
      }
      rows.push_back(row);
    }
    if (!all) {
      const json& r0 = rows[0];
      j["gpu"] = r0["gpu"];
      j["fits"] = r0["fits"];
      j["capacity_bytes"] = r0["capacity_bytes"];
      j["headroom_bytes"] = r0["headroom_bytes"];
      j["min_gpus"] = r0["min_gpus"];
      if (r0.contains("min_gpus_layout")) j["min_gpus_layout"] = r0["min_gpus_layout"];
      if (r0.contains("host_fits")) {
        j["host_capacity_bytes"] = r0["host_capacity_bytes"];
        j["host_fits"] = r0["host_fits"];
      }
      if (r0.contains("max_batch")) j["max_batch"] = r0["max_batch"];
      if (r0.contains("max_micro_batch")) j["max_micro_batch"] = r0["max_micro_batch"];
      j["max_context"] = r0["max_context"];
    } else {
      j["fits"] = any_fits;
      j["gpus"] = rows;
    }
    if (json_out) {
      PrintJson(j);
      return (!all && !j["fits"].get<bool>()) ? kExitNoFit : kExitOk;
    }

    // ---- human output ----
    const auto& b = est->breakdown;
    std::cout << fmt::format("{}: {} parameters", model->id, FormatCount(pc.total));
    if (model->moe) std::cout << fmt::format(" ({} active per token)", FormatCount(pc.active));
    std::cout << fmt::format("; mode {}, weights {}, {}\n", ModeName(req->mode), j["weights"].get<std::string>(),
                             Layout(req->par));
    if (req->mode == Mode::kInfer)
      std::cout << fmt::format("batch {} x context {} tokens, KV cache {} per token (whole model, {} bytes/element)\n",
                               req->batch, req->seq, FormatBytes(est->kv_cache_bytes_per_token),
                               req->kv_bytes_per_elem);
    else
      std::cout << fmt::format("global batch {}, micro-batch {}, sequence {}, {}, recompute {}\n", req->batch,
                               req->micro_batch, req->seq,
                               !req->fp8_activations            ? f->dtype + " training"
                               : recipe == Fp8Recipe::kNvfp4    ? std::string("NVFP4 training")
                                                                : fmt::format("FP8 training ({})", Fp8RecipeName(recipe)),
                               (req->mode == Mode::kTrain)
                                   ? RecomputeWords(req->recompute, req->recompute_layers,
                                                    EffectiveRecomputeModules(req->recompute, req->recompute_modules))
                                   : std::string(req->gradient_checkpointing ? "full (checkpointing)" : "none"));
    std::cout << "\nper GPU (" << est->peak_stage << "):\n";
    std::cout << MemoryBreakdownTable(b, est->per_gpu_peak_bytes, req->mode == Mode::kInfer);
    std::cout << "peak moment: " << est->peak_moment << "\n";
    if (!est->ranks.empty()) {
      std::cout << "\nper pipeline rank (the fullest sets the peak):\n";
      const bool train = req->mode != Mode::kInfer;
      Table rt = train ? Table({"rank", "layers", "MTP", "in flight", "peak GB"}) : Table({"rank", "layers", "peak GB"});
      for (size_t i = 0; i < est->ranks.size(); ++i) {
        const auto& rk = est->ranks[i];
        const std::string gb = fmt::format("{:.2f}", rk.peak_bytes / 1e9);
        if (train)
          rt.Row({std::to_string(i), std::to_string(rk.layers), std::to_string(rk.mtp),
                  fmt::format("{:g}", rk.in_flight_micro_batches), gb});
        else
          rt.Row({std::to_string(i), std::to_string(rk.layers), gb});
      }
      std::cout << rt.Render();
    }
    for (const auto& n : est->notes) std::cout << "note: " << n << "\n";
    std::cout << "\n";
    if (!all) {
      const json& r0 = rows[0];
      const GpuSpec* g = gpus[0];
      const double head = r0["headroom_bytes"].get<double>();
      if (r0.contains("host_fits")) {
        const double cap = r0["host_capacity_bytes"].get<double>();
        if (cap <= 0)
          std::cout << fmt::format("host memory: {} of pinned host memory per GPU for the offloaded activations, "
                                   "unchecked (the catalog does not know this server's; --host-memory checks it)\n",
                                   FormatBytes(est->host_offload_bytes));
        else
          std::cout << fmt::format("host memory: {} per GPU for the offloaded activations of {} per GPU: {}\n",
                                   FormatBytes(est->host_offload_bytes), FormatBytes(cap),
                                   r0["host_fits"].get<bool>() ? "fits" : fmt::format("short by {}", FormatBytes(est->host_offload_bytes - cap)));
      }
      if (r0["fits"].get<bool>()) {
        std::cout << fmt::format("FITS on {} ({}): {} headroom per GPU\n", g->name, FormatBytes(g->memory_bytes.value),
                                 FormatBytes(head));
      } else {
        if (head < 0)
          std::cout << fmt::format("DOES NOT FIT on {} ({}): short by {} per GPU\n", g->name,
                                   FormatBytes(g->memory_bytes.value), FormatBytes(-head));
        else
          std::cout << fmt::format("DOES NOT FIT: the GPU holds it ({} headroom per GPU), host memory does not\n",
                                   FormatBytes(head));
      }
      if (r0["min_gpus"].get<int>() > 0) {
        const auto& l = r0["min_gpus_layout"];
        std::cout << fmt::format("minimum {}: {} ({}: TP={} PP={} DP={}{}), {} per GPU\n", g->id,
                                 r0["min_gpus"].get<int>(), r0["min_gpus"].get<int>() == 1 ? "single GPU" : "layout",
                                 l["tp"].get<int>(), l["pp"].get<int>(), l["dp"].get<int>(),
                                 l["zero"].get<int>() ? fmt::format(" ZeRO-{}", l["zero"].get<int>()) : "",
                                 FormatBytes(r0["min_gpus_per_gpu_peak_bytes"].get<double>()));
      } else {
        std::cout << "minimum GPUs: none found — " << r0["min_gpus_reason"].get<std::string>() << "\n";
      }
      if (r0.contains("max_batch"))
        std::cout << fmt::format("largest batch at context {}: {}\n", req->seq, r0["max_batch"].get<int64_t>());
      if (r0.contains("max_micro_batch"))
        std::cout << fmt::format("largest micro-batch at sequence {}: {}\n", req->seq, r0["max_micro_batch"].get<int64_t>());
      if (r0["max_context"].get<int64_t>() > 0)
        std::cout << fmt::format("largest context at batch {}: {} tokens (model maximum {})\n", req->batch,
                                 r0["max_context"].get<int64_t>(), model->max_positions);
      else
        std::cout << "no context length fits with this layout on one GPU of this kind\n";
      return r0["fits"].get<bool>() ? kExitOk : kExitNoFit;
    }
    Table g({"gpu", "memory", "fits", "headroom", "min GPUs", "layout at minimum"});
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const json& r = rows[i];
      std::string layout = "-";
      if (r["min_gpus"].get<int>() > 0) {
        const auto& l = r["min_gpus_layout"];
        layout = fmt::format("TP={} PP={} DP={}{}", l["tp"].get<int>(), l["pp"].get<int>(), l["dp"].get<int>(),
                             l["zero"].get<int>() ? fmt::format(" ZeRO-{}", l["zero"].get<int>()) : "");
      }
      g.Row({gpus[i]->id, FormatBytes(gpus[i]->memory_bytes.value), r["fits"].get<bool>() ? "yes" : "no",
             fmt::format("{:+.1f} GB", r["headroom_bytes"].get<double>() / 1e9),
             r["min_gpus"].get<int>() > 0 ? std::to_string(r["min_gpus"].get<int>()) : "none", layout});
    }
    std::cout << g.Render();
    return kExitOk;
  };
}

}  // namespace suanli::cli
