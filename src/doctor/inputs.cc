// Inputs from files: --env facts and --bundle directories.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "doctor/util.h"
#include "suanli/doctor.h"
#include "suanli/text.h"

namespace suanli::doctor {

namespace fs = std::filesystem;

Status AddFact(std::string_view key_value, DoctorInputs* inputs) {
  std::size_t eq = key_value.find('=');
  if (eq == std::string_view::npos)
    return InvalidArgument(fmt::format("--env '{}': expected KEY=VALUE (e.g. torch=2.4.0+cu124, driver=525.60.13)", key_value));
  std::string key = ToLower(detail::Trim(key_value.substr(0, eq)));
  if (key.empty()) return InvalidArgument(fmt::format("--env '{}': empty key", key_value));
  inputs->facts[key] = std::string(detail::Trim(key_value.substr(eq + 1)));
  return Status::Ok();
}

Status AddUserFact(std::string_view key_value, DoctorInputs* inputs) {
  SUANLI_RETURN_IF_ERROR(AddFact(key_value, inputs));
  const std::string key = ToLower(detail::Trim(key_value.substr(0, key_value.find('='))));
  const std::string value = inputs->facts[key];
  static const std::vector<std::string> kKnown = {
      "driver",  "torch",          "torch_cuda",     "compute_cap",           "cuda_visible_devices", "kernel_module_version",
      "hostname", "nvml_library_version", "pci_nvidia_gpus", "torch_path", "cuda_toolkits",        "cuda_libraries"};
  if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end() && key.rfind("nccl_", 0) != 0) {
    inputs->facts.erase(key);
    return InvalidArgument(fmt::format("--env {}: unknown fact '{}'{} (known: {}, nccl_*)", key_value, key,
                                       DidYouMean(key, kKnown), fmt::join(kKnown, ", ")));
  }
  const bool driver_like = key == "driver" || key == "kernel_module_version" || key == "nvml_library_version";
  const char* example = driver_like ? "550.54.14" : key == "torch" ? "2.4.0+cu124" : key == "torch_cuda" ? "12.4 or None"
                                                                                   : "9.0";
  const bool ok = driver_like          ? detail::LooksLikeVersion(value, false)
                  : key == "torch"      ? detail::LooksLikeVersion(value, true)
                  : key == "torch_cuda" ? value == "None" || detail::LooksLikeVersion(value, false)
                  : key == "compute_cap" ? detail::LooksLikeVersion(value, false)
                                         : true;
  if (!ok) {
    inputs->facts.erase(key);
    return InvalidArgument(fmt::format("--env {}: '{}' is not {} (e.g. {})", key_value, value,
                                       key == "compute_cap" ? "a compute capability" : "a " + key + " version", example));
  }
  return Status::Ok();
}

Status LoadBundle(const std::string& dir, DoctorInputs* inputs) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(fmt::format("--bundle {}: not a directory", dir));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) files.push_back(e.path());
  }
  if (ec) return IoError(fmt::format("--bundle {}: {}", dir, ec.message()));
  std::sort(files.begin(), files.end());
  int used = 0;
  for (const auto& p : files) {
    const std::string name = p.filename().string();
    const std::string lower = ToLower(name);
    const std::string ext = ToLower(p.extension().string());
    enum { kNone, kKernel, kXml, kCsv, kApp, kProm, kFacts } kind = kNone;
    if (lower == "facts.env") kind = kFacts;
    else if (lower == "manifest.json") {
      // Collection notes ("code: title") become SKIP notes again, so the reader sees what the
      // collector could not read on the original machine.
      auto text = suanli::detail::ReadFile(p.string(), 1 << 20);
      if (text.ok()) {
        auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.contains("notes") && j["notes"].is_array()) {
          for (const auto& n : j["notes"]) {
            if (!n.is_string()) continue;
            const std::string note = n.get<std::string>();
            const std::size_t colon = note.find(": ");
            Finding f;
            f.code = colon == std::string::npos ? "collect.note" : note.substr(0, colon);
            f.state = State::kSkip;
            f.title = "(at collection) " + (colon == std::string::npos ? note : note.substr(colon + 2));
            f.evidence.push_back(Evidence{p.string(), 0, note});
            inputs->collection_notes.push_back(std::move(f));
          }
        }
      }
      continue;
    }
    else if (ext == ".xml") kind = kXml;
    else if (ext == ".csv") kind = kCsv;
    else if (ext == ".prom" || lower.rfind("metrics", 0) == 0) kind = kProm;
    else if (lower.rfind("kernel", 0) == 0 || lower.rfind("dmesg", 0) == 0 || lower.rfind("kern", 0) == 0 ||
             lower.rfind("journal", 0) == 0 || lower.rfind("syslog", 0) == 0)
      kind = kKernel;
    else if (ext == ".log" || ext == ".txt" || ext == ".out" || ext == ".err") kind = kApp;
    if (kind == kNone) continue;
    if (kind == kKernel) {  // streamed: kernel logs can be gigabytes
      std::FILE* f = std::fopen(p.string().c_str(), "rb");
      if (!f) return IoError(fmt::format("{}: cannot open", p.string()));
      KernelLogScanner scanner(p.string());
      std::vector<char> buf(std::size_t{4} << 20);
      std::size_t got;
      while ((got = std::fread(buf.data(), 1, buf.size(), f)) > 0) scanner.Feed(std::string_view(buf.data(), got));
      std::fclose(f);
      inputs->kernel_logs_parsed.push_back(scanner.Finish());
      ++used;
      continue;
    }
    auto text = suanli::detail::ReadFile(p.string(), std::size_t{2} << 30);
    if (!text.ok()) return text.status();
    ++used;
    TextInput in{p.string(), std::move(text).value()};
    switch (kind) {
      case kKernel: inputs->kernel_logs.push_back(std::move(in)); break;
      case kXml: inputs->smi_xml.push_back(std::move(in)); break;
      case kCsv: inputs->smi_csv.push_back(std::move(in)); break;
      case kApp: inputs->app_logs.push_back(std::move(in)); break;
      case kProm: inputs->prometheus.push_back(std::move(in)); break;
      case kFacts:
        detail::ForEachLine(in.text, [&](std::string_view line, int64_t) {
          line = detail::Trim(line);
          if (line.empty() || line[0] == '#' || line.find('=') == std::string_view::npos) return true;
          (void)AddFact(line, inputs);
          return true;
        });
        break;
      case kNone: break;
    }
  }
  if (used == 0)
    return NotFound(fmt::format("--bundle {}: no known files (kernel.log, nvidia-smi.xml, *.csv, *.log, *.prom, facts.env)", dir));
  return Status::Ok();
}

}  // namespace suanli::doctor
