// libFuzzer target for the catalog parsers: GPU TOML, interconnect TOML, HF config.json,
// and quantity strings. Any input must give a value or an error, never a crash or a hang; a GPU
// file or a model that parses must give finite, positive times from the performance model (a
// GPU with 0 SMs once gave a NaN time to first token, one with a 0 GB/s link "inf days").
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz_catalogs.h"
#include "suanli/hardware.h"
#include "suanli/memory.h"
#include "suanli/model.h"
#include "suanli/perf.h"
#include "suanli/units.h"

namespace {

using suanli_fuzz::Hw;
using suanli_fuzz::Models;

bool Finite(double t) { return std::isfinite(t) && t > 0; }

// A small serving and training job on this GPU and model: an error is fine (a model the GPU cannot hold, a
// layout the model forbids), an answer must be a real number of seconds.
void CheckTimes(const suanli::ModelSpec& m, const suanli::GpuSpec& g) {
  auto cluster = suanli::MakeCluster(Hw(), g, 8, "ib-ndr");
  auto eff = suanli::LoadEfficiency(g.id);
  if (!cluster.ok() || !eff.ok()) return;
  suanli::InferConfig ic;
  ic.input_len = 128;
  ic.output_len = 16;
  auto inf = suanli::EstimateInference(m, *cluster, ic, *eff);
  if (inf.ok() && !(Finite(inf->ttft_s) && Finite(inf->tpot_s))) std::abort();
  suanli::TrainConfig tc;
  tc.fit.par.dp = 8;
  tc.fit.batch = 8;
  tc.fit.seq = 512;
  tc.fit.micro_batch = 1;
  auto tr = suanli::EstimateTraining(m, *cluster, tc, *eff);
  if (tr.ok() && !Finite(tr->step_time_s)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto g = suanli::ParseGpuToml(text, "fuzz.toml");
  if (g.ok()) {
    static const suanli::ModelSpec small = Models().Resolve("llama-3.2-1b").value();
    CheckTimes(small, *g);
  }
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
    CheckTimes(*m, *Hw().FindGpu("h100-sxm").value());
  }
  (void)suanli::ParseQuantity(text, suanli::Dimension::kBytes);
  return 0;
}
