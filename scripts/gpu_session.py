#!/usr/bin/env python3
"""Measurements the performance model lacks, for a session that is lent a GPU (one H100/H200).

Prepared in the third session without a GPU: it has been syntax-checked, never run. Run it as one command
with PyTorch on the device, for example

    PYTHONUNBUFFERED=1 python3 scripts/gpu_session.py --out "$OUT"

It writes gpu_session.json (and prints a summary), gemm_cases.toml, the measured GEMMs as [[gemm]] rows to
append to tests/validation/perf_cases.toml (`suanli validate --group gemm` then compares them with the model), and
attention_cases.toml, part 8's attention kernels as [[attention]] rows (`suanli validate --group attention`).
The JSON holds, each with its method:

1. fp8_gemm: FP8 e4m3 GEMMs (torch._scaled_mm, per-tensor scales, BF16 out) and the BF16 GEMMs of
   LLaMA-2 7B's linear layers at M = 128 and M = 2048 tokens, and the cost of quantising each 16-bit input
   to FP8. Against docs/validation.md section 5: FP8 time to first token at 128-token prompts is 18-32%
   slower than the model on H100/H200; the model has no FP8 GEMM rate at small M.
2. amax_pass: the extra read that FP8 current scaling pays for a tensor no norm kernel produced
   (docs/methodology.md section 6, `--fp8-recipe current`): torch.aminmax over a BF16 activation of training
   size (8192 tokens x 4096 and x 11008), one kernel that reads each element once. The model charges
   2 B per element at the achievable HBM bandwidth plus one launch for it (and one more for the scale).
3. eager_layer: one LLaMA-2 7B decoder layer (HF-style: RMSNorm in FP32 steps, rotate-half RoPE, SwiGLU,
   SDPA attention), forward + backward at batch 1 x 4096 tokens, eager and under torch.compile. The
   difference is what `suanli perf train --eager` models from byte counts (docs/methodology.md section 6.3).
4. decode_stream (eleventh session): batch-1 and batch-8 decode's weight streaming on this GPU. LLaMA-3.1 8B's
   four linear layers at M = 1 and 8 in BF16 (torch.mm), each alone, and all 32 layers' 128 GEMMs replayed
   back to back from one CUDA graph (the launch pattern of torch.compile's reduce-overhead mode and vLLM).
   Against docs/validation.md section 3: torchao's H100 BF16 decode ran 15% slower than the model, vLLM's H200
   batch-8 runs 10-15% slower; whether a weight-streaming GEMM on Hopper reaches less of the bandwidth than
   the model's triad fraction, or the gaps between kernels cost it, is what this tells apart.

5. moe_block (seventeenth session): one Qwen3 30B-A3B MoE block on one GPU (hidden 2048, 128 experts, top-8,
   expert FFN 768, SwiGLU), forward + backward in eager PyTorch at 4096 and 16384 tokens, routing forced to a
   balanced pattern (as Megatron's force-load-balancing runs). Measured: the wall time per step (CUDA events),
   the host's issue time (the Python call before synchronising), and the sum of the GPU kernels' durations with
   their count (torch.profiler). Against docs/validation.md section 4: the model multiplies Megatron-Core MoE
   layers' computation by a calibrated 1.8 (1.3 under a full-iteration CUDA graph) and cannot say what fills it;
   wall minus kernel time is the part the GPU waits on the host in an eager MoE block. It is a generic eager
   block (one torch.mm per expert), not Megatron's fused kernels, so it bounds the host share rather than
   reproducing it.

6. sustained_gemm (eighteenth session; FP8 added in the twentieth): an 8192^3 GEMM back to back for 40 s in BF16,
   then 40 s in FP8, its TFLOP/s per second of wall time, with the SM clock, power and temperature nvidia-smi
   reports each second. Against docs/validation.md section 5: thirteen 16-bit training runs of fused stacks on H100
   are 12-35% slower than the model, whose BF16 GEMM rate comes from short benchmark loops (MAMF), while the
   Megatron-Core FP8 runs of the same era, whose FP8 rate comes from Azure's sustained sweep, are about 10% slower
   (NeMo's GPT-3 175B FP8 +6% against the README's 177B BF16 +35%). Whether the BF16 rate falls once the GPU sits
   at its power limit, and the FP8 / BF16 ratio there, is the first thing to rule in or out.

7. loss_and_dropout (nineteenth session): two costs of the training step that the H100 fused-stack gap may hide.
   (a) The cross-entropy over 8192 tokens x a 131,072-entry vocabulary (the Megatron-LM README's), forward and
   backward timed apart: Megatron-LM's unfused FP32 path op by op, the same ops under torch.compile (Megatron-Core's
   native fusion), and eager PyTorch (`logits.float()`, F.cross_entropy, autograd), each with the bytes per logit
   it moved at the copy bandwidth measured beside it. The model charges 38 + 14, 22 + 10 and (for eager) about
   14 + 22 B (docs/methodology.md section 6.4). (b) FlashAttention with dropout: scaled_dot_product_attention on
   the flash and, where PyTorch has it, the cuDNN backend, causal, 16 heads of 128, 4096 tokens, batch 4, with
   dropout 0 and 0.1, forward and forward + backward. docs/validation.md section 5 sizes dropout's cost from
   FlashAttention's SM100 and SM120 ports only; this measures it on the GPU at hand.

8. attention_kernels (thirty-fourth session): causal self-attention in the grouped-query shape of cuDNN's own SDPA
   benchmark (batch 1, 64 query heads and 8 KV heads of 128, BF16) at 2K-16K tokens, forward and
   backward timed apart, on PyTorch's cuDNN backend (the kernel Transformer Engine selects on Hopper and later) and on
   its FlashAttention 2 backend (the kernel the model's `attention` fraction measures). TFLOP/s are counted as
   cuDNN's own benchmark counts them (the unmasked score elements, 2 GEMMs forward, 5 backward), and written as
   [[attention]] cases (attention_cases.toml) for `suanli validate --group attention`. Against docs/validation.md
   section 5: cuDNN measured 0.40-0.61 of the peak on H200, the model charges 0.331 (FlashAttention 2 on H100);
   together with part 6 this is what would let the fused stacks' attention and GEMM rates be corrected together.

Times are the median of CUDA-event timings after warm-up. Nothing here needs the network.

To compare with the model: `suanli perf infer -m llama-2-7b -g h200-sxm --weights fp8 --batch 1 --input-len 128
--explain` (prefill operators) for part 1, and `suanli perf train -m llama-2-7b -g h200-sxm --gpus 1
--global-batch 1 --micro-batch 1 --seq 4096 --recompute none --eager --explain` (the "eager element-wise" row,
time x count / 32 layers) against eager_s - compiled_s for part 2. Record what the GPU printed in
docs/validation.md.
"""
import argparse
import json
import os
import statistics
import sys
import time


