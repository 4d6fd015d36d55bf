// The CPU fallback: STREAM triad over all hardware threads, BLAS GEMM, host and NUMA facts.
#include <cblas.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <functional>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/internal.h"
#include "suanli/bench.h"

namespace suanli {

namespace {

using Clock = std::chrono::steady_clock;

// Exactly representable GEMM inputs: integers in [-2, 2] from a hash of the index, so every
// product and every partial sum (|sum| <= 4k < 2^24 for k < 4M) is exact in FP32 and the
// sampled reference can be compared bit for bit. Shared with the CUDA plugin's generator.
uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
int SmallInt(uint64_t index, uint64_t seed) { return static_cast<int>(SplitMix(index ^ (seed << 48)) % 5) - 2; }

constexpr int kGemmSamples = 256;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

int Threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// A fixed team of threads, one per hardware thread, reused for every repetition so that thread
// creation is not timed. Run(job) runs job(t) on every member (the caller is member 0) and
// returns when all are done.
class Team {
 public:
  explicit Team(int n) : n_(n), start_(n), done_(n) {
    for (int t = 1; t < n; ++t)
      threads_.emplace_back([this, t] {
        for (;;) {
          start_.arrive_and_wait();
          if (stop_.load()) return;
          (*job_)(t);
          done_.arrive_and_wait();
        }
      });
  }
  ~Team() {
    stop_.store(true);
    start_.arrive_and_wait();
    for (auto& th : threads_) th.join();
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  int size() const { return n_; }
  void Run(const std::function<void(int)>& job) {
    job_ = &job;
    start_.arrive_and_wait();
    job(0);
    done_.arrive_and_wait();
  }
  // Runs fn(begin, end) over [0, n) split into one contiguous chunk per member.
  template <typename F>
  void For(std::size_t n, const F& fn) {
    const std::size_t chunk = (n + n_ - 1) / n_;
    Run([&](int t) {
      const std::size_t b = std::min(n, chunk * t), e = std::min(n, b + chunk);
      if (b < e) fn(b, e);
    });
  }

 private:
  int n_;
  std::barrier<> start_, done_;
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* job_ = nullptr;
  std::vector<std::thread> threads_;
};

Measurement Triad(const BenchCase& c) {
  Measurement m;
  const std::size_t n = static_cast<std::size_t>(c.bytes) / sizeof(double);
  if (n == 0) {
    m.outcome = BenchState::kError;
    m.message = "triad size is zero";
    return m;
  }
  Team team(Threads());
  std::unique_ptr<double[]> a(new (std::nothrow) double[n]), b(new (std::nothrow) double[n]),
      cc(new (std::nothrow) double[n]);
  if (!a || !b || !cc) {
    m.outcome = BenchState::kError;
    m.message = fmt::format("could not allocate 3 x {} bytes", c.bytes);
    return m;
  }
  constexpr double kScalar = 3.0;
  // First touch by the thread that will use the chunk, so pages land on its NUMA node.
  team.For(n, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      a[i] = 0;
      b[i] = static_cast<double>(i % 7);
      cc[i] = static_cast<double>(i % 5);
    }
  });
  double* pa = a.get();
  const double* pb = b.get();
  const double* pc = cc.get();
  auto kernel = [&] {
    team.For(n, [=](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) pa[i] = pb[i] + kScalar * pc[i];
    });
  };
  const auto budget_end = Clock::now() + std::chrono::duration<double>(c.time_limit_s * 0.5);
  for (int i = 0; i < c.warmup; ++i) kernel();
  for (int i = 0; i < c.reps; ++i) {
    const auto t0 = Clock::now();
    kernel();
    m.seconds.push_back(Seconds(t0, Clock::now()));
    if (Clock::now() > budget_end) break;
  }
  m.work_per_rep = 3.0 * static_cast<double>(n) * sizeof(double);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) ++m.nans;
    else if (a[i] != static_cast<double>(i % 7) + kScalar * static_cast<double>(i % 5)) ++m.mismatches;
  }
  m.checked = static_cast<int64_t>(n);
  m.check_method = "every element vs a[i] = b[i] + 3 c[i] on exact integers";
  return m;
}

