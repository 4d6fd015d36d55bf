// Running the plan: device discovery, idle check, each case under the watchdog, judging.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>

#include "bench/internal.h"
#include "suanli/bench.h"

namespace suanli {

namespace {

// The harness must not distort what it measures: our copy kernel, timed by the harness, must
// be within this fraction of a bare cudaMemcpy D2D of the same size timed the same way
// (the "within a few percent" requirement of the bench issue; docs/bench-method.md §7).
constexpr double kHarnessTolerance = 0.05;

class InProcess final : public Isolation {
 public:
  Result<std::string> Run(const std::function<std::string()>& work, double) override {
    try {
      return work();
    } catch (const std::exception& e) {
      return Internal(std::string("benchmark threw: ") + e.what());
    }
  }
};

class ChildProcess final : public Isolation {
 public:
  Result<std::string> Run(const std::function<std::string()>& work, double limit_s) override {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return Internal(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      close(fds[0]);
      std::string out;
      char tag = 'O';
      try {
        out = work();
      } catch (const std::exception& e) {
        tag = 'E';
        out = e.what();
      }
      out.insert(out.begin(), tag);
      std::size_t off = 0;
      while (off < out.size()) {
        const ssize_t n = write(fds[1], out.data() + off, out.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(3);
        off += static_cast<std::size_t>(n);
      }
      close(fds[1]);
      _exit(0);
    }
    close(fds[1]);
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    bool timed_out = false;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd p{fds[0], POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) break;
      if (r == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EOF: the child is done
      out.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) return Internal(fmt::format("timed out after {:g} s (killed by the watchdog)", limit_s));
    if (WIFSIGNALED(status)) return Internal(fmt::format("the benchmark process crashed (signal {})", WTERMSIG(status)));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty())
      return Internal(fmt::format("the benchmark process exited with status {}", WEXITSTATUS(status)));
    const char tag = out.front();
    out.erase(out.begin());
    if (tag == 'E') return Internal("benchmark threw: " + out);
    return out;
  }
};

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Measurement ErrorMeasurement(const Status& s) {
  Measurement m;
  m.outcome = BenchState::kError;
  m.message = s.message();
  return m;
}

BenchResult SkipResult(const BenchCase& c, std::string device, std::string why) {
  BenchResult r;
  r.name = c.name;
  r.device = std::move(device);
  r.device_index = c.on_gpu ? c.device : -1;
  r.kind = c.kind;
  r.unit = c.unit;
  r.higher_is_better = c.higher_is_better;
  r.convention = c.convention;
  r.state = BenchState::kSkip;
  r.message = std::move(why);
  return r;
}

// Our copy kernel and a bare cudaMemcpy, alternated in one child so that both see the same
// clocks and temperature; the ratio of paired repetitions is the harness overhead.
BenchResult HarnessOverhead(const BenchCase& c, const Measurement& kernel, const Measurement& memcpy_m) {
  BenchCase kc = c;
  kc.kind = BenchKind::kMemCopy;
  BenchResult r = Evaluate(kc, kernel, nullptr, Expectations());
  r.name = c.name;
  r.kind = c.kind;
  r.unit = c.unit;
  r.convention = c.convention;
  if (memcpy_m.outcome != BenchState::kPass) {
    r.state = WorseState(r.state, memcpy_m.outcome);
    r.message = "cudaMemcpy reference: " + memcpy_m.message;
    return r;
  }
  if (r.state != BenchState::kPass) return r;
  if (memcpy_m.mismatches > 0 || memcpy_m.nans > 0) {
    r.state = BenchState::kFail;
    r.message = "the cudaMemcpy reference copy is wrong";
    return r;
  }
  std::vector<double> ratios;
  const std::size_t n = std::min(kernel.seconds.size(), memcpy_m.seconds.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (kernel.seconds[i] <= 0 || memcpy_m.seconds[i] <= 0) continue;
    ratios.push_back((kernel.work_per_rep / kernel.seconds[i]) / (memcpy_m.work_per_rep / memcpy_m.seconds[i]));
  }
  auto s = ComputeSpread(ratios);
  if (!s.ok()) {
    r.state = BenchState::kError;
    r.message = "no paired repetitions";
    return r;
  }
  r.spread = *s;
  r.value = s->median;
  r.state = std::fabs(r.value - 1) <= kHarnessTolerance ? BenchState::kPass : BenchState::kWarn;
  r.message = fmt::format("copy kernel at {:.1f}% of bare cudaMemcpy D2D (tolerance +-{:.0f}%)", 100 * r.value,
                          100 * kHarnessTolerance);
  return r;
}

}  // namespace

std::unique_ptr<Isolation> MakeInProcessIsolation() { return std::make_unique<InProcess>(); }
std::unique_ptr<Isolation> MakeChildProcessIsolation() { return std::make_unique<ChildProcess>(); }

BenchState BenchRun::Overall() const {
  BenchState s = BenchState::kPass;
  for (const auto& r : results) s = WorseState(s, r.state);
  return s;
}

Result<BenchRun> RunBench(const BenchEnv& env, const BenchOptions& options) {
  if (!env.isolation || !env.catalog || !env.expectations) return Internal("RunBench: incomplete environment");
  BenchRun run;
  run.started_at = env.now_utc ? env.now_utc() : NowUtc();
  run.suanli_version = env.suanli_version;
  run.host = ReadHostInfo();

  // Discover GPUs in the isolated process too: initialising CUDA here would break fork().
  std::string gpu_skip;
  // No backend, no driver, no GPU: SKIP (not applicable here). A driver that hangs, crashes or
  // fails in discovery: ERROR (could not run) — a broken GPU must not look like a missing one.
  BenchState gpu_state = BenchState::kSkip;
  if (!env.gpu) {
    gpu_skip = "no GPU backend";
  } else if (Status a = env.gpu->Available(); !a.ok()) {
    gpu_skip = a.message();
  } else {
    auto text = env.isolation->Run(
        [&]() -> std::string {
          auto devs = env.gpu->Devices();
          nlohmann::json j;
          if (!devs.ok()) {
            j["error"] = devs.status().message();
            j["unsupported"] = devs.status().code() == ErrorCode::kUnsupported;
          } else {
            j["devices"] = nlohmann::json::array();
            for (const auto& d : *devs) j["devices"].push_back(detail::DeviceInfoJson(d));
          }
          return j.dump();
        },
        options.time_limit_s);
    if (!text.ok()) {
      gpu_skip = "GPU discovery failed: " + text.status().message();
      gpu_state = BenchState::kError;
    } else {
      auto j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_discarded()) {
        gpu_skip = "GPU discovery returned unreadable output";
        gpu_state = BenchState::kError;
      } else if (j.contains("error")) {
        gpu_skip = j["error"].get<std::string>();
        if (!j.value("unsupported", false)) gpu_state = BenchState::kError;
      } else
        for (const auto& d : j["devices"]) run.devices.push_back(detail::DeviceInfoFrom(d));
      if (gpu_skip.empty() && run.devices.empty()) gpu_skip = "no CUDA GPU found";
    }
  }
  run.gpu_backend_status = gpu_skip.empty() ? "ok" : gpu_skip;
  std::map<int, const GpuSpec*> specs;
  for (auto& d : run.devices) {
    const GpuSpec* g = MatchCatalogGpu(*env.catalog, d.name);
    d.catalog_id = g ? g->id : "";
    specs[d.index] = g;
    run.idle[d.index] = env.gpu->CheckIdle(d);
  }

