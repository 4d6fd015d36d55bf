#!/usr/bin/env python3
"""Scans each fitted constant of data/efficiency.toml over a grid and cross-validates it, leaving one run out.

For every constant the model fits on calibration rows (docs/validation.md §4), this runs `suanli validate --json
--efficiency FILE` once per grid value with that one value edited, and reports:
  - the mean absolute error of the fit's rows at each grid value, and the best value (the lowest on the grid);
  - leave-one-out: for each row, the best value on the other rows, and that row's error at it. The mean of those
    errors is what the fit is worth on a run it has not seen; the spread of the chosen values says how firmly the
    rows pin the constant.
Nothing is written to the repository; the bundled value is reported beside the scan so a drift shows.

Usage: python3 scripts/fit_scan.py build/suanli [--markdown]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

exe = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/suanli")
markdown = "--markdown" in sys.argv
base = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "efficiency.toml")).read()


def grid(lo, hi, step):
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, 6) for i in range(n + 1)]


# (name, key as written in the file, how a value is written, grid, which rows the constant was fitted on)
FITS = [
    ("moe_training.layer_time_eager", "layer_time_eager", lambda v: f"{v}", grid(1.0, 3.0, 0.05),
     lambda c: c["group"] == "training" and c["role"] == "calibration" and c["name"].startswith("Megatron-LM recipe")
     and "full CG" not in c["name"]),
    ("moe_training.layer_time_full_graph", "layer_time_full_graph", lambda v: f"{v}", grid(1.0, 2.5, 0.05),
     lambda c: c["group"] == "training" and c["role"] == "calibration" and c["name"].startswith("Megatron-LM recipe")
     and "full CG" in c["name"]),
    ("decode_attention.per_head_instructions", "per_head_instructions", lambda v: f"{v}", grid(4.0, 14.0, 0.5),
     lambda c: c["group"] == "throughput" and c["role"] == "calibration" and "mistral-7b" in c["name"]),
    ("eager_fsdp.host_per_layer", "host_per_layer", lambda v: f'"{v} ms"', grid(0.0, 10.0, 0.5),
     lambda c: c["group"] == "training" and c["role"] == "calibration" and c["name"].startswith("llm-foundry")
     and c["gpu"].startswith("a100")),
    ("moe_serving.fixed", "fixed", lambda v: f'"{v} us"', grid(0.0, 30.0, 1.0),
     lambda c: c["group"] == "moe" and c["role"] == "calibration"),
    ("serving_attention.prefill_fixed", "prefill_fixed", lambda v: f'"{v} us"', grid(0.0, 20.0, 1.0),
     lambda c: c["group"] == "serving_attention" and c["role"] == "calibration"),
]


def bundled_value(key):
    m = re.search(rf"^{key} = {{ value = \"?([0-9.]+)", base, re.M)
    return float(m.group(1))


def run(text):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
        path = f.name
    p = subprocess.run([exe, "validate", "--json", "--efficiency", path], capture_output=True, text=True)
    if p.returncode == 2 or not p.stdout:
        sys.exit(f"suanli validate failed: {p.stderr.strip()}")
    return json.loads(p.stdout)["cases"]


def scan(name, key, fmt_value, values, rows):
    pattern = re.compile(rf"^({key} = {{ value = )(\"[^\"]*\"|[0-9.]+)", re.M)
    if len(pattern.findall(base)) != 1:
        sys.exit(f"{key}: expected exactly one line in data/efficiency.toml")
    errors = {}  # value -> {case name: abs error}
    for v in values:
        cases = run(pattern.sub(lambda m: m.group(1) + fmt_value(v), base))
        errors[v] = {c["name"]: abs(c["error"]) for c in cases if rows(c) and "failure" not in c}
    names = sorted(errors[values[0]])
    if len(names) < 2:
        sys.exit(f"{name}: {len(names)} calibration rows matched; the row selection in FITS is out of date")
    mean = {v: sum(errors[v].values()) / len(names) for v in values}
    worst = {v: max(errors[v].values()) for v in values}
    best = min(values, key=lambda v: (mean[v], v))
    loo = []
    for left in names:
        others = [n for n in names if n != left]
        pick = min(values, key=lambda v: (sum(errors[v][n] for n in others) / len(others), v))
        loo.append((left, pick, errors[pick][left]))
    return names, mean, worst, best, loo


for name, key, fmt_value, values, rows in FITS:
    names, mean, worst, best, loo = scan(name, key, fmt_value, values, rows)
    now = bundled_value(key)
    near_now = min(values, key=lambda v: abs(v - now))
    loo_mean = sum(e for _, _, e in loo) / len(loo)
    loo_worst = max(e for _, _, e in loo)
    picks = [p for _, p, _ in loo]
    if markdown:
        print(f"| {name} | {len(names)} | {now:g} | {100*mean[near_now]:.1f}% / {100*worst[near_now]:.1f}% | "
              f"{best:g} ({100*mean[best]:.1f}% / {100*worst[best]:.1f}%) | "
              f"{100*loo_mean:.1f}% | {100*loo_worst:.1f}% | {min(picks):g}–{max(picks):g} |")
        continue
    print(f"\n{name}: {len(names)} rows, bundled value {now:g} (mean error {100*mean[near_now]:.1f}%, worst "
          f"{100*worst[near_now]:.1f}% there)")
    print("  scan: " + ", ".join(f"{v:g}: {100*mean[v]:.1f}%" for v in values))
    print(f"  best on the grid: {best:g} ({100*mean[best]:.1f}% mean, {100*worst[best]:.1f}% worst)")
    print(f"  leave one out: mean {100*loo_mean:.1f}%, worst {100*loo_worst:.1f}%, values chosen {min(picks):g} to "
          f"{max(picks):g}")
    for left, pick, e in loo:
        print(f"    {left}: fitted without it {pick:g}, its error {100*e:.1f}%")
