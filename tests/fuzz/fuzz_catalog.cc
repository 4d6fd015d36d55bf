// libFuzzer target for the catalog parsers: GPU TOML, interconnect TOML, HF config.json,
// and quantity strings. Any input must give a value or an error, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"
#include "suanli/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)suanli::ParseGpuToml(text, "fuzz.toml");
  (void)suanli::ParseInterconnectsToml(text, "fuzz.toml");
  auto m = suanli::ParseHfConfig(text, "fuzz.json");
  if (m.ok()) {
    // A parsed model must be usable by every downstream computation without crashing.
    (void)suanli::CountParams(*m);
    (void)suanli::KvCacheBytes(*m, 2.0, 4, 4096, 1);
    suanli::FitRequest r;
    (void)suanli::EstimateMemory(*m, r);
    r.mode = suanli::Mode::kTrain;
    (void)suanli::EstimateMemory(*m, r);
  }
  (void)suanli::ParseQuantity(text, suanli::Dimension::kBytes);
  return 0;
}
