#!/usr/bin/env python3
"""How a GEMM efficiency curve should be read, checked on the H200's own measurements.

The H200 run of 2026-12-04 (validation/data/h200-2026-12-04/torch-probe-2.json) timed three
kinds of BF16 GEMM back to back on random data: cubes m = n = k ("square"), large M = N = 8192
by K ("by_k"), and the GEMMs of five Transformer layer streams ("stream": forward, dgrad, wgrad
and LM head of Llama 3 70B TP 8, GPT-3 175B TP 8, Llama 3 8B, GPT-3 5B and GPT 1.7B). This
script predicts each layer GEMM from the cube points and from the by-K points, read at the
GEMM's smallest dimension or at the side of the cube with as many multiply-adds, (m n k)^(1/3),
and prints each reading's error. Interpolation is linear in log2 of the size, clamped at both
ends and capped by the best measured shape, as models/compute_cost.cpp reads a curve.

GEMMs that took under 40 us are left out: issued one by one from Python they are host-bound
(validation/data/h200-2026-12-04/README.md), and so is the 1024^3 cube.

usage: tools/gemm_curve_reading.py [PROBE_JSON]
"""
import json
import math
import sys

DEFAULT = "validation/data/h200-2026-12-04/torch-probe-2.json"
HOST_BOUND_US = 40.0
BEST_SHAPE_TFLOPS = 701.3  # the fastest layer GEMM of the same run (compute_efficiency.json)


def interpolate(points, x):
    """Linear in log2(x) between (size, tflops) points, clamped at both ends."""
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    for (a, fa), (b, fb) in zip(points, points[1:]):
        if a <= x <= b:
            t = (math.log2(x) - math.log2(a)) / (math.log2(b) - math.log2(a))
            return fa + t * (fb - fa)
    return points[-1][1]


def main():
    probe = json.load(open(sys.argv[1] if len(sys.argv) > 1 else DEFAULT))
    cubes, by_k = [], []
    for key, r in probe["by_k"].items():
        if not key.startswith("bf16/") or r["time_us"] < HOST_BOUND_US:
            continue
        if r["m"] == r["n"] == r["k"] and r["name"] == "square":
            cubes.append((r["m"], r["tflops"]))
        elif r["name"] == "mn8192":
            by_k.append((r["k"], r["tflops"]))
    cubes.sort()
    by_k.sort()
    readings = {
        "cubes at the smallest dimension": (cubes, lambda m, n, k: min(m, n, k)),
        "cubes at the equal-volume side": (cubes, lambda m, n, k: (m * n * k) ** (1 / 3)),
        "M = N = 8192 by K at the smallest dimension": (by_k, lambda m, n, k: min(m, n, k)),
        "M = N = 8192 by K at the equal-volume side": (by_k, lambda m, n, k: (m * n * k) ** (1 / 3)),
    }
    gemms = [
        r
        for name, stream in probe["stream"].items()
        if name.endswith("/bf16")
        for r in stream["results"]
        if r["time_us"] >= HOST_BOUND_US
    ]
    print(f"{len(gemms)} BF16 layer GEMMs of {DEFAULT if len(sys.argv) < 2 else sys.argv[1]}")
    print(f"cube points {cubes}")
    print(f"by-K points {by_k}")
    for label, (points, size) in readings.items():
        errors = [
            (min(BEST_SHAPE_TFLOPS, interpolate(points, size(g["m"], g["n"], g["k"]))) / g["tflops"] - 1)
            * 100
            for g in gemms
        ]
        mape = sum(abs(e) for e in errors) / len(errors)
        signed = sum(errors) / len(errors)
        print(f"  {label:45s} MAPE {mape:5.1f} %  signed {signed:+5.1f} %")


if __name__ == "__main__":
    main()
