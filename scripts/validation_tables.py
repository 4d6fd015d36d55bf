#!/usr/bin/env python3
"""Prints the per-case tables of docs/validation.md from `suanli validate --json` and `suanli models --json`.

Usage: python3 scripts/validation_tables.py build/suanli > /tmp/tables.md
"""
import json
import subprocess
import sys

exe = sys.argv[1] if len(sys.argv) > 1 else "build/suanli"
rep = json.loads(subprocess.run([exe, "validate", "--json"], capture_output=True, text=True).stdout)
models = json.loads(subprocess.run([exe, "models", "--json"], capture_output=True, text=True).stdout)

print("### Parameter counts\n")
print("| model | computed total | published | error | computed active | published active |")
print("|---|---|---|---|---|---|")
for m in models["models"]:
    pub = m.get("published_params", {}).get("value")
    pa = m.get("published_active_params", {}).get("value")
    err = f"{100*(m['params_total']-pub)/pub:+.2f}%" if pub else "-"
    act = f"{m['params_active']/1e9:.2f}B" if m.get("moe") else "-"
    print(f"| {m['id']} | {m['params_total']/1e9:.3f}B | {pub/1e9:.2f}B | {err} | {act} | {pa/1e9:.1f}B |" if pa else
          f"| {m['id']} | {m['params_total']/1e9:.3f}B | {pub/1e9:.2f}B | {err} | {act} | - |")

for group in ["training", "decode", "ttft", "throughput", "max_throughput", "latency", "speculative", "gemm", "attention", "collective", "moe", "serving_attention", "concurrency", "disagg"]:
    print(f"\n### {group}\n")
    print("| role | case | metric | published | predicted | error |")
    print("|---|---|---|---|---|---|")
    for c in rep["cases"]:
        if c["group"] != group:
            continue
        print(f"| {c['role']} | {c['name']} | {c['metric']} | {c['published']:.4g} | {c['predicted']:.4g} | {100*c['error']:+.1f}% |")
print("\n### Summary\n")
print("| group | cases | mean abs error | worst | calibration mean | holdout mean (n) | target |")
print("|---|---|---|---|---|---|---|")
for g in rep["groups"]:
    t = f"≤ {100*g['target_mean']:.0f}% / {100*g['target_worst']:.0f}%" if g["target_mean"] else "none"
    ho = f"{100*g['mean_abs_error_holdout']:.1f}% ({g['holdout_cases']})" if g["holdout_cases"] else "-"
    ca = f"{100*g['mean_abs_error_calibration']:.1f}%" if g["cases"] > g["holdout_cases"] else "-"
    print(f"| {g['group']} | {g['cases']} | {100*g['mean_abs_error']:.1f}% | {100*g['worst_abs_error']:.1f}% | {ca} | {ho} | {t} |")

