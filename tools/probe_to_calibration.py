#!/usr/bin/env python3
"""Writes the Hopper GEMM and attention curves of the compute-calibration files from the points
measured on an H200 (validation/data/h200-2026-12-04/, validation/microbench/torch_probe.py).

  GEMM BF16/FP16   M = N = 8192 by K, each shape alone in a sustained stream on random data
                   (torch-probe-2.json "by_k"); best shape: the fastest GEMM of any layer stream
  GEMM FP8         the same series; Transformer Engine runs a linear layer's forward GEMM with
                   fast accumulation (torch-probe-3.json "by_k_fp8fast") and its two backward
                   GEMMs with split accumulation ("by_k" fp8), so each point is the rate of that
                   mix: 3 / (1/fast + 2/split)
  attention        cuDNN and FlashAttention-2 through PyTorch SDPA, causal, head dim 128, forward
                   and backward, 16k tokens per batch, sustained (torch-probe-3.json "attention")

Usage: tools/probe_to_calibration.py [--probe FILE ...] [--files CALIBRATION ...]
                                      [--peak-bf16 TFLOPS] [--peak-fp8 TFLOPS] [--check]

  --probe   torch_probe.py outputs; a section is taken from the last file that has it
            (default: the H200 runs 2 and 3 of validation/data/h200-2026-12-04/)
  --files   compute-calibration files to update in place (default: the two Hopper files);
            a measurement of your own GPU goes into a copy of one, which a preset then names
  --peak-*  the GPU's dense peaks (default: H100/H200 SXM, 989 and 1979 TFLOPS)
  --check   write nothing; exit 1 if a file would change
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBES = ["validation/data/h200-2026-12-04/torch-probe-2.json",
          "validation/data/h200-2026-12-04/torch-probe-3.json"]
FILES = ["validation/data/compute_efficiency.json",
         "validation/data/compute_efficiency-h100-500w.json"]
PEAK = {"bf16": 989, "fp8": 1979}  # dense H100/H200 SXM peaks, NVIDIA datasheets
SETUP = ("H200 SXM (the H100's GH100 die and 700 W limit), torch 2.11.0+cu130, cuBLAS/cuDNN "
         "9.19 of that build, random normal inputs, rate once clocks settled in a back-to-back "
         "stream")
SOURCE = {}  # section -> the probe file it was taken from (for the points' sources)
GPU = ["H200 SXM"]  # the GPU the series name; another probe's own GPU name replaces it
# cuDNN's backward at 512 tokens disagreed between two runs (77.7 and 104.9 TFLOP/s) and was
# slower in total than at 1,024 tokens; it is left out and 512 takes the 1,024-token figure.
SKIP_BACKWARD = {("cudnn", 512)}


def sections(paths):
    """Each section's content from the last probe file that has it (without an error)."""
    out = {}
    for path in paths:
        with open(os.path.join(ROOT, path)) as f:
            doc = json.load(f)
        for name, value in doc.items():
            if isinstance(value, dict) and "error" in value:
                continue
            out[name] = value
            SOURCE[name] = path
    return out


def gemm_series(by_k, by_k_fast):
    bf16, fp8 = [], []
    for k in (256, 512, 1024, 2048, 4096, 8192, 16384):
        key = f"8192x8192x{k}"
        b = by_k[f"bf16/{key}"]["tflops"]
        bf16.append({"min_dim": k, "tflops": b, "peak_tflops": PEAK["bf16"],
                     "source": f"measured, {SOURCE['by_k']} by_k bf16/{key}: {b} "
                               f"TFLOP/s ({SETUP})"})
        split = by_k[f"fp8/{key}"]["tflops"]
        fast = by_k_fast[f"fp8fast/{key}"]["tflops"]
        mix = round(3.0 / (1.0 / fast + 2.0 / split), 1)
        fp8.append({"min_dim": k, "tflops": mix, "peak_tflops": PEAK["fp8"],
                    "source": f"measured, {SOURCE['by_k_fp8fast']} by_k_fp8fast/{key} "
                              f"{fast} TFLOP/s (forward, fast accumulation) and "
                              f"{SOURCE['by_k']} by_k fp8/{key} {split} (backward, split "
                              f"accumulation): 3 / (1/{fast} + 2/{split}) = {mix} ({SETUP})"})
    return bf16, fp8


def best_shape(stream, dtype):
    best = None
    for layer, v in stream.items():
        if not layer.endswith("/" + dtype) or "results" not in v:
            continue
        for r in v["results"]:
            if best is None or r["tflops"] > best[1]["tflops"]:
                best = (layer, r)
    layer, r = best
    return {"tflops": r["tflops"], "peak_tflops": PEAK["bf16" if dtype == "bf16" else "fp8"],
            "source": f"measured, {SOURCE['stream']} stream {layer}: {r['name']} "
                      f"{r['m']}x{r['n']}x{r['k']} {r['tflops']} TFLOP/s, the fastest GEMM of "
                      f"the six layer streams ({SETUP})"}


def attention_series(rows, kernel, direction):
    out = []
    for r in rows:
        if r.get("kernel") != kernel or "error" in r:
            continue
        if direction == "backward" and (kernel, r["seq"]) in SKIP_BACKWARD:
            continue
        t = r["fwd_tflops" if direction == "forward" else "bwd_tflops"]
        out.append({"seq_len": r["seq"], "tflops": t, "peak_tflops": PEAK["bf16"],
                    "source": f"measured, {SOURCE['attention']} attention {kernel} "
                              f"seq {r['seq']} (batch {r['batch']}, 16 heads, head dim 128, "
                              f"causal): {direction} {t} TFLOP/s, FLOPs counted as "
                              f"FlashAttention-3's benchmark counts them ({SETUP})"})
    return out


