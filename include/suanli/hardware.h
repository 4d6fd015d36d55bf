// The hardware catalog: GPU SKUs and interconnects, loaded from data files
// (data/gpus/*.toml, data/interconnects.toml) that are embedded in the binary and can
// be overridden by user files. Every value carries the citation it came from.
//
// Thread safety: a loaded catalog is immutable and may be shared between threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/status.h"

namespace suanli {

// A value with the citation it came from (resolved from the file's [sources] table)
// and an optional note (e.g. "approximate: TGP dependent").
template <typename T>
struct Sourced {
  T value{};
  std::string source;
  std::string note;
};

// Numeric formats for compute peaks. The *Fp16Acc variants are GeForce tensor rates with
// FP16 accumulation; on GeForce cards the plain kBf16/kFp16/kFp8 entries hold the FP32-accumulate
// rate, which is what mixed-precision training uses.
enum class Precision { kFp64, kFp64Tensor, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8, kFp4, kFp16Fp16Acc, kFp8Fp16Acc };
const char* PrecisionKey(Precision p);  // the data-file key, e.g. "bf16"
std::optional<Precision> PrecisionFromKey(std::string_view key);
const std::vector<Precision>& AllPrecisions();

struct GpuSpec {
  std::string id;              // canonical id, e.g. "h100-sxm"
  std::string name;            // marketing name
  std::string vendor;          // nvidia | amd | intel
  std::string architecture;    // hopper, ampere, cdna3, ...
  std::string form_factor;     // sxm | pcie | nvl | oam | superchip | pcie-consumer | laptop
  std::string segment;         // datacenter | workstation | consumer
  std::vector<std::string> aliases;
  std::string file;            // where it was loaded from ("embedded:data/gpus/h100-sxm.toml" or a path)

  std::optional<Sourced<int>> launch_year;
  std::optional<Sourced<std::string>> compute_capability;
  std::optional<Sourced<int>> sm_count;
  std::optional<Sourced<bool>> ecc;
  std::optional<Sourced<int>> mig_max_instances;
  std::optional<Sourced<bool>> fp64_reduced;

  // Dense (no 2:4 sparsity) peak rate per precision, FLOP/s (int8: OP/s). Absent = unsupported.
  std::map<Precision, Sourced<double>> dense_peak;

  Sourced<double> memory_bytes;                 // capacity, bytes
  std::optional<Sourced<std::string>> memory_type;
  Sourced<double> memory_bandwidth_bytes_per_s; // datasheet peak
  std::optional<Sourced<double>> l2_bytes;

  std::optional<Sourced<std::string>> link_kind;                 // e.g. nvlink4; absent = PCIe only
  std::optional<Sourced<double>> link_bandwidth_per_direction_bytes_per_s;
  std::optional<Sourced<int>> link_peers;                        // bridge domain size, absent = switch

  std::optional<Sourced<int>> pcie_generation;
  std::optional<Sourced<int>> pcie_lanes;
  // The path between the GPU and its CPU's memory where it is not PCIe (e.g. NVLink-C2C on Grace superchips).
  std::optional<Sourced<std::string>> host_link_kind;
  std::optional<Sourced<double>> host_link_bandwidth_per_direction_bytes_per_s;
  // Host memory per GPU where the CPU comes with the GPU (Grace: LPDDR5X shared by the superchip's GPUs); absent
  // for PCIe cards, whose host memory is the server's.
  std::optional<Sourced<double>> host_memory_per_gpu_bytes;
  // The compute fabric between nodes of the GPU's reference system ([network] fabric: an interconnect id of class
  // network, e.g. ib-ndr for DGX H100's eight 400 Gb/s ConnectX-7 NICs), the default of --inter-node; absent for
  // GPUs sold without one (PCIe cards).
  std::optional<Sourced<std::string>> reference_fabric;
  // The reference system's NVLink domain ([network] nvlink_domain: GPUs that share the GPU link, 72 in a GB200 NVL72
  // rack) and GPUs per host (gpus_per_host: one OS image, 4 in a GB200 compute tray): the defaults of
  // --gpus-per-node (the model's node is the NVLink domain) and of the launch files' GPUs per host. Absent: 8.
  std::optional<Sourced<int>> reference_nvlink_domain;
  std::optional<Sourced<int>> reference_gpus_per_host;
  std::optional<Sourced<double>> tdp_watts;