# Per source: the first word of the case name (Korthikanti, Narayanan, llm-foundry, flash-attention, gpt-fast,
# TRT-LLM), with the GPU where a source spans several.
print("\n### By source (mean and worst absolute error)\n")
print("| group | source | role | cases | mean abs error | worst |")
print("|---|---|---|---|---|---|")
by = {}
for c in rep["cases"]:
    words = c["name"].split()
    src = words[0]
    if src == "llm-foundry":
        gpu = next((w for w in words if w.startswith(("h100", "a100"))), "")
        src = f"{src} {gpu}".strip()
    elif src == "Azure":  # GEMM micro-benchmarks: per GPU and precision
        src = f"Azure cuBLASLt {words[2]} {words[3]}"
    elif src == "Megatron-Bridge":  # dense LLaMA-3 and MoE Qwen3 runs: the 25.11 container, the 26.x ones, a model card,
        # the CUDA-graph guide's comparison
        era = {"25.11": "25.11", "model": "model card", "CUDA-graph": "CUDA-graph guide"}.get(words[1], "26.04.01-26.08")
        src = f"{src} {era} {'MoE' if c.get('moe') else 'dense'}"
    elif c["group"] == "collective":  # "aiconfigurator NCCL 2.29.2 H100 all-gather 8 GPUs 64 MiB": per GPU and operation
        src = f"nccl-tests {words[3]} {words[4]}"
    elif c["group"] == "moe":  # "aiconfigurator TRT-LLM 1.3.0rc20 MoE H100 SXM fp8 Mixtral 8x7B EP1 1 tokens": per engine,
        # GPU, dtype, and whole (EP) or split (TP) experts
        gpu = " ".join(words[4:6]) if words[5] == "SXM" else words[4]
        layout = "split experts" if " TP8 " in c["name"] else "whole experts"
        src = f"{words[1]} {words[2]} MoE {gpu} {words[6] if words[5] == 'SXM' else words[5]}, {layout}"
    elif c["group"] == "serving_attention":  # "aiconfigurator vLLM 0.24.0 decode attention H100 SXM LLaMA-3.1 8B ...":
        # per engine, phase and GPU
        mla = words[3] == "MLA"  # "... TRT-LLM 1.3.0rc20 MLA decode attention H100 SXM DeepSeek-V3 ..."
        w = words[1:] if mla else words
        gpu = " ".join(w[5:7]) if w[6] == "SXM" else w[5]
        src = f"{words[1]} {words[2]} {'MLA ' if mla else ''}{w[3]} attention {gpu}"
    elif c["group"] == "concurrency":  # "aiconfigurator silicon <id>: vLLM 0.12.0 Qwen3-32B h100-sxm ...": per engine
        # and GPU
        tail = c["name"].split(": ", 1)[1].split()
        model = "MiniMax-M2.5 " if " MiniMax-M2.5 " in c["name"] else ""
        src = f"{tail[0]} {model}{'attention-DP ' if ' attention-DP' in c['name'] else ''}closed loop {c['gpu']}"
    elif c["group"] == "disagg":  # "aiconfigurator silicon <id>: disaggregated decode, SGLang 0.5.8 ...": per engine,
        # GPU and whether the decode worker runs attention DP
        tail = c["name"].split("disaggregated decode, ", 1)[1].split()
        src = f"{tail[0]} disaggregated decode {c['gpu']}{' attention-DP' if ' attention-DP' in c['name'] else ''}"
    elif c["group"] == "speculative":  # "vLLM EAGLE-3 ...", "TRT-LLM MTP ...": engine and draft method
        src = " ".join(words[:2])
    elif src == "TRT-LLM" and c["group"] == "max_throughput":  # "TRT-LLM 1.0 Llama 3.1 8B H100 TP1 FP8 ...": per GPU
        src = f"{src} {words[1]} {c['gpu']} {words[-2]}"
    elif src == "TRT-LLM":
        model = words[2].split("-")[0]  # llama, mistral, mixtral, falcon
        src = f"{src} {words[1]} {model} {words[3]}"
    by.setdefault((c["group"], src, c["role"]), []).append(abs(c["error"]))
for (g, src, role), errs in by.items():
    print(f"| {g} | {src} | {role} | {len(errs)} | {100*sum(errs)/len(errs):.1f}% | {100*max(errs):.1f}% |")


# Training by GPU: where the model leans. Signed on speed (a step time's error negated): > 0 means too fast.
print("\n### Training by GPU (signed on speed: positive means the model was too fast)\n")
print("| GPU | models | runs | mean abs error | mean signed | too fast | worst |")
print("|---|---|---|---|---|---|---|")
TIME_METRICS = ("step_time_s", "ttft_s", "tpot_s", "e2e_latency_s")
by_gpu = {}
for c in rep["cases"]:
    if c["group"] != "training":
        continue
    fast = -c["error"] if c["metric"] in TIME_METRICS else c["error"]
    by_gpu.setdefault((c["gpu"], "MoE" if c.get("moe") else "dense"), []).append(fast)
for (gpu, kind), errs in sorted(by_gpu.items(), key=lambda kv: (kv[0][1] == "MoE", kv[0][0])):
    print(f"| {gpu} | {kind} | {len(errs)} | {100*sum(map(abs, errs))/len(errs):.1f}% | "
          f"{100*sum(errs)/len(errs):+.1f}% | {sum(e > 0 for e in errs)} | {100*max(map(abs, errs)):.1f}% |")
