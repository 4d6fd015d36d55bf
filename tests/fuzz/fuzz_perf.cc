// libFuzzer target for the performance model through its user-facing door, a validation cases file
// (`suanli validate --cases FILE`): any TOML must give a report or an error, never a crash or a hang, whatever
// numbers (batches, sequence lengths, parallel degrees, offloaded layers, weight formats) reach the estimators.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/status.h"
#include "suanli/validate.h"

namespace {

const suanli::HardwareCatalog& Hw() {
  static const auto* hw = new suanli::HardwareCatalog(*suanli::HardwareCatalog::Load(suanli::CatalogOptions{}));
  return *hw;
}
const suanli::ModelCatalog& Models() {
  static const auto* m = new suanli::ModelCatalog(*suanli::ModelCatalog::Load(suanli::CatalogOptions{}));
  return *m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)suanli::RunPerfValidation(text, "fuzz.toml", Hw(), Models(),
                                  [](const std::string& path) -> suanli::Result<std::string> {
                                    return suanli::NotFound("no files while fuzzing: " + path);
                                  });
  return 0;
}