def timed(fn, warmup=3, reps=20):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return statistics.median(times)


# LLaMA-2 7B linear layers: (name, in, out).
LLAMA2_7B = [("qkv", 4096, 3 * 4096), ("attn_out", 4096, 4096), ("mlp_up_gate", 4096, 2 * 11008),
             ("mlp_down", 11008, 4096)]


def fp8_gemms(results):
    import torch

    dev = torch.device("cuda")
    fp8 = torch.float8_e4m3fn
    rows = []
    for m in (128, 2048):
        for name, k, n in LLAMA2_7B:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            one = torch.ones((), device=dev, dtype=torch.float32)
            x8 = x.to(fp8)
            w8t = w.to(fp8).t()  # column-major K x N, as _scaled_mm wants for the second operand
            flops = 2.0 * m * n * k
            t_bf16 = timed(lambda: torch.mm(x, w.t()))
            row = {"m": m, "n": n, "k": k, "layer": name, "bf16_s": t_bf16, "bf16_tflops": flops / t_bf16 / 1e12}
            try:
                t_fp8 = timed(lambda: torch._scaled_mm(x8, w8t, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
                row.update({"fp8_s": t_fp8, "fp8_tflops": flops / t_fp8 / 1e12})
            except Exception as e:  # report, do not stop the session
                row["fp8_error"] = repr(e)
            # Quantising the activation: a per-tensor scale from amax, then the cast (what W8A8 serving
            # does before each FP8 GEMM unless it is fused into the previous kernel).
            t_q = timed(lambda: (x * (448.0 / x.abs().amax().clamp(min=1e-12))).to(fp8))
            row.update({"quantize_s": t_q, "quantize_bytes": m * k * 3})
            rows.append(row)
            print(f"gemm M={m:5d} {name:12s} bf16 {row['bf16_tflops']:7.1f} TF/s  "
                  f"fp8 {row.get('fp8_tflops', float('nan')):7.1f} TF/s  quantize {t_q * 1e6:7.1f} us", flush=True)
    results["fp8_gemm"] = {
        "method": "torch.mm (BF16) and torch._scaled_mm (FP8 e4m3, per-tensor scales 1.0, BF16 out) on random "
                  "data; median of 20 CUDA-event timings after 3 warm-ups; quantize = amax-scaled cast of the "
                  "M x K BF16 input",
        "rows": rows,
    }


# LLaMA-3.1 8B linear layers: (name, in, out); grouped-query QKV is 4096 + 2 x 1024 wide.
LLAMA31_8B = [("qkv", 4096, 6144), ("attn_out", 4096, 4096), ("mlp_up_gate", 4096, 2 * 14336),
              ("mlp_down", 14336, 4096)]


def decode_stream(results):
    import torch

    dev = torch.device("cuda")
    bf = torch.bfloat16
    rows = []
    weights = {name: torch.randn(n, k, device=dev, dtype=bf) * 0.02 for name, k, n in LLAMA31_8B}
    layer_bytes = sum(w.numel() * 2 for w in weights.values())
    for m in (1, 8):
        xs = {name: torch.randn(m, k, device=dev, dtype=bf) for name, k, n in LLAMA31_8B}
        for name, k, n in LLAMA31_8B:
            w, x = weights[name], xs[name]
            t = timed(lambda: torch.mm(x, w.t()))
            rows.append({"m": m, "n": n, "k": k, "layer": name, "s": t, "weight_bytes": n * k * 2,
                         "gb_per_s": n * k * 2 / t / 1e9, "tflops": 2.0 * m * n * k / t / 1e12})
            print(f"decode M={m} {name:12s} {t * 1e6:7.1f} us {n * k * 2 / t / 1e9:6.0f} GB/s", flush=True)
        # 32 layers x 4 GEMMs replayed from one graph: distinct weights per layer so nothing stays in L2.
        layers = [{name: torch.randn(n, k, device=dev, dtype=bf) * 0.02 for name, k, n in LLAMA31_8B}
                  for _ in range(32)]
        outs = {}

        def chain():
            for i, lw in enumerate(layers):
                for name, _, _ in LLAMA31_8B:
                    outs[(i, name)] = torch.mm(xs[name], lw[name].t())

        chain()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            chain()
        t_graph = timed(g.replay, warmup=3, reps=20)
        total = 32 * layer_bytes
        rows.append({"m": m, "layer": "32 layers x 4 GEMMs, one CUDA graph", "s": t_graph, "weight_bytes": total,
                     "gb_per_s": total / t_graph / 1e9})
        print(f"decode M={m} graph of 128 GEMMs {t_graph * 1e3:7.3f} ms {total / t_graph / 1e9:6.0f} GB/s", flush=True)
        del layers, outs, g
        torch.cuda.empty_cache()
    results["decode_stream"] = {
        "method": "torch.mm of an M x K BF16 input by a K x N BF16 weight (random data, weight bytes counted), "
                  "median of 20 CUDA-event timings after 3 warm-ups; the graph row replays 32 layers' 128 GEMMs "
                  "with distinct weights from one torch.cuda.CUDAGraph. Compare: `suanli perf infer -m "
                  "llama-3.1-8b -g <gpu> --batch 1 --input-len 6 --output-len 200 --explain` (decode operators)",
        "rows": rows,
    }


def amax_pass(results):
    import torch

    dev = torch.device("cuda")
    rows = []
    for k in (4096, 11008):
        x = torch.randn(8192, k, device=dev, dtype=torch.bfloat16)
        t = timed(lambda: torch.aminmax(x))
        n_bytes = x.numel() * 2
        rows.append({"m": 8192, "k": k, "amax_s": t, "bytes": n_bytes, "gb_per_s": n_bytes / t / 1e9})
        print(f"amax pass 8192 x {k:5d}: {t * 1e6:7.1f} us ({n_bytes / t / 1e9:6.0f} GB/s)", flush=True)
    results["amax_pass"] = {
        "method": "torch.aminmax (one read of the BF16 tensor) on random data; median of 20 CUDA-event timings "
                  "after 3 warm-ups",
        "rows": rows,
    }


class RMSNormEager:
    """HF LlamaRMSNorm: upcast, variance, rsqrt, downcast, weight."""

    def __init__(self, weight, eps=1e-5):
        self.weight, self.eps = weight, eps

    def __call__(self, x):
        import torch

        dtype = x.dtype
        h = x.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return self.weight * h.to(dtype)


def rotate_half(x):
    import torch

    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def llama_layer(params, x, cos, sin, heads, head_dim):
    import torch
    import torch.nn.functional as F

    b, s, h = x.shape
    n1 = RMSNormEager(params["norm1"])
    n2 = RMSNormEager(params["norm2"])
    y = n1(x)
    qkv = y @ params["wqkv"].t()
    q, k, v = qkv.split(h, dim=-1)
    q = q.view(b, s, heads, head_dim).transpose(1, 2)
    k = k.view(b, s, heads, head_dim).transpose(1, 2)
    v = v.view(b, s, heads, head_dim).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    a = a.transpose(1, 2).reshape(b, s, h)
    x = x + a @ params["wo"].t()
    y = n2(x)
    gu = y @ params["wgu"].t()
    g, u = gu.chunk(2, dim=-1)
    return x + (F.silu(g) * u) @ params["wd"].t()


def eager_layer(results):
    import torch

    dev = torch.device("cuda")
    h, ffn, heads, s = 4096, 11008, 32, 4096
    head_dim = h // heads
    bf = torch.bfloat16

    def p(*shape):
        return (torch.randn(*shape, device=dev, dtype=bf) * 0.02).requires_grad_()

    params = {"norm1": torch.ones(h, device=dev, dtype=bf, requires_grad=True),
              "norm2": torch.ones(h, device=dev, dtype=bf, requires_grad=True),
              "wqkv": p(3 * h, h), "wo": p(h, h), "wgu": p(2 * ffn, h), "wd": p(h, ffn)}
    pos = torch.arange(s, device=dev, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=dev, dtype=torch.float32) / head_dim))
    ang = torch.outer(pos, inv)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().to(bf)[None, None], emb.sin().to(bf)[None, None]
    x = torch.randn(1, s, h, device=dev, dtype=bf, requires_grad=True)
    grad = torch.randn(1, s, h, device=dev, dtype=bf)

    def step(fn):
        def run():
            out = fn(params, x, cos, sin, heads, head_dim)
            out.backward(grad)
        return run

    t_eager = timed(step(llama_layer), warmup=3, reps=10)
    out = {"method": "one LLaMA-2 7B layer (HF-style eager ops, SDPA causal), batch 1 x 4096 tokens, BF16, "
                     "forward + backward; median of 10 CUDA-event timings after 3 warm-ups",
           "eager_s": t_eager}
    try:
        compiled = torch.compile(llama_layer)
        t_comp = timed(step(compiled), warmup=3, reps=10)
        out["compiled_s"] = t_comp
    except Exception as e:
        out["compile_error"] = repr(e)
    # GEMM FLOPs of the layer, forward + backward (3x), for an achieved-rate figure.
    gemm_flops = 3 * 2.0 * s * (3 * h * h + h * h + 2 * ffn * h + ffn * h)
    out["gemm_flops"] = gemm_flops
    print(f"layer fwd+bwd: eager {t_eager * 1e3:.2f} ms, compiled {out.get('compiled_s', float('nan')) * 1e3:.2f} ms",
          flush=True)
    results["eager_layer"] = out


