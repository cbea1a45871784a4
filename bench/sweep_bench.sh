#!/usr/bin/env bash
# Wall time of the seed's layout sweep (sweeps/seed-1024-layouts.json: Llama 2 70B on 1024
# H800, every dp/tp/pp/vpp/micro-batch/ZeRO combination) with two evaluations at a time, and
# the CPU time of the whole process tree (GNU time counts the waited-for children), from
# which the wall time on two otherwise idle cores is CPU / 2.
# Usage: bench/sweep_bench.sh [BUILD_DIR] [OUT_DIR]   (defaults: build, a fresh temporary dir;
# an existing OUT_DIR resumes, which is not a benchmark).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
out="${2:-$(mktemp -d "${TMPDIR:-/tmp}/sweep-bench-XXXXXX")}"
bin="$build/clustersim"
[[ -x "$bin" ]] || { echo "sweep_bench: $bin not found; build it first" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "sweep_bench: /usr/bin/time (GNU time) is required" >&2; exit 2; }

/usr/bin/time -f "sweep_bench: wall %e s, user %U s, sys %S s, peak RSS %M KiB (largest process)" \
  "$bin" sweep "$here/sweeps/seed-1024-layouts.json" --jobs 2 --out "$out" --no-plots -q
echo "sweep_bench: results in $out"
