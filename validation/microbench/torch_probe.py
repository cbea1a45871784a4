#!/usr/bin/env python3
"""torch_probe: the measurements behind clustersim's system parameters, on one GPU, with PyTorch.

gemm_sweep and attention_sweep time kernels one at a time. A training step also pays for what
those sweeps leave out; this script measures those parts directly, each as a small experiment:

  sustained   a long stream of 8192^3 BF16 products on random data: throughput per window of
              about a second, the first window against the rest (power and clock limits), and
              the same on zeros (data-dependent power), with nvidia-smi sampling the clocks
  attention   PyTorch SDPA, causal, head dim 128, forward and forward+backward, cuDNN and
              FlashAttention-2 backends, 4k to 128k tokens
  launch      per-kernel cost of a stream of small kernels: eager PyTorch (host-bound), the same
              kernels replayed from a CUDA graph, and the idle gap between back-to-back kernels
              that each run ~50 us when the host is ahead (torch.cuda._sleep)
  experts     16 small expert GEMMs launched one by one, eager against CUDA-graph replay
  hbm         copy, add, LayerNorm, RMSNorm, SiLU*mul and fused AdamW on tensors well past L2,
              as bytes moved per second (bytes counted as a fused kernel would move them)
  framework_hbm  the same rows through the frameworks' own fused kernels, which clustersim prices
              at a share of the copy (memory.element_wise): torch.compile's RMSNorm (FP32 inside,
              as torchtitan writes it) and SiLU*gate, and Transformer Engine's LayerNorm and
              RMSNorm forward and backward where transformer_engine imports

  stream      every GEMM of a layer (and LM head) of six model shapes, BF16 and FP8, timed
              inside a back-to-back stream of all of them once clocks have settled
  by_k        M = N = 8192 by K, and squares, each in its own sustained stream
  layer       idle GPU time per kernel in an eager PyTorch Transformer block, forward and
              backward (the torch profiler's kernel intervals)
  small       expert-sized and few-tile GEMMs, BF16 and FP8, from CUDA-graph replay
  copyout     an all-gather buffer copied out rank by rank (PyTorch's all_gather into a list,
              as DeepSpeed 2021's ZeRO-3 runs it): host and GPU time per copy, 8 to 2240 ranks
  cp_steps    one rank's work in PyTorch's load-balanced ring attention (context_parallel, as
              torchtitan runs it) at 32k local tokens, Llama 3.1 8B heads (K/V repeated), FA2:
              the causal first step, the non-causal half steps (q 32k x kv 16k, q 16k x kv 32k)
              forward and backward, and the FP32 merge of a step's output; then the ring's
              kernels on the last rank for cp 2, 4 and 8 back to back, with the K/V send
              buffer's concatenation before each step but the last (no communication)

Usage: torch_probe.py -o probe.json [--only SECTION,...] [--skip SECTION,...] [--seconds 3]
                      [--sustained-s 40] [--zeros-s 15] [--seqs 4096,...]
Writes one JSON document (clustersim-torch-probe/1), atomically. FLOPs of attention follow
FlashAttention-3's benchmark convention: 4·b·h·s²·d forward, halved when causal; backward 2.5x.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def cuda_time_ms(fn, iters, warmup=1):
    """Mean milliseconds per call of fn, timed with CUDA events after warm-up calls."""
    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iters


def graphed(fn, repeats):
    """A CUDA graph of `repeats` calls of fn, captured after three warm-up calls on a side
    stream (PyTorch's recipe: cuBLAS and the allocator set up outside the capture)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(repeats):
            fn()
    return g


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        return ""


def environment():
    props = torch.cuda.get_device_properties(0)
    cpu = cpu_model()
    smi = {}
    try:
        q = "power.limit,power.default_limit,power.max_limit,clocks.max.sm,clocks.max.mem,driver_version"
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        smi = dict(zip(q.split(","), [v.strip() for v in out.split(",")]))
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "gpu": props.name, "sms": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "python": platform.python_version(),
        "cpu": cpu, "nvidia_smi": smi,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def sustained(seconds, zeros_seconds):
    n = 8192
    flop = 2.0 * n**3
    out = {"m": n, "n": n, "k": n, "dtype": "bf16"}
    for label, secs in (("random", seconds), ("zeros", zeros_seconds)):
        if secs <= 0:
            continue
        gen = torch.Generator(device="cuda").manual_seed(1)
        if label == "random":
            a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
            b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen)
        else:
            a = torch.zeros(n, n, device="cuda", dtype=torch.bfloat16)
            b = torch.zeros(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        time.sleep(3.0)  # let the clocks settle at idle first
        windows = []
        t_end = time.time() + secs
        first = True
        while time.time() < t_end:
            per = 5 if first else 400  # a short first window: the burst a sweep sees
            ms = cuda_time_ms(lambda: torch.matmul(a, b, out=c), per, warmup=0 if first else 1)
            windows.append({"t": round(time.time() - (t_end - secs), 3), "gemms": per,
                            "tflops": round(flop / (ms * 1e-3) / 1e12, 1)})
            first = False
        rates = [w["tflops"] for w in windows[1:]]
        tail = rates[len(rates) // 2:] or rates
        out[label] = {"seconds": secs, "windows": windows,
                      "first_window_tflops": windows[0]["tflops"],
                      "second_half_mean_tflops": round(sum(tail) / len(tail), 1)}
        del a, b, c
    return out


def sustained_ms(fn, seconds):
    """Milliseconds per call of fn once it has run back to back for `seconds` (clocks settled
    under the power limit), timed over the last third of that time."""
    t_end = time.time() + seconds * 2 / 3
    calls = 0
    while time.time() < t_end or calls < 2:
        fn()
        calls += 1
        if calls % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    per_call = seconds * 2 / 3 / calls
    return cuda_time_ms(fn, max(2, int(seconds / 3 / per_call)), warmup=0)


def attention(seqs, seconds):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    heads, d = 16, 128
    results = []
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("flash2", SDPBackend.FLASH_ATTENTION)):
        for s in seqs:
            b = max(1, 16384 // s)  # 16k tokens per batch, as FlashAttention-3's figures
            try:
                q, k, v = (torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16,
                                       requires_grad=True) for _ in range(3))
                grad = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16)
                with sdpa_kernel([backend]):
                    fwd = sustained_ms(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), seconds)

                    def step():
                        # Fresh gradients each call: accumulating into .grad would add three
                        # element-wise kernels to the backward's time.
                        q.grad = k.grad = v.grad = None
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        o.backward(grad)
                    both = sustained_ms(step, seconds)
                flop_fwd = 4.0 * b * heads * s * s * d / 2
                results.append({
                    "kernel": name, "seq": s, "batch": b, "heads": heads, "head_dim": d,
                    "causal": True, "fwd_ms": round(fwd, 4), "fwd_bwd_ms": round(both, 4),
                    "fwd_tflops": round(flop_fwd / (fwd * 1e-3) / 1e12, 1),
                    "bwd_tflops": round(2.5 * flop_fwd / ((both - fwd) * 1e-3) / 1e12, 1)})
                del q, k, v, grad
            except Exception as e:  # a backend may refuse a shape; record it and go on
                results.append({"kernel": name, "seq": s, "error": str(e)[:300]})
            torch.cuda.empty_cache()
    return results