def moe_block(results):
    import torch

    dev = torch.device("cuda")
    bf = torch.bfloat16
    h, experts, k, f = 2048, 128, 8, 768
    w_router = (torch.randn(experts, h, device=dev, dtype=bf) * 0.02).requires_grad_()
    w_gate_up = (torch.randn(experts, 2 * f, h, device=dev, dtype=bf) * 0.02).requires_grad_()
    w_down = (torch.randn(experts, h, f, device=dev, dtype=bf) * 0.02).requires_grad_()
    rows = []
    for tokens in (4096, 16384):
        x = torch.randn(tokens, h, device=dev, dtype=bf, requires_grad=True)
        # Balanced routing: token t goes to experts (t*k + j) mod E, so every expert gets tokens*k/E rows.
        slots = (torch.arange(tokens, device=dev)[:, None] * k + torch.arange(k, device=dev)[None, :]) % experts
        per_expert = tokens * k // experts

        def step():
            logits = x @ w_router.t()
            probs = torch.softmax(logits.float(), dim=-1)
            _, _ = torch.topk(probs, k, dim=-1)  # computed as the router does; the balanced slots replace it
            weights = torch.gather(probs, 1, slots).to(bf)
            flat = slots.reshape(-1)
            order = torch.argsort(flat, stable=True)
            token_of = order // k
            xp = x.index_select(0, token_of)
            outs = []
            for e in range(experts):
                chunk = xp[e * per_expert:(e + 1) * per_expert]
                gu = chunk @ w_gate_up[e].t()
                g, u = gu.chunk(2, dim=-1)
                outs.append((torch.nn.functional.silu(g) * u) @ w_down[e].t())
            yp = torch.cat(outs) * weights.reshape(-1)[order][:, None]
            y = torch.zeros_like(x).index_add(0, token_of, yp)
            y.float().square().mean().backward()

        wall = timed(step, warmup=3, reps=10)
        torch.cuda.synchronize()
        issue = []
        for _ in range(5):
            t0 = time.perf_counter()
            step()
            issue.append(time.perf_counter() - t0)
            torch.cuda.synchronize()
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernel_us, kernels = 0.0, 0
        for ev in prof.events():
            if getattr(ev, "device_type", None) is not None and "CUDA" in str(ev.device_type):
                kernel_us += getattr(ev, "device_time", getattr(ev, "cuda_time", 0.0))
                kernels += 1
        row = {"tokens": tokens, "wall_s": wall, "host_issue_s": statistics.median(issue),
               "kernel_s": kernel_us * 1e-6, "kernels": kernels}
        rows.append(row)
        print(f"moe block {tokens} tokens fwd+bwd: wall {wall * 1e3:.2f} ms, host issue "
              f"{row['host_issue_s'] * 1e3:.2f} ms, kernels {row['kernel_s'] * 1e3:.2f} ms ({kernels})", flush=True)
    results["moe_block"] = {
        "method": "one Qwen3 30B-A3B MoE block (hidden 2048, 128 experts, top-8, FFN 768, SwiGLU), eager PyTorch, "
                  "one torch.mm per expert, balanced routing, BF16, forward + backward; wall: median of 10 CUDA-event "
                  "timings after 3 warm-ups; host issue: median of 5 un-synchronised calls; kernel time and count: "
                  "torch.profiler over one step",
        "rows": rows}


