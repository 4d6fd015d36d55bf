// `suanli tco`: buy versus rent.
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "suanli/cost.h"
#include "suanli/memory.h"
#include "suanli/perf.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {

using json = nlohmann::json;

struct TcoFlags {
  std::string gpu = "h100-sxm";
  std::string host;  // host class; empty: the GPU's (HostClassFor)
  int gpus = 8;
  std::optional<double> gpu_price, server, network, storage, gpu_watts, host_watts, utilisation, pue, usd_per_kwh,
      hosting_kw, hosting_rack, staff, years, on_demand, reserved, spot, mfu, tokens_per_s;
  int gpus_per_rack = 32;
  // Tokens from the performance model.
  std::string model;
  std::string workload = "infer";
  int64_t seq = 4096;
  int64_t global_batch = 0;
  std::string weights = "bf16", kv_dtype = "bf16";
  std::string batch = "16";
  int64_t max_batch = 0;
  int64_t input_len = 512;
  int64_t output_len = 128;
  double step_overhead_ms = 0;  // serving engine's host time per forward pass, as perf infer
  SpeculationFlags spec;        // speculative decoding, as perf infer
  bool sources = false;
};

std::string Usd(double v) {
  if (std::abs(v) >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Output tokens per second per GPU for serving `model` on this GPU (the minimum layout that fits).
Result<std::pair<double, std::string>> InferTokensPerS(Context* ctx, const TcoFlags& f, const GpuSpec& gpu) {
  SUANLI_ASSIGN_OR_RETURN(const ModelCatalog* mc, ctx->models());
  SUANLI_ASSIGN_OR_RETURN(const HardwareCatalog* hw, ctx->hardware());
  SUANLI_ASSIGN_OR_RETURN(ModelSpec m, mc->Resolve(f.model));
  InferConfig cfg;
  SUANLI_ASSIGN_OR_RETURN(cfg.fit.weights, ParseWeightFormat(f.weights));
  SUANLI_ASSIGN_OR_RETURN(cfg.fit.kv_bytes_per_elem, ParseKvDtype(f.kv_dtype));
  if (f.input_len < 1 || f.output_len < 1) return InvalidArgument("--input-len and --output-len must be at least 1");
  SUANLI_RETURN_IF_ERROR(ApplyServingBatch(f.batch, f.max_batch, &cfg));
  cfg.fit.seq = f.input_len + f.output_len;
  cfg.input_len = f.input_len;
  cfg.output_len = f.output_len;
  cfg.step_overhead_s = f.step_overhead_ms * 1e-3;
  SUANLI_ASSIGN_OR_RETURN(cfg.spec, ParseSpeculation(ctx, f.spec));
  // The smallest layout that holds the model at this batch (with --batch max, at one sequence: the most that fit
  // there is the batch).
  FitRequest layout_req = cfg.fit;
  if (cfg.batch_max) layout_req.batch = 1;
  const MinGpus mg = FindMinGpus(m, layout_req, gpu, 64);
  if (mg.gpus == 0)
    return Status(ErrorCode::kDoesNotFit, fmt::format("{} at batch {} does not fit on up to 64 {}: {}", m.id,
                                                      layout_req.batch, gpu.id, mg.reason));
  cfg.fit.par = mg.layout;
  SUANLI_ASSIGN_OR_RETURN(Cluster c, MakeCluster(*hw, gpu, HardwareCatalog::DefaultGpusPerNode(gpu), hw->DefaultFabric(gpu)));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, LoadEfficiency(gpu.id));
  SUANLI_ASSIGN_OR_RETURN(InferResult r, EstimateInference(m, c, cfg, eff));
  return std::make_pair(r.output_tokens_per_s_per_gpu,
                        fmt::format("suanli perf infer: {} {} (KV cache {}) on {} (TP={} PP={}), batch {}, {} in / {} "
                                    "out tokens{}{}",
                                    m.id, f.weights, f.kv_dtype, gpu.id, mg.layout.tp, mg.layout.pp,
                                    ServingBatchWords(cfg, r), f.input_len, f.output_len,
                                    f.step_overhead_ms > 0
                                        ? fmt::format(", engine host time {:g} ms per step", f.step_overhead_ms)
                                        : "",
                                    cfg.spec.tokens > 0
                                        ? fmt::format(", speculative decoding ({} tokens per round, acceptance length "
                                                      "{:g}, draft: {})",
                                                      cfg.spec.tokens, cfg.spec.acceptance_length, r.draft)
                                        : ""));
}

// Training tokens per second per GPU (and MFU) for `model` on a fleet of f.gpus GPUs: the
// model-parallel degrees of the smallest layout that holds it, data parallel over the rest.
struct TrainRate {
  double tokens_per_s = 0, mfu = 0;
  std::string how;
};
Result<TrainRate> TrainTokensPerS(Context* ctx, const TcoFlags& f, const GpuSpec& gpu) {
  SUANLI_ASSIGN_OR_RETURN(const ModelCatalog* mc, ctx->models());
  SUANLI_ASSIGN_OR_RETURN(const HardwareCatalog* hw, ctx->hardware());
  SUANLI_ASSIGN_OR_RETURN(ModelSpec m, mc->Resolve(f.model));
  if (f.seq < 1) return InvalidArgument("--seq must be at least 1");
  TrainConfig cfg;
  cfg.fit.mode = Mode::kTrain;
  cfg.fit.seq = f.seq;
  cfg.fit.micro_batch = 1;
  const MinGpus mg = FindMinGpus(m, cfg.fit, gpu, std::max(1, f.gpus));
  if (mg.gpus == 0)
    return Status(ErrorCode::kDoesNotFit, fmt::format("training {} does not fit on {} {}: {}", m.id, f.gpus, gpu.id,
                                                      mg.reason));
  const int mp = mg.layout.tp * mg.layout.pp * mg.layout.cp;
  if (f.gpus % mp != 0)
    return InvalidArgument(fmt::format("--gpus {} is not a multiple of the model-parallel size {} (TP={} PP={}) that "
                                       "training {} needs on {}", f.gpus, mp, mg.layout.tp, mg.layout.pp, m.id, gpu.id));
  cfg.fit.par = mg.layout;
  cfg.fit.par.dp = f.gpus / mp;
  cfg.fit.batch = f.global_batch > 0 ? f.global_batch : int64_t(cfg.fit.par.dp) * 4;
  if (cfg.fit.batch % cfg.fit.par.dp != 0)
    return InvalidArgument(fmt::format("--global-batch {} is not divisible by DP = {}", cfg.fit.batch, cfg.fit.par.dp));
  cfg.micro_batch_auto = true;
  cfg.recompute_auto = true;
  SUANLI_ASSIGN_OR_RETURN(Cluster c, MakeCluster(*hw, gpu, HardwareCatalog::DefaultGpusPerNode(gpu), hw->DefaultFabric(gpu)));
  SUANLI_ASSIGN_OR_RETURN(Efficiency eff, LoadEfficiency(gpu.id));
  SUANLI_ASSIGN_OR_RETURN(TrainResult r, EstimateTraining(m, c, cfg, eff));
  if (!r.fits)
    return Status(ErrorCode::kDoesNotFit, fmt::format("training {} on {} {} (TP={} PP={} DP={} ZeRO-{}) does not fit "
                                                      "memory; see `suanli perf train`", m.id, f.gpus, gpu.id,
                                                      cfg.fit.par.tp, cfg.fit.par.pp, cfg.fit.par.dp, cfg.fit.par.zero));
  TrainRate out;
  out.tokens_per_s = r.tokens_per_s_per_gpu;
  out.mfu = r.mfu;
  out.how = fmt::format("suanli perf train: {} on {} {} (TP={} PP={} DP={} ZeRO-{}), global batch {} x {} tokens, "
                        "MFU {:.2f}", m.id, f.gpus, gpu.id, cfg.fit.par.tp, cfg.fit.par.pp, cfg.fit.par.dp,
                        cfg.fit.par.zero, cfg.fit.batch, f.seq, r.mfu);
  return out;
}

}  // namespace