  // Indicative prices (with dates in the note).
  std::optional<Sourced<double>> price_purchase_usd;
  std::optional<Sourced<double>> price_on_demand_usd_per_hour;
  std::optional<Sourced<double>> price_spot_usd_per_hour;
  std::optional<Sourced<double>> price_reserved_usd_per_hour;

  // Peak for a precision, or nullopt when the GPU does not support it.
  std::optional<double> PeakFlops(Precision p) const;
  bool Supports(Precision p) const { return dense_peak.count(p) != 0; }
};

// PCIe usable bandwidth per lane and direction after line coding, bytes/s (PCI-SIG base specifications: Gen1-2
// 8b/10b, Gen3-5 128b/130b, Gen6 FLIT mode with 242 of 256 bytes carrying data); 0 for an unknown generation.
double PcieLaneBytesPerS(int generation);
// Datasheet bandwidth per direction between the GPU and host memory: the host link ([host_link], e.g. NVLink-C2C)
// where the GPU file has one, else PCIe generation x lanes; nullopt when the file has neither.
std::optional<Sourced<double>> HostBandwidthPerDirection(const GpuSpec& gpu);

// A link or network: GPU links, switches, PCIe generations, InfiniBand, RoCE, Ethernet.
struct Interconnect {
  std::string id;     // e.g. "ib-ndr"
  std::string name;
  std::string cls;    // gpu-link | switch | pcie | network
  Sourced<double> bandwidth_per_direction_bytes_per_s;  // bytes/s (a "400 Gb/s" port is 50e9)
  std::optional<Sourced<double>> latency_s;
};

// Where catalogs come from. Files in later directories override earlier ones by id.
struct CatalogOptions {
  bool use_embedded = true;
  // Directories holding gpus/*.toml, interconnects.toml, models/catalog.toml, models/*.json.
  std::vector<std::string> user_dirs;
};

// The user directory searched by default: $SUANLI_HOME, else $XDG_CONFIG_HOME/suanli,
// else $HOME/.config/suanli. Returned even if it does not exist.
std::string DefaultUserDataDir();

// Pure parsers (no I/O); `file` names the source in error messages.
Result<GpuSpec> ParseGpuToml(std::string_view text, std::string_view file);
Result<std::vector<Interconnect>> ParseInterconnectsToml(std::string_view text, std::string_view file);

class HardwareCatalog {
 public:
  static Result<HardwareCatalog> Load(const CatalogOptions& options);
  // Builds a catalog from already-parsed specs (used by tests). Rejects duplicate ids/aliases.
  static Result<HardwareCatalog> FromSpecs(std::vector<GpuSpec> gpus, std::vector<Interconnect> links);

  const std::vector<GpuSpec>& gpus() const { return gpus_; }
  const std::vector<Interconnect>& interconnects() const { return links_; }
  // Finds by canonical id or alias, case-insensitively. NotFound carries "did you mean".
  Result<const GpuSpec*> FindGpu(std::string_view id) const;
  Result<const Interconnect*> FindInterconnect(std::string_view id) const;
  // The fabric between nodes when the user names none: the GPU's reference system's ([network] fabric), else
  // kDefaultFabric.
  std::string DefaultFabric(const GpuSpec& gpu) const;
  // GPUs per node (the NVLink domain) when the user gives none: the reference system's, else 8; and GPUs per host
  // for launch files: the reference system's, else the node's, never more than `gpus_per_node`.
  static int DefaultGpusPerNode(const GpuSpec& gpu);
  static int GpusPerHost(const GpuSpec& gpu, int gpus_per_node);
  static constexpr const char* kDefaultFabric = "ib-ndr";
  std::vector<std::vector<std::string>> GpuNames() const;  // per GPU: its id, then its aliases

 private:
  std::vector<GpuSpec> gpus_;
  std::vector<Interconnect> links_;
};

}  // namespace suanli
