#!/usr/bin/env bash
# The step work estimate (step/work_estimate.hpp) against the peak memory `clustersim run`
# measures, on scenarios of different shapes: many micro-batches (Llama 3 8B on 8 GPUs; the
# seed's DP 64 x TP 8 x PP 2), ZeRO-3 pure data parallelism (the seed's DP layouts), many GPUs
# (Llama 3 405B, DP x TP 8 x PP 16). About three minutes; the ZeRO-3 cases and the 100,000
# micro-batches take most of it. The table of step/README.md#work-limits comes from it.
# Usage: bench/work_estimate_bench.sh [BUILD_DIR] [--large]   (default: build; --large adds the
# 65,536-GPU step, about a minute and 2.3 GB). Needs GNU time (/usr/bin/time -v) and python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build"
large=0
for a in "$@"; do
  if [[ "$a" == "--large" ]]; then large=1; else build="$a"; fi
done
bin="$build/clustersim"
if [[ ! -x "$bin" || ! -x /usr/bin/time ]]; then
  echo "work_estimate_bench: needs $bin (build it first) and /usr/bin/time" >&2
  exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The scenario variants, written into $tmp.
python3 - "$here" "$tmp" "$large" <<'PY'
import json, sys
here, tmp, large = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def load(rel): return json.load(open(f"{here}/{rel}"))
def write(name, s): json.dump(s, open(f"{tmp}/{name}.json", "w"))
small = {"name": "small", "model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 8,
         "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": True},
         "training": {"global_batch": 4, "micro_batch": 1, "seq_len": 2048}}
for m in (4, 256, 1024, 4096):
    small["training"]["global_batch"] = m
    write(f"llama3-8b-8gpu-mb{m}", small)
seed = load("scenarios/seed-optimized-1024.json")
for m in (16, 64, 256, 1024, 10000, 100000):
    seed["training"]["global_batch"] = 64 * m
    write(f"seed-optimized-1024-mb{m}", seed)
per_mb = load("scenarios/seed-optimized-1024-reduce-per-microbatch.json")
per_mb["training"]["global_batch"] = 64 * 1000
write("seed-optimized-1024-reduce-per-microbatch-mb1000", per_mb)
for d in (64, 256, 512, 1024):
    write(f"seed-dp-{d}", load(f"scenarios/seed-dp-{d}.json"))
dp = load("scenarios/seed-dp-64.json")
dp["training"]["global_batch"] = 64 * 64
write("seed-dp-64-mb64", dp)
dp = load("scenarios/seed-dp-1024.json")
dp["training"]["global_batch"] = 1024 * 4
write("seed-dp-1024-mb4", dp)
l405 = load("scenarios/llama3-405b-16384.json")
cluster = load("topologies/clusters/h100-2048x8-roce-llama3.json")
for g in (4096, 16384) + ((65536,) if large else ()):
    cluster["nodes"] = max(2048, g // 8)
    l405["cluster"] = dict(cluster, name="h100-roce-llama3-%d" % g)
    l405["gpus"], l405["parallelism"]["dp"] = g, g // 128
    l405["training"]["global_batch"] = 16 * (g // 128)
    write(f"llama3-405b-{g}", l405)
PY

printf "%-30s %8s %12s %12s %12s %6s\n" scenario GPUs ops measured_MB estimate_MB ratio
for f in "$tmp"/*.json; do
  name="$(basename "$f" .json)"
  "$bin" check "$f" --json "$tmp/$name.check" > /dev/null 2>&1
  /usr/bin/time -v "$bin" run "$f" > /dev/null 2> "$tmp/$name.time"
  rss_kB="$(grep 'Maximum resident set size' "$tmp/$name.time" | awk '{print $NF}')"
  python3 - "$name" "$rss_kB" "$tmp/$name.check" <<'PY'
import json, sys
name, rss_kB, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
e = json.load(open(path))["simulation_estimate"]
measured = rss_kB * 1024
print(f"{name:30s} {e['gpus']:8d} {e['ops']:12.0f} {measured / 1e6:12.1f} "
      f"{e['peak_memory_bytes'] / 1e6:12.1f} {e['peak_memory_bytes'] / measured:6.2f}")
PY
done
