#!/usr/bin/env python3
"""How a GEMM efficiency curve measured on cubes should be read, checked on published and
measured GEMM tables.

A curve holds one rate per size; models/compute_cost.cpp reads it at a GEMM's smallest dimension
or, for a curve of cubes m = n = k ("read_at": "cube_side"), at the side of the cube with as many
multiply-adds, (m n k)^(1/3). This script predicts the non-cube GEMMs of a table from its own
cubes both ways and prints each reading's error (interpolation linear in log2 of the size,
clamped at both ends, as the model reads a curve, without its best-shape cap):

1. XLA's measured sm_90 table (validation/data/gemm/xla-sm90-bf16.json): 125 BF16 shapes from
   256 to 4096 on each side, cubes among them. Shapes under 16 GFLOP are shown apart: XLA's
   timings include a launch, which a small GEMM's time is mostly made of.
2. The H200 run of 2026-12-04 (validation/data/h200-2026-12-04/torch-probe-2.json): 75 layer
   GEMMs of five models, the cubes and the M = N = 8192 by K series of the same stream. Its 1024^3
   and 2048^3 cubes are host-bound (that directory's README) and left out, so its cubes start at
   4096, where the H200's curve is flat: it cannot tell the readings apart, and says so.

usage: tools/gemm_curve_reading.py
"""
import json
import math

XLA = "validation/data/gemm/xla-sm90-bf16.json"
H200 = "validation/data/h200-2026-12-04/torch-probe-2.json"
H200_HOST_BOUND_CUBES = (1024, 2048)
H200_HOST_BOUND_US = 40.0
LARGE_GFLOP = 16.0

READINGS = {
    "smallest dimension": lambda m, n, k: min(m, n, k),
    "(m n k)^(1/3)": lambda m, n, k: (m * n * k) ** (1 / 3),
}


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


def report(label, points, gemms):
    """gemms: (m, n, k, tflops). Prints MAPE and mean signed error of each reading."""
    print(f"  {label}: {len(gemms)} GEMMs")
    for name, size in READINGS.items():
        errors = [(interpolate(points, size(m, n, k)) / t - 1) * 100 for m, n, k, t in gemms]
        mape = sum(abs(e) for e in errors) / len(errors)
        signed = sum(errors) / len(errors)
        print(f"    read at {name:20s} MAPE {mape:5.1f} %  signed {signed:+6.1f} %")


def xla_table():
    rows = [(r["m"], r["n"], r["k"], r["tflops"]) for r in json.load(open(XLA))["results"]]
    cubes = sorted((m, t) for m, n, k, t in rows if m == n == k)
    others = [r for r in rows if not r[0] == r[1] == r[2]]
    gflop = lambda r: 2 * r[0] * r[1] * r[2] / 1e9
    print(f"{XLA}: cubes {cubes}")
    report(f"non-cube shapes of at least {LARGE_GFLOP:g} GFLOP",
           cubes, [r for r in others if gflop(r) >= LARGE_GFLOP])
    report("non-cube shapes with every side at least 1024",
           cubes, [r for r in others if min(r[:3]) >= 1024])
    report("every non-cube shape", cubes, others)


def h200_run():
    probe = json.load(open(H200))
    cubes, by_k = [], []
    for key, r in probe["by_k"].items():
        if not key.startswith("bf16/"):
            continue
        if r["name"] == "square" and r["m"] == r["n"] == r["k"]:
            if r["m"] not in H200_HOST_BOUND_CUBES:
                cubes.append((r["m"], r["tflops"]))
        elif r["name"] == "mn8192":
            by_k.append((r["k"], r["tflops"]))
    gemms = [
        (r["m"], r["n"], r["k"], r["tflops"])
        for name, stream in probe["stream"].items()
        if name.endswith("/bf16")
        for r in stream["results"]
        if r["time_us"] >= H200_HOST_BOUND_US
    ]
    print(f"{H200}: cubes {sorted(cubes)}, M = N = 8192 by K {sorted(by_k)}")
    report("layer GEMMs from the cubes", sorted(cubes), gemms)
    report("layer GEMMs from M = N = 8192 by K", sorted(by_k), gemms)


if __name__ == "__main__":
    xla_table()
    h200_run()
