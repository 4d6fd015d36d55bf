// `suanli perf train` and `suanli perf infer`: how fast, how long, how much.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/cli.h"
#include "core/files.h"
#include "suanli/bench.h"
#include "suanli/perf.h"
#include "suanli/plan.h"
#include "suanli/text.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {
using json = nlohmann::json;

struct PerfFlags {
  std::string model = "llama-3.1-8b", gpu = "h100-sxm";
  int gpus = 0, tp = 1, pp = 1, cp = 1, ep = 1, etp = 0, zero = 1, interleave = 1, gpus_per_node = 0, nics_per_node = 0,
      recompute_layers = 0, offload_layers = 0, mtp_layers = 0;
  int64_t micro_batch = 0, global_batch = 0, seq = 4096;
  std::string recompute, recompute_modules, pp_layout, dtype = "bf16", fp8_recipe, inter_node, attention = "flash", convention = "6n",
      moe_dispatcher, cuda_graphs, cross_entropy = "fused", cp_comm;
  std::string decode_attention = "grouped", moe_impl = "fused", host_memory, efficiency;
  bool no_nvls = false, embedding_loss_in_split = false, tp_only_amax_red = false, no_fp8_weight_cache = false;
  bool no_nvfp4_rht = false, fp8_attention = false;
  double dp_bucket_mb = 0;  // 0: Megatron-Core's bucket rule
  bool eager = false, sequence_parallel = false, explain = false, no_dp_overlap = false, tp_overlap = false, no_tp_grad_overlap = false, ep_overlap = false, fp32_grads = false, dropout = false, swiglu_fp8 = false;
  std::string train_mode = "train";
  std::string master_dtype, moments_dtype, optimizer;
  int lora_rank = 16;
  double lora_dropout = 0;
  std::vector<std::string> lora_targets;
  int64_t packed_doc_tokens = 0;
  double tokens = 0, price = 0, moe_imbalance = 1.1, serve_moe_imbalance = 1.0;
  double request_overhead_ms = 0, step_overhead_ms = 0;
  // infer
  std::string batch = "1";
  int64_t max_batch = 0, input_len = 512, output_len = 128;
  // perf infer --concurrency: a closed-loop benchmark's clients (empty: none); several values: a sweep.
  std::vector<int64_t> concurrency_list;
  int64_t concurrency = 0;  // the first of them
  int attention_dp = 1;     // perf infer --attention-dp
  // perf infer --prefill-workers / --decode-workers: disaggregated serving (0: not disaggregated); the main layout
  // flags are the decode worker's, --prefill-* the prefill worker's (0: the decode worker's).
  int prefill_workers = 0, decode_workers = 0;
  int prefill_tp = 0, prefill_ep = 0, prefill_etp = 0, prefill_attention_dp = 0;
  std::string weights = "bf16", kv_dtype = "bf16";
  bool quantize_head = false, replicated_embeddings = false, no_sliding_window = false;
  std::string emit;  // perf infer --emit vllm
  SpeculationFlags spec;  // perf infer: speculative decoding
  std::string calibration;
};


json OpsJson(const std::vector<OpCost>& ops, const RidgePoint& ridge) {
  json a = json::array();
  for (const auto& o : ops) {
    a.push_back({{"name", o.name}, {"phase", o.phase}, {"flops", o.flops}, {"bytes", o.bytes},
                 {"arithmetic_intensity_flops_per_byte", o.intensity()},
                 {"ridge_point_flops_per_byte", ridge.achievable_flops_per_byte},
                 {"ridge_point_datasheet_flops_per_byte", ridge.datasheet_flops_per_byte}, {"time_s", o.time_s}, {"count", o.count},
                 {"bound", BoundName(o.bound)}});
  }
  return a;
}

void PrintOps(const std::vector<OpCost>& ops, const RidgePoint& ridge, double total) {
  Table t({"operator", "phase", "GFLOP", "MB", "FLOP/B", "bound", "time", "x", "share"});
  for (const auto& o : ops) {
    t.Row({o.name, o.phase, fmt::format("{:.2f}", o.flops / 1e9), fmt::format("{:.1f}", o.bytes / 1e6),
           o.bytes > 0 ? fmt::format("{:.0f}", o.intensity()) : "-", BoundName(o.bound), FormatSeconds(o.time_s),
           fmt::format("{:.0f}", o.count), total > 0 ? fmt::format("{:.1f}%", 100 * o.time_s * o.count / total) : "-"});
  }
  std::cout << t.Render()
            << fmt::format("ridge point of this GPU in {}: {:.0f} FLOP/byte at the achievable GEMM rate and bandwidth "
                           "(datasheet {:.0f}); above it a full-tile GEMM is compute-bound\n",
                           ridge.precision, ridge.achievable_flops_per_byte, ridge.datasheet_flops_per_byte);
}

std::string WhatIfNote(const PerfFlags& f) {
  return fmt::format("efficiencies from {} instead of the bundled data/efficiency.toml: the validation figures above "
                     "are the bundled table's",
                     f.efficiency);
}

// The efficiencies an estimate uses: the bundled table, or --efficiency's (a what-if, e.g. a lower GEMM rate), then a
// bench calibration over either.
Result<Efficiency> EfficiencyFor(const PerfFlags& f, const Efficiency& bundled, const GpuSpec& gpu) {
  Efficiency e = bundled;
  if (!f.efficiency.empty()) {
    SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(f.efficiency, 16u << 20));
    SUANLI_ASSIGN_OR_RETURN(e, ParseEfficiencyToml(text, f.efficiency, gpu.id));
  }
  if (f.calibration.empty()) return e;
  SUANLI_ASSIGN_OR_RETURN(std::string text, detail::ReadFile(f.calibration, 16u << 20));
  SUANLI_ASSIGN_OR_RETURN(Calibration cal, ParseCalibrationToml(text, f.calibration));
  return ApplyCalibration(e, cal, gpu);
}
}  // namespace