def update(doc, by_k, by_k_fast, stream, attn):
    doc["description"] = doc["description"].replace(
        "Every point is a published microbenchmark (see docs/microbenchmarks.md#gemm)",
        "Every point is a microbenchmark: GEMM and attention measured on an H200 "
        "(validation/data/h200-2026-12-04/), HBM published (see docs/microbenchmarks.md)").replace(
        "published Hopper microbenchmarks on 700 W H100 SXM parts",
        "Hopper microbenchmarks on 700 W parts (H200 GEMM and attention measured here, H100 HBM "
        "published)")
    bf16, fp8 = gemm_series(by_k, by_k_fast)
    g = doc["gemm"]
    for dt in ("bf16", "fp16"):
        g[dt]["series"] = (f"cuBLAS BF16 GEMM on {GPU[0]}, M = N = 8192, by K, each shape in a "
                           f"sustained stream on random data (measured; BF16 and FP16 share the "
                           f"tensor-core rate on Hopper)")
        g[dt]["points"] = bf16
        g[dt]["best_shape"] = best_shape(stream, "bf16")
    g["fp8"]["series"] = (f"cuBLASLt FP8 (E4M3) GEMM on {GPU[0]}, M = N = 8192, by K, sustained, "
                          "random data: a linear layer's forward with fast and its two backward "
                          "GEMMs with split accumulation, as Transformer Engine runs them "
                          "(measured)")
    g["fp8"]["points"] = fp8
    g["fp8"]["best_shape"] = best_shape(stream, "fp8")
    a = doc["attention"]
    a["kernel"] = ("cuDNN fused attention (Transformer Engine's FusedAttention and PyTorch SDPA's "
                   "cuDNN backend run cuDNN's SDPA graphs), head dimension 128, causal forward "
                   "and causal backward. Transformer Engine selects it over FlashAttention on "
                   "Hopper: 'Disabling FlashAttention to give FusedAttention preference on "
                   "Hopper+ for performance reasons' in transformer_engine/pytorch/attention.py "
                   "at v1.8 (2024-07, the NeMo 24.07 generation) and in "
                   "attention/dot_product_attention/utils.py at v2.9")
    for dt in ("bf16", "fp16"):
        a[dt]["series"] = (f"cuDNN attention forward on {GPU[0]}, causal, head dim 128, by "
                           "sequence length (measured; 512 to 16k agree with FlashAttention-3 "
                           "Figure 5(d) within 6 %)")
        a[dt]["points"] = attention_series(attn, "cudnn", "forward")
        a["backward"][dt]["series"] = (f"cuDNN attention backward on {GPU[0]}, causal, head dim "
                                       "128, by sequence length (measured)")
        a["backward"][dt]["points"] = attention_series(attn, "cudnn", "backward")
    f2 = a["other_kernels"]["flash2"]
    f2["kernel"] = ("FlashAttention-2 (Dao 2023) as PyTorch SDPA's flash backend, head dimension "
                    "128, causal forward and causal backward. The kernel PyTorch's "
                    "scaled_dot_product_attention runs on Hopper when cuDNN attention is not "
                    "enabled: cuDNN attention was made opt-in in PyTorch 2.5.1 (pytorch/pytorch "
                    "issue 138649, 'we are going to make the CuDNN backend Opt-in by default'); "
                    "on a 2.6 nightly (2.6.0.dev20241204) SDPA measured 329 TFLOPS against "
                    "cuDNN's 631 on H100 at sequence length 4608, head dim 128 (pytorch/pytorch "
                    "issue 142132, closed as expected behaviour)")
    f2["bf16"]["series"] = (f"FlashAttention-2 forward on {GPU[0]}, causal, head dim 128, by "
                            "sequence length (measured through PyTorch SDPA)")
    f2["bf16"]["points"] = attention_series(attn, "flash2", "forward")
    f2["backward"]["bf16"]["series"] = (f"FlashAttention-2 backward on {GPU[0]}, causal, head dim "
                                        "128, by sequence length (measured through PyTorch SDPA)")
    f2["backward"]["bf16"]["points"] = attention_series(attn, "flash2", "backward")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", nargs="+", default=PROBES)
    ap.add_argument("--files", nargs="+", default=FILES)
    ap.add_argument("--peak-bf16", type=float, default=PEAK["bf16"])
    ap.add_argument("--peak-fp8", type=float, default=PEAK["fp8"])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    PEAK.update(bf16=args.peak_bf16, fp8=args.peak_fp8)
    got = sections(args.probe)
    if args.probe != PROBES:  # someone's own GPU: name it and its software in every source
        global SETUP
        env = got.get("environment", {})
        GPU[0] = env.get("gpu", "the GPU measured")
        SETUP = (f"{GPU[0]}, torch {env.get('torch', '?')}, cuDNN {env.get('cudnn', '?')}, "
                 f"random normal inputs, rate once clocks settled in a back-to-back stream")
    missing = [n for n in ("by_k", "by_k_fp8fast", "stream", "attention") if n not in got]
    if missing:
        print(f"probe_to_calibration: no {', '.join(missing)} in {' '.join(args.probe)} "
              f"(run torch_probe.py with those sections)", file=sys.stderr)
        return 2
    changed = False
    for name in args.files:
        path = os.path.join(ROOT, name)
        with open(path) as f:
            text = f.read()
        doc = json.loads(text)
        update(doc, got["by_k"], got["by_k_fp8fast"], got["stream"], got["attention"])
        new = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        if new != text:
            changed = True
            if not args.check:
                with open(path + ".tmp", "w") as f:
                    f.write(new)
                os.replace(path + ".tmp", path)
            print(("would change " if args.check else "wrote ") + path)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
