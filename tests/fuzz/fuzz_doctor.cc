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
  (void)dr::ParseKernelLog(text, "fuzz.log");
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