template <typename T>
Measurement Gemm(const BenchCase& c) {
  Measurement m;
  if (c.gemms.size() != 1) {
    m.outcome = BenchState::kError;
    m.message = "CPU GEMM takes one shape";
    return m;
  }
  const GemmShape g = c.gemms[0];
  const auto M = static_cast<std::size_t>(g.m), N = static_cast<std::size_t>(g.n), K = static_cast<std::size_t>(g.k);
  std::vector<T> A(M * K), B(K * N), C(M * N, T(0));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<T>(SmallInt(i, 1));
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<T>(SmallInt(i, 2));
  auto run = [&] {
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.m, g.n, g.k, 1.0f, A.data(), g.k, B.data(), g.n, 0.0f,
                  C.data(), g.n);
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.m, g.n, g.k, 1.0, A.data(), g.k, B.data(), g.n, 0.0,
                  C.data(), g.n);
    }
  };
  const auto budget_end = Clock::now() + std::chrono::duration<double>(c.time_limit_s * 0.5);
  for (int i = 0; i < c.warmup; ++i) run();
  for (int i = 0; i < c.reps; ++i) {
    const auto t0 = Clock::now();
    run();
    m.seconds.push_back(Seconds(t0, Clock::now()));
    if (Clock::now() > budget_end) break;
  }
  m.work_per_rep = g.Flops();
  for (const T& x : C)
    if (!std::isfinite(x)) ++m.nans;
  for (int s = 0; s < kGemmSamples; ++s) {
    const std::size_t i = SplitMix(2 * s + 11) % M, j = SplitMix(2 * s + 12) % N;
    double ref = 0;
    for (std::size_t k = 0; k < K; ++k) ref += static_cast<double>(A[i * K + k]) * static_cast<double>(B[k * N + j]);
    if (static_cast<double>(C[i * N + j]) != ref) ++m.mismatches;
    ++m.checked;
  }
  m.check_method = fmt::format("{} sampled outputs vs a host reference, exact-integer inputs (bitwise)", kGemmSamples);
  return m;
}

class CpuDevice final : public BenchDevice {
 public:
  std::string Kind() const override { return "cpu"; }
  Status Available() override { return Status::Ok(); }
  Result<std::vector<DeviceInfo>> Devices() override {
    DeviceInfo d;
    d.index = -1;
    d.name = ReadHostInfo().cpu_model;
    return std::vector<DeviceInfo>{d};
  }
  IdleReport CheckIdle(const DeviceInfo&) override { return {}; }
  Measurement Run(const BenchCase& c) override {
    if (c.kind == BenchKind::kMemTriad) return Triad(c);
    if (c.kind == BenchKind::kGemm && c.precision == Precision::kFp32) return Gemm<float>(c);
    if (c.kind == BenchKind::kGemm && c.precision == Precision::kFp64) return Gemm<double>(c);
    Measurement m;
    m.outcome = BenchState::kSkip;
    m.message = fmt::format("the CPU backend does not run '{}'", c.name);
    return m;
  }
};

std::string FirstLineWith(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line;
  return "";
}

double MeminfoBytes(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto pos = line.find(key);
    if (pos == std::string::npos) continue;
    std::istringstream ss(line.substr(pos + key.size()));
    double kb = 0;
    ss >> kb;
    return kb * 1024;
  }
  return 0;
}

}  // namespace

std::unique_ptr<BenchDevice> MakeCpuDevice() { return std::make_unique<CpuDevice>(); }

HostInfo ReadHostInfo() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  std::string model = FirstLineWith("/proc/cpuinfo", "model name");
  if (auto p = model.find(':'); p != std::string::npos) {
    model = model.substr(p + 1);
    model.erase(0, model.find_first_not_of(' '));
  }
  h.cpu_model = model.empty() ? "unknown CPU" : model;
  h.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  h.memory_bytes = MeminfoBytes("/proc/meminfo", "MemTotal:");
  utsname u{};
  if (uname(&u) == 0) h.kernel = std::string(u.sysname) + " " + u.release;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string fn = e.path().filename().string();
    if (fn.rfind("node", 0) != 0 || fn.size() < 5 || !std::isdigit(static_cast<unsigned char>(fn[4]))) continue;
    NumaNode n;
    n.id = std::atoi(fn.c_str() + 4);
    std::ifstream cl(e.path() / "cpulist");
    std::getline(cl, n.cpus);
    n.memory_bytes = MeminfoBytes((e.path() / "meminfo").string(), "MemTotal:");
    h.numa.push_back(n);
  }
  std::sort(h.numa.begin(), h.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  const char* cfg = openblas_get_config();
  h.blas = std::string("OpenBLAS ") + (cfg ? cfg : "") + fmt::format(", {} threads", openblas_get_num_threads());
  return h;
}

}  // namespace suanli