def layer_shapes(hidden, ffn, heads, kv_heads, vocab, tokens, tp, gated):
    """The GEMMs of one layer and the LM head, as gemm_sweep.cu names them."""
    d = hidden // heads
    kv = max(1, kv_heads // tp)
    fwd = [("qkv", tokens, (heads // tp + 2 * kv) * d, hidden),
           ("attn_out", tokens, hidden, hidden // tp),
           ("mlp_up", tokens, (2 if gated else 1) * ffn // tp, hidden),
           ("mlp_down", tokens, hidden, ffn // tp),
           ("lm_head", tokens, vocab // tp, hidden)]
    out = []
    for name, m, n, k in fwd:
        out += [(name + "_fwd", m, n, k), (name + "_dgrad", tokens, k, n),
                (name + "_wgrad", k, n, tokens)]
    return out


LAYERS = {
    "llama3-70b-tp8": (8192, 28672, 64, 8, 128256, 8192, 8, True),
    "gpt3-175b-tp8": (12288, 49152, 96, 96, 51200, 2048, 8, False),
    "llama3-8b-tp1": (4096, 14336, 32, 8, 128256, 8192, 1, True),
    "gpt3-5b-tp1-mbs2": (4096, 16384, 32, 32, 51200, 4096, 1, False),
    "gpt-1.7b-tp1": (2304, 9216, 24, 24, 51200, 2048, 1, False),
    "moe-expert-h2048-f768": (2048, 768, 16, 4, 2048, 1024, 1, True),
}


def gemm_runner(shape, dtype):
    """A callable that runs one GEMM m x n x k on random inputs (cuBLASLt underneath). "fp8"
    accumulates in split (FP32-promoted) form, as Transformer Engine's dgrad and wgrad GEMMs do;
    "fp8fast" with fast accumulation, as its forward GEMMs do."""
    _, m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    if dtype == "bf16":
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        bt = b.t()
        return lambda: torch.matmul(a, bt, out=c)
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    fast = dtype == "fp8fast"
    return lambda: torch._scaled_mm(a8, b8.t(), one, one, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)


def stream_rates(shapes, dtype, seconds):
    """Each GEMM's rate inside a back-to-back stream of all of them (a training step's power
    draw): warm up for 2/3 of `seconds`, then time every GEMM with events for the rest."""
    runners = [gemm_runner(s, dtype) for s in shapes]
    t_end = time.time() + seconds * 2 / 3
    while time.time() < t_end:
        for r in runners:
            r()
        torch.cuda.synchronize()
    events = []
    t_end = time.time() + seconds / 3
    rounds = 0
    while time.time() < t_end or rounds < 3:
        row = []
        for r in runners:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            r()
            e1.record()
            row.append((e0, e1))
        events.append(row)
        rounds += 1
        if rounds % 4 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    out = []
    for i, (name, m, n, k) in enumerate(shapes):
        ms = sum(row[i][0].elapsed_time(row[i][1]) for row in events) / len(events)
        out.append({"name": name, "dtype": dtype, "m": m, "n": n, "k": k,
                    "time_us": round(ms * 1e3, 3),
                    "tflops": round(2.0 * m * n * k / (ms * 1e-3) / 1e12, 1)})
    return {"rounds": len(events), "results": out}


def stream(seconds):
    res = {}
    for name, cfg in LAYERS.items():
        hidden, ffn, heads, kv, vocab, tokens, tp, gated = cfg
        shapes = layer_shapes(hidden, ffn, heads, kv, vocab, tokens, tp, gated)
        if name.startswith("moe"):
            shapes = [s for s in shapes if s[0].startswith("mlp")]
        for dtype in ("bf16", "fp8"):
            try:
                res[f"{name}/{dtype}"] = stream_rates(shapes, dtype, seconds)
            except Exception as e:
                res[f"{name}/{dtype}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
            torch.cuda.empty_cache()
    return res


def by_k(seconds, dtypes=("bf16", "fp8")):
    """M = N = 8192 by K (the form of the published TileLang series), each K alone in a
    sustained stream, and squares."""
    res = {}
    for dtype in dtypes:
        for k in (256, 512, 1024, 2048, 4096, 8192, 16384):
            res[f"{dtype}/8192x8192x{k}"] = stream_rates([("mn8192", 8192, 8192, k)], dtype,
                                                         seconds)["results"][0]
        for n in (1024, 2048, 4096, 16384):
            res[f"{dtype}/square{n}"] = stream_rates([("square", n, n, n)], dtype,
                                                     seconds)["results"][0]
        torch.cuda.empty_cache()
    return res


def small(seconds):
    """Small GEMMs (experts of fine-grained MoE layers, and few output tiles) timed from CUDA-graph
    replay, so that the host's per-call cost cannot show: 20 calls per graph, replayed back to
    back for `seconds`, the last third timed."""
    shapes = []
    for t in (1024, 2048, 4096):  # Qwen3-30B-A3B experts: hidden 2048, expert FFN 768, gated
        shapes += [(f"qwen3_fc1_fwd_t{t}", t, 1536, 2048), (f"qwen3_fc1_dgrad_t{t}", t, 2048, 1536),
                   (f"qwen3_fc1_wgrad_t{t}", 2048, 1536, t), (f"qwen3_fc2_fwd_t{t}", t, 2048, 768),
                   (f"qwen3_fc2_dgrad_t{t}", t, 768, 2048), (f"qwen3_fc2_wgrad_t{t}", 768, 2048, t)]
    for t in (1024, 4096):  # DeepSeek-V3 experts: hidden 7168, expert FFN 2048, gated
        shapes += [(f"dsv3_fc1_fwd_t{t}", t, 4096, 7168), (f"dsv3_fc2_fwd_t{t}", t, 7168, 2048)]
    for mn in (1024, 1536, 2048, 3072, 4096):
        shapes.append((f"mn{mn}_k4096", mn, mn, 4096))
    res = {}
    for dtype in ("bf16", "fp8", "fp8fast"):
        for shape in shapes:
            name, m, n, k = shape
            try:
                g = graphed(gemm_runner(shape, dtype), 20)
                ms = sustained_ms(g.replay, seconds) / 20
                res[f"{dtype}/{name}"] = {"m": m, "n": n, "k": k, "time_us": round(ms * 1e3, 3),
                                          "tflops": round(2.0 * m * n * k / (ms * 1e-3) / 1e12, 1)}
            except Exception as e:
                res[f"{dtype}/{name}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
        torch.cuda.empty_cache()
    return res


def layer_gaps():
    """Idle time on the GPU between the kernels of an eager PyTorch Transformer block (RMSNorm,
    fused QKV, RoPE, SDPA, SwiGLU; forward and backward), from the profiler's kernel intervals."""
    from torch.profiler import ProfilerActivity, profile

    def block_params(h, heads, kv, f):
        d = h // heads
        p = lambda *shape: torch.nn.Parameter(0.02 * torch.randn(*shape, device="cuda",
                                                                dtype=torch.bfloat16))
        return {"n1": p(h), "qkv": p((heads + 2 * kv) * d, h), "o": p(h, h), "n2": p(h),
                "up": p(2 * f, h), "down": p(h, f)}

    def block(x, w, heads, kv, cos, sin):
        b, s, h = x.shape
        d = h // heads
        y = F.rms_norm(x, (h,), w["n1"])
        q, k, v = F.linear(y, w["qkv"]).split([heads * d, kv * d, kv * d], dim=-1)
        q = q.view(b, s, heads, d).transpose(1, 2)
        k = k.view(b, s, kv, d).transpose(1, 2)
        v = v.view(b, s, kv, d).transpose(1, 2)

        def rope(t):
            t1, t2 = t[..., : d // 2], t[..., d // 2:]
            return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1)
        q, k = rope(q), rope(k)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv != heads)
        x = x + F.linear(a.transpose(1, 2).reshape(b, s, h), w["o"])
        y = F.rms_norm(x, (h,), w["n2"])
        g, u = F.linear(y, w["up"]).chunk(2, dim=-1)
        return x + F.linear(F.silu(g) * u, w["down"])

    res = {}
    for label, (h, heads, kv, f, s, layers) in {
            "llama3-8b-like_seq8192": (4096, 32, 8, 14336, 8192, 4),
            "small_h2048_seq2048": (2048, 16, 4, 768 * 4, 2048, 8)}.items():
        ws = [block_params(h, heads, kv, f) for _ in range(layers)]
        d = h // heads
        pos = torch.arange(s, device="cuda", dtype=torch.float32)[:, None]
        inv = 10000 ** (-torch.arange(0, d // 2, device="cuda", dtype=torch.float32) / (d // 2))
        cos, sin = (torch.cos(pos * inv).to(torch.bfloat16), torch.sin(pos * inv).to(torch.bfloat16))
        x0 = torch.randn(1, s, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)

        def step():
            x = x0
            for w in ws:
                x = block(x, w, heads, kv, cos, sin)
            x.float().square().mean().backward()
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        wall = cuda_time_ms(step, 5, warmup=0)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                       if str(getattr(e, "device_type", "")).endswith("CUDA")
                       and e.time_range.end > e.time_range.start)
        busy, last_end, first = 0.0, None, spans[0][0] if spans else 0
        for a, b in spans:
            if last_end is None or a >= last_end:
                busy += b - a
                last_end = b
            elif b > last_end:
                busy += b - last_end
                last_end = b
        span = (last_end - first) if spans else 0
        res[label] = {"layers": layers, "kernels": len(spans), "wall_ms": round(wall, 4),
                      "profiled_span_us": round(span, 1), "busy_us": round(busy, 1),
                      "idle_per_kernel_us": round((span - busy) / max(1, len(spans)), 3)}
        del ws, x0
        torch.cuda.empty_cache()
    return res


def launch():
    out = {}
    x = torch.zeros(1, device="cuda")
    n = 20000
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    out["eager_tiny_op_us"] = round((time.perf_counter() - t0) / n * 1e6, 3)
    # The same tiny kernels replayed from a CUDA graph: the GPU's own per-kernel cost.
    per_graph = 2000
    g = graphed(lambda: x.add_(1), per_graph)
    ms = cuda_time_ms(g.replay, 10)
    out["graph_tiny_op_us"] = round(ms * 1e3 / per_graph, 3)
    # Idle gap between back-to-back kernels when the host is far ahead: N sleeps of c cycles
    # against one sleep of N*c cycles.
    cycles, count = 100000, 200
    one = cuda_time_ms(lambda: torch.cuda._sleep(cycles * count), 3)
    many = cuda_time_ms(lambda: [torch.cuda._sleep(cycles) for _ in range(count)], 3)
    out["sleep_kernel_us"] = round(one * 1e3 / count, 3)
    out["back_to_back_gap_us"] = round((many - one) * 1e3 / count, 3)
    return out


def copyout(device="cuda"):
    """PyTorch 1.8's all_gather into a list of per-rank views, as DeepSpeed 2021's ZeRO-3 calls it
    for every weight matrix: after the all-gather, one copy_ per rank out of the flat buffer. For
    flat buffers of a 174.6B and a 529.6B QKV matrix (FP16) split over 8 .. 2240 ranks: the host's
    time per copy_ submission, and the GPU's time per copy once the host is far ahead (a sleep
    kernel holds the stream while the copies are queued). Also the Python loop of views DeepSpeed
    builds first, with CUDA tensors, and one whole-buffer copy (the copy-out's bandwidth). If the
    host blocks on the stream's queue before the sleep ends, the GPU time is an upper bound."""
    cuda = device == "cuda"
    out = {}
    for label, elements in (("174.6B_qkv", 3 * 12288 * 12288), ("529.6B_qkv", 3 * 20480 * 20480)):
        flat = torch.empty(elements, dtype=torch.float16, device=device)
        dest = torch.empty_like(flat)
        rows = {}
        for ranks in (8, 384, 1536, 2240):
            piece = elements // ranks
            src = [flat.narrow(0, piece * i, piece) for i in range(ranks)]
            dst = [dest.narrow(0, piece * i, piece) for i in range(ranks)]
            t0 = time.perf_counter()
            views = [flat.narrow(0, piece * i, piece) for i in range(ranks)]
            view_us = (time.perf_counter() - t0) / ranks * 1e6
            del views
            def copies():
                for j in range(ranks):
                    dst[j].copy_(src[j], non_blocking=True)
            copies()  # warm-up
            if cuda:
                torch.cuda.synchronize()
            # Host: the submissions alone (the GPU keeps up or the host waits, as in training).
            t0 = time.perf_counter()
            copies()
            host_us = (time.perf_counter() - t0) / ranks * 1e6
            gpu_us = None
            if cuda:
                torch.cuda.synchronize()
                # GPU: the copies queued behind a sleep kernel (the all-gather's place), timed
                # from its end, so the host's pace does not enter.
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(200_000_000)
                start.record()
                copies()
                end.record()
                torch.cuda.synchronize()
                gpu_us = start.elapsed_time(end) * 1e3 / ranks
            rows[str(ranks)] = {"piece_bytes": piece * 2, "view_us": round(view_us, 3),
                                "host_submit_us": round(host_us, 3),
                                "gpu_per_copy_us": None if gpu_us is None else round(gpu_us, 3)}
        if cuda:
            ms = cuda_time_ms(lambda: dest.copy_(flat), 5)
            rows["whole_buffer_GBps"] = round(2 * elements * 2 / (ms * 1e-3) / 1e9, 1)
        out[label] = rows
        del flat, dest
    return out


def experts():
    # 16 local experts of a fine-grained MoE (hidden 2048, expert FFN 768, gated), 2048 tokens
    # each: fc1 [T, 2048] x [2048, 1536], fc2 [T, 768] x [768, 2048], forward only.
    e, t, h, f = 16, 2048, 2048, 768
    xs = [torch.randn(t, h, device="cuda", dtype=torch.bfloat16) for _ in range(e)]
    w1 = [torch.randn(h, 2 * f, device="cuda", dtype=torch.bfloat16) for _ in range(e)]
    w2 = [torch.randn(f, h, device="cuda", dtype=torch.bfloat16) for _ in range(e)]
    mid = [torch.empty(t, 2 * f, device="cuda", dtype=torch.bfloat16) for _ in range(e)]
    ys = [torch.empty(t, h, device="cuda", dtype=torch.bfloat16) for _ in range(e)]

    def run():
        for i in range(e):
            torch.matmul(xs[i], w1[i], out=mid[i])
            torch.matmul(mid[i][:, :f], w2[i], out=ys[i])
    eager = cuda_time_ms(run, 20, warmup=3)
    graph = cuda_time_ms(graphed(run, 1).replay, 20, warmup=3)
    kernels = 2 * e
    flop = e * 2.0 * t * (h * 2 * f + f * h)
    return {"experts": e, "tokens_per_expert": t, "hidden": h, "expert_ffn": f,
            "kernels": kernels, "eager_ms": round(eager, 4), "graph_ms": round(graph, 4),
            "gap_per_kernel_us": round((eager - graph) * 1e3 / kernels, 3),
            "graph_tflops": round(flop / (graph * 1e-3) / 1e12, 1)}


def cp_steps(seconds):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    heads, d, local = 32, 128, 32768  # Llama 3.1 8B with K/V repeated to the query heads
    half = local // 2
    q, k, v = (torch.randn(1, heads, local, d, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    res = {"heads": heads, "head_dim": d, "local_tokens": local, "kernel": "flash2"}

    def flop_fwd(sq, skv, causal):
        return 4.0 * heads * sq * skv * d / (2 if causal else 1)

    shapes = (("causal_first", local, local, True), ("kv_half", local, half, False),
              ("q_half", half, local, False))
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        for name, sq, skv, causal in shapes:
            try:
                qs, ks, vs = (t[:, :, :n].detach().clone().requires_grad_(True)
                              for t, n in ((q, sq), (k, skv), (v, skv)))
                grad = torch.randn_like(qs)
                fwd = sustained_ms(
                    lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal), seconds)

                def step():
                    qs.grad = ks.grad = vs.grad = None
                    F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal).backward(grad)
                both = sustained_ms(step, seconds)
                f = flop_fwd(sq, skv, causal)
                res[name] = {"q": sq, "kv": skv, "causal": causal, "fwd_ms": round(fwd, 4),
                             "fwd_bwd_ms": round(both, 4),
                             "fwd_tflops": round(f / (fwd * 1e-3) / 1e12, 1),
                             "bwd_tflops": round(2.5 * f / ((both - fwd) * 1e-3) / 1e12, 1)}
                del qs, ks, vs, grad
            except Exception as e:
                res[name] = {"error": str(e)[:300]}
            torch.cuda.empty_cache()

        # PyTorch's _SDPAMerger (convert_to_f32): out - sigmoid(block_lse - lse) * (out -
        # block_out) and lse - logsigmoid(lse - block_lse), over the whole local output.
        out = torch.randn(1, heads, local, d, device="cuda", dtype=torch.float32)
        lse = torch.randn(1, heads, local, 1, device="cuda", dtype=torch.float32)
        block_out = torch.randn(1, heads, local, d, device="cuda", dtype=torch.bfloat16)
        block_lse = torch.randn_like(lse)

        def merge():
            o = out - torch.sigmoid(block_lse - lse) * (out - block_out)
            lo = lse - F.logsigmoid(lse - block_lse)
            return o, lo
        res["merge_ms"] = round(cuda_time_ms(merge, 10, warmup=2), 4)

        # The last rank's forward ring: the causal first step, then cp - 1 steps on half of
        # the keys, each merged, with the K/V chunk concatenated into the send buffer before
        # every step but the last, as _templated_ring_attention does (communication left out).
        qd, kd, vd = q.detach(), k.detach(), v.detach()
        kh, vh = kd[:, :, :half], vd[:, :, :half]
        rings = []
        for cp in (2, 4, 8):
            def ring(cp=cp):
                torch.cat([kd.flatten(), vd.flatten()])
                F.scaled_dot_product_attention(qd, kd, vd, is_causal=True)
                for step in range(1, cp):
                    if step < cp - 1:
                        torch.cat([kd.flatten(), vd.flatten()])
                    F.scaled_dot_product_attention(qd, kh, vh)
                    merge()
            try:
                ms = cuda_time_ms(ring, 5, warmup=1)
                f = flop_fwd(local, local, True) + (cp - 1) * flop_fwd(local, half, False)
                rings.append({"cp": cp, "fwd_ms": round(ms, 4),
                              "fwd_tflops": round(f / (ms * 1e-3) / 1e12, 1)})
            except Exception as e:
                rings.append({"cp": cp, "error": str(e)[:300]})
        res["last_rank_forward"] = rings
    return res


def bandwidth(fn, nbytes, warmup):
    """Bytes per second of fn, which moves `nbytes` per call: 10 calls timed after warm-up."""
    ms = cuda_time_ms(fn, 10, warmup=warmup)
    return {"ms": round(ms, 4), "bytes": nbytes,
            "tb_per_s": round(nbytes / (ms * 1e-3) / 1e12, 3)}


def hbm():
    tokens, hidden = 32768, 8192
    el = tokens * hidden
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    y = torch.randn_like(x)
    z = torch.empty_like(x)
    w = torch.ones(hidden, device="cuda", dtype=torch.bfloat16)
    gate = torch.randn(tokens, 2 * hidden, device="cuda", dtype=torch.bfloat16)
    res = {}

    def rate(name, fn, nbytes):
        res[name] = bandwidth(fn, nbytes, warmup=2)
    rate("copy", lambda: z.copy_(x), 4 * el)
    rate("add", lambda: torch.add(x, y, out=z), 6 * el)
    rate("layer_norm", lambda: F.layer_norm(x, (hidden,), w, w), 4 * el)
    rate("rms_norm", lambda: F.rms_norm(x, (hidden,), w), 4 * el)
    rate("silu_mul", lambda: F.silu(gate[:, :hidden]) * gate[:, hidden:], 6 * el)
    del x, y, z, gate
    torch.cuda.empty_cache()
    n = 256 * 2**20  # FP32 parameters, with their gradients and two Adam moments
    p = torch.nn.Parameter(torch.randn(n, device="cuda"))
    p.grad = torch.randn(n, device="cuda")
    opt = torch.optim.AdamW([p], lr=1e-4, fused=True)
    rate("adamw_fused_fp32", opt.step, 28 * n)  # read p, g, m, v; write p, m, v
    return res


def framework_hbm():
    """The framework kernels that hbm's PyTorch norms stand for in clustersim's Hopper files:
    each row's bytes per second over the same tensors, with the copy beside them for the ratio."""
    tokens, hidden = 32768, 8192
    el = tokens * hidden
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(hidden, device="cuda", dtype=torch.bfloat16)
    gate = torch.randn(tokens, 2 * hidden, device="cuda", dtype=torch.bfloat16)
    z = torch.empty_like(x)
    res = {}

    def rate(name, fn, nbytes):
        try:
            res[name] = bandwidth(fn, nbytes, warmup=3)
        except Exception as e:  # one row's failure leaves the others
            res[name] = {"error": f"{type(e).__name__}: {e}"[:300]}

    def rms_norm(t):  # torchtitan's RMSNorm: FP32 inside, the input's dtype out
        f = t.float()
        return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(t) * w

    def silu_gate(g):
        return F.silu(g[:, :hidden]) * g[:, hidden:]

    rate("copy", lambda: z.copy_(x), 4 * el)
    rate("compiled_rms_norm", lambda c=torch.compile(rms_norm): c(x), 4 * el)
    rate("compiled_silu_mul", lambda c=torch.compile(silu_gate): c(gate), 6 * el)
    try:
        import transformer_engine.pytorch as te
    except Exception as e:
        res["transformer_engine"] = {"error": f"{type(e).__name__}: {e}"[:300]}
        return res
    res["transformer_engine"] = {"version": getattr(te, "__version__", "unknown")}
    xg = x.detach().clone().requires_grad_(True)
    for name, cls in (("te_layer_norm", "LayerNorm"), ("te_rms_norm", "RMSNorm")):
        try:
            mod = getattr(te, cls)(hidden, params_dtype=torch.bfloat16).cuda()
        except Exception as e:
            res[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
            continue
        rate(name, lambda m=mod: m(x), 4 * el)
        dy = torch.randn_like(x)
        # Forward and backward together: the forward's 4 bytes per element, then the
        # backward's reads of x and dy and write of dx, 6 (the weight gradient's are negligible).
        rate(name + "_forward_backward",
             lambda m=mod: torch.autograd.grad(m(xg), xg, dy)[0], 6 * el + 4 * el)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--sustained-s", type=float, default=40)
    ap.add_argument("--zeros-s", type=float, default=15)
    ap.add_argument("--seqs", default="4096,8192,16384,32768,65536,131072")
    ap.add_argument("--skip", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="seconds each sustained stream runs (attention, stream, by_k)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    doc = {"format": "clustersim-torch-probe/1", "tool": "torch_probe",
           "environment": environment()}
    sections = [
        ("launch", launch),
        ("experts", experts),
        ("hbm", hbm),
        ("framework_hbm", framework_hbm),
        ("attention", lambda: attention([int(s) for s in args.seqs.split(",")], args.seconds)),
        ("sustained", lambda: sustained(args.sustained_s, args.zeros_s)),
        ("stream", lambda: stream(args.seconds)),
        ("by_k", lambda: by_k(args.seconds)),
        ("layer", layer_gaps),
        ("by_k_fp8fast", lambda: by_k(args.seconds, ("fp8fast",))),
        ("small", lambda: small(args.seconds)),
        ("copyout", copyout),
        ("cp_steps", lambda: cp_steps(args.seconds)),
    ]
    for name, fn in sections:
        if name in skip or (only and name not in only):
            continue
        t0 = time.time()
        try:
            doc[name] = fn()
        except Exception as e:  # keep what the other sections measured
            doc[name] = {"error": f"{type(e).__name__}: {e}"[:500]}
        print(f"{name}: {time.time() - t0:.1f} s: {json.dumps(doc[name])[:1500]}", flush=True)
        torch.cuda.empty_cache()
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, args.output)


if __name__ == "__main__":
    sys.exit(main())
