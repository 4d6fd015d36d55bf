// The performance model: time per operator (roofline with achievable efficiency), an
// alpha-beta communication model, and the training schedule (TP/SP, PP with 1F1B or
// interleaving, DP with ZeRO/FSDP, CP, EP, recompute) and inference (prefill, decode).
// Formulas and citations: docs/methodology.md §6-§9. Validation: docs/validation.md.
//
// Everything here is a pure function of its inputs; one training evaluation takes
// microseconds (bench/perf_bench.cc measures it), which is what makes `suanli plan` possible.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"
#include "suanli/status.h"

namespace suanli {

// Achievable fractions of a GPU's datasheet peaks (data/efficiency.toml, or a calibration
// file from `suanli bench export-calibration`).
struct Efficiency {
  double gemm = 0.75;          // best-shape dense GEMM / dense peak (16-bit)
  double gemm_fp8 = 0;         // FP8 GEMM / FP8 peak; 0 = use `gemm`
  double gemm_fp4 = 0;         // NVFP4 GEMM / FP4 peak; 0 = use `gemm_fp8` (or `gemm`)
  // An FP8 GEMM's rate with its accumulator promoted to FP32 as it runs (cuBLASLt FAST_ACCUM off: Transformer
  // Engine's split accumulator, torchao's use_fast_accum=False) over the fast-accumulation rate `gemm_fp8` measures.
  // FP8 training runs its data- and weight-gradient GEMMs that way and its forward GEMMs fast (TE's
  // _2X_ACC_DGRAD/_2X_ACC_WGRAD, Float8CurrentScaling's MMParams; torchao's gemm_config_grad_*). 1 where the
  // tensor cores accumulate FP8 in full FP32 (Blackwell) or where no measurement exists.
  double gemm_fp8_precise = 1;
  double memory = 0.85;        // triad bandwidth / datasheet bandwidth
  double attention = 0.45;     // FlashAttention kernel / dense 16-bit peak
  // FP8 fused attention (TrainConfig::fp8_attention): its forward + backward speed-up over the 16-bit kernel of the
  // same library on the same GPU (cuDNN's own benchmark); 0 = not measured there, and the 16-bit rate is used.
  double attention_fp8 = 0;
  // The same speed-up by sequence length where it was measured at several (cuDNN's benchmark, causal, one sequence of
  // L tokens): (L, speed-up) points, L increasing; the model reads it at the run's attention length (log-linear
  // between points, the end values beyond them). Empty = `attention_fp8` at every length.
  std::vector<std::pair<double, double>> attention_fp8_by_seq;
  double link = 0.75;          // NCCL ring bus bandwidth / GPU link bandwidth per direction (every collective)
  // All-reduce bus bandwidth / link where the switch reduces in the network (NVLink SHARP, NCCL's NVLS
  // algorithm on H100/H200 NVSwitch systems); 0 = `link`. Used inside one node when Cluster::nvls is on.
  double link_allreduce = 0;
  double network = 0.85;       // NCCL bus bandwidth / NIC line rate
  double kernel_launch_s = 5e-6;
  // A serving engine's own all-reduce for small messages inside an NVLink node (TensorRT-LLM's custom all-reduce,
  // vLLM's and SGLang's, PyTorch's intra-node one-shot kernel that gpt-fast enables): every rank reads every peer's
  // buffer over the link and sums. Time = latency + per_peer x (n - 1) + (n - 1) x bytes / (link x link bandwidth
  // per direction); fitted on a published H100 micro-benchmark (data/efficiency.toml [oneshot_allreduce]).
  double oneshot_allreduce_latency_s = 3.4e-6;
  double oneshot_allreduce_per_peer_s = 0.31e-6;
  double oneshot_allreduce_link = 0.25;
  // Compute slowdown while a collective runs concurrently (NCCL kernels take SMs and HBM bandwidth):
  // overlapped communication of duration M under compute C costs max(M, C + overlap_slowdown x min(M, C)).
  double overlap_slowdown = 0.189;
  // Share of the tensor-parallel collectives that --tp-overlap (collective matmuls: Transformer Engine's userbuffers,
  // PyTorch's async TP) takes off the critical path; the rest stays exposed (the chunk that must arrive before the
  // first partial GEMM, the SMs the reduce-scatter kernels take, the chunked GEMMs' lower rate). From torchtitan's
  // async-TP benchmark on H100 (data/efficiency.toml [default] tp_overlap_hidden).
  double tp_overlap_hidden = 0.48;
  // Spread of per-GPU speed among GPUs of one model (power management and manufacturing: Sinha et al. 2022),
  // as a relative standard deviation. A synchronous job runs at its slowest GPU's pace: N GPUs' kernels take
  // 1 + spread x E[max of N standard normals] times a typical GPU's (docs/methodology.md §8). 0 = off.
  double gpu_speed_spread = 0;
  // Pinned copies between the GPU and host memory (copy engines), achieved / datasheet bandwidth per direction of
  // the host link (PCIe, or NVLink-C2C where the GPU file has [host_link]). D2H: activation offload; H2D: reload.
  double host_d2h = 0.84, host_h2d = 0.84;
  double dequant_ops_int8 = 2, dequant_ops_int4 = 4, dequant_ops_nf4 = 5, dequant_ops_gguf = 4;
  // Per-query-head decode attention (DecodeAttention::kPerHead): thread-instructions issued per cached
  // K or V element per query head. Fitted (docs/validation.md §4); data/efficiency.toml [decode_attention].
  double per_head_decode_instructions = 8.5;
  // Eager PyTorch FSDP (TrainConfig::eager with ZeRO-3): host-side time per transformer layer per micro-batch
  // (forward + backward; a recomputed forward adds a third) that does not overlap with the GPU. One global
  // value, not per GPU: on llm-foundry's runs the missing time is the same on A100 and H100 (docs/validation.md
  // §4). Fitted on the A100 rows; data/efficiency.toml [eager_fsdp].
  double eager_fsdp_host_per_layer_s = 5.5e-3;
  // Megatron-Core MoE training: an MoE layer's forward, backward and recompute take this many times the sum of
  // its operators' roofline times (communication apart), without CUDA graphs or with partial ones, and with the
  // whole iteration captured in one graph (TrainConfig::cuda_graphs). Fitted on Megatron-LM's MoE recipe runs,
  // checked on Megatron-Bridge's (docs/validation.md §4); data/efficiency.toml [moe_training].
  double moe_layer_time_eager = 1.8, moe_layer_time_full_graph = 1.3;
  // Serving's fused MoE operator (TensorRT-LLM's, vLLM's and SGLang's fused_moe): the fixed time of its kernels beyond
  // the two grouped GEMMs (routing, the expert maps, the row expansion and the finalising gather), per MoE layer and
  // pass; their bytes are priced apart. Fitted on TensorRT-LLM 1.3's MoE operator sweep on H100, checked on six other
  // GPUs (docs/validation.md §4); data/efficiency.toml [moe_serving]. 0 = not charged.
  double moe_serving_fixed_s = 0;
  // Serving's prefill attention operator: the fixed time of a context-phase attention kernel beyond one kernel floor
  // (its sequence-offset setup and launch ramp), per layer and pass. Fitted on TensorRT-LLM 1.3's attention operator
  // timed alone on H100, checked on six other GPUs, vLLM 0.24's and SGLang 0.5.14's kernels and the held-out TTFT runs
  // (docs/validation.md §4); data/efficiency.toml [serving_attention]. 0 = not charged.
  double serving_prefill_attention_fixed_s = 0;
  std::vector<std::string> sources;  // "field: citation" lines
};

struct Calibration;  // suanli/bench.h: what `suanli bench export-calibration` measured

// Replaces the efficiencies with a machine's measurements: achieved triad bandwidth, the best
// large-shape (>= 4096^3) GEMM per precision, the NCCL all-reduce bus bandwidth over the GPU link,
// and the kernel-launch latency. Each replaced value is listed in `sources`. Errors: a file measured
// on another GPU model, or values outside physical bounds.
Result<Efficiency> ApplyCalibration(const Efficiency& base, const Calibration& cal, const GpuSpec& gpu);

// Loads data/efficiency.toml (embedded) and returns the entry for `gpu_id` over the defaults.
Result<Efficiency> LoadEfficiency(std::string_view gpu_id);
Result<Efficiency> ParseEfficiencyToml(std::string_view text, std::string_view file, std::string_view gpu_id);

// The machine: GPUs per node, the link inside a node, the fabric between nodes.
struct NcclCurve;  // below
struct Cluster {
  const GpuSpec* gpu = nullptr;
  int gpus_per_node = 8;
  double intra_bw_per_dir = 0;   // bytes/s per GPU per direction (NVLink, or PCIe when no link)
  double intra_latency_s = 2e-6;
  std::string intra_name;
  double inter_bw_per_gpu = 0;   // bytes/s per GPU per direction across nodes (NIC share)
  double inter_latency_s = 5e-6;
  std::string inter_name;
  std::string inter_id;          // the fabric's catalog id (data/interconnects.toml), e.g. "ib-ndr"
  double nic_bw_per_dir = 0;     // bytes/s per NIC per direction (the line rate; 400 Gb/s = 50 GB/s)
  int nics_per_node = 0;
  // NCCL may run all-reduce as NVLS (in-switch reduction) where the efficiency data has `link_allreduce`;
  // NCCL_NVLS_ENABLE=0 (`--no-nvls`) turns it off and all-reduce runs as a ring like every other collective.
  bool nvls = true;
  // The link inside a node is NVLink-class (NVLink, NVSwitch, Infinity Fabric): NCCL's per-hop latencies
  // and its LL128 protocol apply; false for PCIe.
  bool intra_nvlink = true;
  // Datasheet bandwidth per direction between each GPU and host memory (PCIe, or NVLink-C2C on Grace superchips);
  // 0 when the catalog has neither. CPU activation offloading crosses it.
  double host_bw_per_dir = 0;
  std::string host_link_name;
  // NCCL's measured times inside the NVLink domain (data/nccl_curves.toml) for the GPU's link kind; nullptr where
  // there are none (PCIe, Infinity Fabric, a link without curves): the cost model then times every collective.
  const NcclCurve* nccl_curve = nullptr;
};
// Builds a cluster from the catalog: intra-node link from the GPU's spec (PCIe when none),
// inter-node from an interconnect id (e.g. "ib-ndr") with `nics_per_node` NICs (default one per GPU).
Result<Cluster> MakeCluster(const HardwareCatalog& hw, const GpuSpec& gpu, int gpus_per_node,
                            std::string_view inter_node, int nics_per_node = 0);

// The links a cluster's collectives run over, as the model takes them (docs/methodology.md §7): each one's datasheet
// rate per GPU per direction and the NCCL bus bandwidth the efficiency data lets it reach. Bus bandwidth is
// nccl-tests' busbw: a collective of S bytes over n ranks takes latency + S / algbw, with busbw = algbw x 2(n-1)/n
// for all-reduce and x (n-1)/n for all-gather and reduce-scatter. All rates in bytes/s; network line rates are
// quoted in bits (Gb/s) and converted here (x 1/8).
struct NetworkSummary {
  // Inside a node: the GPU link (NVLink, NVSwitch, Infinity Fabric, or PCIe where there is none).
  std::string intra_name;
  bool intra_nvlink = true;
  double intra_bytes_per_s = 0;            // datasheet, per GPU per direction
  double intra_busbw_bytes_per_s = 0;      // ring collectives (all-gather, reduce-scatter, all-reduce without NVLS)
  double intra_nvls_busbw_bytes_per_s = 0; // all-reduce with the in-switch reduction; 0 when not used
  double intra_latency_s = 0;
  // Across nodes: the node's NICs, shared by its GPUs.
  std::string fabric;                      // catalog id, e.g. "ib-ndr"
  double nic_bytes_per_s = 0;              // line rate of one NIC per direction
  int nics_per_node = 0, gpus_per_node = 0;
  double inter_bytes_per_s_per_gpu = 0;    // nics x line rate / GPUs per node
  double inter_busbw_bytes_per_s_per_gpu = 0;  // x the network efficiency; a group with k ranks on each node gets k x
                                               // this (NCCL runs a ring per NIC), at most the link inside the node
  double inter_latency_s = 0;
};
NetworkSummary DescribeNetwork(const Cluster& c, const Efficiency& e);

// All-to-all and point-to-point times (seconds) for `bytes` per rank over `n` ranks with bandwidth `busbw`
// (bytes/s) and per-step latency `alpha` (s): (n-1)/n of the bytes leave each rank, n-1 steps.
double AllToAllTime(double bytes, int n, double busbw, double alpha);
double P2PTime(double bytes, double bw, double alpha);

// NCCL's own cost model for its collectives (src/graph/tuning.cc @01afd20a; docs/methodology.md §7):
// time = latency(algorithm, protocol) + bytes / bandwidth(algorithm, protocol), the fastest of ring and
// tree x LL, LL128 and Simple. The latency is a base per collective plus a per-hop latency for each step
// over NVLink, PCIe or the network; LL moves data at 1/4 (all-reduce) to 1/3 of the bus bandwidth and LL128
// at 0.92 of it; trees are capped (110 GB/s on up to 2 nodes, 80 beyond) and corrected by message size.
// `busbw` is the large-message ring bus bandwidth (GroupBusBandwidth), `bytes` the full buffer. NVLS (the
// in-switch reduction; `nvls_busbw` > 0) is newer than that model: it takes the ring Simple latency.
// No time (0) for one rank or no bytes; without a positive bus bandwidth the collective cannot run: infinity.
enum class NcclOp { kAllReduce, kAllGather, kReduceScatter };
struct NcclGroup {
  int ranks = 1;
  int nodes = 1;             // ranks / ranks per node
  bool nvlink = true;        // the link inside a node (false: PCIe)
  double busbw = 0;          // bytes/s, large-message ring bus bandwidth
  double nvls_busbw = 0;     // bytes/s, all-reduce through the switch; 0 = none
};
struct NcclChoice {
  double time_s = 0;
  const char* algorithm = "";  // ring, tree, nvls
  const char* protocol = "";   // LL, LL128, Simple
};
NcclChoice NcclCollective(NcclOp op, double bytes, const NcclGroup& g);

// NCCL measured inside one NVLink domain (data/nccl_curves.toml, docs/methodology.md §7): nccl-tests times of
// all-reduce (NCCL's default, the in-switch reduction where it has one), all-gather, reduce-scatter and all-to-all at
// 2, 4 and 8 ranks and 512 B to 512 MiB on one GPU per link kind, used on every GPU with that link as a fraction of
// the large-message bus bandwidth (`reference_busbw`, that GPU's link x efficiency.link).
enum class CurveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll };
struct NcclCurve {
  std::string link;               // the link kind ("nvlink4")
  std::vector<std::string> also;  // link kinds without curves of their own that take these
  std::string gpu;                // where measured
  std::string source;             // the citation
  double reference_busbw = 0;     // bytes/s: the measured GPU's link x efficiency.link
  double reference_nvls_busbw = 0;  // bytes/s: its link x efficiency.link_allreduce (the in-switch all-reduce)
  std::vector<double> sizes;      // bytes, increasing
  std::array<std::array<std::vector<double>, 3>, 4> time_s;  // [op][2, 4, 8 ranks][size], non-decreasing in size
};
Result<std::vector<NcclCurve>> ParseNcclCurves(std::string_view text, std::string_view file);
// The bundled data/nccl_curves.toml, parsed once; an error if it does not parse (MakeCluster returns it).
const Result<std::vector<NcclCurve>>& BundledNcclCurves();
const NcclCurve* NcclCurveFor(std::string_view link_kind);  // the bundled curve for a link kind, or nullptr
// Measured bus bandwidth over `reference_busbw` at `bytes` (nccl-tests' size) over `n` ranks: linear in size between
// the measured sizes (flat time below the smallest, the line through the two largest beyond), linear in n between
// 2, 4 and 8, the 8-rank curve above 8. `ring`: an all-reduce without the in-switch reduction, whose 8-rank time adds
// the difference between the ring's and the in-switch asymptotic bandwidth terms.
double NcclCurveRel(const NcclCurve& c, CurveOp op, double bytes, int n, bool ring = false);
// A collective of `bytes` over `n` ranks of one NVLink domain on this cluster from its curve: bytes x busbw factor /
// (link x efficiency.link x rel); an all-reduce is a ring where the in-switch reduction is off (--no-nvls) or the GPU
// has none (efficiency without link_allreduce). < 0 where the cluster has no curve.
double MeasuredCollectiveTime(const Cluster& c, const Efficiency& e, CurveOp op, double bytes, int n);
const char* NcclOpName(NcclOp op);  // all-reduce, all-gather, reduce-scatter

