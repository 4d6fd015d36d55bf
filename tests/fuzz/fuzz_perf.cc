// libFuzzer target for the performance model through its user-facing door, a validation cases file
// (`suanli validate --cases FILE`): any TOML must give a report or an error, never a crash or a hang, whatever
// numbers (batches, sequence lengths, parallel degrees, offloaded layers, weight formats) reach the estimators, and
// every case evaluated must have a finite, non-negative prediction.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_catalogs.h"
#include "suanli/hardware.h"
#include "suanli/model.h"
#include "suanli/status.h"
#include "suanli/validate.h"

using suanli_fuzz::Hw;
using suanli_fuzz::Models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto report = suanli::RunPerfValidation(text, "fuzz.toml", Hw(), Models(),
                                          [](const std::string& path) -> suanli::Result<std::string> {
                                            return suanli::NotFound("no files while fuzzing: " + path);
                                          });
  // A case that was evaluated has a real prediction: a NaN or an infinity is a silently wrong answer, not a report.
  if (report.ok())
    for (const auto& c : report->cases)
      if (c.failure.empty() && !(std::isfinite(c.predicted) && c.predicted >= 0)) std::abort();
  return 0;
}