  SUANLI_ASSIGN_OR_RETURN(std::vector<BenchCase> cases, PlanCases(run.devices, options));
  auto emit = [&](BenchResult r) {
    if (env.on_result) env.on_result(r);
    run.results.push_back(std::move(r));
  };
  // Without GPUs, list what would have run (one GPU's worth) as SKIP with the reason.
  if (run.devices.empty()) {
    DeviceInfo generic;
    generic.is_gpu = true;
    BenchOptions o = options;
    auto gpu_cases = PlanCases({generic}, o);
    if (gpu_cases.ok())
      for (const auto& c : *gpu_cases)
        if (c.on_gpu) {
          BenchResult r = SkipResult(c, "gpu", gpu_skip);
          r.state = gpu_state;
          emit(std::move(r));
        }
  }
  if (run.devices.size() == 1) {
    DeviceInfo a = run.devices[0], b = a;
    b.index = a.index + 1;
    auto two = PlanCases({a, b}, options);
    if (two.ok())
      for (const auto& c : *two)
        if (c.kind == BenchKind::kAllReduce || (c.kind == BenchKind::kP2P && c.device == a.index))
          emit(SkipResult(c, fmt::format("gpu{}", a.index), "needs two or more GPUs"));
  }

  for (const BenchCase& c : cases) {
    const std::string dev = c.on_gpu ? fmt::format("gpu{}", c.device) : "cpu";
    BenchDevice* backend = c.on_gpu ? env.gpu : env.cpu;
    if (!c.skip_reason.empty()) {
      emit(SkipResult(c, dev, c.skip_reason));
      continue;
    }
    if (!backend) {
      emit(SkipResult(c, dev, "no backend for this device"));
      continue;
    }
    if (!c.on_gpu) {
      if (Status a = backend->Available(); !a.ok()) {
        emit(SkipResult(c, dev, a.message()));
        continue;
      }
    }
    const GpuSpec* spec = c.on_gpu ? specs[c.device] : nullptr;
    BenchResult r;
    if (c.kind == BenchKind::kHarnessOverhead) {
      BenchCase kc = c, mc = c;
      kc.kind = BenchKind::kMemCopy;
      mc.kind = BenchKind::kMemcpyD2D;
      auto text = env.isolation->Run(
          [&]() -> std::string {
            nlohmann::json j = {{"kernel", detail::MeasurementToText(backend->Run(kc))},
                                {"memcpy", detail::MeasurementToText(backend->Run(mc))}};
            return j.dump();
          },
          2 * c.time_limit_s);
      Measurement km, mm;
      if (!text.ok()) {
        km = mm = ErrorMeasurement(text.status());
      } else {
        auto j = nlohmann::json::parse(*text, nullptr, false);
        if (j.is_discarded() || !j.contains("kernel") || !j.contains("memcpy")) {
          km = mm = ErrorMeasurement(Internal("unreadable harness output"));
        } else {
          km = detail::MeasurementFromText(j["kernel"].get<std::string>());
          mm = detail::MeasurementFromText(j["memcpy"].get<std::string>());
        }
      }
      r = HarnessOverhead(c, km, mm);
    } else {
      auto text = env.isolation->Run([&] { return detail::MeasurementToText(backend->Run(c)); }, c.time_limit_s);
      const Measurement m = text.ok() ? detail::MeasurementFromText(*text) : ErrorMeasurement(text.status());
      r = Evaluate(c, m, spec, *env.expectations);
    }
    r.device = dev;
    if (c.on_gpu) {
      const IdleReport& idle = run.idle[c.device];
      if (idle.known && !idle.idle && r.state == BenchState::kPass) {
        r.state = BenchState::kWarn;
        std::string why;
        for (const auto& x : idle.reasons) why += (why.empty() ? "" : "; ") + x;
        r.message = "GPU was not idle before the run (" + why + "): result may be low";
      }
    }
    emit(std::move(r));
  }
  return run;
}

}  // namespace suanli
