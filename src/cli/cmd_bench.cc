// `suanli bench`: run the baseline micro-benchmarks, store them, compare with history,
// export a calibration file. Exit codes: 0 all PASS/WARN/SKIP; 3 a FAIL (wrong result or far
// below expectation; for `compare`: a drift beyond the threshold); 4 an ERROR (could not run);
// 1/2 usage and input errors as for every command.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "bench/internal.h"
#include "core/files.h"
#include "suanli/bench.h"
#include "suanli/store.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {

using json = nlohmann::json;

struct BenchFlags {
  std::vector<std::string> only;
  std::string model;
  int64_t micro_batch = 1;
  int64_t seq = 2048;
  std::string db;
  bool no_store = false;
  bool quick = false;
  bool list = false;
  double time_limit_s = 120;
  // compare
  double threshold = 0.10;
  // export-calibration
  std::string out_file;
  std::string device = "0";
  std::string cuda_plugin;
};

// The plugin lives next to the binary (build tree) or in ../lib/suanli (installed).
std::string PluginPath() {
  char buf[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  const std::filesystem::path exe_dir = n > 0 ? std::filesystem::path(std::string(buf, n)).parent_path() : ".";
  const auto beside = exe_dir / SUANLI_CUDA_PLUGIN_NAME;
  std::error_code ec;
  if (std::filesystem::exists(beside, ec)) return beside.string();
  const auto installed = exe_dir / ".." / "lib" / "suanli" / SUANLI_CUDA_PLUGIN_NAME;
  if (std::filesystem::exists(installed, ec)) return installed.string();
  return beside.string();
}

std::string FormatValue(double v, const std::string& unit) {
  if (unit == "B/s") return FormatBandwidth(v);
  if (unit == "FLOP/s") return FormatFlops(v);
  if (unit == "OP/s") return fmt::format("{:.1f} TOP/s", v / 1e12);
  if (unit == "s") return v < 1e-3 ? fmt::format("{:.2f} us", v * 1e6) : FormatSeconds(v);
  if (unit == "ratio") return fmt::format("{:.3f}", v);
  return fmt::format("{:.4g} {}", v, unit);
}

std::string Pct(const std::optional<double>& f) { return f ? fmt::format("{:.1f}%", 100 * *f) : "-"; }

int ExitFor(BenchState s) {
  if (s == BenchState::kFail) return kExitNoFit;
  if (s == BenchState::kError) return kExitInternal;
  return kExitOk;
}

std::string DbPath(const BenchFlags& f) { return f.db.empty() ? DefaultBenchDbPath() : f.db; }

int RunBenchCommand(Context* ctx, const BenchFlags& f) {
  BenchOptions o;
  o.only = f.only;
  o.micro_batch = f.micro_batch;
  o.seq = f.seq;
  o.quick = f.quick;
  o.time_limit_s = f.time_limit_s;
  if (Status st = ValidateBenchOptions(o); !st.ok()) return PrintError(st);
  if (!f.model.empty()) {
    auto mc = ctx->models();
    if (!mc.ok()) return PrintError(mc.status());
    auto m = (*mc)->Resolve(f.model);
    if (!m.ok()) return PrintError(m.status());
    o.model = *m;
  }
  if (f.list) {
    for (const auto& n : KnownCaseNames(o)) std::cout << n << "\n";
    return kExitOk;
  }
  auto hw = ctx->hardware();
  if (!hw.ok()) return PrintError(hw.status());
  auto expect = Expectations::LoadEmbedded();
  if (!expect.ok()) return PrintError(expect.status());
  // Open the history first: a bad --db should fail before minutes of measuring.
  std::unique_ptr<BenchStore> store;
  if (!f.no_store) {
    auto s = BenchStore::Open(DbPath(f));
    if (!s.ok()) return PrintError(s.status());
    store = std::move(s).value();
  }
  auto gpu = MakeCudaDevice(!f.cuda_plugin.empty() ? f.cuda_plugin : BuiltWithCuda() ? PluginPath() : "");
  auto cpu = MakeCpuDevice();
  auto iso = MakeChildProcessIsolation();
  BenchEnv env;
  env.gpu = gpu.get();
  env.cpu = cpu.get();
  env.isolation = iso.get();
  env.catalog = *hw;
  env.expectations = &*expect;
  env.suanli_version = SUANLI_VERSION;
  const bool progress = isatty(STDERR_FILENO);
  env.on_result = [progress](const BenchResult& r) {
    if (progress)
      std::fprintf(stderr, "  %-5s %-40s %-5s %s\n", BenchStateName(r.state), r.name.c_str(), r.device.c_str(),
                   r.state == BenchState::kSkip || r.state == BenchState::kError ? r.message.c_str()
                                                                                 : FormatValue(r.value, r.unit).c_str());
  };
  auto run = RunBench(env, o);
  if (!run.ok()) return PrintError(run.status());
  int64_t run_id = 0;
  if (store) {
    auto id = store->Insert(*run);
    if (!id.ok()) return PrintError(id.status());
    run_id = *id;
  }
  const BenchState overall = run->Overall();
  if (ctx->options().json) {
    json j = json::parse(BenchRunToJson(*run));
    j["history"] = store ? json{{"db", store->path()}, {"run_id", run_id}} : json(nullptr);
    PrintJson(j);
    return ExitFor(overall);
  }
  std::cout << fmt::format("host {} ({}, {} CPUs, {} NUMA node{}); GPU backend: {}\n", run->host.hostname,
                           run->host.cpu_model, run->host.logical_cpus, run->host.numa.size(),
                           run->host.numa.size() == 1 ? "" : "s", run->gpu_backend_status);
  for (const auto& d : run->devices) {
    std::cout << fmt::format("gpu{}: {} ({}), {}, driver {}, CUDA {}, catalog: {}\n", d.index, d.name, d.uuid,
                             d.pci_bus_id, d.driver_version.empty() ? "?" : d.driver_version, d.cuda_version,
                             d.catalog_id.empty() ? "not found" : d.catalog_id);
    const auto& idle = run->idle.at(d.index);
    if (idle.known && !idle.idle)
      for (const auto& why : idle.reasons) std::cout << "  not idle: " << why << "\n";
  }
  Table t({"test", "device", "state", "value", "spread (min..max)", "% of peak", "expected", "note"});
  const auto& rs = run->results;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const BenchResult& r = rs[i];
    // Runs of SKIPs with the same reason (every GPU test on a machine without one) fold into
    // one row; the JSON keeps every result.
    std::size_t j = i;
    while (r.state == BenchState::kSkip && j + 1 < rs.size() && rs[j + 1].state == BenchState::kSkip &&
           rs[j + 1].device == r.device && rs[j + 1].message == r.message)
      ++j;
    if (j - i >= 2) {
      t.Row({fmt::format("{} .. {} ({} tests)", r.name, rs[j].name, j - i + 1), r.device, "SKIP", "-", "-", "-", "-",
             r.message});
      i = j;
      continue;
    }
    const bool has_value = r.state != BenchState::kSkip && r.spread.samples > 0;
    t.Row({r.name, r.device, BenchStateName(r.state), has_value ? FormatValue(r.value, r.unit) : "-",
           has_value ? FormatValue(r.spread.min, r.unit) + " .. " + FormatValue(r.spread.max, r.unit) : "-",
           Pct(r.fraction), r.expected_fraction ? ">= " + Pct(r.expected_fraction) : "-", r.message});
  }
  std::cout << "\n" << t.Render();
  std::cout << fmt::format("\noverall: {}", BenchStateName(overall));
  if (store) std::cout << fmt::format("; stored as run {} in {}", run_id, store->path());
  std::cout << "\nbyte counting, peaks and sources: suanli --json bench (fields convention, peak_source, "
               "expectation_source); method: docs/bench-method.md\n";
  return ExitFor(overall);
}

