// libFuzzer target for the MIG and TCO parsers: MIG tables, service specs and files, tco.toml.
// Any input must give a value or an error, never a crash or a hang; a parsed MIG table must be
// usable by the packer, and every layout the packer returns must pass CheckMigLayout.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "suanli/cost.h"
#include "suanli/mig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto g = suanli::ParseMigToml(text, "fuzz.toml");
  if (g.ok()) {
    std::vector<suanli::MigDemand> d;
    for (std::size_t i = 0; i < 12 && i < size; ++i)
      d.push_back(suanli::MigDemand{"s", double(data[i]) * 1e8, 1 + data[i] % 3, data[i] % 17 == 0});
    auto plan = suanli::PackMig(*g, d, suanli::MigOptions{});
    if (plan.ok()) {
      for (const auto& gpu : plan->gpus)
        if (!suanli::CheckMigLayout(*g, gpu.instances).ok()) std::abort();
      (void)suanli::MigPartedYaml(*g, *plan, 1, "fuzz");
    }
  }
  (void)suanli::ParseServiceSpec(text);
  (void)suanli::ParseServicesToml(text, "fuzz.toml");
  (void)suanli::ParseTcoToml(text, "fuzz.toml");
  return 0;
}