def sustained_gemm(results, seconds=40.0):
    import subprocess

    import torch

    dev = torch.device("cuda")
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    one = torch.ones((), device=dev, dtype=torch.float32)
    fp8 = torch.float8_e4m3fn
    a8, b8t = a.to(fp8), b.to(fp8).t()  # column-major second operand, as _scaled_mm wants
    flops = 2.0 * n * n * n
    kernels = {"bf16": lambda: torch.mm(a, b),
               "fp8": lambda: torch._scaled_mm(a8, b8t, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)}
    out = {"method": "8192^3 back to back for 40 s per dtype (BF16 torch.mm, then FP8 e4m3 torch._scaled_mm with "
                     "per-tensor scales and BF16 out), random data; TFLOP/s per second of wall time from CUDA events; "
                     "nvidia-smi clocks.sm, power.draw, temperature.gpu sampled after each second"}
    for dtype, fn in kernels.items():
        try:
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
        except Exception as e:  # no FP8 on this GPU or PyTorch: keep the BF16 answer
            out[dtype + "_error"] = repr(e)
            continue
        rows, t_start = [], time.perf_counter()
        while time.perf_counter() - t_start < seconds:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            reps = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 1.0:
                for _ in range(20):
                    fn()
                reps += 20
                torch.cuda.synchronize()
            end.record()
            torch.cuda.synchronize()
            gpu_s = start.elapsed_time(end) * 1e-3
            row = {"t_s": round(time.perf_counter() - t_start, 2), "tflops": reps * flops / gpu_s / 1e12}
            try:
                q = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                                    "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
                clk, pwr, temp = (x.strip() for x in q.stdout.strip().split(","))
                row.update({"sm_clock_mhz": float(clk), "power_w": float(pwr), "temperature_c": float(temp)})
            except Exception as e:  # the rate alone still answers the question
                row["nvidia_smi_error"] = repr(e)
            rows.append(row)
        first = statistics.median(r["tflops"] for r in rows[:3])
        last = statistics.median(r["tflops"] for r in rows[-10:])
        print(f"sustained {dtype} 8192^3: {first:.0f} TFLOP/s in the first 3 s, {last:.0f} in the last 10 s "
              f"({100 * (last / first - 1):+.1f}%)", flush=True)
        out[dtype] = {"first_3s_tflops": first, "last_10s_tflops": last, "rows": rows}
    if "bf16" in out and "fp8" in out:
        out["fp8_over_bf16_last_10s"] = out["fp8"]["last_10s_tflops"] / out["bf16"]["last_10s_tflops"]
    results["sustained_gemm"] = out


