#!/usr/bin/env bash
# Wall time and peak memory of `clustersim collective` for one 1 GiB all-reduce over 1024 GPUs
# (h800-128x8-rail) and over 16384 GPUs (h100-2048x8-rail), at both granularities.
# Reference point (docs/design.md#performance-targets): ASTRA-sim's analytical backend needs 0.8 s for 1 GiB over 1024
# ranks (congestion-unaware, 2-D) and 3.7-5 s with a 1-D ring.
# Each line: case, simulated time and algorithm (from the --json file), wall time and peak RSS
# (GNU time -v), or "timeout" when a case runs longer than the limit.
# Usage: bench/collective_bench.sh [BUILD_DIR] [--timeout SECONDS] [--skip-step-16384]
#        (defaults: BUILD_DIR build, timeout 1800 s per case).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build"
limit=1800
skip_big_step=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --timeout) limit="$2"; shift 2 ;;
    --skip-step-16384) skip_big_step=1; shift ;;
    *) build="$1"; shift ;;
  esac
done
bin="$build/clustersim"
if [[ ! -x "$bin" ]]; then
  echo "collective_bench: $bin not found; build it first (cmake --build $build --target clustersim)" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "collective_bench: /usr/bin/time (GNU time) is required" >&2
  exit 2
fi
pin=()
if command -v taskset > /dev/null; then pin=(taskset -c 0); fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

run_case() {
  local name="$1" cluster="$2" gpus="$3" gran="$4"
  local log="$tmp/$name.time" out="$tmp/$name.json"
  local rc=0
  timeout "$limit" "${pin[@]}" /usr/bin/time -v "$bin" collective --op allreduce \
    --cluster "$cluster" --gpus "$gpus" -b 1G -e 1G --granularity "$gran" --json "$out" \
    > "$tmp/$name.out" 2> "$log" || rc=$?
  if [[ $rc -eq 124 ]]; then
    printf '%-22s timeout after %s s\n' "$name" "$limit"
    return 0
  fi
  if [[ $rc -ne 0 ]]; then
    echo "$name: clustersim collective failed (exit $rc)" >&2
    cat "$log" >&2
    return 1
  fi
  local wall rss
  wall="$(grep 'Elapsed (wall clock) time' "$log" | awk '{print $NF}')"
  rss="$(grep 'Maximum resident set size' "$log" | awk '{print $NF}')"
  python3 - "$name" "$wall" "$rss" "$out" <<'PY'
import json, sys
name, wall, rss, path = sys.argv[1:5]
parts = [float(x) for x in wall.split(":")]
secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
r = json.load(open(path))["results"][0]
print(f"{name:22s} simulated {r['out_of_place']['time'] / 1e3:8.3f} ms  busbw "
      f"{r['out_of_place']['bus_bw']:7.1f} GB/s  {r['algorithm']}/{r['protocol']} "
      f"flows {r['flows']:>10}  wall {secs:8.2f} s  peak RSS {int(rss) / 1024:7.1f} MiB")
PY
}

echo "# clustersim collective: 1 GiB all-reduce (reference: ASTRA-sim analytical 0.8 s at 1024"
echo "# ranks, congestion-unaware 2-D; 3.7-5 s with a 1-D ring)"
run_case "1024-bulk" h800-128x8-rail 1024 bulk
run_case "1024-step" h800-128x8-rail 1024 step
run_case "16384-bulk" h100-2048x8-rail 16384 bulk
if [[ $skip_big_step -eq 0 ]]; then
  run_case "16384-step" h100-2048x8-rail 16384 step
fi
