// `suanli doctor`: diagnose a GPU machine (live or from files) and `suanli doctor collect DIR`.
// Exit codes (docs/doctor.md): 0 healthy (PASS/SKIP only), 10 WARN, 11 FAIL, 12 ERROR (some
// input or check could not be read/run, nothing failed); 1 usage error, 2 invalid input (bad --env,
// unreadable file or bundle).
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "core/files.h"
#include "suanli/doctor.h"

namespace suanli::cli {

namespace {

using json = nlohmann::json;
namespace dr = suanli::doctor;

struct DoctorFlags {
  std::vector<std::string> kernel_logs, smi_xml, smi_csv, app_logs, prometheus, env;
  std::string bundle, profile, collect_dir;
  bool live = false;
  bool all = false;
};

json FindingJson(const dr::Finding& f, const dr::DoctorReport& r) {
  json ev = json::array();
  for (const auto& e : f.evidence) {
    json j = {{"text", e.text}};
    if (!e.file.empty()) j["file"] = e.file;
    if (e.line > 0) j["line"] = e.line;
    ev.push_back(j);
  }
  json j = {{"code", f.code}, {"state", dr::StateName(f.state)}, {"title", f.title}, {"evidence", ev},
            {"cause", f.cause}, {"action", f.action},    {"source", f.source}};
  json gpu = nullptr;
  if (f.gpu_index || !f.pci_bus_id.empty()) {
    gpu = json::object();
    gpu["index"] = f.gpu_index ? json(*f.gpu_index) : json(nullptr);
    gpu["pci_bus_id"] = f.pci_bus_id.empty() ? json(nullptr) : json(f.pci_bus_id);
    for (const auto& g : r.gpus)  // the UUID, so findings can be joined with fleet history
      if (g.host == f.host && !g.uuid.empty() &&
          ((!f.pci_bus_id.empty() && g.pci_bus_id == f.pci_bus_id) || (f.pci_bus_id.empty() && g.index == f.gpu_index)))
        gpu["uuid"] = g.uuid;
  }
  j["gpu"] = gpu;
  if (!f.host.empty()) j["host"] = f.host;
  return j;
}

std::string GpuCell(const dr::Finding& f) {
  std::string s = f.host.empty() ? "" : f.host + ":";
  if (f.gpu_index) s += std::to_string(*f.gpu_index);
  else if (!f.pci_bus_id.empty()) s += f.pci_bus_id;
  else if (s.empty()) s = "-";
  return s;
}

void PrintHuman(const dr::DoctorReport& r, bool all) {
  {
    std::string head;
    for (const char* k : {"hostname", "driver", "driver_max_cuda", "torch"}) {
      auto it = r.facts.find(k);
      if (it != r.facts.end() && !it->second.empty()) head += (head.empty() ? "" : "  ") + std::string(k) + " " + it->second;
    }
    if (!head.empty()) std::printf("%s\n\n", head.c_str());
  }
  const dr::State order[] = {dr::State::kFail, dr::State::kError, dr::State::kWarn, dr::State::kSkip, dr::State::kPass};
  for (dr::State st : order) {
    std::vector<const dr::Finding*> fs;
    for (const auto& f : r.findings)
      if (f.state == st) fs.push_back(&f);
    if (fs.empty()) continue;
    const bool detail = st == dr::State::kFail || st == dr::State::kError || st == dr::State::kWarn;
    if (st == dr::State::kPass && !all) {
      std::printf("%s: %zu check(s)%s\n", dr::StateName(st), fs.size(), st == dr::State::kPass ? " passed (--all lists them)" : " not applicable here (--all lists them)");
      continue;
    }
    std::printf("== %s (%zu) ==\n", dr::StateName(st), fs.size());
    for (const auto* f : fs) {
      std::printf("[%s] %s  gpu %s  %s\n", dr::StateName(f->state), f->code.c_str(), GpuCell(*f).c_str(), f->title.c_str());
      if (!detail) continue;
      for (const auto& e : f->evidence) {
        std::string where = e.file;
        if (e.line > 0) where += ":" + std::to_string(e.line);
        std::printf("    evidence: %s%s\n", where.empty() ? "" : (where + ": ").c_str(), e.text.c_str());
      }
      if (!f->cause.empty()) std::printf("    cause:    %s\n", f->cause.c_str());
      if (!f->action.empty()) std::printf("    action:   %s\n", f->action.c_str());
      if (!f->source.empty()) std::printf("    source:   %s\n", f->source.c_str());
    }
    std::printf("\n");
  }
  if (!r.gpus.empty()) {
    Table t({"host", "gpu", "pci bus id", "name", "state", "findings"});
    for (const auto& g : r.gpus) {
      std::string codes;
      for (const auto& c : g.codes) codes += (codes.empty() ? "" : " ") + c;
      t.Row({g.host.empty() ? "-" : g.host, g.index ? std::to_string(*g.index) : "-", g.pci_bus_id, g.name,
             dr::StateName(g.state), codes.empty() ? "-" : codes});
    }
    std::printf("%s\n", t.Render().c_str());
  }
  int counts[5] = {0, 0, 0, 0, 0};
  for (const auto& f : r.findings) ++counts[dr::StateRank(f.state)];
  std::printf("machine: %s  (%d FAIL, %d ERROR, %d WARN, %d SKIP, %d PASS)  exit %d\n", dr::StateName(r.overall),
              counts[4], counts[3], counts[2], counts[1], counts[0], dr::ExitCodeForState(r.overall));
}

// Reads a whole file into a buffer sized from the file's length up front (kernel logs can be
// gigabytes: growing a string by doubling costs twice the memory and many page faults).
Status ReadInto(const std::vector<std::string>& paths, std::vector<dr::TextInput>* out) {
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) return InvalidArgument(fmt::format("{}: is a directory, expected a file", p));
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (!f) {
      const int e = errno;
      if (e == ENOENT) return NotFound(fmt::format("{}: no such file", p));
      return InvalidArgument(fmt::format("{}: cannot open: {}", p, std::strerror(e)));
    }
    std::string text;
    if (std::fseek(f, 0, SEEK_END) == 0) {
      long n = std::ftell(f);
      if (n > (long{2} << 30)) {
        std::fclose(f);
        return InvalidArgument(fmt::format("{}: larger than 2 GiB, refusing to read", p));
      }
      if (n > 0) text.reserve(static_cast<std::size_t>(n));
      std::fseek(f, 0, SEEK_SET);
    }
    char buf[1 << 16];
    std::size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) {
      text.append(buf, got);
      if (text.size() > (std::size_t{2} << 30)) {
        std::fclose(f);
        return InvalidArgument(fmt::format("{}: larger than 2 GiB, refusing to read", p));
      }
    }
    const bool err = std::ferror(f) != 0;
    std::fclose(f);
    if (err) return InvalidArgument(fmt::format("{}: cannot read (a directory, or an I/O error)", p));
    out->push_back({p, std::move(text)});
  }
  return Status::Ok();
}

