// Multi-Instance GPU (MIG): profile tables, valid placements, and packing inference
// services onto the fewest GPUs. Facts come from data/mig/*.toml (profile names, IDs,
// memory-slice placements, real instance memory, each with a source); the algorithm is
// described in docs/methodology.md ("MIG packing").
//
// Geometry (NVIDIA MIG User Guide): a MIG-capable GPU has 8 memory slices and 7 compute
// (SM) slices, and at most 7 GPU instances. A profile "Ng.Mgb" takes N compute slices and a
// fixed number of memory slices, and may start only at the memory-slice indices listed by
// `nvidia-smi mig -lgipp`. Instances must not overlap in memory slices; at most one "+me"
// (media engines) instance per GPU; the compute slices of all instances add up to at most 7.
//
// Everything here is pure and thread-safe; nothing prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"
#include "suanli/status.h"

namespace suanli {

// One GPU-instance profile, e.g. 3g.40gb (ID 9) on an H100 80GB.
struct MigProfile {
  std::string name;           // "1g.10gb", "1g.10gb+me"
  int id = 0;                 // GPU-instance profile ID for `nvidia-smi mig -cgi`
  int compute_slices = 1;     // N in "Ng"
  int memory_slices = 1;      // of 8
  int max_instances = 1;      // per GPU
  std::vector<int> placements;  // allowed first memory slice (0-7)
  bool media_engines = false;   // "+me": at most one such instance per GPU
  Sourced<double> memory_bytes; // real instance memory (nvidia-smi -lgip), or a stated derivation
  std::string source;           // citation for the ID / placements / max instances
  // The Kubernetes extended-resource name the NVIDIA device plugin advertises
  // (mixed strategy): "nvidia.com/mig-1g.10gb".
  std::string ResourceName() const { return "nvidia.com/mig-" + name; }
};

// The MIG table of one GPU model (several catalog GPUs may share it: h100-sxm and h100-pcie).
struct MigGpu {
  std::string id;                        // "h100-80gb"
  std::string name;
  std::vector<std::string> gpus;         // catalog GPU ids this table applies to
  std::vector<std::string> device_filter;  // PCI device ids for mig-parted, e.g. "0x233010DE"
  int memory_slices = 8;
  int compute_slices = 7;
  int max_instances = 7;
  std::string source;                    // citation for the geometry
  std::string note;                      // e.g. "placements assumed, not observed"
  std::vector<MigProfile> profiles;      // in file order
  std::string file;