int CompareCommand(Context* ctx, const BenchFlags& f) {
  if (!(f.threshold > 0 && f.threshold < 1)) return PrintError(InvalidArgument("--threshold must be within (0, 1)"));
  auto store = BenchStore::Open(DbPath(f));
  if (!store.ok()) return PrintError(store.status());
  auto runs = (*store)->Runs();
  if (!runs.ok()) return PrintError(runs.status());
  if (runs->empty()) return PrintError(NotFound(fmt::format("no runs in {}: run `suanli bench` first", (*store)->path())));
  CompareOptions o;
  o.drop_threshold = f.threshold;
  const CompareReport rep = CompareRuns(*runs, o);
  const BenchState overall = rep.Overall();
  const int rc = (overall == BenchState::kWarn || overall == BenchState::kFail) ? kExitNoFit : kExitOk;
  if (ctx->options().json) {
    json j = JsonEnvelope("suanli.bench-compare/1");
    j["db"] = (*store)->path();
    j["runs"] = runs->size();
    j["drop_threshold"] = o.drop_threshold;
    j["noise_multiplier"] = o.noise_multiplier;
    json fs = json::array();
    for (const auto& x : rep.findings)
      fs.push_back({{"against", x.against}, {"name", x.name}, {"device", x.device}, {"device_uuid", x.device_uuid},
                    {"host", x.host}, {"value", x.value}, {"reference", x.reference}, {"unit", x.unit},
                    {"change", x.change}, {"noise", x.noise}, {"reference_samples", x.reference_samples},
                    {"state", BenchStateName(x.state)}, {"message", x.message}});
    j["findings"] = fs;
    j["overall"] = BenchStateName(overall);
    PrintJson(j);
    return rc;
  }
  Table t({"against", "host", "test", "device", "state", "value", "reference", "change", "note"});
  for (const auto& x : rep.findings) {
    const bool ref = x.state != BenchState::kSkip;
    t.Row({x.against, x.host, x.name, x.device, BenchStateName(x.state), FormatValue(x.value, x.unit),
           ref ? FormatValue(x.reference, x.unit) : "-", ref ? fmt::format("{:+.1f}%", 100 * x.change) : "-",
           x.message});
  }
  std::cout << t.Render();
  std::cout << fmt::format("\n{} runs in {}; drift flagged beyond -{:.0f}% or {}x the measured noise; overall: {}\n",
                           runs->size(), (*store)->path(), 100 * o.drop_threshold, o.noise_multiplier,
                           BenchStateName(overall));
  return rc;
}

