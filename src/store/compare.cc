// Drift detection: the latest run against the same GPU's earlier runs, and against its peers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "suanli/store.h"

namespace suanli {

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Relative noise of one result: half its min-max range over its median.
double OwnNoise(const BenchResult& r) {
  if (r.spread.samples < 2 || r.value <= 0) return 0;
  return 0.5 * (r.spread.max - r.spread.min) / r.value;
}

// Relative median absolute deviation of a set of values.
double RelativeMad(const std::vector<double>& v) {
  const double m = Median(v);
  if (v.size() < 2 || m <= 0) return 0;
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::fabs(x - m));
  return Median(dev) / m;
}

const DeviceInfo* DeviceOf(const BenchRun& run, const BenchResult& r) {
  if (r.device == "cpu" || r.device_index < 0) return nullptr;
  for (const auto& d : run.devices)
    if (d.index == r.device_index) return &d;
  return nullptr;
}

// The identity of the hardware behind a result: GPU UUID, else serial, else host + PCI id;
// for the CPU, host + CPU model.
std::string Identity(const BenchRun& run, const BenchResult& r) {
  if (const DeviceInfo* d = DeviceOf(run, r)) {
    if (!d->uuid.empty()) return d->uuid;
    if (!d->serial.empty()) return "serial:" + d->serial;
    return run.host.hostname + "/" + d->pci_bus_id + "/" + r.device;
  }
  return run.host.hostname + "/cpu/" + run.host.cpu_model;
}

bool Comparable(const BenchResult& r) {
  return (r.state == BenchState::kPass || r.state == BenchState::kWarn) && r.value > 0 && std::isfinite(r.value);
}

void Judge(DriftFinding* f, const CompareOptions& o) {
  const double limit = std::max(o.drop_threshold, o.noise_multiplier * f->noise);
  if (f->change < -2 * limit) {
    f->state = BenchState::kFail;
  } else if (f->change < -limit) {
    f->state = BenchState::kWarn;
  } else {
    f->state = BenchState::kPass;
  }
  const char* what = f->against == "baseline" ? "its own baseline" : "its peers";
  f->message = fmt::format("{:+.1f}% vs {} (median of {}; flagged beyond -{:.1f}%)", 100 * f->change, what,
                           f->reference_samples, 100 * limit);
}

std::string PeerGroup(const std::string& name) {
  return name.rfind("gpu.p2p.", 0) == 0 ? "gpu.p2p" : name;
}

}  // namespace

BenchState CompareReport::Overall() const {
  BenchState s = BenchState::kPass;
  for (const auto& f : findings)
    if (f.state != BenchState::kSkip) s = WorseState(s, f.state);
  return s;
}

CompareReport CompareRuns(const std::vector<StoredRun>& runs, const CompareOptions& o) {
  CompareReport report;
  std::map<std::string, std::size_t> latest;  // host -> index of its latest run
  for (std::size_t i = 0; i < runs.size(); ++i) latest[runs[i].run.host.hostname] = i;
  std::vector<DriftFinding> peers;
  for (const auto& [host, li] : latest) {
    const BenchRun& cur = runs[li].run;
    // ---- against the same hardware's earlier runs ----
    for (const auto& r : cur.results) {
      if (!Comparable(r)) continue;
      const std::string id = Identity(cur, r);
      std::vector<double> base;
      for (std::size_t i = 0; i < li; ++i) {
        for (const auto& e : runs[i].run.results)
          if (e.name == r.name && Comparable(e) && Identity(runs[i].run, e) == id) base.push_back(e.value);
      }
      DriftFinding f;
      f.against = "baseline";
      f.name = r.name;
      f.device = r.device;
      f.device_uuid = DeviceOf(cur, r) ? DeviceOf(cur, r)->uuid : "";
      f.host = host;
      f.value = r.value;
      f.unit = r.unit;
      f.reference_samples = static_cast<int>(base.size());
      if (base.empty()) {
        f.state = BenchState::kSkip;
        f.message = "no earlier run on this hardware: this run is the baseline";
        report.findings.push_back(std::move(f));
        continue;
      }
      f.reference = Median(base);
      const double rel = (r.value - f.reference) / f.reference;
      f.change = r.higher_is_better ? rel : -rel;
      f.noise = std::max(OwnNoise(r), RelativeMad(base));
      Judge(&f, o);
      report.findings.push_back(std::move(f));
    }
    // ---- against the other GPUs of the same run (same model of GPU only) ----
    std::map<std::pair<std::string, std::string>, std::vector<const BenchResult*>> groups;
    for (const auto& r : cur.results) {
      const DeviceInfo* d = DeviceOf(cur, r);
      if (!d || !Comparable(r)) continue;
      groups[{PeerGroup(r.name), d->name}].push_back(&r);
    }
    for (const auto& [key, members] : groups) {
      if (members.size() < 2) continue;
      for (const BenchResult* r : members) {
        std::vector<double> others;
        double noise = OwnNoise(*r);
        for (const BenchResult* p : members) {
          if (p == r) continue;
          others.push_back(p->value);
          noise = std::max(noise, OwnNoise(*p));
        }
        DriftFinding f;
        f.against = "peers";
        f.name = r->name;
        f.device = r->device;
        f.device_uuid = DeviceOf(cur, *r)->uuid;
        f.host = host;
        f.value = r->value;
        f.unit = r->unit;
        f.reference = Median(others);
        f.reference_samples = static_cast<int>(others.size());
        const double rel = (r->value - f.reference) / f.reference;
        f.change = r->higher_is_better ? rel : -rel;
        f.noise = noise;
        Judge(&f, o);
        peers.push_back(std::move(f));
      }
    }
  }
  for (auto& p : peers) report.findings.push_back(std::move(p));
  return report;
}

}  // namespace suanli