// Achievable bus bandwidth (bytes/s) and per-step latency of a collective over `n` ranks that sit
// `stride` ranks apart (rank order TP, CP, DP, PP from the innermost; TP stride 1, DP stride TP x CP).
// Inside one node: the GPU link x link efficiency. Across nodes, NCCL runs one ring per NIC through
// the k group members of each node, so the bus bandwidth is k x the per-GPU NIC share (capped by the
// link inside the node): 8 x 200 Gb/s HDR per node gives about 170 GB/s, not 25 GB/s.
// `kind`: all-reduce may use the in-switch reduction inside a node (Efficiency::link_allreduce); all-gather,
// reduce-scatter, all-to-all and point-to-point move every byte over the wire (Efficiency::link).
enum class Collective { kAllReduce, kRing };
double GroupBusBandwidth(const Cluster& c, const Efficiency& e, int n, int stride,
                         Collective kind = Collective::kRing);
double GroupLatency(const Cluster& c, int n, int stride);
// The NCCL group of `n` ranks `stride` apart on this cluster, and the time of one collective over it.
NcclGroup GroupNccl(const Cluster& c, const Efficiency& e, int n, int stride, Collective kind = Collective::kRing);
double GroupCollectiveTime(const Cluster& c, const Efficiency& e, NcclOp op, double bytes, int n, int stride);
// One collective as `--explain` reports it: what NCCL's tuning model picks for it on this cluster and the bandwidths
// it reaches, in nccl-tests' terms. `bytes` is the whole buffer (nccl-tests' size); algbw = bytes / time (latency
// included) and busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather and reduce-scatter.
struct CollectiveCall {
  std::string what;   // e.g. "TP all-gather (sequence parallel)"
  NcclOp op = NcclOp::kAllReduce;
  double bytes = 0;
  int ranks = 1, nodes = 1;
  std::string algorithm, protocol;
  double time_s = 0;
  double algbw_bytes_per_s = 0, busbw_bytes_per_s = 0;
  std::string runs;   // how often a step runs it, in words
};
CollectiveCall DescribeCollective(const Cluster& c, const Efficiency& e, NcclOp op, double bytes, int n, int stride,
                                  std::string what, std::string runs);
// A serving engine's tensor-parallel all-reduce of `bytes` over `n` consecutive ranks: NCCL's, or, where the n GPUs
// share one node's NVLink (or other GPU link), the engines' one-shot kernel when that is faster (small messages:
// decode). docs/methodology.md §7.
struct ServingAllReduce {
  double time_s = 0;
  bool oneshot = false;  // the one-shot kernel, not NCCL
};
ServingAllReduce ServingAllReduceTime(const Cluster& c, const Efficiency& e, double bytes, int n);
// All-to-all of `bytes` per rank over such a group. Inside one node: AllToAllTime at the link rate. Across
// nodes every rank sends the (n - k)/n of its bytes bound for other nodes through its own NIC share while the
// (k - 1)/n for its node's other ranks go over the link at the same time; the slower of the two sets the time.
// There is no ring to spread one rank's traffic over the node's other NICs, unlike GroupBusBandwidth.
double GroupAllToAllTime(const Cluster& c, const Efficiency& e, double bytes, int n, int stride);

// How MoE tokens reach their experts (Megatron-Core --moe-token-dispatcher-type). kAllToAll: the tokens are
// permuted into one row per (token, expert) pair and exchanged with an NCCL all-to-all, so a token routed to
// k experts travels k times, also to the same GPU or node. kFlex: DeepEP or HybridEP (--moe-token-dispatcher-type
// flex): a token travels once to each GPU that holds at least one of its experts, and across nodes once to each
// node, over the NIC to the GPU with the same local index, which forwards it over NVLink (DeepSeek-V3 report,
// arXiv 2412.19437 §3.2.2; DeepEP's normal kernels). Combine mirrors dispatch. docs/methodology.md §7.
enum class MoeDispatcher { kAllToAll, kFlex };
// How context-parallel ranks share attention's inputs (Megatron-Core --cp-comm-type, Transformer Engine's
// cp_comm_type). kP2P: a ring that passes K and V blocks from rank to rank while attention runs on the block it has
// (the default). kAllToAll: DeepSpeed-Ulysses style, an all-to-all turns the sequence shards of Q, K and V into
// head shards over the whole sequence, and another turns the output back, none of it hidden. docs/methodology.md §8.
enum class CpComm { kP2P, kAllToAll };
// "p2p" (alias "ring"), "a2a" (alias "alltoall", "ulysses"); an error lists them.
Result<CpComm> ParseCpComm(std::string_view name);
const char* CpCommName(CpComm c);
inline constexpr const char* kCpCommHelp =
    "with --cp > 1: p2p (a K/V ring hidden under attention; default) | a2a (Ulysses all-to-alls of Q, K, V and the "
    "output, exposed)";
// "alltoall" (alias "a2a"), "flex" (alias "deepep", "hybridep"); an error lists them.
Result<MoeDispatcher> ParseMoeDispatcher(std::string_view name);
const char* MoeDispatcherName(MoeDispatcher d);
inline constexpr const char* kMoeDispatcherHelp =
    "alltoall (NCCL all-to-all, a copy per expert; default) | flex (DeepEP/HybridEP: a copy per GPU, across nodes "
    "one per node)";
// Probability that one token's `k` experts, drawn without replacement from `experts` spread evenly over
// `groups` equal groups (GPUs or nodes), include at least one expert of a given group: 1 - C(E - E/g, k) / C(E, k).
double ExpertGroupHitProbability(int experts, int k, int groups);
// One flex dispatch (or combine) of `token_bytes` per rank (tokens x hidden x element bytes, before the k-fold
// copy) over an EP group of `n` ranks `stride` apart whose `experts` experts take `k` per token: per token,
// (nodes - 1) x P(node hit) copies over the network and (n - nodes) x P(GPU hit) over NVLink, the two at
// the same time; the slower one and the group's latency set the time.
double FlexDispatchTime(const Cluster& c, const Efficiency& e, double token_bytes, int experts, int k, int n,
                        int stride);

// Time of a kernel with compute time `t_compute` and memory time `t_memory` (both at achievable
// rates): a smooth roofline, max() far from the ridge point, slower than max() near it.
double RooflineTime(double t_compute, double t_memory);

// Time a collective of duration `comm` adds to `compute` it overlaps with: the part that does not fit
// under the compute, plus the compute's slowdown while both run (`slowdown` x the overlapped time;
// Efficiency::overlap_slowdown). max(comm, compute + slowdown x min(comm, compute)) - compute.
double OverlapCost(double compute, double comm, double slowdown);
// The same for a data-parallel collective issued model chunk by model chunk, as Megatron-Core does under an
// interleaved pipeline (its grad_sync_func / param_sync_func per chunk, core_v0.8.0 schedules.py): `comm` splits
// into `chunks` equal parts; part k can start `chunk_window` before the k-th chunk's compute ends, the chunks'
// compute ends `gap` apart, and the parts run one after another. What is left after the last chunk's compute, or
// the slowdown of the overlapped part if that is more. With one chunk it is OverlapCost(chunk_window, comm, ...).
double ChunkedOverlapCost(double chunk_window, double gap, int chunks, double comm, double slowdown);

// kIssue: bound by the SMs' instruction issue rate on CUDA cores, not by tensor-core FLOPs or bytes.
// kCalibrated: time the model adds from a calibrated multiple rather than from an operator's roofline (the
// MoE-layer overhead).
enum class Bound { kCompute, kMemory, kLatency, kCommunication, kIssue, kCalibrated };
const char* BoundName(Bound b);