def loss_and_dropout(results, tokens=8192, vocab=131072):
    import torch
    import torch.nn.functional as F

    dev = torch.device("cuda")
    logits = torch.randn(tokens, vocab, device=dev, dtype=torch.bfloat16)
    target = torch.randint(0, vocab, (tokens,), device=dev)
    n = float(tokens) * vocab
    # Copy bandwidth beside it: read + write of one FP32 tensor of the same shape.
    src = torch.empty(tokens, vocab, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    t_copy = timed(lambda: dst.copy_(src))
    bw = 2 * 4 * n / t_copy
    del src, dst

    def unfused_fwd():  # Megatron-LM's VocabParallelCrossEntropy at TP 1, op by op
        x = logits.float()
        m = torch.max(x, dim=-1)[0]
        x.sub_(m.unsqueeze(-1))
        torch.exp(x, out=x)
        s = x.sum(dim=-1)
        x.div_(s.unsqueeze(-1))
        return x

    def unfused_bwd(softmax, g):  # grad_input.mul_(grad_output), then the cast back to 16-bit
        softmax.mul_(g.unsqueeze(-1))
        return softmax.to(torch.bfloat16)

    g = torch.ones(tokens, device=dev, dtype=torch.float32)
    rows = []

    def measure(impl, fwd, bwd, model_bytes):
        sm = fwd()
        t_fwd, t_bwd = timed(fwd), timed(lambda: bwd(sm, g))
        rows.append({"impl": impl, "fwd_s": t_fwd, "bwd_s": t_bwd, "fwd_bytes_per_logit": t_fwd * bw / n,
                     "bwd_bytes_per_logit": t_bwd * bw / n, "model_bytes": model_bytes})

    measure("unfused (Megatron-LM ops)", unfused_fwd, unfused_bwd, [38, 14])
    try:  # one compiled function per pass: at most what Megatron-Core's three compiled pieces move
        measure("fused (the same ops, torch.compile)", torch.compile(unfused_fwd), torch.compile(unfused_bwd), [22, 10])
    except Exception as e:  # torch.compile needs a compiler on the host; the rest still answers
        rows.append({"impl": "fused (torch.compile)", "error": repr(e)})
    leaf = logits.detach().requires_grad_(True)

    def eager_fwd():
        return F.cross_entropy(leaf.float(), target)

    def eager_fwd_bwd():
        leaf.grad = None
        eager_fwd().backward()

    t_fwd = timed(eager_fwd)
    t_all = timed(eager_fwd_bwd)
    rows.append({"impl": "eager (logits.float(), F.cross_entropy, autograd)", "fwd_s": t_fwd, "bwd_s": t_all - t_fwd,
                 "fwd_bytes_per_logit": t_fwd * bw / n, "bwd_bytes_per_logit": (t_all - t_fwd) * bw / n,
                 "model_bytes": [14, 22]})
    for r in rows:
        if "fwd_s" in r:
            print(f"loss {r['impl']}: fwd {r['fwd_s'] * 1e3:.2f} ms ({r['fwd_bytes_per_logit']:.1f} B/logit), bwd "
                  f"{r['bwd_s'] * 1e3:.2f} ms ({r['bwd_bytes_per_logit']:.1f} B/logit); model {r['model_bytes']}",
                  flush=True)
    del logits, leaf
    torch.cuda.empty_cache()

    # FlashAttention with and without dropout.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b, h, sq, d = 4, 16, 4096, 128
    q, k, v = (torch.randn(b, h, sq, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    do = torch.randn(b, h, sq, d, device=dev, dtype=torch.bfloat16)
    attn = []
    backends = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    for name, backend in backends:
        for p in (0.0, 0.1):
            try:
                with sdpa_kernel(backend):
                    fwd = lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)

                    def fwd_bwd():
                        q.grad = k.grad = v.grad = None
                        fwd().backward(do)

                    t_f = timed(fwd)
                    t_fb = timed(fwd_bwd)
                attn.append({"backend": name, "dropout": p, "fwd_s": t_f, "fwd_bwd_s": t_fb})
            except Exception as e:  # a backend this build or GPU lacks
                attn.append({"backend": name, "dropout": p, "error": repr(e)})
    for name, _ in backends:
        base = next((a for a in attn if a["backend"] == name and a["dropout"] == 0.0 and "fwd_s" in a), None)
        drop = next((a for a in attn if a["backend"] == name and a["dropout"] == 0.1 and "fwd_s" in a), None)
        if base and drop:
            print(f"attention {name}: dropout 0.1 costs {100 * (drop['fwd_s'] / base['fwd_s'] - 1):+.0f}% forward, "
                  f"{100 * (drop['fwd_bwd_s'] / base['fwd_bwd_s'] - 1):+.0f}% forward + backward", flush=True)
    results["loss_and_dropout"] = {
        "method": f"cross-entropy over {tokens} x {vocab} BF16 logits, forward and backward timed apart (median of 20 "
                  "CUDA-event timings after 3 warm-ups), bytes per logit at the copy bandwidth of an FP32 tensor of the "
                  f"same shape ({bw / 1e12:.2f} TB/s); scaled_dot_product_attention, causal, batch {b}, {h} heads of "
                  f"{d}, {sq} tokens, BF16, dropout 0 and 0.1, per backend",
        "copy_bandwidth_bytes_per_s": bw, "loss": rows, "attention": attn}


def attention_kernels(results, seqs=(2048, 4096, 8192, 16384)):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    heads, kv_heads, d = 64, 8, 128
    backends = [("flash2", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.insert(0, ("cudnn", SDPBackend.CUDNN_ATTENTION))
    rows = []
    for s in seqs:
        q = torch.randn(1, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(1, kv_heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        do = torch.randn(1, heads, s, d, device=dev, dtype=torch.bfloat16)
        unmasked = s * (s + 1) / 2  # causal: the lower triangle with its diagonal, as cuDNN's benchmark counts
        fwd_flops = heads * unmasked * 2 * (d + d)
        for name, backend in backends:
            try:
                with sdpa_kernel(backend):
                    def fwd():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

                    def fwd_bwd():
                        q.grad = k.grad = v.grad = None
                        fwd().backward(do)

                    t_f = timed(fwd)
                    t_fb = timed(fwd_bwd)
                t_b = t_fb - t_f
                rows.append({"backend": name, "seq": s, "fwd_s": t_f, "bwd_s": t_b,
                             "fwd_tflops": fwd_flops / t_f / 1e12, "bwd_tflops": 2.5 * fwd_flops / t_b / 1e12})
                print(f"attention {name} {s}: fwd {rows[-1]['fwd_tflops']:.0f} TFLOP/s, bwd "
                      f"{rows[-1]['bwd_tflops']:.0f}", flush=True)
            except Exception as e:  # a backend this build or GPU lacks (enable_gqa needs torch >= 2.5)
                rows.append({"backend": name, "seq": s, "error": repr(e)})
        del q, k, v, do
        torch.cuda.empty_cache()
    results["attention_kernels"] = {
        "method": f"torch scaled_dot_product_attention, causal, enable_gqa, batch 1, {heads} query / {kv_heads} KV heads "
                  f"of {d}, BF16, per backend; forward, and forward + backward minus forward (median of 20 CUDA-event "
                  "timings after 3 warm-ups); FLOPs over the unmasked score elements, backward 2.5x forward",
        "rows": rows}


def write_attention_cases(results, path):
    """The attention_kernels rows as [[attention]] cases (held out) for tests/validation/perf_cases.toml."""
    gpu = catalog_gpu(results.get("device", {}).get("name", "")) or "EDIT-ME"
    lines = []
    for r in results.get("attention_kernels", {}).get("rows", []):
        if "fwd_tflops" not in r:
            continue
        for p in ("fwd", "bwd"):
            lines += ["[[attention]]", 'group = "attention"', 'role = "holdout"',
                      f'name = "gpu_session {gpu} {r["backend"]} bf16 causal GQA 64/8x128 seq {r["seq"]} {p}"',
                      f'source = "scripts/gpu_session.py attention_kernels on {results.get("device", {}).get("name", "?")}'
                      f', torch {results.get("torch", "?")}, {results.get("started", "?")}"',
                      f'gpu = "{gpu}"', 'dtype = "bf16"', "batch = 1", "heads = 64", "kv_heads = 8", "head_dim = 128",
                      f"seq = {r['seq']}", "causal = true", f'pass = "{p}"', 'metric = "tflops"',
                      f"published = {r[p + '_tflops']:.4f}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))


def catalog_gpu(name):
    """The suanli catalog id for a CUDA device name, or None (then edit the written cases by hand)."""
    n = name.lower()
    for key, gpu in (("h200", "h200-sxm"), ("h100 80gb hbm3", "h100-sxm"), ("h100 pcie", "h100-pcie"),
                     ("h100 nvl", "h100-nvl"), ("a100-sxm4-80gb", "a100-sxm-80gb"), ("l40s", "l40s"),
                     ("gb300", "gb300"), ("gb200", "gb200"), ("b300", "b300"), ("b200", "b200")):
        if key in n:
            return gpu
    return None


def write_gemm_cases(results, path):
    """The measured GEMMs as [[gemm]] rows for tests/validation/perf_cases.toml (held out: nothing was fitted on them)."""
    dev = results.get("device", {})
    gpu = catalog_gpu(dev.get("name", "")) or "FIXME"
    lines = [f"# scripts/gpu_session.py on {dev.get('name', '?')} ({results.get('started', '?')}, torch "
             f"{results.get('torch', '?')}): {results.get('fp8_gemm', {}).get('method', '')}"]
    for row in results.get("fp8_gemm", {}).get("rows", []):
        for dtype, key in (("bf16", "bf16_tflops"), ("fp8", "fp8_tflops")):
            if key not in row:
                continue
            shape = f"{row['m']}x{row['n']}x{row['k']}"
            lines += ["[[gemm]]", 'group = "gemm"', 'role = "holdout"',
                      f'name = "gpu_session {gpu} {dtype} {shape} (LLaMA-2 7B {row["layer"]})"',
                      f'source = "scripts/gpu_session.py, {dev.get("name", "?")}, {results.get("started", "?")}: '
                      f'{row[key]:.1f} TFLOP/s"',
                      f'gpu = "{gpu}"', f'dtype = "{dtype}"', f"m = {row['m']}", f"n = {row['n']}", f"k = {row['k']}",
                      'metric = "tflops"', f"published = {row[key]:.2f}"]
    for row in results.get("decode_stream", {}).get("rows", []):
        if "n" not in row:
            continue  # the graph row is not one GEMM
        shape = f"{row['m']}x{row['n']}x{row['k']}"
        lines += ["[[gemm]]", 'group = "gemm"', 'role = "holdout"',
                  f'name = "gpu_session {gpu} bf16 {shape} (LLaMA-3.1 8B {row["layer"]}, decode)"',
                  f'source = "scripts/gpu_session.py, {dev.get("name", "?")}, {results.get("started", "?")}: '
                  f'{row["tflops"]:.2f} TFLOP/s"',
                  f'gpu = "{gpu}"', 'dtype = "bf16"', f"m = {row['m']}", f"n = {row['n']}", f"k = {row['k']}",
                  'metric = "tflops"', f"published = {row['tflops']:.4f}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu-session-out"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch

    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "torch": torch.__version__}
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 2
    prop = torch.cuda.get_device_properties(0)
    results["device"] = {"name": prop.name, "sms": prop.multi_processor_count,
                         "memory_bytes": prop.total_memory, "cc": f"{prop.major}.{prop.minor}"}
    for part in (fp8_gemms, amax_pass, decode_stream, eager_layer, moe_block, sustained_gemm, attention_kernels,
                 loss_and_dropout):
        try:
            part(results)
        except Exception as e:  # keep what the other part measured
            results[part.__name__ + "_error"] = repr(e)
            print(f"{part.__name__}: {e!r}", file=sys.stderr, flush=True)
        with open(os.path.join(args.out, "gpu_session.json"), "w") as f:
            json.dump(results, f, indent=1)
    write_gemm_cases(results, os.path.join(args.out, "gemm_cases.toml"))
    write_attention_cases(results, os.path.join(args.out, "attention_cases.toml"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
