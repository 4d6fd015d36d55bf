// Total cost of ownership: buy versus rent, per GPU.
//
// Owning a GPU costs its purchase plus its share of the server, network and storage, spread
// over a depreciation period, plus power (IT draw x utilisation x PUE x price per kWh; the
// PUE - 1 part is reported as cooling), hosting (per provisioned kW-month, or per rack) and
// operations staff. Renting costs a price per GPU-hour (on-demand, reserved, spot) for the hours
// used. Formulas: docs/methodology.md ("Total cost of ownership").
//
// Prices are indicative data with dates and sources: the GPU files' [price] and [power] tables,
// and data/tco.toml for everything that is not the GPU (each value sourced or marked as an
// assumption). Every input can be overridden; TcoInputs records where each value came from.
//
// Units are in the field names: usd, usd_per_hour, usd_per_year, watts, kwh. All functions are
// pure and thread-safe; nothing prints.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/status.h"

namespace suanli {

constexpr double kHoursPerYear = 8760.0;   // 365 days; leap days ignored
constexpr double kHoursPerMonth = kHoursPerYear / 12;

// The defaults of data/tco.toml (everything that is not the GPU itself), each with its source
// or an "assumption" note. Amounts are per GPU unless named otherwise.
struct TcoAssumptions {
  Sourced<double> server_share_usd;          // chassis, CPUs, host memory, NVSwitch board, PSUs: one GPU's share
  Sourced<double> network_share_usd;         // NIC, switch ports, cables: one GPU's share
  Sourced<double> storage_share_usd;         // shared storage: one GPU's share
  Sourced<double> host_power_watts;          // server power beyond the GPU (CPUs, fans, NICs), one GPU's share
  Sourced<double> pue;                       // facility power / IT power (>= 1)
  Sourced<double> electricity_usd_per_kwh;
  Sourced<double> hosting_usd_per_kw_month;  // colocation: space and provisioned power, per kW of IT peak
  Sourced<double> staff_usd_per_gpu_year;    // operations engineers' cost spread over the GPUs they run
  Sourced<double> depreciation_years;
  Sourced<double> utilisation;               // fraction of hours the GPU does useful work
  // The kinds of machine a GPU sits in (data/tco.toml [hosts.<class>]): what its share of the host costs and draws,
  // and for desks and laptops no data-centre hosting, cooling or staff. Each class sets some of the keys above by
  // their data-file names ("server_share", "host_power", "pue", ...); the keys it leaves out are the defaults'.
  // A later file's [defaults] key replaces the earlier files' class values for that key (the user's default wins).
  struct HostClass {
    std::string description;
    std::map<std::string, Sourced<double>> values;  // by data-file key
  };
  std::map<std::string, HostClass> hosts;
  std::string file;
};

// The host class of a GPU from its data file: "laptop" (form factor laptop), "workstation" (consumer and
// workstation cards), "superchip" (GB200: the NVL72 rack), "pcie-server" (datacenter PCIe and NVL cards),
// "baseboard" (SXM and OAM modules on an 8-GPU baseboard: the [defaults]).
std::string HostClassFor(const GpuSpec& gpu);

// Parses data/tco.toml. With `base`, keys absent from `text` keep base's values (a user file may
// override only some keys); without it, every key is required. Unknown keys are errors.
Result<TcoAssumptions> ParseTcoToml(std::string_view text, std::string_view file,
                                    const TcoAssumptions* base = nullptr);
// The embedded data/tco.toml, then <dir>/tco.toml from each user dir over it.
Result<TcoAssumptions> LoadTcoAssumptions(const CatalogOptions& options);

// A cloud price: on-demand, reserved or spot, per GPU-hour.
struct CloudPrice {
  std::string kind;              // "on-demand" | "reserved" | "spot"
  double usd_per_hour = 0;
  std::string source;            // where the price came from (file + citation + date, or a flag)
};

// Everything the TCO needs, per GPU. Fill with TcoInputsFor and override fields as needed.
struct TcoInputs {
  std::string gpu_id;
  std::string host_class;                // the TcoAssumptions::hosts class the defaults came from ("" if none)
  std::string host_description;
  double gpu_purchase_usd = 0;
  double server_share_usd = 0;
  double network_share_usd = 0;
  double storage_share_usd = 0;
  double gpu_power_watts = 0;            // TDP (board power at full load)
  double host_power_watts = 0;
  double utilisation = 0.7;              // 0..1
  double pue = 1.5;                      // >= 1
  double electricity_usd_per_kwh = 0;
  // Hosting: per kW-month of provisioned IT power (GPU + host at full load), or, when
  // hosting_usd_per_rack_month > 0, per rack divided by gpus_per_rack.
  double hosting_usd_per_kw_month = 0;
  double hosting_usd_per_rack_month = 0;
  int gpus_per_rack = 32;
  double staff_usd_per_gpu_year = 0;
  double depreciation_years = 4;
  std::vector<CloudPrice> cloud;         // zero or more rental prices to compare with
  // Delivered compute: dense 16-bit peak x MFU. Without an MFU the peak is used (MFU 1) and
  // the result is labelled "peak PFLOP-days".
  double peak_flops = 0;                 // dense BF16/FP16 FLOP/s per GPU
  std::optional<double> mfu;             // 0..1
  std::optional<double> tokens_per_s;    // per GPU while working (from EstimateInference/Training or the user)
  std::string tokens_per_s_source;       // how tokens_per_s was obtained
  int gpus = 1;                          // fleet size for the totals (costs scale linearly)
  // Where each value came from, by field name ("gpu_purchase_usd" -> "data/gpus/h100-sxm.toml
  // [price] purchase: <citation>; as of 2025"). Filled by TcoInputsFor; update when overriding.
  std::map<std::string, std::string> provenance;
};

// Inputs for a catalog GPU: its [price] and [power] tables, its dense 16-bit peak, and the
// assumptions. Prices the GPU file does not give are left at 0 / absent, and the purchase price
// being absent is an error only in ValidateTcoInputs (so a caller can set it first).
// The host-dependent defaults are those of HostClassFor(gpu)'s class where a.hosts has it, else a's own.
TcoInputs TcoInputsFor(const GpuSpec& gpu, const TcoAssumptions& a);
// The same in a named host class (a key of a.hosts); an unknown name is InvalidArgument listing the valid ones.
Result<TcoInputs> TcoInputsFor(const GpuSpec& gpu, const TcoAssumptions& a, std::string_view host_class);

// Negative amounts, utilisation or MFU outside 0..1, PUE below 1, a zero depreciation period,
// no purchase price: InvalidArgument naming the field (and the flag that sets it).
Status ValidateTcoInputs(const TcoInputs& in);

// Owning versus one rental price.
struct RentComparison {
  CloudPrice price;
  double usd_per_year = 0;               // price x hours used per year (utilisation x 8760)
  double usd_per_pflop_day = 0;          // 0 when peak_flops is 0
  std::optional<double> usd_per_million_tokens;
  // Utilisation above which owning is cheaper per year; nullopt when owning never wins
  // (even at 100% use, or when the rent is below the marginal power cost of owning).
  std::optional<double> break_even_utilisation;
  // Months at `utilisation` until the purchase is paid back by not renting; nullopt when
  // renting is cheaper every month at this utilisation.
  std::optional<double> break_even_months;
  bool owning_cheaper = false;           // at the given utilisation, over the depreciation period
};

// Per-GPU owning cost and the comparison, per year unless named otherwise.
struct TcoResult {
  double capex_usd = 0;                  // GPU + server + network + storage share
  double depreciation_usd_per_year = 0;  // capex / years (straight line, no residual value)
  double it_power_watts = 0;             // GPU + host at full load (what hosting provisions)
  double average_it_power_watts = 0;     // x utilisation
  double energy_kwh_per_year = 0;        // facility energy (x PUE)
  double power_usd_per_year = 0;         // IT energy x price
  double cooling_usd_per_year = 0;       // (PUE - 1) x IT energy x price
  double hosting_usd_per_year = 0;
  double staff_usd_per_year = 0;
  double opex_usd_per_year = 0;          // power + cooling + hosting + staff
  double total_usd_per_year = 0;         // depreciation + opex
  double lifetime_usd = 0;               // total x years
  double usd_per_gpu_hour = 0;           // total / 8760 (every hour owned)
  // total / (8760 x utilisation); nullopt at utilisation 0 (no hour is used), as are the owning cost per
  // PFLOP-day and per million tokens below, which are per hour of work too.
  std::optional<double> usd_per_used_gpu_hour;
  double marginal_usd_per_used_hour = 0; // power + cooling of one more hour of work
  double pflop_days_per_year = 0;        // peak x MFU x hours used, in PFLOP-days
  std::optional<double> usd_per_pflop_day;  // also nullopt when peak_flops is 0
  bool pflop_days_at_peak = true;        // no MFU given: peak PFLOP-days
  std::optional<double> usd_per_million_tokens;
  std::vector<RentComparison> rent;      // one per input cloud price
  double fleet_total_usd_per_year = 0;   // x gpus
  double fleet_capex_usd = 0;
  std::vector<std::string> notes;
};

// Computes the TCO. Validates first (ValidateTcoInputs).
Result<TcoResult> ComputeTco(const TcoInputs& in);

// Cost per million tokens at `usd_per_hour` and `tokens_per_s` (per GPU): usd_per_hour /
// (tokens_per_s x 3600) x 1e6. 0 when tokens_per_s <= 0.
double UsdPerMillionTokens(double usd_per_hour, double tokens_per_s);
// Cost per PFLOP-day at `usd_per_hour` and a delivered rate in FLOP/s: usd_per_hour x 24 /
// (flops / 1e15). 0 when flops <= 0.
double UsdPerPflopDay(double usd_per_hour, double delivered_flops);

}  // namespace suanli