// One row of the per-operator table (`--explain`).
struct OpCost {
  std::string name;
  std::string phase;        // forward | backward | recompute | step
  double flops = 0;         // per GPU, per micro-batch (per step for "step" ops)
  double bytes = 0;         // memory traffic
  double time_s = 0;        // per occurrence
  double count = 1;         // occurrences per training step / per token
  Bound bound = Bound::kCompute;
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

// Time of one GEMM (M x K) @ (K x N), `batch` times, on a GPU: a roofline with a shape
// efficiency (tile and wave quantisation) and a kernel-launch floor. `elem_bytes` is the input
// element size; `peak` the dense rate for the dtype.
struct GemmTime {
  double time_s = 0, flops = 0, bytes = 0, utilisation = 0;
  double compute_s = 0, memory_s = 0;  // the two roofline terms time_s combines (before the launch floor)
  Bound bound = Bound::kCompute;
};
// `weight_elem_bytes` (the K x N operand) defaults to `elem_bytes`; weight-only quantisation sets it.
GemmTime EstimateGemm(double m, double n, double k, double batch, double elem_bytes, double peak,
                      double gemm_eff, const GpuSpec& gpu, const Efficiency& eff, double weight_elem_bytes = -1);

// The ridge point of the precision GEMMs run at: the arithmetic intensity (FLOP per byte) above which a
// full-tile GEMM is compute-bound. `achievable_flops_per_byte` uses the rates operators are timed with
// (dense peak x GEMM efficiency over bandwidth x memory efficiency), so it agrees with the bound the
// model reports; `datasheet_flops_per_byte` is peak / bandwidth. FP8 falls back to 16-bit on a GPU
// without an FP8 peak, and `precision` says which was used ("FP8" or "16-bit").
struct RidgePoint {
  const char* precision = "16-bit";
  double achievable_flops_per_byte = 0;
  double datasheet_flops_per_byte = 0;
};
RidgePoint RidgePointFor(const GpuSpec& gpu, const Efficiency& eff, Precision gemm_precision);

// Attention kernels. kFlash: FlashAttention-2 class (the `attention` efficiency in data/efficiency.toml
// is an FA2 measurement). kFlash1: FlashAttention 1.x CUDA kernels, and the Triton FlashAttention kernel
// (flash_attn_triton.py: "overall slightly slower than" FA1), at half the FA2 rate ("2.0: complete
// rewrite, 2x faster", flash-attention changelog). kUnfused: QK^T and PV GEMMs around a softmax kernel.
enum class AttentionImpl { kFlash, kFlash1, kUnfused };
// "flash" (alias "fa2"), "flash1" (aliases "fa1", "triton"), "unfused"; an error lists the valid names.
Result<AttentionImpl> ParseAttentionImpl(std::string_view name);
const char* AttentionImplName(AttentionImpl a);
// One line for --help wherever an attention kernel is chosen.
inline constexpr const char* kAttentionImplHelp = "flash (FlashAttention-2) | flash1 (FA 1.x, Triton FA) | unfused";
// Throughput of a FlashAttention-1-class kernel relative to FlashAttention-2.
inline constexpr double kFlash1RelativeSpeed = 0.5;
enum class FlopConvention { k6N, kMegatron };
// Training compute precision: "bf16", "fp16", "fp8" (FP8 GEMMs, Transformer Engine style) or "fp4" (alias
// "nvfp4": Transformer Engine's NVFP4BlockScaling recipe on Blackwell, Fp8Recipe::kNvfp4); an error lists the valid
// names.
Result<Precision> ParseTrainDtype(std::string_view name);
// Training whose layer GEMMs run on quantised operands that Transformer Engine casts (FP8 or NVFP4).
inline bool QuantizedTraining(Precision dtype) { return dtype == Precision::kFp8 || dtype == Precision::kFp4; }
// Full training with the layers' weights kept as Transformer Engine quantised tensors: FP8 parameters ("fp8",
// Megatron-Core --fp8-param-gather) or NVFP4 parameters ("nvfp4", --fp4-param-gather); the weight format's id.
inline bool QuantizedParameters(std::string_view weights_id) { return weights_id == "fp8" || weights_id == "nvfp4"; }
// How FP8 training scales its tensors (Transformer Engine recipes; docs/methodology.md §6.1). kDelayed:
// DelayedScaling, scale from the amax history, the cast fused into the producing kernel's epilogue or one
// cast-transpose. kCurrent: Float8CurrentScaling (Megatron-Bridge's "FP8-CS"): each tensor's amax is taken
// just before its cast, which for a tensor no norm or activation kernel produced is a separate read, and
// under sequence parallelism the amax of all-gathered inputs and grads is all-reduced over the TP group.
// kMxfp8: MXFP8 block scaling (one E8M0 scale per 32 values, in each of the two layouts), no amax pass.
// kNvfp4: the recipe of --dtype fp4 (never chosen with --fp8-recipe): NVFP4BlockScaling, E2M1 values with one E4M3
// scale per 16 and a per-tensor FP32 scale from the tensor's amax, in both layouts (FP4 GEMMs take only the TN
// layout); with the random Hadamard transform (TrainConfig::nvfp4_rht) the weight gradient's operands are
// transformed first, which takes another amax of the transformed tensor.
enum class Fp8Recipe { kDelayed, kCurrent, kMxfp8, kNvfp4 };
// Bytes per element of an NVFP4 tensor in one layout: 4 bits and a 1-byte E4M3 scale per 16 values.
inline constexpr double kNvfp4BytesPerElement = 0.5 + 1.0 / 16;
// "delayed", "current" (alias "cs", "fp8-cs", "tensorwise"), "mxfp8" (alias "mx", "fp8-mx"); an error lists them.
Result<Fp8Recipe> ParseFp8Recipe(std::string_view name);
const char* Fp8RecipeName(Fp8Recipe r);
// An error when the GPU cannot train in FP8 with this recipe (FP8 needs Hopper, Ada or newer; MXFP8 needs
// Blackwell's block-scaled tensor cores).
Status CheckFp8Training(const GpuSpec& gpu, Fp8Recipe r);
// Bytes per transformer-layer weight parameter of the FP8 copies Transformer Engine keeps for a training step
// (FitRequest::fp8_weight_cache_bytes_per_param): the row-wise copy the forward reads (1 B) and, where FP8 GEMMs take
// only the TN layout (Hopper, Ada; not compute capability 10.x), the transpose dgrad reads (1 B); MXFP8 keeps both
// layouts with an E8M0 scale per 32 values; NVFP4 both layouts at kNvfp4BytesPerElement. Under FP8 or NVFP4 parameters
// (`fp8_params`) the parameter is itself the row-wise copy, counted with the weights, so one layout less.
// docs/methodology.md §5 and §6.3.
double Fp8WeightCacheBytesPerParam(const GpuSpec& gpu, Fp8Recipe recipe, bool fp8_params);
inline constexpr const char* kFp8RecipeHelp =
    "with --dtype fp8: delayed (default) | current (FP8-CS, Megatron tensorwise) | mxfp8 (Blackwell)";

// How the loss over the vocabulary is computed on the last stage (docs/methodology.md §6.4): the bytes per logit
// each implementation moves, read from its code. kFused: Megatron-Core's native fusion (--cross-entropy-loss-fusion,
// jit-fused FP32 softmax; 22 B forward, 10 B backward). kUnfused: Megatron-LM without that flag, its default from
// 2021 to this day: cast to FP32, then max, subtract, exp, sum and divide in place, each a pass (38 B forward,
// 14 B backward). kOnline: online-softmax kernels that read the 16-bit logits and overwrite them with the
// gradient (Transformer Engine's --cross-entropy-fusion-impl te, Liger, flash-attn's cross-entropy; 2 B + 4 B).
enum class CrossEntropyImpl { kFused, kUnfused, kOnline };
// "fused", "unfused", "online" (alias "te"); an error lists them.
Result<CrossEntropyImpl> ParseCrossEntropyImpl(std::string_view name);
const char* CrossEntropyImplName(CrossEntropyImpl c);
inline constexpr const char* kCrossEntropyHelp =
    "fused (default; Megatron-Core --cross-entropy-loss-fusion) | unfused (Megatron-LM's default FP32 path) | online "
    "(single pass: --cross-entropy-fusion-impl te, Liger)";

// CUDA graphs in training (Megatron-Core --cuda-graph-impl / --cuda-graph-scope). kPartial: per-layer graphs
// of some modules (attention, MoE router and preprocessing); kFull: the whole iteration one graph
// (--cuda-graph-scope full_iteration). Only MoE layers' time depends on it (Efficiency::moe_layer_time_*).
enum class CudaGraphs { kNone, kPartial, kFull };
// "none", "partial", "full" (alias "full_iteration"); an error lists them.
Result<CudaGraphs> ParseCudaGraphs(std::string_view name);
const char* CudaGraphsName(CudaGraphs g);
inline constexpr const char* kCudaGraphsHelp =
    "none (default) | partial (attention/router/preprocess scopes) | full (full_iteration); sets the calibrated "
    "MoE-layer overhead";

// The largest data-parallel bucket TrainConfig::dp_bucket_bytes takes, in MiB (the CLI's --dp-bucket-mb range;
// the error messages spell it 1e6).
inline constexpr double kMaxDpBucketMb = 1e6;

struct TrainConfig {
  // Model-state options; fit.par is the layout, fit.batch the global batch. fit.mode is Mode::kTrain (pretraining
  // and full fine-tuning) or Mode::kLora (LoRA fine-tuning of frozen base weights: fit.lora_rank adapters on
  // fit.lora_targets; docs/methodology.md §8).
  FitRequest fit;
  bool micro_batch_auto = false;   // choose the fastest micro-batch that fits
  bool recompute_auto = false;     // choose the fastest recompute setting that fits
  Precision dtype = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // with dtype fp8 (dtype fp4: kNvfp4, set by EstimateTraining)
  // NVFP4 (dtype fp4): the random Hadamard transform of the weight gradient's operands, Transformer Engine's default
  // (false: NVTE_NVFP4_DISABLE_RHT=1, MLPerf Training's "vanilla" recipe).
  bool nvfp4_rht = true;
  // FP8 delayed scaling reduces each model chunk's amaxes over TP x DP x CP ranks (Megatron-Core core_r0.9.0 on);
  // true: over TP x CP only (--tp-only-amax-red, and Megatron-Core up to core_r0.8.0: NeMo 24.05 and 24.07).
  bool tp_only_amax_reduction = false;
  // FP8 fused attention (Transformer Engine's fp8_dot_product_attention, NVTE_FP8_DPA=1; Megatron-Core
  // --fp8-dot-product-attention): attention at Efficiency::attention_fp8 times the 16-bit rate where it was
  // measured, and under Ulysses context parallelism Q, K and V exchanged in FP8. Needs dtype fp8 or fp4.
  bool fp8_attention = false;
  AttentionImpl attention = AttentionImpl::kFlash;
  CrossEntropyImpl cross_entropy = CrossEntropyImpl::kFused;
  bool dp_overlap = true;     // overlap gradient reduction with backward (DDP buckets, FSDP, Megatron-Core)
  // The data-parallel gradient bucket, in bytes of gradients: 0 = Megatron-Core DDP's max(40M, 1M x DP) parameters;
  // otherwise a fixed size, as Apex's DistributedFusedAdam (NeMo 1.x's distributed optimizer: bucket_cap_mb x 2^20
  // bytes of its gradient sync dtype) uses. One reduce-scatter (or all-reduce) and one parameter all-gather per bucket,
  // each paying the collective's latency; the count is the gradient bytes over the bucket, as Apex splits tensors
  // across buckets. Megatron-Core and PyTorch DDP never split a tensor, so for a bucket smaller than the largest
  // tensors this over-counts them (they make at most one bucket per tensor).
  double dp_bucket_bytes = 0;  // at most kMaxDpBucketMb MiB
  bool tp_overlap = false;    // overlap tensor-parallel communication with GEMMs (Megatron --tp-comm-overlap)
  // A column-parallel linear's backward collectives (the input-gradient reduce-scatter, or all-reduce without SP, and
  // under SP the input's re-gather) run under its gradient GEMMs, as Megatron-LM has since 2022 and Transformer Engine
  // does (docs/methodology.md §7); false: exposed, as the 2021 Megatron-LM of Narayanan et al. ran them. Eager stacks
  // (TrainConfig::eager) never overlap them.
  bool tp_grad_overlap = true;
  // Overlap the MoE dispatch/combine all-to-all of one micro-batch with the compute of another (Megatron-Core
  // --overlap-moe-expert-parallel-comm with --delay-wgrad-compute: forward and backward of two micro-batches
  // interleaved). Off: the all-to-all is exposed.
  bool ep_overlap = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  CpComm cp_comm = CpComm::kP2P;
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  // Eager PyTorch (HF transformers, Composer/llm-foundry, torchtitan without torch.compile): element-wise work
  // as eager mode runs it (RMSNorm upcast to FP32 in separate kernels, RoPE and SwiGLU unfused) and, with
  // ZeRO-3/FSDP, Efficiency::eager_fsdp_host_per_layer_s per layer per micro-batch. Default: fused kernels and no
  // host cost (Megatron, Transformer Engine).
  bool eager = false;
  // FP8 training with Transformer Engine (not eager): keep each layer weight's FP8 copy for the step, as
  // Megatron-Core does by default (disable_parameter_transpose_cache=False); its memory is
  // FitRequest::fp8_weight_cache_bytes_per_param. false: disable_parameter_transpose_cache=True.
  bool fp8_weight_cache = true;
  double moe_imbalance = 1.1; // busiest expert's load / mean load
  double tokens = 0;          // train on this many tokens (0 = not asked)
  double price_per_gpu_hour = 0;
  FlopConvention convention = FlopConvention::k6N;
  // Packed sequences (fine-tuning with --packed-sequence: documents concatenated into each fit.seq-token sequence,
  // attention kept within each document, as Transformer Engine's THD layout does): the documents' length in
  // tokens; attention works on it instead of fit.seq. 0: one document per sequence.
  int64_t packed_doc_tokens = 0;
  bool detail = true;         // per-operator table, notes and texts; the planner's inner loop turns it off
};

struct TrainBreakdown {
  double compute = 0;                // forward + backward + recompute, on the critical path
  double communication_exposed = 0;  // TP, PP, DP/ZeRO, CP, EP time not hidden under compute
  double pipeline_bubble = 0;
  double optimizer = 0;
  double host = 0;                   // eager FSDP host-side time per layer that the GPU waits for
  double offload = 0;                // CPU activation offloading: compute waiting for copies to or from the host
  double moe_overhead = 0;           // MoE layers' time beyond their operators (calibrated; not in `compute`)
};
// The breakdown's terms in one place: JSON key (under breakdown_s), words for tables and "dominant".
struct BreakdownTerm {
  const char* key;
  const char* words;
  double TrainBreakdown::*value;
};
inline constexpr BreakdownTerm kBreakdownTerms[] = {
    {"compute", "compute", &TrainBreakdown::compute},
    {"communication_exposed", "exposed communication", &TrainBreakdown::communication_exposed},
    {"pipeline_bubble", "pipeline bubble", &TrainBreakdown::pipeline_bubble},
    {"optimizer", "optimizer step", &TrainBreakdown::optimizer},
    {"host", "host overhead (eager FSDP)", &TrainBreakdown::host},
    {"offload", "activation offload wait", &TrainBreakdown::offload},
    {"moe_overhead", "MoE-layer overhead (calibrated)", &TrainBreakdown::moe_overhead}};

// How far the model has been from the published measurements of one validation group (docs/validation.md
// §3): absolute relative error over the group's runs. Every estimate carries the band of the group its figure
// belongs to, so a figure is never printed without the evidence for it. `cases` = 0: no band applies (MoE
// training and serving, whose evidence is the `uncertain:` note instead). evidence::k*Error below are kept equal to the
// bundled data by PerfValidation.ErrorBandsMatchTheValidationData.
struct ErrorBand {
  const char* group = "";
  int cases = 0;
  double mean_abs = 0;   // mean |predicted / published - 1|
  double p90_abs = 0;    // nine runs in ten were within this
  double worst_abs = 0;
  std::span<const char* const> gpus;  // the GPUs the group's runs were on (catalog ids)
  // Which way the model erred: runs it predicted faster than measured, and the mean signed error, positive
  // when faster (a rate's error, or minus a time's; ValidationCase::fast_error).
  int fast_cases = 0;
  double mean_fast = 0;
  // Only the group's runs whose case name starts with this (one engine generation of a group that holds several);
  // empty: the whole group.
  const char* runs_named = "";
};
// Whether a band's runs include this GPU. Where they do not, the band is evidence for the model, not for
// this GPU's efficiencies (data/efficiency.toml says where each of those comes from).
bool BandCoversGpu(const ErrorBand& band, std::string_view gpu_id);

struct TrainResult {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_step = 0;     // by the chosen convention
  double hardware_flops_per_step = 0;  // including recompute
  double model_tflops_per_gpu = 0;
  double mfu = 0, hfu = 0;
  double peak_flops_per_gpu = 0;       // the dense peak MFU is against
  int64_t micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  int recompute_layers = 0;   // with full recompute: layers per model chunk that recompute (0: all)
  RecomputeModules recompute_modules;  // with selective recompute: the modules that recompute
  int offload_layers = 0;     // CPU activation offloading: layers whose activations go to host memory
  int interleave = 1;         // virtual pipeline stages per GPU the step was estimated with
  int num_micro_batches = 1;
  TrainBreakdown breakdown_s;
  double communication_total_s = 0;    // before overlap
  FitResult memory;
  bool fits = true;
  double shortfall_bytes = 0;          // when it does not fit: GPU memory short per GPU
  // CPU activation offloading: host memory per GPU (FitVerdict::host_capacity_bytes; 0 = unknown, unchecked) and
  // how much more the offloaded activations need than that.
  double host_capacity_bytes = 0;
  double host_shortfall_bytes = 0;
  double train_time_s = 0, gpu_hours = 0, cost_usd = 0;
  std::string dominant;                // which term dominates, in words
  std::vector<OpCost> ops;             // per-layer operators of one micro-batch, plus step ops
  std::vector<CollectiveCall> collectives;  // with detail: one of each NCCL collective the step runs
  // With detail, per pipeline rank (PP > 1): its transformer layers, MTP modules, whether it runs the output layer and loss, and
  // its time per micro-batch (compute, exposed communication and host); the slowest paces the step.
  struct PipelineRank {
    int layers = 0, mtp = 0;
    bool output_layer = false;
    double seconds_per_micro_batch = 0;
  };
  std::vector<PipelineRank> pipeline_ranks;
  std::string convention;              // the FLOP convention in words
  ErrorBand error;                     // step time and throughput: the training validation group
  std::vector<std::string> notes;
};

// CPU activation offloading of one micro-batch on one GPU, Transformer Engine's default schedule
// (docs/methodology.md §8): the first `offloaded` of `layers` layers copy their activations to the host on a copy
// stream as each layer's forward ends (`d2h_s` each, one copy at a time), and back in reverse order for the backward
// (`h2d_s` each, on the other direction). At most layers - offloaded layers' activations are on the GPU: a layer's
// forward waits until an offload has freed room, a reload waits until a backward has freed room, and a layer's
// backward waits for its reload. fwd_s / bwd_s: one layer's forward / backward compute; gap_s: the work between the
// passes (output head and loss). Returns the time the compute stream waits, 0 when every copy hides under compute.
double OffloadStallSeconds(int layers, int offloaded, double fwd_s, double bwd_s, double gap_s, double d2h_s,
                           double h2d_s);

// Megatron-Core's conditions for overlapping the expert all-to-all (TransformerConfig.__post_init__): an MoE
// model with EP > 1, an interleaved schedule when PP > 1, no full recompute. Ok, or what is missing.
Status CheckEpOverlap(const ModelSpec& m, const Parallelism& par, Recompute recompute);
// Block recompute with the fewest layers per chunk that fits memory (cfg.fit.recompute is set to full), found by a
// binary search over 1 .. chunk - 1 (memory falls and time rises with each layer recomputed, so this is also the
// fastest block setting that fits); nullopt when none fits. `evaluated`, if given, counts the estimates made.
std::optional<TrainResult> FewestBlockRecomputeThatFits(const ModelSpec& m, const Cluster& cl, TrainConfig cfg,
                                                        const Efficiency& eff, int64_t* evaluated = nullptr);

// The selective-recompute module sets the automatic choice and the planner try where nothing fits without recompute,
// in order of memory saved, all cheaper than full recompute: dense models {layernorm}, {layernorm, mlp}; MoE models
// {layernorm, moe_act} (with shared_experts where the model has them), {layernorm, moe}; mla_up_proj added for MLA,
// core_attn for unfused attention. Under FP8 delayed scaling, which Megatron-Core refuses layernorm and moe_act
// recompute with, only {mlp} or {moe}.
std::vector<RecomputeModules> RecomputeModuleLadder(const ModelSpec& m, AttentionImpl attention, Precision dtype,
                                                    Fp8Recipe fp8_recipe);

// CPU activation offloading of the fewest layers that fits memory (PP 1, no recompute: Megatron-Core's conditions),
// by a binary search over 1 .. layers - 1; nullopt when none fits or the layout cannot offload.
std::optional<TrainResult> FewestOffloadLayersThatFit(const ModelSpec& m, const Cluster& cl, TrainConfig cfg,
                                                      const Efficiency& eff, int64_t* evaluated = nullptr);

// The fastest interleaving that fits memory (PP > 1): every number of virtual stages that divides a pipeline stage's
// layers (with the embedding and the loss counted when cfg.fit.par.embedding_loss_in_split), estimated with the rest
// of cfg as given; a fitting depth beats a non-fitting one. Errors: PP 1, or what EstimateTraining says when no depth
// gives an estimate.
Result<TrainResult> FastestInterleave(const ModelSpec& m, const Cluster& cl, TrainConfig cfg, const Efficiency& eff);

// --tokens and --price-per-gpu-hour: finite and at least 0 (0 = not given). NaN fails too. EstimateTraining and
// Plan both check them, the planner before its search so that it does not report "no layout fits" instead.
Status CheckTokensAndPrice(double tokens, double price_per_gpu_hour);

// Validates the layout (divisibility etc.) and estimates one training step. A layout that
// does not fit memory returns fits=false with the shortfall (and still the time it would take).
// Refuses tp_only_amax_reduction where it means nothing: outside FP8 delayed scaling (the entry points call it;
// EstimateTraining ignores the flag there).
Status CheckTpOnlyAmaxReduction(const TrainConfig& cfg);
Result<TrainResult> EstimateTraining(const ModelSpec& m, const Cluster& c, const TrainConfig& cfg,
                                     const Efficiency& eff);

// Decode-phase attention kernels. kGrouped: the kernel reads each KV head once for all the query heads
// that share it, as grouped-query-aware kernels do (TensorRT-LLM XQA, FlashDecoding, FlashInfer); the
// time is the KV-cache read. kPerHead: one thread block per query head on the CUDA cores (TensorRT-LLM's
// masked multi-head attention, which v0.9 used unless a KV head is shared by exactly 8 query heads or
// none; vLLM's PagedAttention v1/v2): the KV read is shared through L2, but every query head issues its
// own instructions for every cached element, so at large batch and long context the kernel is bound by
// instruction issue, not by memory (docs/methodology.md §9).
enum class DecodeAttention { kGrouped, kPerHead };
// "grouped" (alias "xqa"), "per-head" (alias "mmha"); an error lists the valid names.
Result<DecodeAttention> ParseDecodeAttention(std::string_view name);
const char* DecodeAttentionName(DecodeAttention a);
inline constexpr const char* kDecodeAttentionHelp =
    "grouped (each KV head read once: XQA, FlashDecoding, FlashInfer) | per-head (one block per query head: "
    "TensorRT-LLM masked MHA, vLLM PagedAttention v1/v2)";
// How a serving engine runs an MoE layer's routed experts. kFused: one fused operator (TensorRT-LLM's, vLLM's and
// SGLang's fused_moe): routing and expert maps, the token rows gathered into expert order, grouped GEMMs, and a
// finalising gather that sums each token's expert outputs, whose kernels and bytes `perf infer` charges besides the
// GEMMs (Efficiency::moe_serving_fixed_s; docs/methodology.md §9). kIndexed: the experts' weights indexed per token
// inside one compiled graph (gpt-fast's Mixtral: w1[expert_indices] and einsums), with no row permutation.
enum class MoeImpl { kFused, kIndexed };
// "fused", "indexed"; an error lists the valid names.
Result<MoeImpl> ParseMoeImpl(std::string_view name);
const char* MoeImplName(MoeImpl i);
inline constexpr const char* kMoeImplHelp =
    "fused (a fused MoE operator: routing, row permutation, grouped GEMMs, finalising gather: vLLM, SGLang, "
    "TensorRT-LLM) | indexed (expert weights indexed per token in a compiled graph: gpt-fast)";
// Thread-instructions an NVIDIA GPU's SMs issue per second: 4 warp schedulers x 32 lanes per SM per clock
// (compute capability 7.0 and later). The clock follows from the FP32 peak = 2 x FP32 lanes x SMs x clock,
// with 64 FP32 lanes per SM on compute capability 7.x and 8.0 and 128 on 8.6 and later (CUDA C++
// Programming Guide, arithmetic instruction throughput). Errors: not NVIDIA, or no SM count or FP32 peak.
Result<double> InstructionIssueRate(const GpuSpec& gpu);

// Speculative decoding (docs/methodology.md §9.4), on when tokens > 0. Each round the draft proposes `tokens` tokens
// one pass at a time, then the target verifies them in one pass over tokens + 1 tokens per sequence; a round emits
// acceptance_length tokens per sequence on average (the accepted drafts and the target's own next token:
// 1 <= it <= tokens + 1), which the engine reports and the user gives. The draft is draft_model (a separate model on
// the same GPUs, at the target's TP and formats) or, without one, draft_layers decoder layers of the target's own
// shape feeding the target's output head (EAGLE, MTP), or a head of its own over draft_vocab tokens (EAGLE-3: the
// 32,000 most frequent). Draft trees (EAGLE-2/3 in SGLang): every draft pass after the first runs topk candidates
// per sequence, and the verification pass verify_tokens tokens per sequence (SGLang's speculative_num_draft_tokens;
// 0 = a chain, tokens + 1).
struct Speculation {
  int tokens = 0;
  double acceptance_length = 0;
  std::optional<ModelSpec> draft_model;
  // What a serving engine loads as the draft (a Hugging Face repository or a directory): draft_model's, or a draft
  // head's own checkpoint (EAGLE, EAGLE-3); empty for an MTP head, which ships in the target's checkpoint.
  std::string draft_ref;
  int draft_layers = 1;
  int64_t draft_vocab = 0;
  int topk = 1;
  int verify_tokens = 0;
};

struct InferConfig {
  FitRequest fit;             // weights, kv dtype, batch, par.tp / par.pp
  DecodeAttention decode_attention = DecodeAttention::kGrouped;
  MoeImpl moe_impl = MoeImpl::kFused;
  int64_t input_len = 512;
  int64_t output_len = 128;
  // kFp8 for FP8, kFp4 for NVFP4 (weights and activations); fp8 and nvfp4 weights imply it (ServingComputePrecision).
  Precision compute = Precision::kBf16;
  // MoE with EP > 1: the busiest GPU's token-expert pairs / the mean, at least uniform routing's expected maximum
  // (docs/methodology.md §9.1), which 1 leaves as it is; a real router's hot experts put more on one GPU.
  double moe_imbalance = 1.0;
  // Serving-engine host time the GPU does not hide, given by the user (the model has none of its own; docs/
  // methodology.md §9.2): once per request batch (request setup, input and output copies), added to the TTFT, and
  // once per forward pass (scheduling, sampling, launches between CUDA graphs), added to the prefill and to every
  // decode step. 0 = none.
  double request_overhead_s = 0;
  double step_overhead_s = 0;
  // Serve as many sequences at once as fit (fit.batch is ignored): each with its KV cache for the whole context,
  // as a scheduler that never evicts reserves it, at most batch_cap (the engine's max batch size; 0 = none).
  // Continuous batching at full load keeps about this many in flight (docs/methodology.md §9.3).
  bool batch_max = false;
  int64_t batch_cap = 0;
  Speculation spec;
};

struct InferResult {
  double ttft_s = 0;                   // prefill of the whole batch's prompts (+ the given host overheads)
  double tpot_s = 0;                   // one decode step at the mean context (+ the given step overhead)
  double decode_tokens_per_s = 0;      // batch / tpot
  double e2e_latency_s = 0;            // ttft + (output_len - 1) x tpot: the prefill emits the first token
  double output_tokens_per_s_per_gpu = 0;
  int64_t max_batch = 0;               // at input + output context
  int64_t batch = 0;                   // the batch evaluated: the given one, or the chosen one with batch_max
  std::string batch_limit;             // with batch_max: "memory" (the largest that fits) or "cap"
  bool fits = true;
  double per_gpu_peak_bytes = 0;
  std::string prefill_bound, decode_bound;
  // MoE with EP > 1: the busiest GPU's token-expert pairs / the mean, in prefill and in one decode step.
  double prefill_expert_imbalance = 0, decode_expert_imbalance = 0;
  std::vector<OpCost> prefill_ops, decode_ops;  // with speculation, decode_ops are one round's (draft and verify)
  // Speculative decoding: one round (spec.tokens draft passes and the verification pass), its parts, and the
  // draft's weights and KV cache per GPU (in per_gpu_peak_bytes too). TPOT = round / acceptance length.
  double spec_round_s = 0, spec_draft_step_s = 0, spec_verify_s = 0, draft_bytes_per_gpu = 0;
  std::string draft;  // what drafted, in words
  // The physical bound of this configuration (docs/methodology.md §9.5; 0 with speculation or PP > 1): the fewest
  // seconds a prefill and a decode step of the batch can take (each pass's GEMM FLOPs at the datasheet peak or the
  // weights it needs at the datasheet bandwidth, whichever is longer), and the most decode tokens/s that allows.
  double ttft_bound_s = 0, decode_step_bound_s = 0, decode_tokens_per_s_bound = 0;
  std::vector<std::string> notes;
  // Validation bands: TTFT (dense models), decode tokens/s at batch 1 (gpt-fast), static-batch output
  // throughput (dense models). Empty (cases = 0) where no group covers the configuration.
  ErrorBand ttft_error, decode_error, throughput_error;
};
Result<InferResult> EstimateInference(const ModelSpec& m, const Cluster& c, const InferConfig& cfg,
                                      const Efficiency& eff);
// A closed-loop serving benchmark (AIPerf, genai-perf and `vllm bench serve` at --concurrency C): C clients, each
// sending its next request (cfg.input_len in, cfg.output_len out) as soon as its last one ends, to an engine that
// batches continuously (docs/methodology.md section 9.6). Each decode step carries the C sequences at the mean
// context. A request's prefill lands in one decode step as a single pass (mixed or chunked prefill): the weights
// stream once for both, so that step grows by E = max(0, P - (D - A)), the prefill less the decode step's time
// outside attention. Over one request's output_len - 1 inter-token intervals the other C - 1 clients' prefills land
// in proportion to the time they spend decoding, so the time per output token T solves
//   T = D + (C - 1) / k x E x T / (P + (output_len - 1) x T)
// with D the decode step at batch C, A its attention, and P one prompt's prefill at batch 1 (all EstimateInference's,
// docs/methodology.md section 9.6), k = 1. With attention DP (section 9.7) k = min(D, C) prompts land together, one
// on each attention group, and P is their prefill at batch k: the groups' prefills run side by side. Where the KV cache holds fewer than C sequences at the whole context (as
// --batch max counts them), the engine runs that many and the rest queue: C above becomes that number, and the
// queued clients' wait (Little's law) joins the TTFT. Otherwise the TTFT is the prefill alone: queueing behind other
// clients' prefills and the decode rows a prefill step carries are left out, so a benchmark's measured TTFT is at
// least this, more so as C grows.
struct ClosedLoopResult {
  int64_t concurrency = 0;
  int64_t running = 0;       // sequences in flight: C, or as many as the KV cache holds at the whole context
  double queue_wait_s = 0;   // the other clients' wait for a slot: (C - running) / requests_per_s
  int64_t prefills_per_step = 1;  // k: prompts that land in one step (attention DP: one per group, min(D, running))
  double prefill_s = 0;      // P: the prefill of k prompts at batch k (+ the given request and step overheads)
  double decode_step_s = 0;  // D: one decode step of the sequences in flight at the mean context (+ step overhead)
  double mixed_step_extra_s = 0;  // E: what k prefills add to the decode step they land in
  double ttft_s = 0;         // P + queue_wait_s
  double tpot_s = 0;         // T above: the mean inter-token interval one client sees
  double requests_per_s = 0;             // running / (P + (output_len - 1) x T)
  double output_tokens_per_s_per_gpu = 0;  // requests_per_s x output_len / (TP x PP)
  bool fits = true;                      // the sequences in flight fit (false: not even one does)
  double per_gpu_peak_bytes = 0;
  ErrorBand tpot_error;                  // evidence::kConcurrencyTpotError: the time per output token's band
  std::vector<std::string> notes;        // MoE models: their closed-loop evidence (evidence::kMoeClosedLoopTpot)
  InferResult decode;                    // the estimate at the sequences in flight (operators, notes, bands)
};
// Refuses concurrency < 1, output_len < 2 (no inter-token interval), batch_max and speculative decoding.
Result<ClosedLoopResult> EstimateClosedLoop(const ModelSpec& m, const Cluster& c, const InferConfig& cfg,
                                            int64_t concurrency, const Efficiency& eff);
// Disaggregated serving (NVIDIA Dynamo, SGLang and vLLM prefill-decode disaggregation; docs/methodology.md section
// 9.8): prefill workers run the prompts and hand each one's KV cache to a decode worker, which only decodes. In a
// closed loop of C clients (input_len in, output_len out, each sending its next request when the last ends):
//   a prefill worker with attention DP D_p takes k = D_p prompts at a time, one per attention group (P: their prefill
//   at batch k), so the prefill tier serves at most mu = prefill_workers x k / P requests per second;
//   a request then moves its KV cache (X: its input_len tokens' cache over the link between the two workers) and
//   decodes output_len - 1 steps of T each, T the decode step of a decode worker's batch B;
//   requests/s lambda = min(C / (P + X + (output_len - 1) T), mu), and by Little's law each of the decode_workers
//   holds B = lambda x (output_len - 1) x T / decode_workers sequences, at most what its KV cache holds at the whole
//   context (B_max; beyond it lambda = decode_workers x B_max / ((output_len - 1) T)).
// T and B are solved together (T = T_decode(B), B increasing in T). Where the prefill tier or the decode workers'
// caches bind, the other clients wait for a slot and the TTFT is C / lambda - (output_len - 1) T; otherwise P + X.
struct DisaggConfig {
  Parallelism prefill;     // one prefill worker's layout (tp, ep, etp, attention_dp; pp 1)
  int prefill_workers = 1;
  int decode_workers = 1;  // each in InferConfig::fit.par's layout
};
struct DisaggResult {
  int64_t concurrency = 0;
  int64_t prompts_per_prefill = 1;     // k: one per prefill attention group
  double prefill_s = 0;                // P: k prompts' prefill on one prefill worker (+ the given overheads)
  double kv_transfer_s = 0;            // X: one prompt's KV cache from its prefill worker to its decode worker
  double kv_transfer_bytes = 0;        // that cache (input_len tokens, every layer, as the model stores it)
  std::string kv_link;                 // the link it crosses, in words
  double prefill_capacity_per_s = 0;   // mu: requests/s the prefill workers can start at most
  std::string bound;                   // "clients" (neither tier saturated), "prefill" or "decode memory"
  double decode_batch = 0;             // B: mean sequences per decode worker (Little's law)
  int64_t decode_batch_evaluated = 0;  // B rounded, at least 1: the batch T was priced at
  int64_t decode_batch_max = 0;        // B_max: what one decode worker's KV cache holds at the whole context
  double tpot_s = 0;                   // T
  double ttft_s = 0;
  double requests_per_s = 0;           // lambda
  int gpus = 0;                        // prefill_workers x prefill GPUs + decode_workers x decode GPUs
  double output_tokens_per_s_per_gpu = 0;  // lambda x output_len / gpus
  double prefill_gpu_utilisation = 0;      // lambda / mu
  // Where the prefill workers bind: the fewest at which they would not (at most 4,096; empty if none or not bound).
  std::optional<int> prefill_workers_to_keep_up;
  bool fits = true;                    // one prefill worker fits k prompts and one decode worker one sequence
  std::vector<std::string> notes;
  InferResult prefill_pass;            // the prefill worker's estimate at batch k
  InferResult decode;                  // the decode worker's estimate at the evaluated batch
};
// A prefill worker's layout from the decode worker's and the prefill overrides (0: not given; perf infer's
// --prefill-tp/--prefill-ep/--prefill-etp/--prefill-attention-dp, the cases' prefill_* keys): with a TP of its own it
// starts from plain TP (experts split, no attention DP), else from the decode worker's layout; each override then
// applies. EstimateDisaggregated checks the result as it checks any layout.
Parallelism PrefillLayout(const Parallelism& decode, int tp, int ep, int etp, int attention_dp);
// Refuses concurrency < 1, output_len < 2, fewer than one worker of either kind, pipeline parallelism,
// speculative decoding and batch_max; the two layouts as EstimateInference does.
Result<DisaggResult> EstimateDisaggregated(const ModelSpec& m, const Cluster& c, const InferConfig& decode_cfg,
                                           const DisaggConfig& d, int64_t concurrency, const Efficiency& eff);
// InferResult's physical bound for a configuration at its batch (cfg.fit.batch), without efficiencies or host costs.
struct ServingLimit {
  double ttft_s = 0;               // the prefill of the batch: at least this long
  double decode_step_s = 0;        // one decode step of the batch: at least this long
  double decode_tokens_per_s = 0;  // batch / decode_step_s: at most this many (the replica's)
};
Result<ServingLimit> ServingBound(const ModelSpec& m, const GpuSpec& gpu, const InferConfig& cfg);
// The speculative-decoding settings EstimateInference refuses, with the reason (ranges, the draft's vocabulary and
// heads against the TP, what is not modelled: PP, per-head decode kernels); Ok when speculation is off.
Status CheckSpeculation(const ModelSpec& m, const InferConfig& cfg);
// The batch an estimate ran at, in words: "64", or with batch_max "804 (the most that fit)" and the cap where it bit.
std::string ServingBatchWords(const InferConfig& cfg, const InferResult& r);

// What the bundled validation measured for classes of configuration the model is known to get wrong
// (docs/validation.md §5): signed error (predicted speed / measured - 1) over held-out published runs.
// EstimateTraining and EstimateInference add a note with these figures when a configuration falls in a
// class; PerfValidation.CaveatFiguresMatchTheValidationData keeps them equal to the data.
struct ValidationEvidence {
  int cases;
  double mean, lo, hi;  // signed error: > 0 means the model was optimistic
};
// The same for a latency the model is short of by an absolute amount: measured - predicted, seconds.
struct LatencyShortfall {
  int cases;
  double mean_s, lo_s, hi_s;  // > 0 means the measured latency was longer
};
namespace evidence {
// Forty-fifth session: the figures below are recomputed with the measured NCCL times inside an NVLink domain
// (data/nccl_curves.toml) and the column-parallel backward overlap (TrainConfig::tp_grad_overlap); the histories in
// the comments give each figure as it stood when its comment was written.
// Eager PyTorch FSDP with its host cost per layer (Efficiency::eager_fsdp_host_per_layer_s, fitted on the 59
// llm-foundry A100 runs): the 50 held-out llm-foundry H100 runs (FSDP1, Composer 0.16).
inline constexpr ValidationEvidence kEagerFsdpFoundryH100{50, -0.022, -0.164, 0.262};
// DeepSeek-R1 at batch 1 on 8 B200s in TensorRT-LLM without MTP (its tech blog 1: 111 tokens/s per user, the
// baseline of the MTP rows; not a validation row: the layout, TP 8, is assumed, and NVFP4 is taken for the attention
// weights too): measured time per token / this model's, for 1,024 in / 2,048 out. The model counts MLA's projections
// as few kernels and an MoE layer's routing at TensorRT-LLM 1.3's fused operator's fixed time (docs/validation.md
// section 5). PerfValidation checks the ratio.
inline constexpr struct {
  double published_tokens_per_s;
  double time_ratio;
} kDeepSeekBatch1Decode{111, 1.43};
// TensorRT-LLM 1.3's fused MoE operator timed alone (group `moe`, held out, without L40S, whose benchmark reads small
// experts from its L2): H200, B200, B300, GB200 and GB300, whole experts at EP 1 and 8 and split experts at TP 8, in
// BF16 and FP8, and the four Blackwell GPUs' NVFP4 operator. Signed on speed (> 0: the operator took longer than
// priced): (measured - predicted) / measured.
inline constexpr ValidationEvidence kMoeOperator{360, 0.054, -0.465, 0.745};
inline constexpr ValidationEvidence kMoeOperatorNvfp4{168, 0.325, -0.038, 0.665};
// The same for vLLM 0.24's and SGLang 0.5.14's MoE on the four Blackwell GPUs (their main paths there: FlashInfer's
// TensorRT-LLM-gen and CUTLASS kernels; BF16, FP8 and NVFP4, whole experts): faster than priced on average, the
// fused operator's fixed time (fitted on TensorRT-LLM's CUTLASS operator) being most of the difference.
inline constexpr ValidationEvidence kMoeOperatorFlashinferBlackwell{180, -0.179, -1.273, 0.621};
// Serving attention for one layer timed alone (group `serving_attention`, held out; forty-seventh session): TensorRT-LLM
// 1.3's attention operator and vLLM 0.24's and SGLang 0.5.14's backends, signed on speed (> 0: the kernel took longer
// than priced). Decode, L40S apart: caches over 128 MiB, beyond every listed GPU's L2 (the benchmark replays one
// layer, so a smaller cache is read from L2); and fewer than 16 sequence x KV-head pairs on the GPU at 8,192 keys or
// more, whose long caches are split over too few blocks to draw the full bandwidth (slower than priced although they
// sit in L2 there).
inline constexpr ValidationEvidence kServingDecodeAttention{234, 0.010, -0.150, 0.452};
inline constexpr ValidationEvidence kServingDecodeAttentionFewHeads{216, 0.164, -0.341, 0.549};
// Prefill on H100 and H200 at 8,192-token prompts in BF16: the three engines' Hopper kernels (TensorRT-LLM's context
// FMHA, vLLM's and SGLang's FlashAttention 3) against the FlashAttention-2 rate the model charges there
// (Efficiency::attention, Azure's FA2 runs).
inline constexpr ValidationEvidence kServingPrefillAttentionHopper{36, -0.701, -0.981, -0.266};
// DeepSeek-V3's MLA decode in TensorRT-LLM 1.3 (FlashMLA on Hopper, TensorRT-LLM-gen on Blackwell; the layer's rope and
// cache kernel included), timed alone on six GPUs at 16 and 128 heads per GPU (group `serving_attention`, held out),
// signed on speed: the absorbed kernel does 2 x (576 + 512) FLOPs per key and head where the model counts 4 x 192 at
// its attention rate, and it ran slower than that price on average.
inline constexpr ValidationEvidence kServingMlaDecodeAttention{216, 0.252, -0.246, 0.585};
// TensorRT-LLM v0.9 Mixtral 8x7B: time to first token and static-batch throughput (signed on speed).
inline constexpr ValidationEvidence kMoeServingTtft{8, -0.039, -0.588, 0.551};
inline constexpr ValidationEvidence kMoeServingThroughput{16, 0.176, -0.473, 1.312};
// Small-batch 16-bit and weight-only decode on H100/H200 in stacks other than TensorRT-LLM: torchao's batch-1
// generate.py (torch.compile) on H100 and vLLM's batch-8 latency benchmark on H200, all held out. Signed on the
// time: measured time per token / predicted - 1 (> 0: the model was optimistic).
inline constexpr ValidationEvidence kHopperSmallBatchDecode{6, 0.133, 0.082, 0.177};
// Serving on AMD Instinct (thirty-seventh session, held out): vLLM's end-to-end latency on 8 MI300X at TP 8, FP8
// weights: Oracle Cloud's LLaMA 3.1 405B runs (batch 1 to 256, 128 tokens in and out; October 2024 stack) and AMD's own
// LLaMA 3.1 70B runs (batch 1, 2, 4; 128 in, 2048 out; vLLM 0.10.2 on ROCm 7.0, October 2025). Signed on the time:
// measured end-to-end latency / predicted - 1 (> 0: the model was optimistic).
inline constexpr ValidationEvidence kAmdInstinctServingLatency{12, 0.186, 0.008, 0.297};
// TensorRT-LLM v0.9 on H100/H200, FP8: first-token latency at 128-token prompts (signed on the latency).
inline constexpr ValidationEvidence kHopperFp8ShortPromptTtft{10, -0.159, -0.296, -0.072};
// TensorRT-LLM 1.0's maximum throughput (trtllm-bench, in-flight batching, every request queued at once) with NVFP4
// weights and activations on B200 and GB200 (Llama 3.3 70B TP1, Llama 3.1 405B TP4; 40 held-out runs at the most
// sequences that fit): signed on the rate (> 0: the model was faster than measured).
inline constexpr ValidationEvidence kBlackwellNvfp4MaxThroughput{40, 0.114, -0.026, 0.292};
// cuBLAS 13.3's MXFP4 GEMMs of 128 to 4,096 rows on a B200 (DeepGEMM PR #348's cuBLAS column; 6 held-out gemm rows),
// signed on the rate: the shape model at the gemm_fp4 rate was faster on every one.
inline constexpr ValidationEvidence kFp4MidShapeGemm{6, 0.340, 0.156, 0.658};
// Speculative decoding at batch 1, the speed-up over no speculation at the published acceptance length (group
// `speculative`, held out; > 0: the model's speed-up was larger than measured). TensorRT-LLM's MTP on DeepSeek-R1
// (8 B200s, 1 to 5 draft tokens per round):
inline constexpr ValidationEvidence kSpeculativeMtpTrtllm{5, 0.037, 0.011, 0.072};
// EAGLE in vLLM V1 (EAGLE-1 and EAGLE-3 on Llama-3.1 8B, one H100, K = 2 to 7) and SGLang (EAGLE-3 on Llama-3.3 70B,
// 8 H100s, a tree of 8 x 8 with 64 verified tokens): vLLM's draft passes took 0.7 (EAGLE-1) to 1.0 ms (EAGLE-3) each
// where the model has 0.57 and 0.30.
inline constexpr ValidationEvidence kSpeculativeEagle{13, 0.331, 0.110, 0.636};
// The same benchmark one engine generation earlier: TensorRT-LLM 0.13's maximum-throughput table (TensorRT engines;
// 442 held-out dense-model runs on H200, H100, A100 and L40S, FP8 and FP16, TP 1-8), signed on the rate. On the 45
// configurations both tables have, 1.0 delivered 1.17x what 0.13 did (median 1.12x; decode-heavy runs up to 1.76x).
inline constexpr ValidationEvidence kTrtllm013MaxThroughput{442, 0.168, -0.174, 2.883};
// The engine's own gain: mean over those 45 configurations of 1.0's published throughput / 0.13's.
inline constexpr struct {
  int pairs;
  double mean_ratio;
} kTrtllm10Over013{45, 1.166};
// Its Mixtral 8x7B rows (123 held-out runs, TP 2-8, experts under tensor parallelism, FP8 and FP16), signed on the rate:
// most runs were slower than this model, by a similar share on every GPU. TensorRT-LLM 1.3's fused MoE operator for
// the same shape, timed alone (group `moe`), costs its GEMMs plus the fixed time and gathers the model now charges
// (Efficiency::moe_serving_fixed_s), so the rest is that engine's MoE path rather than an MoE layer as such.
inline constexpr ValidationEvidence kMoeMaxThroughput013{123, 0.200, -0.079, 1.474};
// TensorRT-LLM v0.9 on one GPU, dense 6-7B models (LLaMA-2 7B, Mistral 7B, GPT-J 6B) at 128-token prompts on
// A100, H100, H200 and L40S: measured minus predicted time to first token. About the same on GPUs whose
// bandwidths differ 5.5x, so a cost per request the model does not have rather than a rate it gets wrong.
inline constexpr LatencyShortfall kShortPromptTtftShortfall{12, 0.67e-3, -0.35e-3, 1.35e-3};
// FP8 pretraining with Megatron-Core + Transformer Engine: NeMo 24.07 on H100 (7 calibration rows: LLaMA, GPT-3
// 175B; 5 held out: GPT-3 5B, 20B, Nemotron-3 8B, 22B and Nemotron-4 340B), Megatron-Bridge 25.11 to 26.06 on H100, B200 and GB200 (12 held out:
// LLaMA-3 8B, 70B, 405B) and NVIDIA's DGX Cloud recipes (dgxc-benchmarking, NeMo 24.05-25.04.01 on H100 and GB200:
// 31 held out, LLaMA 3.1 8B, 70B, 405B, GPT-3 175B and Nemotron-4 15B and 340B; twenty-second session);
// torchtitan's eager FSDP2 runs on A100 (three calibration rows without or with full recompute, five held-out ones
// with every-other-layer or per-op recompute, twenty-second session); and torchtitan's Float8 runs (FSDP2,
// torch.compile, per-op recompute, H200; held out), and MLPerf Training's closed-division GPT-3 175B and LLaMA-3.1
// 405B submissions by NVIDIA and its partners (NeMo 23.09-25.04 on 256 to 11,616 H100s, 64 B200s and 256 to 2,496
// GB200s), Oracle's v4.1 GPT-3 on 1,536 and 3,072 H100s over RoCE and NVIDIA's v5.1 LLaMA-3.1 8B on 72 and 512
// GB200s (30 held out, step times read from the submissions' logs; twenty-fifth session); since the thirty-fifth
// session also Megatron-Bridge's 7 GB300 LLaMA runs and NVIDIA's v5.1 LLaMA-3.1 8B on 72 and 512 GB300s (9 held out):
// quoted because they are all the evidence there is for these paths.
// Fortieth session: MLPerf Training v6.0's LLaMA-3.1 8B on 1,024 GB200s and 512 GB300s (NeMo 26.04; +46% and +26%,
// the strong-scaling end) make it 98. Forty-first session: Cisco's two v6.0 partner runs of LLaMA-3.1 8B on 64 and 128
// H100s (FP8 delayed scaling, TP 2; -6% each: too slow) make it 100.
inline constexpr ValidationEvidence kFp8TrainingMegatronCore{100, 0.009, -0.194, 0.3836};
// NVFP4 training (perf train --dtype fp4; fortieth session): MLPerf Training v5.1's six NVFP4 submissions by NVIDIA
// (NeMo 25.09, Transformer Engine 2.8's NVFP4BlockScaling without the Hadamard transform: LLaMA-3.1 405B on 512 to
// 5,120 GB200s and 512 GB300s, LLaMA-3.1 8B on 8 GB200s and 8 GB300s), all held out, fixed before the model had an
// FP4 training rate and predicted once it had; and Megatron-Bridge's four NVFP4 rows (26.04.01 and 26.06: LLaMA-3 70B on
// 64 and LLaMA-3.1 405B on 256 GB200s and GB300s, with the Hadamard transform and NVFP4 parameters). Signed on speed.
// Forty-first session: MLPerf Training v6.0's four NVFP4 submissions by NVIDIA (NeMo 26.04 on GB300: LLaMA-3.1 405B on
// 512 and 2,048 GPUs, +10% and +11% fast; LLaMA-3.1 8B on 8 and 72, -0.7% and +1.3%), held out, make it 14; the
// partners' 19 v6.0 NVFP4 runs of LLaMA-3.1 8B (NVIDIA's NeMo code on 8 to 72 B200s, B300s, GB200s and GB300s:
// B300 +4% to +13%, B200 +5% to +11%, GB200 +3%, GB300 -5% to +2%) 33, and HPE's two LLaMA-3.1 405B runs on 72
// GB300s (TP 4, PP 18, no CUDA graphs; -2% and -1%) 35.
// Forty-second session: the two partner runs the forty-first left out (CoreWeave's on 4,096 GB300s, -10.4% on step
// time, and Azure's on 8,192 GB200s, -10.0%: both too fast) make it 37.
// Forty-second session: NVIDIA's four LLaMA-3.1 8B NVFP4 runs (v5.1, v6.0) and 14 of the partners' run FP8 attention
// (config_common_fp8attn.sh or FP8_DPA=True), now priced at cuDNN's measured speed-up with its casts: NVIDIA's three
// GB300 ones went from within 1.3% to 5-6% too fast, the partners' B300 ones to 10-14%; mean +6.3%.
inline constexpr ValidationEvidence kNvfp4TrainingMegatronCore{37, 0.053, -0.068, 0.1185};
inline constexpr ValidationEvidence kEagerFsdpTorchtitan{8, 0.035, 0.003, 0.096};
inline constexpr ValidationEvidence kFp8TrainingTorchtitan{2, 0.118, 0.110, 0.125};
// LoRA fine-tuning (perf train --mode lora): NeMo 24.07's three LoRA runs on H100 in FP8 (LLaMA-2 7B, 13B, 70B, rank 32
// on QKV, SQuAD packed into 4096-token sequences), NeMo AutoModel's two on one H100 in BF16 (LLaMA 3.1 8B and
// Qwen2.5 7B, rank 16 on every linear layer; twenty-first session), and MLPerf Training's 20 NVIDIA submissions of
// llama2_70b_lora (rank 16 on the fused qkv and o, input dropout 0.1, 8,192-token packed sequences, FP8, 8 to 1,024
// H100, H200, L40S, B200, GB200 and GB300 GPUs; twenty-fifth session, GB300 thirty-fifth), all held out. Signed on speed (a step time's error
// negated).
// Fortieth session: v6.0's two GB300 runs (72 and 512 GPUs; BF16 base weights cast to FP8 every step: -31%, -27%).
// Forty-first session: v6.0's partner runs, HPE's on 32 GB200s in the v5.1 container (FP8 weights, -10%) and on 32
// and 72 GB300s and Quanta's on 64 GB300s in the 26.04 one (-37%, -35%, -36%), make it 31. Their logs print
// fp8_param_gather=0, fp8_param=False and disable_parameter_transpose_cache=True: the 26.04 runs keep the frozen base
// weights in BF16 with no FP8 copy between steps, as NVIDIA's v6.0 rows assume, and still run 4% faster per
// micro-batch than v5.1's FP8-weight runs, so the per-step cast the model charges them does not show.
// Forty-second session: 14 of the MLPerf runs (v4.1's B200 and every v5.0-v6.0 GB200/GB300 run) exchange their CP
// shards by all-to-all (cp_comm_type 'a2a', read in their configs), which the model now prices, exposed: -3.5% ->
// -5.8% mean; 21 of them (every one whose source says FP8_DPA=1) run attention in FP8, which the model prices at
// cuDNN's measured speed-up on B200, GB200 and GB300 (1.07-1.29x; not measured on Hopper) with the casts of Q, K, V
// and the output gradient: -4.2%.
inline constexpr ValidationEvidence kLoraFinetuning{31, -0.069, -0.399, 0.1725};
// Of those, the five GB300 runs in NeMo 26.04 (NVIDIA's on 72 and 512 GPUs, HPE's on 32 and 72, Quanta's on 64): FP8
// compute over 16-bit frozen weights with no FP8 copy kept between micro-batches, all too slow. `perf train` quotes
// them for that setting. Signed on speed.
inline constexpr ValidationEvidence kLoraFrozen16BitFp8{5, -0.363, -0.399, -0.302};
// Context parallelism by all-to-all (perf train --cp-comm a2a; forty-second session): the only published runs that use
// it are the 14 MLPerf LLaMA-2 70B LoRA runs whose yaml sets cp_comm_type 'a2a' (NVIDIA's v4.1 B200 at CP 2; its v5.0
// to v6.0 GB200 and GB300 runs and the v6.0 partners' at CP 8), all held out. Signed on speed. Their errors are mostly
// the LoRA runs' own: the GB300 ones are too slow with the ring as well.
inline constexpr ValidationEvidence kCpAllToAllTraining{14, -0.134, -0.399, 0.1725};
// 16-bit pretraining on H100 by fused (non-eager) stacks at scale, all held out: the Megatron-LM README's eleven
// Megatron-Core r0.8.0 GPT runs (its table's nine, 1.7B-462B on 48-6144 GPUs, and its text's strong-scaling end
// points, 177B on 96 and 4608 GPUs), the Llama 3 paper's two 405B runs (8K and 16K GPUs) and NeMo AutoModel's
// compiled FSDP2 LLaMA 3.1 70B on 64 GPUs (twenty-first session), and the 29 H100 BF16 runs of NVIDIA's DGX Cloud
// recipes (dgxc-benchmarking, NeMo 24.05-25.04.01: LLaMA 3.1 8B, 70B, 405B, GPT-3 175B, Nemotron-4 15B and 340B;
// twenty-second session). The model was optimistic on 40 of the 43 (39 since the thirty-second session's gradient
// GEMMs); GEMM micro-benchmarks on H100 do not show the gap (docs/validation.md §5). Signed on speed (a step time's error negated).
inline constexpr ValidationEvidence kH100Bf16FusedTraining{43, 0.0535, -0.1615, 0.2147};
// The GPUs it is quoted for: every H100 variant in the catalog (h100-sxm, h100-pcie, h100-nvl).
inline bool IsH100Gpu(std::string_view gpu_id) { return gpu_id.substr(0, 4) == "h100"; }
// Dense-model training on datacenter Blackwell (twenty-fourth session, no new rows): every held-out dense run on B200
// and GB200 in the set, NVIDIA's own stacks only (dgxc-benchmarking's NeMo 25.04.01 LLaMA 3.1 405B in BF16 and FP8,
// Megatron-Bridge 25.11-26.06 LLaMA 3 8B, 70B and 3.1 405B in FP8 and MXFP8). The model is optimistic on 12 of the
// 13: mean +13.0%, worst +28.3%, with B200 and GB200 GEMM rates from best-shape benchmarks (MAMF x 0.945); +9.9%,
// worst +18.3%, since the same session took them from large-shape measurements (data/efficiency.toml). The
// twenty-fifth session's MLPerf Training rows add eight more, all optimistic (GPT-3 175B FP8 on 64 B200s, +2.5%;
// LLaMA-3.1 405B FP8 on 256 to 2,496 GB200s, +9.4% to +11.5%) and its LLaMA-2 70B LoRA runs eight (B200 and GB200,
// -4.8% to +19.1%) and its LLaMA-3.1 8B runs two (72 and 512 GB200s, +11.9% and +32.6%): 31 runs, mean +10.9%
// (+10.1% at the thirty-second session, after the gradient GEMMs' own bytes and the casts without a transpose; +10.3% at
// the thirty-third, after the weight casts and LoRA as NeMo runs it; +9.4% at the thirty-fourth, after GB200's HBM
// fraction was taken from a triad-like kernel: 0.919 -> 0.840).
// Attention on Blackwell is still an assumption. Signed on speed. `perf train` and `select` quote it for dense training there.
// Fortieth session: MLPerf v6.0's LLaMA-3.1 8B on 1,024 GB200s (+46%) and the NVFP4 runs on GB200 (MLPerf v5.1's four
// and two Megatron-Bridge ones, -6% to +9%) make it 38, mean +9.0%. Forty-first session: the v6.0 partners' four
// NVFP4 LLaMA-3.1 8B runs on 8 B200s (three systems, +5% to +11%) and 16 GB200s (+3%) make it 42, mean +8.7%, and
// HPE's LoRA run on 32 GB200s (-10%) 43, mean +8.3%.
inline constexpr ValidationEvidence kBlackwellDenseTraining{44, 0.071, -0.154, 0.3836};
inline constexpr const char* kBlackwellTrainingGpus[] = {"b200", "gb200"};
// Whether `gpu_id` is one of `ids`.
template <size_t N>
bool IsOneOf(std::string_view gpu_id, const char* const (&ids)[N]) {
  for (const char* g : ids)
    if (gpu_id == g) return true;
  return false;
}
inline bool IsBlackwellTrainingGpu(std::string_view gpu_id) { return IsOneOf(gpu_id, kBlackwellTrainingGpus); }
// Dense-model training on Blackwell Ultra (thirty-fifth session): the 11 held-out dense runs on GB300 that the
// catalog entry let in (Megatron-Bridge 25.11-26.06 LLaMA 3 8B, 70B and 3.1 405B in FP8 and MXFP8; MLPerf Training
// v5.1's LLaMA-2 70B LoRA and LLaMA-3.1 8B on 72 and 512 GB300s). GB300's FP8 GEMM rate is Azure's sustained cuBLASLt
// sweep on GB300 (0.658 of the peak against GB200's 0.549-0.579), its BF16 rate B300's best-shape benchmark (the same
// die) times B200's large-shape ratio, its attention rate the Blackwell assumption. The published GB300 runs are
// 16-24% faster than GB200's of the same configuration at the same datasheet peaks; at GB200's GEMM rates the model
// was slow on 8 of the 11 (mean -10%), at the measured ones it is slow on 7, fast on 4 (mean +0.6%; the +34% is the
// 512-GPU LLaMA-3.1 8B, as on GB200). Signed on speed. `perf train` quotes it for dense training on B300 and GB300.
// Fortieth session: MLPerf v6.0's three GB300 dense runs (LLaMA-3.1 8B x512 +26%; LLaMA-2 70B LoRA x72, x512 -31%,
// -27%) and four NVFP4 ones (MLPerf v5.1's 405B +16%, 8B -0.1%; Megatron-Bridge's 70B +0.2%, 405B -3%) make it 18,
// slow on 11, fast on 7, mean -0.7%. Forty-first session: MLPerf v6.0's four NVFP4 runs (405B x512 and x2048 +10%
// and +11%, 8B x8 -0.7%, x72 +1.3%) make it 22, slow on 12, fast on 10, mean +0.4%. Forty-first session: GB300 only
// (B300 has its own band below, kB300DenseTraining); the v6.0 partners' eight NVFP4 LLaMA-3.1 8B runs on 8 to 72
// GB300s (-5% to +2%) make it 30, slow on 16, fast on 14, mean +0.1%, and the partners' three LoRA runs on 32 to 72
// GB300s (-35% to -37%) 33, slow on 19, mean -3.2%, and HPE's two NVFP4 LLaMA-3.1 405B runs on 72 GB300s (-2%, -1%)
// 35, slow on 21, mean -3.1%. Forty-second session: CoreWeave's NVFP4 405B on 4,096 GB300s (+10%) makes it 36; the
// all-to-all CP and FP8 attention (with its casts) of the LoRA and 8B NVFP4 runs move it to slow on 16, mean -1.3%.
inline constexpr ValidationEvidence kBlackwellUltraDenseTraining{36, -0.0225, -0.399, 0.311};
// How many of them the model put too fast (the rest too slow); the validation test counts them.
inline constexpr int kBlackwellUltraDenseTrainingFast = 20;
// Dense-model training on B300 (forty-first session): the first B300 runs in the set, MLPerf Training v6.0 partners'
// NVFP4 LLaMA-3.1 8B (NVIDIA's NeMo code; ASUSTeK, Dell, Inventec, Nebius, Quanta, Supermicro; 8 GPUs, and 64 at
// Nebius), held out: the model is too fast on all seven, +4% to +13% (mean +8.5%), where GB300's runs of the same
// configuration are within 5%; +9% to +14% (mean +11.9%) since the forty-second session priced the FP8 attention four
// of them run (GB300's then within 7%). Until the forty-third session B300's FP4 rate was B200's measured fraction
// applied to B300's peak; since then it is GB300's sustained rate over B300's time ratio to GB300 in one harness
// (aiconfigurator's TensorRT-LLM sweep: 1.17x at the largest NVFP4 shapes, 1.21-1.22x in FP8 and BF16), and the seven
// are +7% to +12% (mean +10.1%). Its FP8 rate is B300's best-shape benchmark times B200's large-shape ratio. The
// published B300 step is 12-20% longer than GB300's, the model's 8% (an air-cooled HGX B300 at 1,100 W against
// GB300's 1,400 W). Signed on speed. `perf train` quotes it for dense training on B300.
inline constexpr ValidationEvidence kB300DenseTraining{7, 0.101, 0.069, 0.121};
inline constexpr const char* kBlackwellUltraGpus[] = {"b300", "gb300"};
inline bool IsBlackwellUltraGpu(std::string_view gpu_id) { return IsOneOf(gpu_id, kBlackwellUltraGpus); }
// Dense-model training on AMD Instinct (thirty-sixth session): pytorch/ao's two single-node torchtitan runs on 8
// MI300X (LLaMA 3 8B, FSDP2, compiled, per-op checkpointing, BF16 and Float8 tensorwise; torch 2.9 nightly with ROCm
// 6.4). Signed on speed. Since the thirty-seventh session MI300X's rates are Azure's micro-benchmarks of that GPU
// (hipBLASLt FP8 GEMM, BabelStream, FlashAttention 2, RCCL; data/efficiency.toml), which took the two runs from +70%
// and +112% to +54% and +73%: the rest is the ROCm stack, which no micro-benchmark in the set measures. `perf train`
// quotes it for the Instinct GPUs in the catalog (MI325X takes MI300X's fractions beyond its BF16 GEMM; MI250X the
// defaults).
inline constexpr ValidationEvidence kAmdInstinctTraining{2, 0.637, 0.545, 0.730};
// Short training steps (thirty-eighth session, no new rows): every dense-model run on an NVIDIA GPU whose step the
// model puts under kShortStepSeconds, all held out (MLPerf Training's LLaMA-2 70B LoRA and LLaMA-3.1 8B runs on H100,
// B200, GB200 and GB300, the Megatron-LM README's GPT 1.7B, flash-attention's GPT-3 125M, llm-foundry's smallest MPT
// runs, NeMo 24.07's LLaMA-2 7B LoRA). Optimistic on 13 of the 19, mean +8.5%, where runs with steps of 1.5 s and
// more are within 2% on average: a step this short pays costs that do not shrink with it (the optimizer's and the
// gradient norm's launches, host synchronisation, logging), which the model does not charge. The 0.7 s threshold was
// read off the binned errors (docs/validation.md section 5). Signed on speed.
inline constexpr double kShortStepSeconds = 0.7;
// Fortieth session: MLPerf v6.0's four dense runs and the two 8-GPU NVFP4 LLaMA-3.1 8B runs of v5.1 make it 25, mean
// +7.1%, -31% to +46%. Forty-first session: v6.0's two NVFP4 LLaMA-3.1 8B runs on 8 and 72 GB300s (-0.7%, +1.3%) make
// it 27, mean +6.6%; the v6.0 partners' 21 LLaMA-3.1 8B runs (19 NVFP4 on Blackwell, 2 FP8 on H100) 48, mean +5.1%;
// their four LLaMA-2 70B LoRA runs (-10% to -37%) 52, mean +2.4%.
inline constexpr ValidationEvidence kShortStepTraining{52, 0.023, -0.399, 0.3836};
inline constexpr const char* kAmdInstinctGpus[] = {"mi250x", "mi300x", "mi325x"};
inline bool IsAmdInstinctGpu(std::string_view gpu_id) { return IsOneOf(gpu_id, kAmdInstinctGpus); }
// Fused attention kernels (thirty-fourth session): cuDNN's SDPA training benchmark (NVIDIA/cudnn-frontend), the kernel
// Transformer Engine selects on Hopper and later, on H200 and GB200 and, since the thirty-fifth session, GB300
// (Llama-3.1-shaped GQA, causal, BF16, forward and backward at 2K-32K tokens; 30 held-out `attention` cases; since the
// thirty-sixth session also the same files' DeepSeek-V3 and Kimi MLA shapes, Q and K 192 wide and V 128, and Qwen3.5's
// 32/2 heads x 256 on GB200 and GB300: 80) against the rate the model prices attention at there (FlashAttention 2's on
// Hopper, an assumption on Blackwell). Signed on the rate: < 0, the kernel ran faster.
inline constexpr ValidationEvidence kAttentionCudnn{80, -0.208, -0.521, 0.308};
// The same benchmark's sliding-window runs (thirty-sixth session; GPT-OSS's shape: head dimension 64, causal band):
// at a 128-token window on GB200 and GB300 (128/128 heads) the kernel runs at 100-200 TFLOP/s, where the model's
// price, the memory-bound time of reading Q, K, V and writing the output once, is 2-4x faster; at a 1024-token window
// on H200 (64/8 heads) the price holds. What the small window adds (each 128-query tile computing two key tiles of
// which half is masked, K and V read twice, the tile's fixed prologue and epilogue) is not modelled. Signed on the
// rate: > 0, the model is faster than the kernel.
inline constexpr ValidationEvidence kAttentionSmallWindow{20, 1.449, 1.012, 3.095};
inline constexpr ValidationEvidence kAttentionWideWindow{10, 0.039, -0.081, 0.209};
// The GPUs whose fused stacks run that kernel and whose attention rate the evidence speaks to: H100 and H200 (one
// Hopper die), B200 and GB200 (one Blackwell die), B300 and GB300 (one Blackwell Ultra die).
inline bool IsCudnnAttentionEvidenceGpu(std::string_view gpu_id) {
  return IsH100Gpu(gpu_id) || gpu_id.substr(0, 4) == "h200" || IsBlackwellTrainingGpu(gpu_id) ||
         IsBlackwellUltraGpu(gpu_id);
}
// Weak scaling (twenty-third session): NVIDIA's DGX Cloud recipes (dgxc-benchmarking) give each configuration at its
// smallest and largest GPU count with the same work per GPU (8 -> 128 up to 576 -> 2,304 H100s, 128 -> 512 GB200s:
// 4-32x the GPUs). Over those 34 pairs the published step time grew -0.2% to 9.5% (mean 2.2%) more than the model's,
// a cost of scale the model does not have (2.7% mean at the twenty-third session; 2.4% before the thirty-first's fixed
// Apex buckets on the recipes that set them; 2.1% after them, 2.2% since the thirty-second's gradient GEMMs). The
// thirty-sixth session's two Llama 4 Maverick pairs (128 -> 512 GB200s, BF16 and FP8; the published step grows 2.7% and
// 3.8%, the model's a little more) make it 36 pairs, -1.7% to 9.5%, mean 2.0%.
// Signed: > 0 means the model's growth fell short.
inline constexpr ValidationEvidence kWeakScalingShortfall{36, 0.0198, -0.0222, 0.0948};
// Mixture-of-experts pretraining with Megatron-Core (Qwen3 30B-A3B and 235B-A22B, GPT-OSS 120B; H100, B200, GB200),
// with the MoE-layer overhead (Efficiency::moe_layer_time_*) fitted on Megatron-LM's recipe runs (the 9
// calibration runs: the fit's own spread): the 27 held-out runs of Megatron-Bridge's 26.04.01-26.08 containers
// (three GPT-OSS BF16 runs with layernorm and moe_act recompute and two DeepSeek-V3 runs with a custom pipeline
// layout and an MTP module added in the twenty-first session; the GB300 and B300 runs in the thirty-fifth), its Qwen3
// 30B-A3B model card, Megatron-MoE-ModelZoo and the Megatron-LM recipe index's GB300 and B300 runs, and the 8
// held-out Qwen3 runs of Megatron-Bridge 25.11, an older MoE stack.
inline constexpr ValidationEvidence kMoeTrainingCalibration{9, -0.024, -0.240, 0.117};
// The same multiples cross-validated on their calibration runs: each run's absolute error with the multiple refitted
// (best 0.05 step) on the others, eager runs and full-iteration-graph runs apart (scripts/fit_scan.py,
// docs/validation.md §4). What the fit is worth on a run of the same stack it has not seen.
struct LeaveOneOut {
  int cases;
  double mean_abs, worst_abs;
};
inline constexpr LeaveOneOut kMoeLayerMultipleLeaveOneOut{9, 0.166, 0.275};
// One job run two ways: Korthikanti et al.'s four model sizes, each with selective and with full recompute on the
// same layout. Error of the predicted step-time ratio (selective / full) against the published one. The only
// published pairs of one job on one stack in the set, so the resolution `plan` can claim between close layouts.
inline constexpr ValidationEvidence kSameJobRatio{4, -0.013, -0.022, 0.005};
// Fortieth session: MLPerf Training v6.0's nine MoE runs (DeepSeek-V3 671B on 256-512 GB300s, -30%, and 512-8,192
// GB200s, +5% to +35% growing with the GPU count; GPT-OSS 20B on 72 GB200s +8%, 72 and 512 GB300s +28%, +47%) make
// it 36, mean -0.4%, -30% to +47% (signed on speed since then: a step time's error negated; the rows before were
// all throughputs). Forty-first session: the v6.0 partners' twelve GPT-OSS 20B runs (NVIDIA's NeMo code but Cisco's
// port; 8-GPU B300 runs at EP 1 -4% to -1%, GB300 at 8-32 GPUs -33% to -9%, GB300 at 72 and B200 at 64 with CP 2 and
// EP 4 +27% and +28% as NVIDIA's own, Cisco's H100 runs +16% and +18%) make it 48, mean -0.0%, -33% to +47%; the
// other twelve partner runs and NVIDIA's own 8-GPU GB300 run (B300 and GB300 at EP 1 on 8 GPUs -8% to -3%, B200 at
// EP 1 +14% and +15%, 64-72 GPUs at CP 2 x EP 4 +27% to +30%) 61, mean +2.2%; CoreWeave's three DeepSeek-V3 runs on
// 2,048 to 8,192 GB300s (-14% to -21%: too slow, less than NVIDIA's GB300 runs at 256 and 512) 64, mean +1.3%.
// Forty-fifth session: Megatron-Bridge's CUDA-graph comparison on 16 H100s (Qwen3 30B-A3B, all-to-all dispatcher,
// eager and TE-scoped graphs: -12% and -11%, too slow) make it 66, mean +2.5% (the model card row's cross-entropy
// set to Transformer Engine's as its recipe has it: -27.7% -> -26.8%).
inline constexpr ValidationEvidence kMoeTrainingHoldout{66, 0.022, -0.32, 0.4636};
inline constexpr ValidationEvidence kMoeTrainingMegatronBridge2511{8, 0.186, -0.278, 0.9994};
// The same model on another stack: NeMo AutoModel's PyTorch FSDP2 with DeepEP on H100 in BF16 (Qwen3 30B-A3B,
// GPT-OSS 120B; twenty-first session, held out), where the Megatron-Core multiple makes the model too slow.
inline constexpr ValidationEvidence kMoeTrainingAutomodel{2, -0.467, -0.551, -0.382};
// Coarse experts: NVIDIA's NeMo recipe for Grok-1 314B (8 experts of width 32768, top-2; dgxc-benchmarking v24.11.1
// and v25.02, Megatron-Core 0.9 era, H100; twenty-second session, held out), where the multiple fitted on Qwen3's
// 128 narrow experts makes the model too slow: the overhead does not grow with an expert's width.
inline constexpr ValidationEvidence kMoeTrainingCoarseExperts{8, -0.359, -0.416, -0.295};
// Llama 4 Maverick in NVIDIA's NeMo 25.04 recipes (dgxc-benchmarking v25.05; thirty-sixth session, held out): 128
// experts of width 8192, top-1 plus a shared expert, on every other layer; GB200 at EP 64 and H100 at EP 128 x ETP 4,
// BF16 and FP8. Signed on speed. Before the thirty-sixth session left the shared experts' GEMMs out of the MoE-layer
// multiple: -31% to +1% (mean -12%).
inline constexpr ValidationEvidence kMoeTrainingLlama4Nemo{6, -0.035, -0.2665, 0.088};
// Error bands per validation group (training, serving TTFT and throughput over dense models; decode over all).
inline constexpr const char* kTrainingGpus[] = {"a100-sxm-80gb", "b200",     "b300",     "gb200", "gb300",
                                                "h100-sxm",      "h200-sxm", "l40s",     "mi300x"};
inline constexpr const char* kDecodeGpus[] = {"a100-sxm-80gb", "h100-sxm"};
inline constexpr const char* kServingGpus[] = {"a100-sxm-80gb", "h100-sxm", "h200-sxm", "l40s"};
inline constexpr ErrorBand kTrainingError{"training", 360, 0.0740, 0.1434, 0.7296, kTrainingGpus, 191, 0.0104};
inline constexpr ErrorBand kDecodeError{"decode", 42, 0.0650, 0.1212, 0.3528, kDecodeGpus, 21, 0.0120};
inline constexpr ErrorBand kTtftDenseError{"ttft", 62, 0.0985, 0.2205, 0.3763, kServingGpus, 39, 0.0523};
inline constexpr ErrorBand kThroughputDenseError{"throughput", 119, 0.0616, 0.1468, 0.2545, kServingGpus, 84, 0.0385};
// Continuous batching at full load (InferConfig::batch_max): TensorRT-LLM 1.0's trtllm-bench maximum throughput.
inline constexpr const char* kMaxThroughputGpus[] = {"b200", "gb200", "h100-sxm", "h200-sxm"};
inline constexpr ErrorBand kMaxThroughputError{"max_throughput", 100, 0.0949, 0.1813, 0.2918, kMaxThroughputGpus,
                                               63, 0.0384, "TRT-LLM 1.0 "};
// A closed-loop benchmark's time per output token (EstimateClosedLoop): TensorRT-LLM, vLLM and SGLang at concurrency
// 1-64 in aiconfigurator's silicon rows (forty-eighth session, held out; mostly too slow).
inline constexpr const char* kConcurrencyGpus[] = {"b200", "gb200", "h100-sxm", "h200-sxm"};
inline constexpr ErrorBand kConcurrencyTpotError{"concurrency", 848, 0.1211, 0.252, 2.05, kConcurrencyGpus, 233,
                                                 -0.0836};
// The same for MoE models (EstimateClosedLoop's tpot_error is empty for them; this is quoted in a note instead):
// DeepSeek-V3/R1 and Qwen3-235B-A22B on TensorRT-LLM, vLLM and SGLang, at TP up to 8 with experts split or spread
// inside it (forty-eighth session's second rule, first predictions; 542 rows until the forty-ninth session took out
// 168 copies of other rows). Signed on speed.
inline constexpr ValidationEvidence kMoeClosedLoopTpot{374, -0.041, -1.008, 0.730};
// The same for MiniMax-M2.5 (fiftieth session's fifth rule, first predictions): vLLM 0.16-0.19 and a nightly build on
// H100, H200, B200 and B300, TP 1-8 with the experts split or spread and attention DP 2. Signed on speed.
inline constexpr ValidationEvidence kMiniMaxClosedLoopTpot{375, 0.069, -0.494, 0.420};
// The same with attention DP (forty-ninth session's third rule; DeepSeek-R1 on TensorRT-LLM 1.1 and 1.2, one node of
// H200s or B200s at attention DP 4 and 8): 1,024-token prompts, and 8,192-token ones. Signed on speed. First
// predictions, where one prompt at a time stalled the whole replica for its attention group's prefill: short -0.158
// (-0.440 to 0.253), long -1.137 (-1.745 to -0.610); these since the fiftieth session's prompts landing one per group.
inline constexpr ValidationEvidence kMoeAttentionDpClosedLoopTpotShort{15, -0.091, -0.424, 0.268};
// Of kMoeClosedLoopTpot's runs, those with expert parallelism inside the TP group (EP > 1, no attention DP): the only
// serving runs with EP in the data (TensorRT-LLM's Qwen3-235B on H100 most of them). Signed on speed.
inline constexpr ValidationEvidence kMoeExpertParallelClosedLoopTpot{149, -0.168, -0.811, 0.555};
// Disaggregated serving's time per output token (EstimateDisaggregated): DeepSeek-V3/R1 decode workers of TensorRT-LLM
// (Dynamo 0.5-0.8) and SGLang 0.5.5-0.5.8 on H200, B200, GB200 and GB300, TP 4-32 with EP and attention DP, in
// aiconfigurator's disaggregated silicon rows (fiftieth session, held out; after the closed loop was added to them).
// Signed on speed.
inline constexpr ValidationEvidence kDisaggTpot{230, -0.063, -2.311, 0.535};
// Of those, the decode workers with expert parallelism (EP > 1: 4 to 32 GPUs, most with attention DP).
inline constexpr ValidationEvidence kDisaggExpertParallelTpot{173, -0.032, -0.706, 0.535};
inline constexpr ValidationEvidence kMoeAttentionDpClosedLoopTpotLong{8, 0.021, -0.248, 0.250};
}  // namespace evidence

// Matmul parameters a token goes through: every active parameter but the input-embedding lookup (a tied table is
// used once, as the output head).
double MatmulParamsPerToken(const ModelSpec& m);
// Model FLOPs per token (forward + backward = 3x forward) under a convention, for sequence s.
// 6N + 12*L*d_attn*s (PaLM, non-causal attention) or Megatron's 72*s*L*h^2*(1+s/6h+V/12hL)/s.
double ModelFlopsPerToken(const ModelSpec& m, double seq, FlopConvention c);
// Model FLOPs per token of LoRA fine-tuning by the 6N convention's count: the frozen matmuls run forward and data
// gradient (4N), attention forward and backward (12 L a d s), the adapters' own 6 per trainable parameter.
double LoraFlopsPerToken(const ModelSpec& m, double seq, double adapter_params);

}  // namespace suanli
