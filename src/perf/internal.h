// Internal helpers shared by the training and inference halves of the performance model.
#pragma once

#include <algorithm>

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

// Mean number of keys a query attends to, averaged over the layers: a causal prefill of `ctx` tokens (each query
// sees the keys up to itself: ctx / 2 on average) or one decode step at context `ctx` (ctx keys). Windowed layers
// see at most the window w: in a prefill longer than w, query i sees min(i, w), a mean of w - w^2 / (2 ctx).
// FlashAttention and cuDNN skip the key blocks outside the window, so the FLOPs follow the attended keys.
inline double MeanAttendedKeys(const ModelSpec& m, double ctx, bool decode) {
  const double full = decode ? ctx : ctx / 2;
  if (m.sliding_window <= 0 || m.layers <= 0) return full;
  const double w = m.sliding_window;
  const double windowed = decode ? std::min(ctx, w) : (w >= ctx ? ctx / 2 : w - w * w / (2 * ctx));
  const double share = double(m.sliding_window_layers) / m.layers;
  return (1 - share) * full + share * windowed;
}

inline double PeakFor(const GpuSpec& g, Precision p) {
  if (auto v = g.PeakFlops(p)) return *v;
  if (p == Precision::kBf16) {
    if (auto v = g.PeakFlops(Precision::kFp16)) return *v;  // V100, T4: FP16 tensor cores only
  }
  return 0;
}


}  // namespace suanli::perf_detail