// Kernel logs can be gigabytes: stream them through the scanner in 4 MiB reads instead of
// holding the whole file in memory.
Status StreamKernelLogs(const std::vector<std::string>& paths, std::vector<dr::KernelLogParse>* out) {
  constexpr std::size_t kChunk = std::size_t{4} << 20;
  std::vector<char> buf(kChunk);
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) return InvalidArgument(fmt::format("{}: is a directory, expected a file", p));
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (!f) {
      const int e = errno;
      if (e == ENOENT) return NotFound(fmt::format("{}: no such file", p));
      return InvalidArgument(fmt::format("{}: cannot open: {}", p, std::strerror(e)));
    }
    dr::KernelLogScanner scanner(p);
    std::size_t got;
    while ((got = std::fread(buf.data(), 1, buf.size(), f)) > 0) scanner.Feed(std::string_view(buf.data(), got));
    const bool err = std::ferror(f) != 0;
    std::fclose(f);
    if (err) return InvalidArgument(fmt::format("{}: cannot read (an I/O error)", p));
    out->push_back(scanner.Finish());
  }
  return Status::Ok();
}

}  // namespace

Action SetupDoctor(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<DoctorFlags>();
  sub->add_option("--kernel-log", f->kernel_logs, "Kernel log file (dmesg, journalctl -k, kern.log); repeatable");
  sub->add_option("--smi-xml", f->smi_xml, "nvidia-smi -q -x output; repeatable");
  sub->add_option("--smi-csv", f->smi_csv,
                  "nvidia-smi --query-gpu=... --format=csv (or --query-compute-apps) output; repeatable");
  sub->add_option("--app-log", f->app_logs, "Training/serving log, traceback or NCCL_DEBUG=INFO output; repeatable");
  sub->add_option("--prometheus", f->prometheus, "dcgm-exporter scrape (Prometheus text); repeatable, one per node");
  sub->add_option("--env", f->env, "Fact KEY=VALUE, e.g. torch=2.4.0+cu124 driver=525.60.13 compute_cap=9.0; repeatable");
  sub->add_option("--bundle", f->bundle, "Directory written by `suanli doctor collect` (or holding such files)");
  sub->add_flag("--live", f->live, "Also inspect this machine (the default when no file is given)");
  sub->add_option("--profile", f->profile,
                  "Use an nvidia-smi XML file as the live GPU backend instead of NVML (a simulated machine)");
  sub->add_flag("--all", f->all, "List PASS and SKIP findings too");
  sub->footer(
      "Exit codes: 0 healthy, 10 WARN, 11 FAIL, 12 ERROR (an input or check could not be read/run); 1 usage error, "
      "2 invalid input (bad --env, unreadable file).\nSee docs/doctor.md for every rule.");
  CLI::App* collect = sub->add_subcommand("collect", "Write a bundle of this machine's evidence into DIR for offline analysis");
  collect->add_option("dir", f->collect_dir, "Output directory (created if missing)")->required();

  return [ctx, f, collect]() -> int {
    auto knowledge = dr::DoctorKnowledge::LoadEmbedded();
    if (!knowledge.ok()) return PrintError(knowledge.status());
    std::unique_ptr<dr::DeviceBackend> backend;
    if (!f->profile.empty()) {
      auto text = suanli::detail::ReadFile(f->profile);
      if (!text.ok()) return PrintError(text.status());
      auto b = dr::MakeFakeBackend(*text, f->profile);
      if (!b.ok()) return PrintError(b.status());
      backend = std::move(b).value();
    } else {
      backend = dr::MakeNvmlBackend();
    }
    auto host = dr::MakeRealHostProbe();
    if (collect->parsed()) {
      auto files = dr::WriteBundle(*host, *backend, f->collect_dir);
      if (!files.ok()) return PrintError(files.status());
      if (ctx->options().json) {
        json j = JsonEnvelope("suanli.doctor.collect/1");
        j["files"] = *files;
        PrintJson(j);
      } else {
        for (const auto& p : *files) std::printf("wrote %s\n", p.c_str());
        std::printf("Analyse with: suanli doctor --bundle %s\n", f->collect_dir.c_str());
      }
      return kExitOk;
    }
    dr::DoctorInputs in;
    for (const auto& kv : f->env)
      if (Status s = dr::AddUserFact(kv, &in); !s.ok()) return PrintError(s);
    Status s;
    if (s.ok()) s = StreamKernelLogs(f->kernel_logs, &in.kernel_logs_parsed);
    if (s.ok()) s = ReadInto(f->smi_xml, &in.smi_xml);
    if (s.ok()) s = ReadInto(f->smi_csv, &in.smi_csv);
    if (s.ok()) s = ReadInto(f->app_logs, &in.app_logs);
    if (s.ok()) s = ReadInto(f->prometheus, &in.prometheus);
    if (s.ok() && !f->bundle.empty()) s = dr::LoadBundle(f->bundle, &in);
    if (!s.ok()) return PrintError(s);
    const bool offline = !f->kernel_logs.empty() || !f->smi_xml.empty() || !f->smi_csv.empty() || !f->app_logs.empty() ||
                         !f->prometheus.empty() || !f->bundle.empty() || !f->env.empty();
    if (!offline || f->live || !f->profile.empty()) dr::CollectLive(*host, *backend, &in);
    const dr::DoctorReport report = dr::Diagnose(in, *knowledge);
    const int rc = dr::ExitCodeForState(report.overall);
    if (ctx->options().json) {
      json j = JsonEnvelope("suanli.doctor/1");
      j["overall"] = dr::StateName(report.overall);
      j["exit_code"] = rc;
      j["mode"] = offline ? (f->live ? "offline+live" : "offline") : "live";
      // JSON always carries every finding, PASS and SKIP included (--all only affects the table).
      json fs = json::array();
      for (const auto& x : report.findings) fs.push_back(FindingJson(x, report));
      j["findings"] = fs;
      json gs = json::array();
      for (const auto& g : report.gpus) {
        gs.push_back({{"index", g.index ? json(*g.index) : json(nullptr)},
                      {"pci_bus_id", g.pci_bus_id},
                      {"uuid", g.uuid},
                      {"name", g.name},
                      {"host", g.host},
                      {"state", dr::StateName(g.state)},
                      {"findings", g.findings},
                      {"codes", g.codes}});
      }
      j["gpus"] = gs;
      // Fleet view: nodes ranked by their worst GPU, then by finding count.
      std::map<std::string, std::pair<int, int>> nodes;
      for (const auto& g : report.gpus) {
        if (g.host.empty()) continue;
        auto& n = nodes[g.host];
        n.first = std::max(n.first, dr::StateRank(g.state));
        n.second += g.findings;
      }
      std::vector<std::pair<std::string, std::pair<int, int>>> ranked(nodes.begin(), nodes.end());
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
      });
      json ns = json::array();
      const dr::State states[] = {dr::State::kPass, dr::State::kSkip, dr::State::kWarn, dr::State::kError, dr::State::kFail};
      for (const auto& [host, v] : ranked)
        ns.push_back({{"host", host}, {"state", dr::StateName(states[v.first])}, {"findings", v.second}});
      j["nodes"] = ns;
      j["facts"] = report.facts;
      PrintJson(j);
    } else {
      PrintHuman(report, f->all);
    }
    return rc;
  };
}

}  // namespace suanli::cli