Action SetupTco(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<TcoFlags>();
  sub->add_option("--gpu,-g", f->gpu, "GPU id or alias (its [price] and [power] tables are the defaults)")
      ->capture_default_str();
  sub->add_option("--gpus", f->gpus, "Fleet size for the totals (per-GPU figures do not depend on it)")
      ->capture_default_str();
  sub->add_option("--host", f->host,
                  "The kind of machine the GPU sits in, which sets the host's share of cost and power and, for desks "
                  "and laptops, no hosting, cooling or staff: baseboard | pcie-server | superchip | workstation | "
                  "laptop (default: from the GPU's form factor and segment; data/tco.toml [hosts])")->check(NonEmpty());
  sub->add_option("--gpu-price-usd", f->gpu_price, "Purchase price per GPU, USD");
  sub->add_option("--server-usd", f->server, "Server share per GPU (chassis, CPUs, memory, baseboard), USD");
  sub->add_option("--network-usd", f->network, "Network share per GPU (NIC, switch ports, optics), USD");
  sub->add_option("--storage-usd", f->storage, "Storage share per GPU, USD");
  sub->add_option("--gpu-watts", f->gpu_watts, "GPU power at full load (default: TDP), W");
  sub->add_option("--host-watts", f->host_watts, "Host power per GPU (CPUs, fans, NICs), W");
  sub->add_option("--utilisation,--utilization,-u", f->utilisation, "Fraction of hours the GPU does useful work, 0..1");
  sub->add_option("--pue", f->pue, "Power usage effectiveness (facility / IT power), >= 1");
  sub->add_option("--usd-per-kwh", f->usd_per_kwh, "Electricity price, USD per kWh");
  sub->add_option("--hosting-usd-per-kw-month", f->hosting_kw, "Colocation price per kW of IT power per month");
  sub->add_option("--hosting-usd-per-rack-month", f->hosting_rack, "Hosting per rack per month (replaces per kW)");
  sub->add_option("--gpus-per-rack", f->gpus_per_rack, "GPUs per rack, with --hosting-usd-per-rack-month")
      ->capture_default_str();
  sub->add_option("--staff-usd-per-gpu-year", f->staff, "Operations staff cost per GPU per year");
  sub->add_option("--years", f->years, "Depreciation period, years");
  sub->add_option("--on-demand-usd-per-hour", f->on_demand, "Cloud on-demand price per GPU-hour");
  sub->add_option("--reserved-usd-per-hour", f->reserved, "Cloud reserved / committed price per GPU-hour");
  sub->add_option("--spot-usd-per-hour", f->spot, "Cloud spot / interruptible price per GPU-hour");
  sub->add_option("--mfu", f->mfu, "Model FLOPs utilisation while working, 0..1 (default: peak, MFU 1)");
  sub->add_option("--tokens-per-s", f->tokens_per_s, "Tokens per second per GPU while working (for USD per million)");
  sub->add_option("--model,-m", f->model, "Serve this model: tokens per second from the inference model");
  sub->add_option("--workload", f->workload, "With --model: infer (serving) | train (the fleet trains it)")
      ->capture_default_str();
  sub->add_option("--weights", f->weights, "With --model: weight format")->capture_default_str();
  sub->add_option("--kv-dtype", f->kv_dtype, "With --model: KV-cache dtype (sets how many sequences fit)")
      ->capture_default_str();
  sub->add_option("--seq", f->seq, "With --workload train: sequence length")->capture_default_str();
  sub->add_option("--global-batch", f->global_batch, "With --workload train: sequences per step (default 4 x DP)");
  sub->add_option("--batch,-b", f->batch, std::string("With --model: ") + kServingBatchHelp)->capture_default_str();
  sub->add_option("--max-batch", f->max_batch, std::string("With --model: ") + kServingMaxBatchHelp)
      ->check(ServingMaxBatch());
  sub->add_option("--input-len", f->input_len, "With --model: prompt tokens")->capture_default_str();
  sub->add_option("--output-len", f->output_len, "With --model: generated tokens")->capture_default_str();
  sub->add_option("--step-overhead-ms", f->step_overhead_ms,
                  "With --model: serving engine's host time per forward pass, as in perf infer")
      ->capture_default_str();
  AddSpeculationOptions(sub, &f->spec);
  sub->add_flag("--sources", f->sources, "Print where every input value came from (JSON: always, under provenance)");

  return [ctx, f]() -> int {
    auto hw = ctx->hardware();
    if (!hw.ok()) return PrintError(hw.status());
    auto gpu = (*hw)->FindGpu(f->gpu);
    if (!gpu.ok()) return PrintError(gpu.status());
    CatalogOptions co;
    if (!ctx->options().no_user_catalog) co.user_dirs.push_back(DefaultUserDataDir());
    for (const auto& d : ctx->options().catalog_dirs) co.user_dirs.push_back(d);
    auto assumptions = LoadTcoAssumptions(co);
    if (!assumptions.ok()) return PrintError(assumptions.status());
    // The GPU's own host class (or none, where a user file dropped it), or the one --host names.
    auto inputs = f->host.empty() ? Result<TcoInputs>(TcoInputsFor(**gpu, *assumptions))
                                  : TcoInputsFor(**gpu, *assumptions, f->host);
    if (!inputs.ok()) return PrintError(inputs.status());
    TcoInputs in = *inputs;
    auto& pv = in.provenance;
    auto set = [&](const std::optional<double>& v, double* field, const char* key, const char* flag) {
      if (!v) return;
      *field = *v;
      pv[key] = std::string("flag ") + flag;
    };
    set(f->gpu_price, &in.gpu_purchase_usd, "gpu_purchase_usd", "--gpu-price-usd");
    set(f->server, &in.server_share_usd, "server_share_usd", "--server-usd");
    set(f->network, &in.network_share_usd, "network_share_usd", "--network-usd");
    set(f->storage, &in.storage_share_usd, "storage_share_usd", "--storage-usd");
    set(f->gpu_watts, &in.gpu_power_watts, "gpu_power_watts", "--gpu-watts");
    set(f->host_watts, &in.host_power_watts, "host_power_watts", "--host-watts");
    set(f->utilisation, &in.utilisation, "utilisation", "--utilisation");
    set(f->pue, &in.pue, "pue", "--pue");
    set(f->usd_per_kwh, &in.electricity_usd_per_kwh, "electricity_usd_per_kwh", "--usd-per-kwh");
    set(f->hosting_kw, &in.hosting_usd_per_kw_month, "hosting_usd_per_kw_month", "--hosting-usd-per-kw-month");
    set(f->hosting_rack, &in.hosting_usd_per_rack_month, "hosting_usd_per_rack_month", "--hosting-usd-per-rack-month");
    set(f->staff, &in.staff_usd_per_gpu_year, "staff_usd_per_gpu_year", "--staff-usd-per-gpu-year");
    set(f->years, &in.depreciation_years, "depreciation_years", "--years");
    in.gpus_per_rack = f->gpus_per_rack;
    in.gpus = f->gpus;
    auto cloud = [&](const std::optional<double>& v, const char* kind, const char* flag) {
      if (!v) return;
      bool replaced = false;
      for (auto& c : in.cloud) {
        if (c.kind == kind) {
          c.usd_per_hour = *v;
          c.source = std::string("flag ") + flag;
          replaced = true;
        }
      }
      if (!replaced) in.cloud.push_back(CloudPrice{kind, *v, std::string("flag ") + flag});
    };
    cloud(f->on_demand, "on-demand", "--on-demand-usd-per-hour");
    cloud(f->reserved, "reserved", "--reserved-usd-per-hour");
    cloud(f->spot, "spot", "--spot-usd-per-hour");
    in.mfu = f->mfu;
    if (f->tokens_per_s && !f->model.empty())
      return PrintError(InvalidArgument("give --tokens-per-s or --model, not both"));
    if (f->tokens_per_s) {
      in.tokens_per_s = f->tokens_per_s;
      in.tokens_per_s_source = "flag --tokens-per-s";
    } else if (!f->model.empty() && f->workload == "infer") {
      auto t = InferTokensPerS(ctx, *f, **gpu);
      if (!t.ok()) return PrintError(t.status());
      in.tokens_per_s = t->first;
      in.tokens_per_s_source = t->second;
    } else if (!f->model.empty() && f->workload == "train") {
      auto t = TrainTokensPerS(ctx, *f, **gpu);
      if (!t.ok()) return PrintError(t.status());
      in.tokens_per_s = t->tokens_per_s;
      in.tokens_per_s_source = t->how;
      // The training estimate's MFU is the delivered fraction of peak, unless the user gave one.
      if (!in.mfu) {
        in.mfu = t->mfu;
        pv["mfu"] = t->how;
      }
    }
    if (f->workload != "infer" && f->workload != "train")
      return PrintError(InvalidArgument(fmt::format("--workload must be infer or train, got '{}'", f->workload)));
    auto r = ComputeTco(in);
    if (!r.ok()) return PrintError(r.status());
    const std::string flops_label = r->pflop_days_at_peak ? "peak PFLOP-day" : "delivered PFLOP-day";

    if (ctx->options().json) {
      json j = JsonEnvelope("suanli.tco/1");
      j["gpu"] = (*gpu)->id;
      j["gpus"] = in.gpus;
      j["host_class"] = in.host_class;
      j["host_description"] = in.host_description;
      j["indicative"] = true;
      j["inputs"] = {{"gpu_purchase_usd", in.gpu_purchase_usd},
                     {"server_share_usd", in.server_share_usd},
                     {"network_share_usd", in.network_share_usd},
                     {"storage_share_usd", in.storage_share_usd},
                     {"gpu_power_watts", in.gpu_power_watts},
                     {"host_power_watts", in.host_power_watts},
                     {"utilisation", in.utilisation},
                     {"pue", in.pue},
                     {"electricity_usd_per_kwh", in.electricity_usd_per_kwh},
                     {"hosting_usd_per_kw_month", in.hosting_usd_per_kw_month},
                     {"hosting_usd_per_rack_month", in.hosting_usd_per_rack_month},
                     {"gpus_per_rack", in.gpus_per_rack},
                     {"staff_usd_per_gpu_year", in.staff_usd_per_gpu_year},
                     {"depreciation_years", in.depreciation_years},
                     {"peak_flops_per_s", in.peak_flops},
                     {"mfu", Opt(in.mfu)},
                     {"tokens_per_s", Opt(in.tokens_per_s)},
                     {"tokens_per_s_source", in.tokens_per_s_source}};
      j["provenance"] = in.provenance;
      j["per_gpu"] = {{"capex_usd", r->capex_usd},
                      {"depreciation_usd_per_year", r->depreciation_usd_per_year},
                      {"it_power_watts", r->it_power_watts},
                      {"average_it_power_watts", r->average_it_power_watts},
                      {"energy_kwh_per_year", r->energy_kwh_per_year},
                      {"power_usd_per_year", r->power_usd_per_year},
                      {"cooling_usd_per_year", r->cooling_usd_per_year},
                      {"hosting_usd_per_year", r->hosting_usd_per_year},
                      {"staff_usd_per_year", r->staff_usd_per_year},
                      {"opex_usd_per_year", r->opex_usd_per_year},
                      {"total_usd_per_year", r->total_usd_per_year},
                      {"lifetime_usd", r->lifetime_usd},
                      {"usd_per_gpu_hour", r->usd_per_gpu_hour},
                      {"usd_per_used_gpu_hour", Opt(r->usd_per_used_gpu_hour)},
                      {"marginal_usd_per_used_hour", r->marginal_usd_per_used_hour},
                      {"pflop_days_per_year", r->pflop_days_per_year},
                      {"pflop_days_at_peak", r->pflop_days_at_peak},
                      {"usd_per_pflop_day", Opt(r->usd_per_pflop_day)},
                      {"usd_per_million_tokens", Opt(r->usd_per_million_tokens)}};
      j["fleet"] = {{"capex_usd", r->fleet_capex_usd},
                    {"total_usd_per_year", r->fleet_total_usd_per_year},
                    {"it_power_watts", r->it_power_watts * in.gpus}};
      json rent = json::array();
      for (const auto& c : r->rent)
        rent.push_back({{"kind", c.price.kind},
                        {"usd_per_hour", c.price.usd_per_hour},
                        {"source", c.price.source},
                        {"usd_per_year", c.usd_per_year},
                        {"usd_per_pflop_day", c.usd_per_pflop_day},
                        {"usd_per_million_tokens", Opt(c.usd_per_million_tokens)},
                        {"break_even_utilisation", Opt(c.break_even_utilisation)},
                        {"break_even_months", Opt(c.break_even_months)},
                        {"owning_cheaper", c.owning_cheaper}});
      j["rent"] = rent;
      j["notes"] = r->notes;
      PrintJson(j);
      return kExitOk;
    }

    std::cout << fmt::format("{}: buy versus rent, per GPU ({} GPUs in the fleet), utilisation {:.0f}%, {} years\n",
                             (*gpu)->name, in.gpus, 100 * in.utilisation, in.depreciation_years);
    if (!in.host_class.empty())
      std::cout << fmt::format("host: {}, {}{}\n", in.host_class, in.host_description,
                               f->host.empty() ? " (the GPU's form factor and segment; --host to change)" : "");
    std::cout << "INDICATIVE: prices and defaults are dated estimates; replace them with your quotes.\n\n";
    Table own({"owning, per GPU", "USD/year", "basis"});
    own.Row({"depreciation", Usd(r->depreciation_usd_per_year),
             fmt::format("{} USD capex ({} GPU + {} server + {} network + {} storage) / {} years", Usd(r->capex_usd),
                         Usd(in.gpu_purchase_usd), Usd(in.server_share_usd), Usd(in.network_share_usd),
                         Usd(in.storage_share_usd), in.depreciation_years)});
    own.Row({"electricity (IT)", Usd(r->power_usd_per_year),
             fmt::format("({:.0f} W GPU + {:.0f} W host) x {:.2f} x 8760 h x {:.3f} USD/kWh", in.gpu_power_watts,
                         in.host_power_watts, in.utilisation, in.electricity_usd_per_kwh)});
    own.Row({"cooling (PUE)", Usd(r->cooling_usd_per_year), fmt::format("(PUE {:.2f} - 1) x IT energy", in.pue)});
    own.Row({"hosting", Usd(r->hosting_usd_per_year),
             in.hosting_usd_per_rack_month > 0
                 ? fmt::format("{} USD/rack-month x 12 / {} GPUs per rack", Usd(in.hosting_usd_per_rack_month),
                               in.gpus_per_rack)
                 : fmt::format("{} USD/kW-month x {:.3f} kW x 12", Usd(in.hosting_usd_per_kw_month),
                               r->it_power_watts / 1000)});
    own.Row({"operations staff", Usd(r->staff_usd_per_year), "per GPU-year"});
    own.Row({"total", Usd(r->total_usd_per_year),
             r->usd_per_used_gpu_hour
                 ? fmt::format("{:.2f} USD per GPU-hour owned, {:.2f} per hour used", r->usd_per_gpu_hour,
                               *r->usd_per_used_gpu_hour)
                 : fmt::format("{:.2f} USD per GPU-hour owned; no hour used at 0% utilisation", r->usd_per_gpu_hour)});
    std::cout << own.Render();
    // Full-load power per machine: a node of the GPU's NVLink domain (an 8-GPU server, a 72-GPU NVL72 rack), or one
    // GPU in a desktop or laptop.
    const bool single = in.host_class == "workstation" || in.host_class == "laptop";
    const int per_node = single ? 1 : HardwareCatalog::DefaultGpusPerNode(**gpu);
    std::cout << fmt::format("fleet: {} USD capex, {} USD a year, {:.1f} kW IT at full load ({:.1f} kW per {})\n",
                             Usd(r->fleet_capex_usd), Usd(r->fleet_total_usd_per_year),
                             r->it_power_watts * in.gpus / 1000, r->it_power_watts * per_node / 1000,
                             single ? "GPU" : fmt::format("{}-GPU node", per_node));
    std::cout << fmt::format("compute: {:.1f} {}s per GPU-year at {} (dense 16-bit peak {}{}); owning: {}\n",
                             r->pflop_days_per_year, flops_label, fmt::format("{:.0f}% utilisation", 100 * in.utilisation),
                             FormatFlops(in.peak_flops), in.mfu ? fmt::format(" x MFU {:.2f}", *in.mfu) : "",
                             r->usd_per_pflop_day ? fmt::format("{} USD per {}", Usd(*r->usd_per_pflop_day), flops_label)
                                                  : std::string("no cost per PFLOP-day without compute"));
    if (r->usd_per_million_tokens)
      std::cout << fmt::format("tokens: {:.0f} tokens/s per GPU ({}); owning: {:.3f} USD per million tokens\n",
                               *in.tokens_per_s, in.tokens_per_s_source, *r->usd_per_million_tokens);
    std::cout << "\n";
    if (r->rent.empty()) {
      std::cout << "no cloud price for this GPU in its data file: give --on-demand-usd-per-hour, "
                   "--reserved-usd-per-hour or --spot-usd-per-hour to compare\n";
    } else {
      Table t({"renting", "USD/GPU-h", "USD/year", "USD/" + flops_label, "USD/M tokens", "break-even use",
               "break-even", "cheaper"});
      for (const auto& c : r->rent) {
        t.Row({c.price.kind, fmt::format("{:.2f}", c.price.usd_per_hour), Usd(c.usd_per_year), Usd(c.usd_per_pflop_day),
               c.usd_per_million_tokens ? fmt::format("{:.3f}", *c.usd_per_million_tokens) : "-",
               c.break_even_utilisation ? fmt::format("{:.0f}%", 100 * *c.break_even_utilisation) : "never",
               c.break_even_months ? fmt::format("{:.1f} months", *c.break_even_months) : "never",
               c.owning_cheaper ? "own" : "rent"});
      }
      std::cout << t.Render();
      std::cout << "break-even use: the utilisation above which owning costs less per year than renting;\n"
                   "break-even: months at this utilisation until the purchase is paid back by not renting "
                   "(compare with the depreciation period)\n";
    }
    if (f->sources) {
      std::cout << "\nsources:\n";
      for (const auto& [k, v] : in.provenance) std::cout << "  " << k << ": " << v << "\n";
      for (const auto& c : in.cloud) std::cout << "  cloud " << c.kind << ": " << c.source << "\n";
    } else {
      std::string assumed;
      for (const auto& [k, v] : in.provenance)
        if (v.find("suanli assumption") != std::string::npos) assumed += (assumed.empty() ? "" : ", ") + k;
      std::cout << "\n";
      if (!assumed.empty()) std::cout << "assumptions, not published figures (override them): " << assumed << "\n";
      std::cout << "run with --sources for the source and date of every value\n";
    }
    for (const auto& n : r->notes) std::cout << "note: " << n << "\n";
    return kExitOk;
  };
}

}  // namespace suanli::cli