Action SetupPerf(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<PerfFlags>();
  sub->require_subcommand(1);
  auto common = [&](CLI::App* a) {
    a->add_option("--model,-m", f->model, "Model id, alias or HF config.json")->capture_default_str();
    a->add_option("--gpu,-g", f->gpu, "GPU id or alias")->capture_default_str();
    a->add_option("--tp", f->tp, "Tensor-parallel degree")->capture_default_str();
    a->add_option("--pp", f->pp, "Pipeline-parallel degree")->capture_default_str();
    a->add_option("--gpus-per-node", f->gpus_per_node,
                  "GPUs per node: the GPUs that share the GPU link (one NVLink domain); default: the GPU's reference "
                  "system's, as `suanli gpus GPU` shows (72 for GB200 NVL72), else 8")->check(NodeCount());
    a->add_option("--inter-node", f->inter_node, "Fabric between nodes: ib-hdr ib-ndr ib-xdr roce-200g eth-100g ... (default: the GPU's reference system's, as `suanli gpus GPU` shows: ib-hdr for A100 SXM, ib-ndr for H100, H200, B200 and GB200; else ib-ndr)")->check(NonEmpty());
    a->add_option("--nics-per-node", f->nics_per_node, "NICs per node (default: one per GPU)")->check(NodeCount());
    a->add_flag("--explain", f->explain, "Per-operator roofline table");
    a->add_flag("--no-nvls", f->no_nvls,
                "All-reduce as a ring, without NVLink SHARP's in-switch reduction (as NCCL_NVLS_ENABLE=0)");
    a->add_option("--calibration", f->calibration, "Efficiency file from `suanli bench export-calibration`");
    a->add_option("--efficiency", f->efficiency,
                  "An efficiency table in data/efficiency.toml's format instead of the bundled one (a what-if)");
  };
  auto* train = sub->add_subcommand("train", "Training step time, throughput, MFU, time and cost to train");
  common(train);
  train->add_option("--gpus", f->gpus, "Total GPUs (DP = GPUs / (TP x PP x CP))")->required();
  train->add_option("--cp", f->cp, "Context-parallel degree")->capture_default_str();
  train->add_option("--ep", f->ep, "Expert-parallel degree")->capture_default_str();
  train->add_option("--etp", f->etp,
                    "Expert tensor-parallel degree (default: TP); with --etp 1 the expert-parallel group can take in "
                    "the tensor-parallel ranks (Megatron-Core's MoE parallel folding)")
      ->check(NotZero());
  train->add_option("--zero", f->zero, "ZeRO stage 0-3 (3 = FSDP)")->capture_default_str();
  train->add_option("--micro-batch", f->micro_batch, "Sequences per micro-batch (default: fastest that fits)")
      ->check(CLI::Validator(
          [](std::string& v) {
            try {
              if (std::stoll(v) >= 1) return std::string();
            } catch (const std::exception&) {
            }
            return "must be a whole number of at least 1, got '" + v + "' (omit it for the fastest that fits)";
          },
          ""));
  train->add_option("--global-batch", f->global_batch, "Sequences per step")->required();
  train->add_option("--seq,-s", f->seq, "Sequence length")->capture_default_str();
  train->add_option("--recompute", f->recompute, "none | selective | full | op (torchtitan's per-op selective checkpointing: every other matmul and the element-wise ops rerun) (default: fastest that fits among none, selective, full)");
  train->add_option("--recompute-modules", f->recompute_modules, kRecomputeModulesHelp);
  train->add_option("--recompute-layers", f->recompute_layers,
                    "With --recompute full: recompute only the first N layers of each pipeline chunk (Megatron-Core "
                    "--recompute-method block --recompute-num-layers N)")
      ->check(NotZero());
  train->add_option("--offload-layers", f->offload_layers,
                    "CPU activation offloading of the first N layers (Megatron-Core --cpu-offloading "
                    "--cpu-offloading-num-layers N; needs --pp 1 and no recompute)")
      ->check(NotZero());
  train->add_option("--host-memory", f->host_memory, kHostMemoryHelp);
  train->add_flag("--sequence-parallel", f->sequence_parallel, "Megatron sequence parallelism");
  train->add_option("--interleave", f->interleave, "Virtual pipeline stages per GPU")->capture_default_str();
  train->add_option("--pp-layout", f->pp_layout, kPpLayoutHelp);
  train->add_option("--mtp-layers", f->mtp_layers, kMtpLayersHelp);
  train->add_flag("--account-for-embedding-loss", f->embedding_loss_in_split,
                  "Count the embedding and the loss as one layer each when splitting layers into pipeline stages "
                  "(Megatron-Core's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split)");
  train->add_option("--dtype", f->dtype,
                    "bf16 | fp16 | fp8 | fp4 (NVFP4 on Blackwell: Transformer Engine's NVFP4BlockScaling recipe, every "
                    "layer GEMM in NVFP4)")
      ->capture_default_str();
  train->add_option("--fp8-recipe", f->fp8_recipe, kFp8RecipeHelp);
  train->add_option("--attention", f->attention, kAttentionImplHelp)->capture_default_str();
  train->add_option("--cross-entropy", f->cross_entropy, kCrossEntropyHelp)->capture_default_str();
  train->add_option("--flops", f->convention, "MFU convention: 6n (PaLM) | megatron")->capture_default_str();
  train->add_flag("--no-dp-overlap", f->no_dp_overlap, "Gradient reduction after backward instead of overlapped");
  train->add_option("--dp-bucket-mb", f->dp_bucket_mb,
                    "Data-parallel gradient buckets of this many MB (2^20 bytes) of gradients, one collective each, "
                    "tensors split across them: Apex DistributedFusedAdam's bucket_cap_mb (NeMo 1.x, BUCKET_CAP_MB); "
                    "PyTorch DDP's bucket_cap_mb where it exceeds the largest tensor (DDP never splits one); default: "
                    "Megatron-Core DDP's max(40M, 1M x DP) parameters")
      ->check(BucketMb());
  train->add_flag("--tp-overlap", f->tp_overlap, "Overlap tensor-parallel communication with GEMMs");
  train->add_flag("--no-tp-grad-overlap", f->no_tp_grad_overlap,
                  "Backward TP collectives exposed: do not run a column-parallel linear's input-gradient reduce-scatter "
                  "(all-reduce) and input re-gather under its gradient GEMMs, as Megatron-LM since 2022 and Transformer "
                  "Engine do (2021 Megatron-LM; --eager implies it)");
  train->add_flag("--ep-overlap", f->ep_overlap,
                  "Overlap the MoE all-to-all with another micro-batch's compute (Megatron-Core "
                  "--overlap-moe-expert-parallel-comm --delay-wgrad-compute)");
  train->add_option("--moe-dispatcher", f->moe_dispatcher, kMoeDispatcherHelp);
  train->add_option("--cp-comm", f->cp_comm, kCpCommHelp);
  train->add_option("--cuda-graphs", f->cuda_graphs, kCudaGraphsHelp);
  train->add_flag("--fp32-grads", f->fp32_grads, "FP32 gradients (18 B/param Adam)");
  train->add_flag("--tp-only-amax-red", f->tp_only_amax_red,
                  "FP8 delayed scaling: reduce amaxes over TP x CP only (Megatron-Core --tp-only-amax-red; its behaviour "
                  "up to core_r0.8.0); default TP x DP x CP");
  train->add_flag("--no-nvfp4-rht", f->no_nvfp4_rht,
                  "With --dtype fp4: no random Hadamard transform of the weight gradient's operands "
                  "(NVTE_NVFP4_DISABLE_RHT=1, MLPerf Training's vanilla NVFP4 recipe)");
  train->add_flag("--fp8-attention", f->fp8_attention,
                  "With --dtype fp8 or fp4: attention in FP8 (Transformer Engine's fp8_dot_product_attention, "
                  "NVTE_FP8_DPA=1) at cuDNN's measured speed-up where data/efficiency.toml has one");
  train->add_flag("--no-fp8-weight-cache", f->no_fp8_weight_cache,
                  "FP8 training: Transformer Engine keeps no FP8 copy of the weights between micro-batches "
                  "(Megatron-Core disable_parameter_transpose_cache=True); default: it does, 2 B per layer weight on "
                  "Hopper, 1 B on Blackwell");
  train->add_option("--optimizer", f->optimizer, "adam (default) | adam8bit | sgd: the states it keeps and its step's bytes");
  AddOptimizerPrecisionOptions(train, &f->master_dtype, &f->moments_dtype);
  train->add_flag("--dropout", f->dropout, "Dropout on (stores masks; unfused attention also streams them)");
  train->add_flag("--eager", f->eager,
                  "Eager PyTorch (HF transformers, Composer, torchtitan without torch.compile): FP32 RMSNorm steps, "
                  "unfused RoPE and SwiGLU; with --zero 3 also FSDP's host cost per layer");
  train->add_option("--mode", f->train_mode,
                    "train (pretraining, full fine-tuning) | lora (frozen base weights, rank --lora-rank adapters)")
      ->capture_default_str();
  train->add_option("--lora-rank", f->lora_rank, "With --mode lora: adapter rank")->capture_default_str();
  train->add_option("--lora-dropout", f->lora_dropout, kLoraDropoutHelp)->capture_default_str();
  train->add_option("--weights", f->weights,
                    "The weights' storage: bf16 (default), or fp8 with --dtype fp8 (Transformer Engine FP8 parameters: "
                    "fp8_model_init, NeMo fp8_params, Megatron-Core --fp8-param-gather; 1 B per layer weight in "
                    "memory and in the parameter all-gathers); with --mode lora the frozen base weights, also fp16");
  train->add_flag("--activation-func-fp8-input-store", f->swiglu_fp8, kSwigluFp8InputHelp);
  train->add_option("--lora-targets", f->lora_targets, kLoraTargetsHelp);
  train->add_option("--packed-doc-tokens", f->packed_doc_tokens,
                    "Packed sequences: documents of this many tokens per sequence, attention within each (fine-tuning "
                    "with --packed-sequence / THD attention)")
      ->check(NotZero());
  train->add_option("--tokens", f->tokens, "Train on this many tokens: time and GPU-hours");
  train->add_option("--moe-imbalance", f->moe_imbalance, "MoE with --ep > 1: the busiest rank's expert rows / mean (>= 1)")
      ->capture_default_str();
  train->add_option("--price-per-gpu-hour", f->price, "USD per GPU-hour for the cost");
  auto* infer = sub->add_subcommand("infer", "Time to first token, time per output token, throughput");
  common(infer);
  infer->add_option("--gpus", f->gpus, "Total GPUs (default TP x PP)")->check(Count());
  infer->add_option("--ep", f->ep,
                    "MoE: expert-parallel degree inside the TP group (EP x ETP = TP, as TensorRT-LLM's moe_ep_size)")
      ->capture_default_str();
  infer->add_option("--etp", f->etp, "MoE: expert tensor-parallel degree (default: TP / EP)")->check(NotZero());
  infer->add_option("--attention-dp", f->attention_dp,
                    "MoE: attention data parallelism over the TP GPUs (TensorRT-LLM enable_attention_dp with D = TP, "
                    "SGLang --dp D --enable-dp-attention): D groups of TP / D GPUs run attention, the dense layers and "
                    "the head on their own 1/D of the sequences and KV cache; the experts stay spread over all TP "
                    "(docs/methodology.md section 9.7)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  infer->add_option("--moe-imbalance", f->serve_moe_imbalance,
                    "MoE with --ep: busiest GPU's token-expert pairs / mean, at least uniform routing's (1 = uniform)")
      ->capture_default_str();
  infer->add_option("--batch,-b", f->batch, kServingBatchHelp)->capture_default_str();
  infer->add_option("--max-batch", f->max_batch, kServingMaxBatchHelp)->check(ServingMaxBatch());
  infer->add_option("--input-len", f->input_len, "Prompt tokens")->capture_default_str();
  infer->add_option("--output-len", f->output_len, "Generated tokens")->capture_default_str();
  infer->add_option("--weights", f->weights, "bf16 fp16 fp8 nvfp4 (Blackwell) int8 int4 nf4 q4_k_m ...")->capture_default_str();
  infer->add_option("--kv-dtype", f->kv_dtype, "KV-cache dtype")->capture_default_str();
  infer->add_flag("--quantize-head", f->quantize_head, kQuantizeHeadHelp);
  infer->add_flag("--replicated-embeddings", f->replicated_embeddings, kReplicatedEmbeddingsHelp);
  infer->add_flag("--no-sliding-window", f->no_sliding_window, kNoSlidingWindowHelp);
  infer->add_option("--emit", f->emit,
                    "Launch line for the estimated replica: vllm (vllm serve) | trtllm (trtllm-serve) | sglang "
                    "(sglang.launch_server), with its parallel sizes, context, batch limit and formats");
  AddSpeculationOptions(infer, &f->spec);
  infer->add_option("--decode-attention", f->decode_attention, kDecodeAttentionHelp)->capture_default_str();
  infer->add_option("--moe-impl", f->moe_impl, kMoeImplHelp)->capture_default_str();
  infer->add_option("--concurrency", f->concurrency_list,
                    "Closed-loop benchmark (AIPerf, genai-perf, vllm bench serve --concurrency): this many clients, "
                    "each sending its next request when the last ends; adds the time per output token they see, other "
                    "clients' prefills included (docs/methodology.md section 9.6). Several values (1,8,64) add a "
                    "sweep table: time per output token, tokens/s per user and per GPU at each")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  infer->add_option("--prefill-workers", f->prefill_workers,
                    "Disaggregated serving (NVIDIA Dynamo, SGLang and vLLM prefill-decode disaggregation; with "
                    "--concurrency): this many prefill workers hand each prompt's KV cache to the decode workers, which "
                    "run in the layout --tp/--ep/--attention-dp give (docs/methodology.md section 9.8)")
      ->check(CLI::Range(1, 4096));
  infer->add_option("--decode-workers", f->decode_workers,
                    "Disaggregated serving: this many decode workers (default 1 with --prefill-workers)")
      ->check(CLI::Range(1, 4096));
  infer->add_option("--prefill-tp", f->prefill_tp, "Disaggregated serving: a prefill worker's TP (default: --tp)")
      ->check(CLI::Range(1, 1024));
  infer->add_option("--prefill-ep", f->prefill_ep,
                    "Disaggregated serving: a prefill worker's EP (default: --ep when --prefill-tp is not given, else 1)")
      ->check(CLI::Range(1, 1024));
  infer->add_option("--prefill-etp", f->prefill_etp,
                    "Disaggregated serving: a prefill worker's expert TP (default: its TP / EP)")
      ->check(CLI::Range(1, 1024));
  infer->add_option("--prefill-attention-dp", f->prefill_attention_dp,
                    "Disaggregated serving: a prefill worker's attention DP (default: --attention-dp when --prefill-tp "
                    "is not given, else 1)")
      ->check(CLI::Range(1, 1024));
  infer->add_option("--request-overhead-ms", f->request_overhead_ms,
                    "Serving engine's host time per request, added to the TTFT (the model has none)")
      ->capture_default_str();
  infer->add_option("--step-overhead-ms", f->step_overhead_ms,
                    "Serving engine's host time per forward pass (scheduling, sampling), added to prefill and each "
                    "decode step")
      ->capture_default_str();

  return [ctx, f, train]() -> int {
    auto job = LoadJob(ctx, f->model, f->gpu, f->gpus_per_node, f->inter_node, f->nics_per_node);
    if (!job.ok()) return PrintError(job.status());
    auto eff = EfficiencyFor(*f, job->eff, *job->gpu);
    if (!eff.ok()) return PrintError(eff.status());
    const ModelSpec* model = &job->model;
    const GpuSpec* const* gpu = &job->gpu;
    if (f->no_nvls) job->cluster.nvls = false;
    const Cluster* cluster = &job->cluster;
    const bool json_out = ctx->options().json;

    if (train->parsed()) {
      TrainConfig cfg;
      auto dt = ParseTrainDtype(f->dtype);
      if (!dt.ok()) return PrintError(dt.status());
      cfg.dtype = *dt;
      if (!f->fp8_recipe.empty()) {
        if (cfg.dtype != Precision::kFp8) return PrintError(InvalidArgument("--fp8-recipe needs --dtype fp8"));
        auto recipe = ParseFp8Recipe(f->fp8_recipe);
        if (!recipe.ok()) return PrintError(recipe.status());
        cfg.fp8_recipe = *recipe;
      }
      cfg.tp_only_amax_reduction = f->tp_only_amax_red;
      if (auto st = CheckTpOnlyAmaxReduction(cfg); !st.ok()) return PrintError(st);
      auto attn = ParseAttentionImpl(f->attention);
      if (!attn.ok()) return PrintError(attn.status());
      cfg.attention = *attn;
      auto ce = ParseCrossEntropyImpl(f->cross_entropy);
      if (!ce.ok()) return PrintError(ce.status());
      cfg.cross_entropy = *ce;
      if (f->convention == "6n") cfg.convention = FlopConvention::k6N;
      else if (f->convention == "megatron") cfg.convention = FlopConvention::kMegatron;
      else return PrintError(InvalidArgument("--flops must be 6n or megatron"));
      const int mp = f->tp * f->pp * f->cp;
      if (mp < 1 || f->gpus < 1) return PrintError(InvalidArgument("--gpus, --tp, --pp and --cp must be at least 1"));
      if (f->gpus % mp != 0)
        return PrintError(InvalidArgument(fmt::format(
            "--gpus {} is not divisible by TP x PP x CP = {} x {} x {} = {}; valid GPU counts are multiples of {}",
            f->gpus, f->tp, f->pp, f->cp, mp, mp)));
      cfg.fit.par.tp = f->tp;
      cfg.fit.par.pp = f->pp;
      cfg.fit.par.cp = f->cp;
      cfg.fit.par.ep = f->ep;
      cfg.fit.par.etp = f->etp;
      cfg.fit.par.dp = f->gpus / mp;
      cfg.fit.par.zero = f->zero;
      cfg.fit.par.interleave = f->interleave;
      cfg.fit.par.embedding_loss_in_split = f->embedding_loss_in_split;
      cfg.fit.par.sequence_parallel = f->sequence_parallel;
      if (!f->pp_layout.empty()) {
        if (auto st = ApplyPipelineLayout(cfg.fit.par, f->pp_layout); !st.ok()) return PrintError(st);
      }
      cfg.fit.mtp_layers = f->mtp_layers;
      cfg.fit.batch = f->global_batch;
      cfg.fit.seq = f->seq;
      cfg.fit.fp32_grads = f->fp32_grads;
      cfg.fit.dropout = f->dropout;
      if (!f->optimizer.empty()) {
        auto o = ParseOptimizer(f->optimizer);
        if (!o.ok()) return PrintError(InvalidArgument(fmt::format("--optimizer: {}", o.status().message())));
        cfg.fit.optimizer = *o;
      }
      if (auto st = ApplyOptimizerPrecision(cfg.fit, f->master_dtype, f->moments_dtype, false); !st.ok())
        return PrintError(st);
      if (f->global_batch < 1) return PrintError(InvalidArgument("--global-batch must be at least 1"));
      if (f->global_batch % cfg.fit.par.dp != 0)
        return PrintError(InvalidArgument(fmt::format("--global-batch {} is not divisible by DP = {} (GPUs / (TP x PP x CP))",
                                                      f->global_batch, cfg.fit.par.dp)));
      if (f->micro_batch > 0) {
        cfg.fit.micro_batch = f->micro_batch;
        if (f->global_batch % (cfg.fit.par.dp * f->micro_batch) != 0)
          return PrintError(InvalidArgument(fmt::format(
              "--global-batch {} is not divisible by DP x micro-batch = {} x {}", f->global_batch, cfg.fit.par.dp,
              f->micro_batch)));
      } else {
        cfg.micro_batch_auto = true;
      }
      if (!f->recompute_modules.empty()) {
        auto mods = ParseRecomputeModules(f->recompute_modules);
        if (!mods.ok()) return PrintError(mods.status());
        cfg.fit.recompute_modules = *mods;
      }
      if (!f->recompute.empty()) {
        auto rc = ParseRecompute(f->recompute);
        if (!rc.ok()) return PrintError(rc.status());
        cfg.fit.recompute = *rc;
      } else if (!f->recompute_modules.empty()) {
        cfg.fit.recompute = Recompute::kSelective;  // as Megatron-Bridge sets the granularity when modules are given
      } else if (f->offload_layers != 0) {
        cfg.fit.recompute = Recompute::kNone;  // Megatron-Core does not offload with recompute
      } else {
        cfg.recompute_auto = true;
      }
      cfg.fit.offload_layers = f->offload_layers;
      auto host = ParseHostMemoryFlag(f->host_memory);
      if (!host.ok()) return PrintError(host.status());
      cfg.fit.host_memory_per_gpu_bytes = *host;  // also bounds the --offload-layers suggestion of a layout that does not fit
      if (f->recompute_layers != 0 && cfg.fit.recompute != Recompute::kFull)
        return PrintError(InvalidArgument("--recompute-layers recomputes whole layers: it needs --recompute full"));
      cfg.fit.recompute_layers = f->recompute_layers;
      cfg.dp_overlap = !f->no_dp_overlap;
      cfg.dp_bucket_bytes = f->dp_bucket_mb * kMiB;
      cfg.tp_overlap = f->tp_overlap;
      cfg.tp_grad_overlap = !f->no_tp_grad_overlap;
      cfg.ep_overlap = f->ep_overlap;
      if (!f->moe_dispatcher.empty()) {
        auto d = ParseMoeDispatcher(f->moe_dispatcher);
        if (!d.ok()) return PrintError(d.status());
        if (!model->moe || f->ep <= 1)
          return PrintError(InvalidArgument(fmt::format(
              "--moe-dispatcher sets how tokens reach experts on other GPUs: it needs an MoE model and --ep > 1{}",
              model->moe ? "" : fmt::format(" ({} is dense)", model->id))));
        cfg.moe_dispatcher = *d;
      }
      if (!f->cp_comm.empty()) {
        auto cc = ParseCpComm(f->cp_comm);
        if (!cc.ok()) return PrintError(cc.status());
        cfg.cp_comm = *cc;  // EstimateTraining refuses it without CP or where the heads do not divide
      }
      if (!f->cuda_graphs.empty()) {
        auto g = ParseCudaGraphs(f->cuda_graphs);
        if (!g.ok()) return PrintError(g.status());
        cfg.cuda_graphs = *g;
      }
      cfg.eager = f->eager;
      cfg.fp8_weight_cache = !f->no_fp8_weight_cache;
      cfg.nvfp4_rht = !f->no_nvfp4_rht;
      cfg.fp8_attention = f->fp8_attention;
      if (f->train_mode == "lora") {
        cfg.fit.mode = Mode::kLora;
      } else if (f->train_mode != "train") {
        return PrintError(InvalidArgument(fmt::format("--mode {} is not one of train, lora{}", f->train_mode,
                                                      DidYouMean(f->train_mode, std::vector<std::string>{"train", "lora"}))));
      }
      if (cfg.fit.mode != Mode::kLora &&
          (train->count("--lora-rank") > 0 || !f->lora_targets.empty() || train->count("--lora-dropout") > 0))
        return PrintError(InvalidArgument("--lora-rank, --lora-targets and --lora-dropout need --mode lora"));
      if (train->count("--weights") > 0) {
        // --mode lora: the frozen base weights' format; full training: fp8 for FP8 parameters (checked with --dtype
        // by EstimateTraining).
        auto wf = ParseWeightFormat(f->weights);
        if (!wf.ok()) return PrintError(wf.status());
        cfg.fit.weights = *wf;
      }
      cfg.fit.swiglu_input_fp8 = f->swiglu_fp8;
      cfg.fit.lora_rank = f->lora_rank;
      cfg.fit.lora_dropout = f->lora_dropout;
      cfg.fit.lora_targets = f->lora_targets;
      cfg.packed_doc_tokens = f->packed_doc_tokens;
      cfg.tokens = f->tokens;
      cfg.price_per_gpu_hour = f->price;
      cfg.moe_imbalance = f->moe_imbalance;  // EstimateTraining checks it, --tokens and the price
      if (train->count("--moe-imbalance") > 0 && !model->moe)
        return PrintError(InvalidArgument(fmt::format(
            "--moe-imbalance is for mixture-of-experts models; {} is dense and has no experts to balance", model->id)));
      if (train->count("--moe-imbalance") > 0 && f->ep <= 1)
        return PrintError(InvalidArgument(fmt::format(
            "--moe-imbalance {} needs expert parallelism (--ep > 1): with EP 1 every GPU holds all of {}'s experts "
            "and runs every token-expert pair, so how the router spreads them does not change the step",
            f->moe_imbalance, model->id)));
      auto r = EstimateTraining(*model, *cluster, cfg, *eff);
      if (!r.ok()) return PrintError(r.status());
      if (!r->fits) {
        // A layout that does not fit has no step time: report the shortfall and what would fit.
        std::vector<std::string> fixes;
        auto try_fix = [&](const char* what, TrainConfig alt) {
          alt.micro_batch_auto = false;
          alt.recompute_auto = false;
          auto a = EstimateTraining(*model, *cluster, alt, *eff);
          if (a.ok() && a->fits) fixes.push_back(fmt::format("{} ({} per GPU)", what, FormatBytes(a->memory.per_gpu_peak_bytes)));
        };
        TrainConfig base = cfg;
        base.fit.micro_batch = r->micro_batch;
        base.fit.recompute = r->recompute;
        { TrainConfig a = base; a.fit.recompute = Recompute::kFull; try_fix("--recompute full", a); }
        if (base.fit.par.dp > 1) { TrainConfig a = base; a.fit.par.zero = 3; try_fix("--zero 3", a); }
        if (base.fit.micro_batch > 1) { TrainConfig a = base; a.fit.micro_batch = 1; try_fix("--micro-batch 1", a); }
        if (!base.fit.par.sequence_parallel && base.fit.par.tp > 1) { TrainConfig a = base; a.fit.par.sequence_parallel = true; try_fix("--sequence-parallel", a); }
        if (base.fit.par.pp == 1 && base.fit.recompute == Recompute::kNone && base.fit.offload_layers == 0) {
          if (auto o = FewestOffloadLayersThatFit(*model, *cluster, base, *eff))
            fixes.push_back(fmt::format("--offload-layers {} ({} per GPU, {} of pinned host memory per GPU, step {})",
                                        o->offload_layers,
                                        FormatBytes(o->memory.per_gpu_peak_bytes), FormatBytes(o->memory.host_offload_bytes),
                                        FormatSeconds(o->step_time_s)));
        }
        if (fixes.empty()) fixes.push_back("more GPUs or more model parallelism: see `suanli fit --mode train` for the minimum");
        if (json_out) {
          json j = JsonEnvelope("suanli.perf.train/1");
          j["model"] = model->id;
          j["gpu"] = (*gpu)->id;
          j["fits"] = false;
          j["shortfall_bytes"] = r->shortfall_bytes;
          if (r->offload_layers > 0) {
            j["host_offload_bytes"] = r->memory.host_offload_bytes;
            j["host_capacity_bytes"] = r->host_capacity_bytes;
            j["host_shortfall_bytes"] = r->host_shortfall_bytes;
          }
          j["per_gpu_peak_bytes"] = r->memory.per_gpu_peak_bytes;
          j["capacity_bytes"] = (*gpu)->memory_bytes.value;
          j["micro_batch"] = r->micro_batch;
          j["recompute"] = RecomputeName(r->recompute);
          if (r->recompute == Recompute::kSelective)
            j["recompute_modules"] = RecomputeModulesList(r->recompute_modules);
          j["would_fit_with"] = fixes;
          PrintJson(j);
        } else {
          if (r->shortfall_bytes > 0)
            std::cout << fmt::format("DOES NOT FIT: {} needs {} per GPU at micro-batch {}, recompute {}; {} has {} — short by {}.\n",
                                     model->id, FormatBytes(r->memory.per_gpu_peak_bytes), r->micro_batch,
                                     RecomputeWords(r->recompute, r->recompute_layers, r->recompute_modules), (*gpu)->id, FormatBytes((*gpu)->memory_bytes.value),
                                     FormatBytes(r->shortfall_bytes));
          if (r->host_shortfall_bytes > 0)
            std::cout << fmt::format("DOES NOT FIT in host memory: {} offloaded layers need {} of pinned host memory per "
                                     "GPU; there is {} per GPU — short by {}.\n",
                                     r->offload_layers, FormatBytes(r->memory.host_offload_bytes),
                                     FormatBytes(r->host_capacity_bytes), FormatBytes(r->host_shortfall_bytes));
          std::cout << "would fit with:\n";
          for (const auto& x : fixes) std::cout << "  " << x << "\n";
        }
        return kExitNoFit;
      }
      if (json_out) {
        json j = JsonEnvelope("suanli.perf.train/1");
        j["model"] = model->id;
        j["gpu"] = (*gpu)->id;
        j["gpus"] = f->gpus;
        j["layout"] = {{"tp", f->tp}, {"pp", f->pp}, {"dp", cfg.fit.par.dp}, {"cp", f->cp}, {"ep", f->ep},
                       {"etp", cfg.fit.par.expert_tp()}, {"zero", f->zero}, {"sequence_parallel", f->sequence_parallel}, {"interleave", cfg.fit.par.interleave},
                       {"pp_layout", f->pp_layout}, {"mtp_layers", f->mtp_layers},
                       {"embedding_loss_in_split", f->embedding_loss_in_split}};
        if (f->cp > 1) j["layout"]["cp_comm"] = CpCommName(cfg.cp_comm);
        j["fits"] = r->fits;
        j["shortfall_bytes"] = r->shortfall_bytes;
        j["step_time_s"] = r->step_time_s;
        j["tokens_per_s"] = r->tokens_per_s;
        j["tokens_per_s_per_gpu"] = r->tokens_per_s_per_gpu;
        j["model_tflops_per_gpu"] = r->model_tflops_per_gpu;
        j["mfu"] = r->mfu;
        j["hfu"] = r->hfu;
        j["flop_convention"] = r->convention;
        j["micro_batch"] = r->micro_batch;
        j["num_micro_batches"] = r->num_micro_batches;
        j["recompute"] = RecomputeName(r->recompute);
        if (r->recompute_layers > 0) j["recompute_layers"] = r->recompute_layers;
        if (!r->pipeline_ranks.empty()) {
          json ranks = json::array();
          for (const auto& pr : r->pipeline_ranks)
            ranks.push_back({{"layers", pr.layers}, {"mtp", pr.mtp}, {"output_layer", pr.output_layer},
                             {"seconds_per_micro_batch", pr.seconds_per_micro_batch}});
          if (r->memory.ranks.size() == ranks.size())
            for (size_t i = 0; i < ranks.size(); ++i) ranks[i]["peak_bytes"] = r->memory.ranks[i].peak_bytes;
          j["pipeline_ranks"] = ranks;
        }
        if (r->recompute == Recompute::kSelective) j["recompute_modules"] = RecomputeModulesList(r->recompute_modules);
        if (r->offload_layers > 0) {
          j["offload_layers"] = r->offload_layers;
          j["host_offload_bytes"] = r->memory.host_offload_bytes;
          j["host_capacity_bytes"] = r->host_capacity_bytes;
        }
        j["mode"] = cfg.fit.mode == Mode::kLora ? "lora" : "train";
        if (cfg.fit.mode == Mode::kLora) {
          j["lora_rank"] = cfg.fit.lora_rank;
          j["lora_dropout"] = cfg.fit.lora_dropout;
          j["trainable_params"] = r->memory.trainable_params;
          j["base_weights"] = cfg.fit.weights.id.empty() ? "bf16" : cfg.fit.weights.id;
        } else {
          j["weights"] = cfg.fit.weights.id.empty() ? "bf16" : cfg.fit.weights.id;  // fp8: FP8 parameters
        }
        if (cfg.fit.swiglu_input_fp8) j["activation_func_fp8_input_store"] = true;
        if (cfg.packed_doc_tokens > 0) j["packed_doc_tokens"] = cfg.packed_doc_tokens;
        j["attention"] = AttentionImplName(cfg.attention);
        j["cross_entropy"] = CrossEntropyImplName(cfg.cross_entropy);
        j["dtype"] = PrecisionKey(cfg.dtype);
        if (cfg.dtype == Precision::kFp8) j["fp8_recipe"] = Fp8RecipeName(cfg.fp8_recipe);
        if (cfg.dtype == Precision::kFp4) j["nvfp4_rht"] = cfg.nvfp4_rht;
        j["fp8_attention"] = cfg.fp8_attention;
        if (model->moe && f->ep > 1) j["moe_dispatcher"] = MoeDispatcherName(cfg.moe_dispatcher);
        j["cuda_graphs"] = CudaGraphsName(cfg.cuda_graphs);
        if (cfg.fit.mode != Mode::kLora) {
          j["optimizer"] = OptimizerName(cfg.fit.optimizer);
          j["master_dtype"] = MasterCopyName(cfg.fit.master);
          j["moments_dtype"] = MomentsDtypeName(cfg.fit.moments);
          j["model_state_bytes_per_param"] = r->memory.bytes_per_param_states;
        }
        j["per_gpu_peak_bytes"] = r->memory.per_gpu_peak_bytes;
        j["memory_breakdown_bytes"] = BreakdownJson(r->memory.breakdown);
        j["breakdown_s"] = BreakdownJson(r->breakdown_s);
        j["communication_total_s"] = r->communication_total_s;
        j["dominant"] = r->dominant;
        if (f->tokens > 0) {
          j["train_time_s"] = r->train_time_s;
          j["gpu_hours"] = r->gpu_hours;
          if (f->price > 0) j["cost_usd"] = r->cost_usd;
        }
        j["network"] = NetworkJson(DescribeNetwork(*cluster, *eff), f->gpus > cluster->gpus_per_node);
        j["efficiency_sources"] = eff->sources;
        j["notes"] = r->notes;
        j["validation_error"] = {{"step_time_s", BandJson(r->error, **gpu)}};
        if (f->explain) {
          j["ops"] = OpsJson(r->ops, RidgePointFor(**gpu, *eff, cfg.dtype));
          json calls = json::array();
          for (const auto& c : r->collectives)
            calls.push_back({{"what", c.what}, {"op", NcclOpName(c.op)}, {"bytes", c.bytes}, {"ranks", c.ranks},
                             {"nodes", c.nodes}, {"algorithm", c.algorithm}, {"protocol", c.protocol},
                             {"time_s", c.time_s}, {"algbw_bytes_per_s", c.algbw_bytes_per_s},
                             {"busbw_bytes_per_s", c.busbw_bytes_per_s}, {"runs", c.runs}});
          j["collectives"] = calls;
        }
        PrintJson(j);
        return r->fits ? kExitOk : kExitNoFit;
      }
      std::cout << fmt::format("{}{} on {} x {} (TP={} PP={} DP={}{}{}), global batch {} x {} tokens{}, {}\n", model->id,
                               cfg.fit.mode == Mode::kLora
                                   ? fmt::format(" LoRA rank {} ({} trainable parameters)", cfg.fit.lora_rank,
                                                 FormatCount(r->memory.trainable_params))
                                   : "",
                               f->gpus, (*gpu)->id, f->tp, f->pp, cfg.fit.par.dp,
                               f->cp > 1 ? fmt::format(" CP={}", f->cp) : "", f->zero ? fmt::format(" ZeRO-{}", f->zero) : "",
                               f->global_batch, f->seq,
                               cfg.packed_doc_tokens > 0
                                   ? fmt::format(" (packed documents of {})", cfg.packed_doc_tokens)
                                   : "",
                               cfg.dtype == Precision::kFp8
                                   ? fmt::format("FP8 GEMMs ({} scaling){}", Fp8RecipeName(cfg.fp8_recipe),
                                                 cfg.fit.mode != Mode::kLora && cfg.fit.weights.id == "fp8"
                                                     ? ", FP8 parameters"
                                                     : "")
                               : cfg.dtype == Precision::kFp4
                                   ? fmt::format("NVFP4 GEMMs (nvfp4 scaling, {}){}",
                                                 cfg.nvfp4_rht ? "Hadamard-transformed weight gradients" : "no Hadamard transform",
                                                 cfg.fit.weights.id == "nvfp4" ? ", NVFP4 parameters" : "")
                                   : PrecisionKey(cfg.dtype));
      std::cout << fmt::format(
          "micro-batch {} ({} per step per pipeline), recompute {}, attention {}{}{}{}\n",
          r->micro_batch, r->num_micro_batches,
          RecomputeWords(r->recompute, r->recompute_layers, r->recompute_modules),
          AttentionImplName(cfg.attention),
          cfg.cross_entropy != CrossEntropyImpl::kFused
              ? fmt::format(", cross-entropy {}", CrossEntropyImplName(cfg.cross_entropy))
              : "",
          model->moe && f->ep > 1 ? fmt::format(", MoE dispatch {}", MoeDispatcherName(cfg.moe_dispatcher)) : "",
          f->cp > 1 ? fmt::format(", CP exchange {}", CpCommName(cfg.cp_comm)) : "");
      {
        const NetworkSummary net = DescribeNetwork(*cluster, *eff);
        std::cout << "intra-node: " << IntraNodeWords(net, f->gpus_per_node > 0 ? "" : (*gpu)->id) << "\n";
        if (f->gpus > cluster->gpus_per_node)
          std::cout << "inter-node: " << InterNodeWords(net, f->inter_node.empty() ? (*gpu)->id : "") << "\n";
        else
          std::cout << fmt::format("inter-node: none (the {} GPUs share one node's GPU link)\n", f->gpus);
        std::cout << "\n";
      }
      if (!r->fits)
        std::cout << fmt::format("DOES NOT FIT: needs {} more per GPU (peak {}); the time below is what it would take\n\n",
                                 FormatBytes(r->shortfall_bytes), FormatBytes(r->memory.per_gpu_peak_bytes));
      Table t({"", "value"});
      t.Row({"step time", FormatSeconds(r->step_time_s)});
      for (const auto& term : kBreakdownTerms) {
        const double v = r->breakdown_s.*term.value;
        // Only eager FSDP stacks have a host term, only MoE models the calibrated overhead, only runs that offload
        // activations an offload wait.
        if ((term.value == &TrainBreakdown::host || term.value == &TrainBreakdown::moe_overhead) && v <= 0) continue;
        if (term.value == &TrainBreakdown::offload && r->offload_layers == 0) continue;
        t.Row({std::string("  ") + term.words, FormatSeconds(v)});
      }
      t.Row({"tokens/s", fmt::format("{:.0f} ({:.0f} per GPU)", r->tokens_per_s, r->tokens_per_s_per_gpu)});
      t.Row({"model TFLOP/s per GPU", fmt::format("{:.1f}", r->model_tflops_per_gpu)});
      t.Row({"MFU / HFU", fmt::format("{:.1f}% / {:.1f}%", 100 * r->mfu, 100 * r->hfu)});
      const double weight_cache = r->memory.breakdown.fp8_weight_cache;
      t.Row({"memory per GPU",
             FormatBytes(r->memory.per_gpu_peak_bytes) +
                 (weight_cache > 0 ? fmt::format(" (of which {} Transformer Engine's FP8 weight cache)",
                                                 FormatBytes(weight_cache))
                                   : "")});
      if (f->tokens > 0) {
        t.Row({"time to train", FormatSeconds(r->train_time_s)});
        t.Row({"GPU-hours", fmt::format("{:.0f}", r->gpu_hours)});
        if (f->price > 0) t.Row({"cost", fmt::format("${:.0f} at ${:.2f}/GPU-hour", r->cost_usd, f->price)});
      }
      std::cout << t.Render();
      std::cout << "dominant term: " << r->dominant << "\nMFU convention: " << r->convention << "\n";
      if (r->error.cases)
        std::cout << "validated against published runs (docs/validation.md): "
                  << BandWords("step time and throughput", r->error, "dense-model training runs", **gpu) << "\n";
      else
        std::cout << "validated against published runs (docs/validation.md): no band for MoE training (see the note)\n";
      for (const auto& n : r->notes) std::cout << "note: " << n << "\n";
      if (!f->efficiency.empty()) std::cout << "note: " << WhatIfNote(*f) << "\n";
      if (f->explain) {
        std::cout << "\nper-operator roofline (one layer, one micro-batch, in the phase shown; 'x' = forward + recompute + "
                     "backward equivalents per step on the critical stage):\n";
        PrintOps(r->ops, RidgePointFor(**gpu, *eff, cfg.dtype), r->step_time_s);
        if (!r->collectives.empty()) {
          std::cout << "\ncollectives (one of each; inside one NVLink domain nccl-tests' measured times (\"measured\"), "
                       "elsewhere the algorithm and protocol NCCL's tuning model picks; docs/methodology.md section 7):\n";
          Table ct({"collective", "size", "GPUs", "nodes", "NCCL", "time", "algbw", "busbw", "runs"});
          for (const auto& c : r->collectives)
            ct.Row({c.what, FormatBytes(c.bytes), std::to_string(c.ranks), std::to_string(c.nodes),
                    c.algorithm.empty() ? "-" : c.algorithm + " " + c.protocol, FormatSeconds(c.time_s),
                    FormatBandwidth(c.algbw_bytes_per_s), FormatBandwidth(c.busbw_bytes_per_s), c.runs});
          std::cout << ct.Render();
        }
        std::cout << BusBandwidthWords() << "\n";
        if (!r->pipeline_ranks.empty()) {
          double slowest = 0;
          for (const auto& pr : r->pipeline_ranks) slowest = std::max(slowest, pr.seconds_per_micro_batch);
          std::cout << "\npipeline ranks (per micro-batch; the slowest paces the step):\n";
          const auto& mem = r->memory.ranks;
          const bool with_mem = mem.size() == r->pipeline_ranks.size();
          Table t = with_mem ? Table({"rank", "layers", "MTP", "output layer", "time", "of slowest", "memory GB"})
                             : Table({"rank", "layers", "MTP", "output layer", "time", "of slowest"});
          for (size_t i = 0; i < r->pipeline_ranks.size(); ++i) {
            const auto& pr = r->pipeline_ranks[i];
            std::vector<std::string> row = {
                std::to_string(i), std::to_string(pr.layers), std::to_string(pr.mtp), pr.output_layer ? "yes" : "",
                FormatSeconds(pr.seconds_per_micro_batch),
                fmt::format("{:.0f}%", slowest > 0 ? 100 * pr.seconds_per_micro_batch / slowest : 0.0)};
            if (with_mem) row.push_back(fmt::format("{:.2f}", mem[i].peak_bytes / 1e9));
            t.Row(row);
          }
          std::cout << t.Render();
        }
        std::cout << "\nmemory on the peak GPU (" << r->memory.peak_stage << "):\n"
                  << MemoryBreakdownTable(r->memory.breakdown, r->memory.per_gpu_peak_bytes, false);
        if (!r->memory.peak_moment.empty()) std::cout << "peak moment: " << r->memory.peak_moment << "\n";
      }
      return r->fits ? kExitOk : kExitNoFit;
    }

    ModelSpec served = *model;
    if (f->no_sliding_window) served.DisableSlidingWindow();
    model = &served;
    InferConfig cfg;
    auto wf = ParseWeightFormat(f->weights);
    if (!wf.ok()) return PrintError(wf.status());
    cfg.fit.weights = *wf;
    cfg.compute = ServingComputePrecision(*wf);
    cfg.fit.quantize_head = f->quantize_head;
    cfg.fit.replicated_embeddings = f->replicated_embeddings;
    auto kv = ParseKvDtype(f->kv_dtype);
    if (!kv.ok()) return PrintError(kv.status());
    cfg.fit.kv_bytes_per_elem = *kv;
    auto da = ParseDecodeAttention(f->decode_attention);
    if (!da.ok()) return PrintError(da.status());
    cfg.decode_attention = *da;
    auto mi = ParseMoeImpl(f->moe_impl);
    if (!mi.ok()) return PrintError(mi.status());
    cfg.moe_impl = *mi;
    if (auto st = ApplyServingBatch(f->batch, f->max_batch, &cfg); !st.ok()) return PrintError(st);
    cfg.fit.par.tp = f->tp;
    cfg.fit.par.pp = f->pp;
    cfg.fit.par.ep = f->ep;
    cfg.fit.par.etp = f->etp;
    cfg.fit.par.attention_dp = f->attention_dp;
    cfg.moe_imbalance = f->serve_moe_imbalance;
    cfg.request_overhead_s = f->request_overhead_ms * 1e-3;
    cfg.step_overhead_s = f->step_overhead_ms * 1e-3;
    auto spec = ParseSpeculation(ctx, f->spec);
    if (!spec.ok()) return PrintError(spec.status());
    cfg.spec = *std::move(spec);
    if (f->gpus != 0 && f->gpus != f->tp * f->pp)
      return PrintError(InvalidArgument(fmt::format("--gpus {} must equal TP x PP = {} for one serving replica", f->gpus,
                                                    f->tp * f->pp)));
    cfg.input_len = f->input_len;
    cfg.output_len = f->output_len;
    f->concurrency = f->concurrency_list.empty() ? 0 : f->concurrency_list.front();
    if (f->concurrency > 0 && (f->batch != "1" || f->max_batch > 0))
      return PrintError(InvalidArgument(fmt::format(
          "--concurrency {} sets the batch (the clients' sequences in flight); drop --batch {}{}", f->concurrency,
          f->batch, f->max_batch > 0 ? " and --max-batch" : "")));
    const bool disagg = f->prefill_workers > 0 || f->decode_workers > 0;
    if (!disagg && (f->prefill_tp > 0 || f->prefill_ep > 0 || f->prefill_etp > 0 || f->prefill_attention_dp > 0))
      return PrintError(InvalidArgument(
          "--prefill-tp/--prefill-ep/--prefill-etp/--prefill-attention-dp describe a disaggregated prefill worker: "
          "give --prefill-workers (and --decode-workers) with --concurrency, or drop them"));
    std::optional<DisaggResult> dis;
    if (disagg) {
      if (f->concurrency < 1)
        return PrintError(InvalidArgument(
            "--prefill-workers/--decode-workers estimate a closed loop of clients: give --concurrency C"));
      if (f->concurrency_list.size() > 1)
        return PrintError(InvalidArgument("disaggregated serving takes one --concurrency value, not a sweep"));
      if (!f->emit.empty())
        return PrintError(InvalidArgument(
            "--emit writes one aggregated replica's launch line; a disaggregated deployment's (Dynamo's prefill and "
            "decode workers, their KV transfer) is not written: drop --emit, or estimate one worker without "
            "--prefill-workers/--decode-workers"));
      DisaggConfig dc;
      dc.prefill_workers = std::max(1, f->prefill_workers);
      dc.decode_workers = std::max(1, f->decode_workers);
      dc.prefill =
          PrefillLayout(cfg.fit.par, f->prefill_tp, f->prefill_ep, f->prefill_etp, f->prefill_attention_dp);
      auto d = EstimateDisaggregated(*model, *cluster, cfg, dc, f->concurrency, *eff);
      if (!d.ok()) return PrintError(d.status());
      dis = *std::move(d);
      cfg.fit.batch = dis->decode_batch_evaluated;  // the estimate below: the decode worker's step
    }
    std::optional<ClosedLoopResult> loop;
    if (f->concurrency > 0 && !disagg) {
      auto l = EstimateClosedLoop(*model, *cluster, cfg, f->concurrency, *eff);
      if (!l.ok()) return PrintError(l.status());
      loop = *std::move(l);
      cfg.fit.batch = loop->running;  // the estimate below: a step of the sequences in flight
    }
    // A sweep: the closed loop at each of the given concurrencies (the first one's is `loop`).
    std::vector<ClosedLoopResult> sweep;
    if (f->concurrency_list.size() > 1) {
      sweep.push_back(*loop);
      for (size_t i = 1; i < f->concurrency_list.size(); ++i) {
        InferConfig at = cfg;
        at.fit.batch = 1;
        auto l = EstimateClosedLoop(*model, *cluster, at, f->concurrency_list[i], *eff);
        if (!l.ok()) return PrintError(l.status());
        sweep.push_back(*std::move(l));
      }
    }
    // With --concurrency the closed loop has already made the estimate at the sequences in flight.
    Result<InferResult> r = loop  ? Result<InferResult>(loop->decode)
                            : dis ? Result<InferResult>(dis->decode)
                                  : EstimateInference(*model, *cluster, cfg, *eff);
    if (!r.ok()) return PrintError(r.status());
    const RidgePoint ridge = RidgePointFor(**gpu, *eff, cfg.compute);
    std::string launch, engine;
    if (!f->emit.empty()) {
      auto e = ParseServeEngine(f->emit);
      if (!e.ok()) return PrintError(e.status());
      engine = ServeEngineName(*e);
      auto ref = ServingModelRef(ctx, f->model, job->model);
      if (!ref.ok()) return PrintError(ref.status());
      auto cmd = ServeCommand(*e, job->model, **gpu, *ref, cfg, *r, f->no_sliding_window);
      if (!cmd.ok()) return PrintError(cmd.status());
      launch = *cmd;
    }
    if (json_out) {
      json j = JsonEnvelope("suanli.perf.infer/1");
      j["model"] = model->id;
      j["gpu"] = (*gpu)->id;
      j["layout"] = {{"tp", f->tp},
                     {"pp", f->pp},
                     {"ep", f->ep},
                     {"etp", ExpertTpFor(cfg.fit.par, Mode::kInfer)},
                     {"attention_dp", f->attention_dp}};
      if (model->moe && f->ep > 1)
        j["expert_imbalance"] = {{"requested", cfg.moe_imbalance},
                                 {"prefill", r->prefill_expert_imbalance},
                                 {"decode", r->decode_expert_imbalance}};
      j["host_overhead_s"] = {{"request", cfg.request_overhead_s}, {"step", cfg.step_overhead_s}};
      j["weights"] = cfg.fit.weights.id;
      j["quantize_head"] = cfg.fit.quantize_head;
      j["replicated_embeddings"] = cfg.fit.replicated_embeddings;
      j["sliding_window_tokens"] = model->sliding_window;  // 0: full attention (none, or --no-sliding-window)
      j["decode_attention"] = DecodeAttentionName(cfg.decode_attention);
      if (model->moe) j["moe_impl"] = MoeImplName(cfg.moe_impl);
      j["batch"] = r->batch;
      if (cfg.batch_max) j["batch_limited_by"] = r->batch_limit;
      j["fits"] = r->fits && (!dis || dis->fits);
      j["ttft_s"] = r->ttft_s;
      j["tpot_s"] = r->tpot_s;
      j["decode_tokens_per_s"] = r->decode_tokens_per_s;
      if (r->ttft_bound_s > 0) j["ttft_bound_s"] = r->ttft_bound_s;
      if (r->decode_tokens_per_s_bound > 0) j["decode_tokens_per_s_bound"] = r->decode_tokens_per_s_bound;
      j["output_tokens_per_s_per_gpu"] = r->output_tokens_per_s_per_gpu;
      j["e2e_latency_s"] = r->e2e_latency_s;
      j["max_batch"] = r->max_batch;
      j["per_gpu_peak_bytes"] = r->per_gpu_peak_bytes;
      j["prefill_bound"] = r->prefill_bound;
      j["decode_bound"] = r->decode_bound;
      j["network"] = NetworkJson(DescribeNetwork(*cluster, *eff), f->tp * f->pp > cluster->gpus_per_node);
      j["efficiency_sources"] = eff->sources;
      j["notes"] = r->notes;
      j["validation_error"] = {{"ttft_s", BandJson(r->ttft_error, **gpu)},
                               {"decode_tokens_per_s", BandJson(r->decode_error, **gpu)},
                               {"output_tokens_per_s_per_gpu", BandJson(r->throughput_error, **gpu)}};
      if (f->explain) {
        j["prefill_ops"] = OpsJson(r->prefill_ops, ridge);
        j["decode_ops"] = OpsJson(r->decode_ops, ridge);
      }
      if (cfg.spec.tokens > 0)
        j["speculative"] = {{"tokens", cfg.spec.tokens},
                            {"acceptance_length", cfg.spec.acceptance_length},
                            {"draft", r->draft},
                            {"topk", cfg.spec.topk},
                            {"verify_tokens", cfg.spec.verify_tokens > 0 ? cfg.spec.verify_tokens : cfg.spec.tokens + 1},
                            {"draft_step_s", r->spec_draft_step_s},
                            {"verify_s", r->spec_verify_s},
                            {"round_s", r->spec_round_s},
                            {"draft_bytes_per_gpu", r->draft_bytes_per_gpu}};
      if (!launch.empty()) j["launch"] = {{engine, launch}};
      const auto loop_json = [&](const ClosedLoopResult& l) -> json {
        return {{"concurrency", l.concurrency},
                {"running", l.running},
                {"queue_wait_s", l.queue_wait_s},
                {"prefills_per_step", l.prefills_per_step},
                {"prefill_s", l.prefill_s},
                {"decode_step_s", l.decode_step_s},
                {"mixed_step_extra_s", l.mixed_step_extra_s},
                {"ttft_s", l.ttft_s},
                {"tpot_s", l.tpot_s},
                {"requests_per_s", l.requests_per_s},
                {"output_tokens_per_s_per_gpu", l.output_tokens_per_s_per_gpu},
                {"validation_error", {{"tpot_s", BandJson(l.tpot_error, **gpu)}}},
                {"notes", l.notes}};
      };
      if (loop) j["closed_loop"] = loop_json(*loop);
      if (dis)
        j["disaggregated"] = {{"concurrency", dis->concurrency},
                              {"prefill_workers", std::max(1, f->prefill_workers)},
                              {"decode_workers", std::max(1, f->decode_workers)},
                              {"gpus", dis->gpus},
                              {"prompts_per_prefill", dis->prompts_per_prefill},
                              {"prefill_s", dis->prefill_s},
                              {"kv_transfer_s", dis->kv_transfer_s},
                              {"kv_transfer_bytes", dis->kv_transfer_bytes},
                              {"kv_link", dis->kv_link},
                              {"prefill_capacity_per_s", dis->prefill_capacity_per_s},
                              {"prefill_utilisation", dis->prefill_gpu_utilisation},
                              {"prefill_workers_to_keep_up", dis->prefill_workers_to_keep_up
                                                                 ? json(*dis->prefill_workers_to_keep_up)
                                                                 : json(nullptr)},
                              {"bound", dis->bound},
                              {"decode_batch", dis->decode_batch},
                              {"decode_batch_evaluated", dis->decode_batch_evaluated},
                              {"decode_batch_max", dis->decode_batch_max},
                              {"tpot_s", dis->tpot_s},
                              {"ttft_s", dis->ttft_s},
                              {"requests_per_s", dis->requests_per_s},
                              {"output_tokens_per_s_per_gpu", dis->output_tokens_per_s_per_gpu},
                              {"fits", dis->fits},
                              {"notes", dis->notes}};
      if (!sweep.empty()) {
        j["closed_loop_sweep"] = json::array();
        for (const auto& l : sweep) j["closed_loop_sweep"].push_back(loop_json(l));
      }
      PrintJson(j);
      return r->fits && (!dis || dis->fits) ? kExitOk : kExitNoFit;
    }
    const std::string experts =
        (f->ep > 1 ? fmt::format(" EP={} ETP={}", f->ep, ExpertTpFor(cfg.fit.par, Mode::kInfer)) : "") +
        (f->attention_dp > 1 ? fmt::format(", attention DP={} at TP {}", f->attention_dp, cfg.fit.par.attention_tp())
                             : "");
    std::cout << fmt::format(
        "{} on {} x {} (TP={} PP={}{}), weights {}, batch {}, {} in / {} out tokens, decode attention {}\n",
        model->id, f->tp * f->pp, (*gpu)->id, f->tp, f->pp, experts, cfg.fit.weights.id, ServingBatchWords(cfg, *r),
        f->input_len, f->output_len, DecodeAttentionName(cfg.decode_attention));
    if (f->tp * f->pp > 1) {
      const NetworkSummary net = DescribeNetwork(*cluster, *eff);
      std::cout << "intra-node: " << IntraNodeWords(net, f->gpus_per_node > 0 ? "" : (*gpu)->id)
                << (net.intra_nvlink ? "; small all-reduces run the engines' one-shot kernel where it is faster" : "")
                << "\n";
      if (f->tp * f->pp > cluster->gpus_per_node)
        std::cout << "inter-node: " << InterNodeWords(net, f->inter_node.empty() ? (*gpu)->id : "") << "\n";
    }
    std::cout << "\n";
    if (!r->fits)
      std::cout << fmt::format("DOES NOT FIT: {} per GPU needed, {} has {} (short by {}); the times below are what it "
                               "would take if it fit\n\n",
                               FormatBytes(r->per_gpu_peak_bytes), (*gpu)->id, FormatBytes((*gpu)->memory_bytes.value),
                               FormatBytes(r->per_gpu_peak_bytes - (*gpu)->memory_bytes.value));
    Table t({"", "value"});
    // At full load the prefill of every sequence in flight is not any one request's wait (that includes queueing).
    t.Row({cfg.batch_max ? "prefill of the whole batch" : "time to first token",
           fmt::format("{} ({}-bound)", FormatSeconds(r->ttft_s), r->prefill_bound)});
    t.Row({"time per output token", fmt::format("{} ({}-bound)", FormatSeconds(r->tpot_s), r->decode_bound)});
    t.Row({"decode tokens/s", fmt::format("{:.1f}", r->decode_tokens_per_s)});
    // The hardware's own limit at this batch (docs/methodology.md §9.5), for scale: no run gets there.
    if (r->ttft_bound_s > 0 && r->decode_tokens_per_s_bound > 0)
      t.Row({"physical bound", fmt::format("prefill at least {}, decode at most {:.1f} tokens/s",
                                           FormatSeconds(r->ttft_bound_s), r->decode_tokens_per_s_bound)});
    t.Row({"end-to-end latency", FormatSeconds(r->e2e_latency_s)});
    t.Row({"output tokens/s per GPU", fmt::format("{:.1f}", r->output_tokens_per_s_per_gpu)});
    t.Row({"largest batch that fits", std::to_string(r->max_batch)});
    std::cout << t.Render();
    if (loop) {
      std::cout << fmt::format("\nclosed loop at concurrency {} (each client sends its next request when the last ends; "
                               "docs/methodology.md section 9.6):\n",
                               loop->concurrency);
      Table lt({"", "value"});
      lt.Row({"sequences in flight", loop->running < loop->concurrency
                                         ? fmt::format("{} (the KV cache's limit; {} queued)", loop->running,
                                                       loop->concurrency - loop->running)
                                         : std::to_string(loop->running)});
      if (loop->prefills_per_step > 1) {
        lt.Row({fmt::format("{} prompts' prefill, one per attention group", loop->prefills_per_step),
                FormatSeconds(loop->prefill_s)});
      } else {
        lt.Row({"one prompt's prefill", FormatSeconds(loop->prefill_s)});
      }
      lt.Row({"decode step of the clients' sequences", FormatSeconds(loop->decode_step_s)});
      lt.Row({loop->prefills_per_step > 1 ? "what they add to their step" : "what a prefill adds to its step",
              FormatSeconds(loop->mixed_step_extra_s)});
      lt.Row({"time per output token (clients see)", FormatSeconds(loop->tpot_s)});
      lt.Row({loop->running < loop->concurrency ? "time to first token, with the queue's wait"
                                                 : "time to first token, without queueing",
              FormatSeconds(loop->ttft_s)});
      lt.Row({"requests/s", fmt::format("{:.2f}", loop->requests_per_s)});
      lt.Row({"output tokens/s per GPU", fmt::format("{:.1f}", loop->output_tokens_per_s_per_gpu)});
      std::cout << lt.Render();
      if (loop->tpot_error.cases)
        std::cout << "validated: " << BandWords("time per output token in closed-loop benchmarks", loop->tpot_error,
                                                "held-out runs of TensorRT-LLM, vLLM and SGLang", **gpu)
                  << "\n";
      for (const auto& n : loop->notes) std::cout << "note: " << n << "\n";
    }
    if (dis) {
      const int pw = std::max(1, f->prefill_workers), dw = std::max(1, f->decode_workers);
      std::cout << fmt::format("\ndisaggregated serving at concurrency {}: {} prefill worker(s), {} decode worker(s), {} "
                               "GPUs (docs/methodology.md section 9.8):\n",
                               dis->concurrency, pw, dw, dis->gpus);
      Table dt({"", "value"});
      dt.Row({fmt::format("prefill of {} prompt(s) side by side, one worker", dis->prompts_per_prefill),
              FormatSeconds(dis->prefill_s)});
      dt.Row({"prefill capacity (requests/s, all prefill workers)", fmt::format("{:.2f}", dis->prefill_capacity_per_s)});
      dt.Row({fmt::format("KV cache handover ({:.1f} MB per GPU over {})", dis->kv_transfer_bytes / 1e6, dis->kv_link),
              FormatSeconds(dis->kv_transfer_s)});
      dt.Row({"sequences per decode worker (mean; priced at)",
              fmt::format("{:.1f}; {} (at most {} fit)", dis->decode_batch, dis->decode_batch_evaluated,
                          dis->decode_batch_max)});
      dt.Row({"time per output token", FormatSeconds(dis->tpot_s)});
      dt.Row({dis->bound == "clients" ? "time to first token (no queue)" : "time to first token, with the wait",
              FormatSeconds(dis->ttft_s)});
      dt.Row({"requests/s", fmt::format("{:.2f}", dis->requests_per_s)});
      dt.Row({"output tokens/s per GPU (all GPUs)", fmt::format("{:.1f}", dis->output_tokens_per_s_per_gpu)});
      dt.Row({"what binds", dis->bound == "clients" ? "the clients (neither tier saturated)"
                            : dis->bound == "prefill" ? "the prefill workers"
                                                       : "the decode workers' KV caches"});
      if (dis->fits) std::cout << dt.Render();
      for (const auto& n : dis->notes) std::cout << (dis->fits ? "note: " : "DOES NOT FIT: ") << n << "\n";
    }
    if (!sweep.empty()) {
      std::cout << "\nclosed loop, concurrency sweep (tokens/s per user = 1 / time per output token):\n";
      Table st({"clients", "in flight", "TTFT", "time per output token", "tokens/s per user", "output tokens/s per GPU",
                "requests/s"});
      for (const auto& l : sweep)
        st.Row({std::to_string(l.concurrency),
                l.running < l.concurrency ? fmt::format("{} ({} queued)", l.running, l.concurrency - l.running)
                                          : std::to_string(l.running),
                FormatSeconds(l.ttft_s), FormatSeconds(l.tpot_s), fmt::format("{:.1f}", 1 / l.tpot_s),
                fmt::format("{:.1f}", l.output_tokens_per_s_per_gpu), fmt::format("{:.2f}", l.requests_per_s)});
      std::cout << st.Render();
      std::cout << "the TTFT is one prompt's prefill (with attention DP, one per attention group side by side), plus "
                   "the queue's wait where more clients come than the KV cache holds; the tables before the sweep and "
                   "the notes below are the first concurrency's\n";
    }
    std::vector<std::string> bands;
    if (r->ttft_error.cases) bands.push_back(BandWords("TTFT", r->ttft_error, "dense-model runs", **gpu));
    if (r->decode_error.cases) bands.push_back(BandWords("decode tokens/s at batch 1", r->decode_error, "runs", **gpu));
    if (r->throughput_error.cases)
      bands.push_back(BandWords(std::string_view(r->throughput_error.group) == "max_throughput"
                                    ? "output tokens/s at full load (TensorRT-LLM 1.0, in-flight batching)"
                                    : "static-batch output tokens/s",
                                r->throughput_error, "dense-model runs", **gpu));
    if (!bands.empty()) {
      std::cout << "validated against published runs (docs/validation.md):\n";
      for (const auto& b : bands) std::cout << "  " << b << "\n";
    }
    for (const auto& n : r->notes) std::cout << "note: " << n << "\n";
    if (!f->efficiency.empty()) std::cout << "note: " << WhatIfNote(*f) << "\n";
    if (!launch.empty()) std::cout << "\nlaunch (" << engine << "):\n" << launch;
    if (f->explain) {
      std::cout << "\nprefill operators:\n";
      PrintOps(r->prefill_ops, ridge, r->ttft_s);
      if (cfg.spec.tokens > 0) {
        std::cout << fmt::format("\ndecode operators (one speculation round: {} draft passes and the verification):\n",
                                 cfg.spec.tokens);
        PrintOps(r->decode_ops, ridge, r->spec_round_s);
      } else {
        std::cout << "\ndecode operators (one step):\n";
        PrintOps(r->decode_ops, ridge, r->tpot_s);
      }
      if (f->tp * f->pp > 1) std::cout << BusBandwidthWords() << "\n";
    }
    return r->fits && (!dis || dis->fits) ? kExitOk : kExitNoFit;
  };
}

}  // namespace suanli::cli
