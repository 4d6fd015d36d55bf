#!/usr/bin/env python3
"""Per-layer GPU kernel time of DeepSeek's published training trace, by phase and kind.

Reads train.json of deepseek-ai/profile-data (PyTorch profiler, H800, DeepSeek-V3's MoE layers at EP 64, TP 1,
4K tokens, balanced routing; one forward chunk and one backward chunk of 4 MoE layers, overlapped in DualPipe) and
sums each kernel's duration under the profiler annotation that launched it (attn(F), mlp(F), mlp(B), mlp(W),
attn(W), dispatch/combine; the attention backward is launched outside any annotation). Communication kernels
(DeepEP dispatch, combine, notify) are listed apart: they run on their own stream under the compute.

Usage: python3 scripts/deepseek_trace.py path/to/train.json [layers=4]
docs/validation.md section 4 ("What fills an MoE layer: DeepSeek's own trace") compares these with the model.
"""
import collections
import json
import sys


def kind(name):
    if "dpsk::ep::" in name:
        return "EP communication (DeepEP)"
    if "m_grouped_fp8" in name:
        return "expert grouped GEMM (forward, data gradient)"
    if "fp8_dptp128c_acc" in name:
        return "weight-gradient GEMM (grouped and dense)"
    if "fp8_ptp128c" in name or "xmma_gemm" in name:
        return "dense GEMM (MLA projections, shared expert, router)"
    if "flash::" in name or "FlashAttn" in name:
        return "attention (FlashAttention 3 style)"
    return "element-wise, casts, norms, routing bookkeeping"


def main():
    path = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    ev = json.load(open(path))["traceEvents"]
    launches = {e["args"].get("correlation"): e for e in ev if e.get("cat") == "cuda_runtime" and "args" in e}
    notes = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] not in ("ProfilerStep#1", "1F1B")]

    def annotation(t, tid):
        inside = [a for a in notes if a["tid"] == tid and a["ts"] <= t <= a["ts"] + a["dur"]]
        return min(inside, key=lambda a: a["dur"])["name"] if inside else "(none: attention backward)"

    by = collections.defaultdict(float)
    by_kind = collections.defaultdict(float)
    for e in ev:
        if e.get("cat") != "kernel":
            continue
        r = launches.get(e["args"].get("correlation"))
        a = annotation(r["ts"], r["tid"]) if r else "(unknown)"
        k = kind(e["name"])
        if k.startswith("EP communication"):
            a = "communication"
        by[a] += e["dur"]
        by_kind[k] += e["dur"]
    compute = sum(v for a, v in by.items() if a != "communication")
    print(f"per layer (us), {layers} layers per chunk")
    for a, v in sorted(by.items(), key=lambda x: -x[1]):
        print(f"  {a:45s} {v / layers:9.0f}")
    print(f"  {'compute kernels, forward + backward':45s} {compute / layers:9.0f}")
    print("by kind (us per layer, forward + backward)")
    for k, v in sorted(by_kind.items(), key=lambda x: -x[1]):
        print(f"  {k:55s} {v / layers:9.0f}")


if __name__ == "__main__":
    main()
