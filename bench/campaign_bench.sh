#!/usr/bin/env bash
# Wall time and peak memory of `clustersim campaign`: 1000 Monte Carlo trials of the seed's
# 45-day, 1024-GPU run with faults (target: under 10 s, docs/design.md#performance-targets).
#   - "given-step": scenarios/campaign-seed-before.json with campaign.step_time_s set so that
#     the fault-free run takes exactly 45 days (the Monte Carlo alone);
#   - "simulated-step" (unless --no-sim): the same scenario as shipped, its step times from the
#     step simulator (baseline plus each scripted fault, each simulated once).
# Each line gives the whole command's wall time and peak RSS (GNU time) and the Monte Carlo's
# own time (the JSON's wall_seconds).
# Usage: bench/campaign_bench.sh [BUILD_DIR] [--no-sim]   (default BUILD_DIR: build).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build"
with_sim=1
for arg in "$@"; do
  case "$arg" in
    --no-sim) with_sim=0 ;;
    *) build="$arg" ;;
  esac
done
bin="$build/clustersim"
if [[ ! -x "$bin" ]]; then
  echo "campaign_bench: $bin not found; build it first (cmake --build $build --target clustersim)" >&2
  exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
  echo "campaign_bench: /usr/bin/time (GNU time) is required" >&2
  exit 2
fi
pin=()
if command -v taskset > /dev/null; then pin=(taskset -c 0); fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# 45 days of 3.5T tokens at 1024 x 4096 tokens per step: step = 45 x 86400 / (3.5e12 / 4194304).
python3 - "$here/scenarios/campaign-seed-before.json" "$tmp/given-step.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
tokens_per_step = s["training"]["global_batch"] * s["training"]["seq_len"]
step = 45 * 86400 / (s["training"]["tokens_total"] / tokens_per_step)
s["campaign"]["step_time_s"] = step
s["campaign"]["mfu"] = 0.29
json.dump(s, open(sys.argv[2], "w"), indent=2)
PY

run_case() {
  local name="$1" scenario="$2"
  local log="$tmp/$name.time" out="$tmp/$name.json"
  if ! "${pin[@]}" /usr/bin/time -v "$bin" campaign "$scenario" --trials 1000 --seed 1 \
      --json "$out" > "$tmp/$name.out" 2> "$log"; then
    echo "$name: clustersim campaign failed" >&2
    cat "$tmp/$name.out" "$log" >&2
    return 1
  fi
  local wall rss
  wall="$(grep 'Elapsed (wall clock) time' "$log" | awk '{print $NF}')"
  rss="$(grep 'Maximum resident set size' "$log" | awk '{print $NF}')"
  python3 - "$name" "$wall" "$rss" "$out" <<'PY'
import json, sys
name, wall, rss_kb, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
parts = [float(p) for p in wall.split(":")]
seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
j = json.load(open(out))
print(f"{name}: 1000 trials, fault-free {j['step']['fault_free_days']:.2f} days, "
      f"mean {j['days']['mean']:.2f} days; Monte Carlo {j['wall_seconds']:.3f} s "
      f"(target < 10 s); command {seconds:.2f} s wall, {rss_kb / 1024:.0f} MB peak RSS")
PY
}

run_case given-step "$tmp/given-step.json"
if [[ "$with_sim" == 1 ]]; then
  run_case simulated-step "$here/scenarios/campaign-seed-before.json"
fi