  const MigProfile* FindProfile(std::string_view name_or_id) const;  // by name ("3g.40gb") or ID ("9")
};

// Parses one data/mig/*.toml (strict: unknown keys are errors; placements must fit the slices).
Result<MigGpu> ParseMigToml(std::string_view text, std::string_view file);

// Loads the embedded tables and <dir>/mig/*.toml from each user dir (later ids replace earlier).
Result<std::vector<MigGpu>> LoadMigTables(const CatalogOptions& options);

// The MIG table for a catalog GPU id (e.g. "h100-sxm") or a table id ("h100-80gb").
// NotFound names the MIG-capable GPUs when the GPU has no MIG.
Result<const MigGpu*> FindMigGpu(const std::vector<MigGpu>& tables, std::string_view id);

// One GPU instance on one GPU: a profile (index into MigGpu::profiles) at a start slice.
struct MigInstance {
  int profile = 0;
  int start = 0;
  int service = -1;  // index into the demands that use it, -1 when unassigned
};

// Checks a whole-GPU layout: known profiles, allowed start slices, slices within the GPU,
// no overlapping memory slices, per-profile instance limits, at most one +me, compute slices
// within the GPU, instance count within the GPU. The message names the rule broken.
Status CheckMigLayout(const MigGpu& gpu, const std::vector<MigInstance>& layout);

// Finds start slices for a multiset of profiles (indices) on one empty GPU, or nullopt when
// no valid placement exists. Larger profiles are placed first; the search is exhaustive.
std::optional<std::vector<MigInstance>> PlaceOnGpu(const MigGpu& gpu, const std::vector<int>& profiles);

// ---- services -----------------------------------------------------------------------

// An inference service to host: one model replica serving `users` concurrent sequences of
// `context` tokens each.
struct MigService {
  std::string name;              // label (default: the model id, made unique)
  std::string model;             // model id, alias or config path
  std::string weights = "bf16";  // weight format (ParseWeightFormat)
  std::string kv_dtype = "bf16";
  int64_t context = 4096;        // tokens per sequence (prompt + output)
  int64_t users = 1;             // concurrent sequences (the batch)
  int replicas = 1;              // identical copies, each its own instance
  int min_compute_slices = 1;    // ask for at least this many compute slices (throughput)
  bool media = false;            // needs NVDEC/NVJPG/OFA: only a +me profile will do
};

// Parses "model[:weights][:ctx=N][:users=N][:kv=fp8][:replicas=N][:compute=N][:name=X][:media]",
// e.g. "llama-3.1-8b:int4:ctx=8192:users=4".
Result<MigService> ParseServiceSpec(std::string_view spec);
// Parses a TOML file of [[service]] tables with the same keys (model, weights, context, users,
// kv_dtype, replicas, compute, name, media).
Result<std::vector<MigService>> ParseServicesToml(std::string_view text, std::string_view file);

// What one service needs, after sizing.
struct MigDemand {
  std::string name;
  double memory_bytes = 0;       // EstimateMemory peak (mode infer, batch = users, seq = context)
  int min_compute_slices = 1;
  bool media = false;
};

// Sizes a service with the memory model: EstimateMemory(mode infer, batch = users, seq = context).
Result<FitResult> SizeService(const ModelSpec& model, const MigService& service);

struct MigOptions {
  // Memory held back in every instance, as a fraction of its real memory, for what the memory
  // model does not count (engine buffers, CUDA graphs, allocator growth). Usable memory of an
  // instance = real memory x (1 - reserve). vLLM's --gpu-memory-utilization is 1 - reserve.
  double reserve = 0.05;
  int max_gpus = 4096;           // refuse plans whose lower bound exceeds this many MIG GPUs
};

// Where one service went.
struct MigAssignment {
  int demand = 0;                // index into the demands
  bool whole_gpu = false;        // true: no MIG profile holds it; it gets whole GPUs
  int profile = -1;              // index into MigGpu::profiles (when !whole_gpu)
  int gpu = -1;                  // index into MigPlan::gpus (when !whole_gpu)
  double usable_bytes = 0;       // profile memory x (1 - reserve)
};

struct MigGpuLayout {
  std::vector<MigInstance> instances;  // sorted by start slice
};

struct MigPlan {
  std::vector<MigGpuLayout> gpus;      // MIG-enabled GPUs
  std::vector<MigAssignment> assignments;  // one per demand, in demand order
  int lower_bound_gpus = 0;            // max(ceil(memory slices / 8), ceil(compute slices / 7), ...)
  bool proven_minimal = false;         // gpus.size() == lower bound, or the exhaustive search finished
};

// The smallest profile (by memory, then compute slices, then memory slices) whose usable memory
// holds `bytes` with at least `min_compute` compute slices; +me profiles only when `media`.
// The 7g (whole-GPU) profile is not chosen here. nullopt when none holds it.
std::optional<int> SmallestProfileFor(const MigGpu& gpu, double bytes, int min_compute, bool media,
                                      double reserve);

// Chooses a profile per demand and packs them onto the fewest GPUs: first-fit decreasing
// with an exact per-GPU placement check, then (for up to 16 instances) an exhaustive search
// for a packing with fewer GPUs. Demands that fit no profile below 7g (the whole GPU) are marked
// whole_gpu and not packed: the caller sizes them with FindMinGpus. Errors: reserve outside
// [0, 1), a negative or non-finite demand, a +me demand on a GPU without +me profiles.
Result<MigPlan> PackMig(const MigGpu& gpu, const std::vector<MigDemand>& demands, const MigOptions& options);

// An instance that could take a profile with more compute slices over the same memory slices
// (e.g. 1g.20gb -> 2g.20gb, 3g.40gb -> 4g.40gb) because the GPU has compute slices to spare.
struct MigUpgrade {
  int gpu = 0;           // index into MigPlan::gpus
  int instance = 0;      // index into that GPU's instances
  int from_profile = 0;  // indices into MigGpu::profiles
  int to_profile = 0;
};
// Greedy, instance by instance in start order, each upgrade keeping the layout valid
// (CheckMigLayout); the plan itself is not changed.
std::vector<MigUpgrade> SpareComputeUpgrades(const MigGpu& gpu, const MigPlan& plan);

// ---- emitters -------------------------------------------------------------------------

// Shell commands that create the layout on GPU index `gpu_index`:
//   sudo nvidia-smi -i 0 -mig 1
//   sudo nvidia-smi mig -i 0 -cgi 14,19,19,9 -C
// Instances are listed in start-slice order, with the intended placement in a comment line.
std::string NvidiaSmiCommands(const MigGpu& gpu, const MigGpuLayout& layout, int gpu_index);

// A mig-parted configuration (github.com/NVIDIA/mig-parted, `version: v1`) named `config_name`:
// one entry per MIG GPU (devices: [i]), and the whole GPUs with mig-enabled: false.
// `whole_gpus` is how many GPUs without MIG follow the MIG GPUs.
std::string MigPartedYaml(const MigGpu& gpu, const MigPlan& plan, int whole_gpus, std::string_view config_name);

}  // namespace suanli
