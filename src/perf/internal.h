// Internal helpers shared by the training and inference halves of the performance model.
#pragma once

#include "suanli/hardware.h"
#include "suanli/model.h"

namespace suanli::perf_detail {

struct LayerShape {
  double attn_proj_params;  // everything in attention except the output projection
  double out_proj_in;       // input dim of the output projection (heads x v head dim)
  double q_dim;             // query width (heads x qk head dim)
  double kv_dim;            // cached K width per token (for decode traffic), all heads
  bool rotary;
};

inline LayerShape Shape(const ModelSpec& m) {
  LayerShape s;
  const ParamCounts c = CountParams(m);
  const double attn_per_layer = c.attention / m.layers;
  if (m.mla) {
    s.out_proj_in = double(m.heads) * m.mla->v_head_dim;
    s.q_dim = double(m.heads) * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
  } else {
    s.out_proj_in = double(m.heads) * m.head_dim;
    s.q_dim = s.out_proj_in;
  }
  s.attn_proj_params = attn_per_layer - s.out_proj_in * m.hidden;
  s.kv_dim = double(m.kv_heads) * m.head_dim;
  // Rotary unless the model has a learned position table or uses ALiBi (BLOOM; MPT, whose alternative to ALiBi
  // is a learned table, so it never rotates).
  s.rotary = m.learned_positions == 0 && m.model_type != "bloom" && m.model_type != "mpt";
  return s;
}

inline double PeakFor(const GpuSpec& g, Precision p) {
  if (auto v = g.PeakFlops(p)) return *v;
  if (p == Precision::kBf16) {
    if (auto v = g.PeakFlops(Precision::kFp16)) return *v;  // V100, T4: FP16 tensor cores only
  }
  return 0;
}


}  // namespace suanli::perf_detail
