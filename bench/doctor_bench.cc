// Google Benchmark programs for the doctor parsers and rules (built with SUANLI_BUILD_BENCH=ON).
// Inputs are generated in memory so the numbers measure parsing, not the disk. For the 1 GB
// end-to-end comparison with grep see bench/doctor_kernel_log.sh and docs/doctor.md.
#include <benchmark/benchmark.h>

#include <string>

#include "suanli/doctor.h"

namespace {

namespace dr = suanli::doctor;

// ~100 bytes per line; an NVRM line every 200 lines, an Xid burst every 50,000 lines.
std::string KernelLog(std::size_t lines) {
  std::string s;
  s.reserve(lines * 110);
  char buf[256];
  for (std::size_t i = 0; i < lines; ++i) {
    const double t = 1000.0 + i * 0.013;
    if (i % 50000 == 25000)
      std::snprintf(buf, sizeof buf, "[%12.6f] NVRM: Xid (PCI:0000:3b:00): 48, pid=91822, name=python3, An uncorrectable double bit error\n", t);
    else if (i % 200 == 0)
      std::snprintf(buf, sizeof buf, "[%12.6f] NVRM: GPU at PCI:0000:%02zx:00: GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52\n", t, i % 256);
    else
      std::snprintf(buf, sizeof buf, "[%12.6f] IPv6: ADDRCONF(NETDEV_CHANGE): veth%zx: link becomes ready after audit pid=%zu\n", t, i, i);
    s += buf;
  }
  return s;
}

void BM_ParseKernelLog(benchmark::State& state) {
  const std::string log = KernelLog(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(dr::ParseKernelLog(log, "k.log"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(log.size()));
}
BENCHMARK(BM_ParseKernelLog)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_KernelLogScanner4MiB(benchmark::State& state) {
  const std::string log = KernelLog(1000000);
  for (auto _ : state) {
    dr::KernelLogScanner sc("k.log");
    for (std::size_t i = 0; i < log.size(); i += 4u << 20) sc.Feed(std::string_view(log).substr(i, 4u << 20));
    benchmark::DoNotOptimize(sc.Finish());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(log.size()));
}
BENCHMARK(BM_KernelLogScanner4MiB)->Unit(benchmark::kMillisecond);

std::string Prometheus(int nodes) {
  std::string s;
  char buf[512];
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 8; ++g)
      for (const char* m : {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK",
                            "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_XID_ERRORS"}) {
        std::snprintf(buf, sizeof buf,
                      "%s{gpu=\"%d\",UUID=\"GPU-%04d-%d\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\","
                      "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-%d\",DCGM_FI_DRIVER_VERSION=\"580.105.08\"} %d\n",
                      m, g, n, g, 0x18 + g, g, n, 60 + g);
        s += buf;
      }
  return s;
}

void BM_ParsePrometheusFleet(benchmark::State& state) {
  const std::string text = Prometheus(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(dr::ParsePrometheus(text, "fleet.prom"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParsePrometheusFleet)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_DiagnoseFleet(benchmark::State& state) {
  auto k = dr::DoctorKnowledge::LoadEmbedded();
  if (!k.ok()) {
    state.SkipWithError(k.status().message().c_str());
    return;
  }
  dr::DoctorInputs in;
  in.prometheus.push_back({"fleet.prom", Prometheus(static_cast<int>(state.range(0)))});
  for (auto _ : state) benchmark::DoNotOptimize(dr::Diagnose(in, *k));
}
BENCHMARK(BM_DiagnoseFleet)->Arg(100)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
