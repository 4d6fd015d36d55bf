// libFuzzer target for every doctor parser (kernel log, nvidia-smi XML and CSV, Prometheus
// text, application logs) and for Diagnose() over whatever they produce. Any input must give a
// result or an error, never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "suanli/doctor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace dr = suanli::doctor;
  static const auto* knowledge = [] {
    auto k = dr::DoctorKnowledge::LoadEmbedded();
    return k.ok() ? new dr::DoctorKnowledge(std::move(k).value()) : nullptr;  // lives for the process
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Differential check: the streaming scanner, fed in two pieces split at a data-chosen point,
  // must agree with the whole-text parse.
  const dr::KernelLogParse whole = dr::ParseKernelLog(text, "fuzz.log");
  {
    const std::size_t cut = size ? (data[0] * 131u + size / 3) % (size + 1) : 0;
    dr::KernelLogScanner sc("fuzz.log");
    sc.Feed(std::string_view(text).substr(0, cut));
    sc.Feed(std::string_view(text).substr(cut));
    const dr::KernelLogParse parts = sc.Finish();
    if (!whole.truncated && !parts.truncated &&
        (parts.events.size() != whole.events.size() || parts.lines != whole.lines || parts.nvrm_lines != whole.nvrm_lines))
      __builtin_trap();
  }
  (void)dr::ParseSmiXml(text, "fuzz.xml");
  (void)dr::ParseSmiCsv(text, "fuzz.csv");
  (void)dr::ParsePrometheus(text, "fuzz.prom");
  (void)dr::ParseAppLog(text, "fuzz.log");
  (void)dr::NormalizeBusId(text.substr(0, 64));
  (void)dr::CompareVersions(text.substr(0, 32), "550.54.14");
  if (knowledge) {
    dr::DoctorInputs in;
    in.kernel_logs.push_back({"k", text});
    in.smi_xml.push_back({"x", text});
    in.smi_csv.push_back({"c", text});
    in.app_logs.push_back({"a", text});
    in.prometheus.push_back({"p", text});
    (void)dr::AddFact(text.substr(0, 64), &in);
    (void)dr::Diagnose(in, *knowledge);
  }
  return 0;
}