int ExportCommand(Context* ctx, const BenchFlags& f) {
  auto store = BenchStore::Open(DbPath(f));
  if (!store.ok()) return PrintError(store.status());
  auto runs = (*store)->Runs();
  if (!runs.ok()) return PrintError(runs.status());
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    const BenchRun& run = it->run;
    for (const auto& d : run.devices) {
      if (std::to_string(d.index) != f.device && d.uuid != f.device) continue;
      auto cal = CalibrationFromResults(run.results, d, run.started_at);
      if (!cal.ok()) continue;
      const std::string text = CalibrationToToml(*cal);
      Status s = detail::WriteFileAtomic(f.out_file, text);
      if (!s.ok()) return PrintError(s);
      if (ctx->options().json) {
        json j = JsonEnvelope("suanli.bench-export/1");
        j["file"] = f.out_file;
        j["run_id"] = it->id;
        j["device"] = detail::DeviceInfoJson(d);
        PrintJson(j);
      } else {
        std::cout << fmt::format("wrote {} from run {} ({}), gpu{} {}\n", f.out_file, it->id, run.started_at, d.index,
                                 d.name);
      }
      return kExitOk;
    }
  }
  return PrintError(NotFound(fmt::format(
      "no stored GPU run with usable results for device '{}' in {}: run `suanli bench` on a GPU machine first",
      f.device, (*store)->path())));
}

}  // namespace

Action SetupBench(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<BenchFlags>();
  sub->fallthrough();
  sub->require_subcommand(0, 1);
  sub->add_option("--only", f->only, "Run only these tests (names or prefixes, e.g. gpu.mem cpu.gemm.fp32); see --list");
  sub->add_option("--model,-m", f->model, "Also benchmark the GEMM shapes of this model's layers and the training layer");
  sub->add_option("--micro-batch", f->micro_batch, "Sequences per micro-batch for --model")->capture_default_str();
  sub->add_option("--seq,-s", f->seq, "Sequence length for --model")->capture_default_str();
  sub->add_option("--db", f->db, "History database (default: $SUANLI_HOME/bench.sqlite or ~/.local/share/suanli)");
  sub->add_flag("--no-store", f->no_store, "Do not record this run in the history");
  sub->add_flag("--quick", f->quick, "Small sizes: a smoke test, not a measurement");
  sub->add_option("--time-limit", f->time_limit_s, "Watchdog limit per test, seconds")->capture_default_str();
  sub->add_flag("--list", f->list, "List the test names and exit");
  sub->add_option("--cuda-plugin", f->cuda_plugin,
                  "Path of the CUDA plugin (default: libsuanli_cuda.so beside the binary, or ../lib/suanli)");

  CLI::App* cmp = sub->add_subcommand("compare", "Drift against each GPU's own baseline and against its peers");
  cmp->fallthrough();
  cmp->add_option("--db", f->db, "History database");
  cmp->add_option("--threshold", f->threshold, "Flag drops larger than this fraction (and beyond the noise)")
      ->capture_default_str();
  CLI::App* exp = sub->add_subcommand("export-calibration",
                                      "Write measured ceilings as TOML for `suanli perf --calibration FILE`");
  exp->fallthrough();
  exp->add_option("file", f->out_file, "Output file")->required();
  exp->add_option("--db", f->db, "History database");
  exp->add_option("--device", f->device, "GPU index or UUID in the latest run")->capture_default_str();

  return [ctx, f, cmp, exp]() -> int {
    if (cmp->parsed()) return CompareCommand(ctx, *f);
    if (exp->parsed()) return ExportCommand(ctx, *f);
    return RunBenchCommand(ctx, *f);
  };
}

}  // namespace suanli::cli
