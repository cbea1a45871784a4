#!/usr/bin/env bash
# Wall time and peak memory of `clustersim run` (one simulated training step):
#   - the default scenario (seed-optimized-1024: DP 64 x TP 8 x PP 2, 1024 GPUs),
#     target < 1 s wall on one core and < 300 MB (docs/design.md#performance-targets);
#   - Llama 3 405B at 16384 GPUs (scenarios/llama3-405b-16384.json), target: completes
#     in under 30 s (docs/design.md#performance-targets sets 5 s for a 16384-GPU step).
# Usage: bench/step_bench.sh [BUILD_DIR]   (default: build). Needs GNU time (/usr/bin/time -v).
# Runs pinned to one core with taskset when available. Prints one line per case.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
bin="$build/clustersim"
if [[ ! -x "$bin" ]]; then
  echo "step_bench: $bin not found; build it first (cmake --build $build --target clustersim)" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "step_bench: /usr/bin/time (GNU time) is required" >&2
  exit 2
fi
pin=()
if command -v taskset > /dev/null; then pin=(taskset -c 0); fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

run_case() {
  local name="$1" scenario="$2"
  local log="$tmp/$name.time" out="$tmp/$name.json"
  if ! "${pin[@]}" /usr/bin/time -v "$bin" run "$scenario" --json "$out" > "$tmp/$name.out" 2> "$log"; then
    echo "$name: clustersim run failed" >&2
    cat "$tmp/$name.out" "$log" >&2
    return 1
  fi
  local wall rss user sys
  wall="$(grep 'Elapsed (wall clock) time' "$log" | awk '{print $NF}')"
  rss="$(grep 'Maximum resident set size' "$log" | awk '{print $NF}')"
  user="$(grep 'User time (seconds)' "$log" | awk '{print $NF}')"
  sys="$(grep 'System time (seconds)' "$log" | awk '{print $NF}')"
  python3 - "$name" "$wall" "$rss" "$user" "$sys" "$out" <<'PY'
import json, sys
name, wall, rss, user, syst, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
parts = [float(x) for x in wall.split(":")]
secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
r = json.load(open(path))
# On a shared machine wall time includes waiting for the core; CPU time (user + sys) does not.
print(f"{name}: wall {secs:.2f} s, CPU {user + syst:.2f} s (user {user:.2f} + sys {syst:.2f}), "
      f"peak RSS {rss / 1024:.0f} MB; step {r['step_time_s']:.3f} s, MFU {100 * r['mfu']:.1f} %, "
      f"{r['collectives']} collectives, {r['flows']} flows")
PY
}

run_case seed-optimized-1024 "$here/scenarios/seed-optimized-1024.json"
run_case llama3-405b-16384 "$here/scenarios/llama3-405b-16384.json"
