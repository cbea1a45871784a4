#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, ASan + UBSan) and runs each for a fixed time, then the
# CLI mutation driver (fuzz/mutate_cli.py) on `check`, `run` and `campaign`. Exit status 1 when
# anything was found (crash, leak, UB, hang, over-memory, unnamed error, wrongly accepted).
#   fuzz/run.sh                      the smoke budget (10 s per target, 40 + 2 + 2 CLI inputs)
#   fuzz/run.sh --nightly            10 min per target, 20,000 check + 500 run + 200 campaign
#   fuzz/run.sh --seconds 60 --check 2000 --run 50 --campaign 20 --seed 7
# Needs clang-14 and libclang-rt-14-dev (tools/dev fuzz installs them) and build/clustersim.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=10
CHECK=40
RUN=2
CAMPAIGN=2
SEED=1
JOBS=${JOBS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    --nightly) SECONDS_PER_TARGET=600; CHECK=20000; RUN=500; CAMPAIGN=200 ;;
    --seconds) SECONDS_PER_TARGET=$2; shift ;;
    --check) CHECK=$2; shift ;;
    --run) RUN=$2; shift ;;
    --campaign) CAMPAIGN=$2; shift ;;
    --seed) SEED=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    *) echo "usage: fuzz/run.sh [--nightly] [--seconds N] [--check N] [--run N]" \
            "[--campaign N] [--seed S] [--jobs J]" >&2; exit 2 ;;
  esac
  shift
done

OUT=build-fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S fuzz -B "$OUT" -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" >/dev/null
cmake --build "$OUT" -j "$JOBS"
cmake --build build --target clustersim -j "$JOBS" >/dev/null

# Seed corpora from the shipped files; dictionaries from the parsers' own sources.
rm -rf "$OUT/seeds" "$OUT/artifacts"
mkdir -p "$OUT/seeds/scenario" "$OUT/seeds/nccl" "$OUT/seeds/gemm" "$OUT/artifacts"
cp scenarios/*.json "$OUT/seeds/scenario/"
python3 - "$OUT/seeds/scenario" <<'PY'
import json, sys
sys.path.insert(0, "fuzz")
import mutate_cli
for i, (name, doc) in enumerate(mutate_cli.seeds("check") + mutate_cli.seeds("campaign")):
    with open(f"{sys.argv[1]}/seed-{i}-{name}.json", "w") as f:
        json.dump(doc, f, indent=1)
PY
cp validation/data/nccl-tests/* "$OUT/seeds/nccl/"
for f in tests/validation/data/*; do cp "$f" "$OUT/seeds/nccl/test-$(basename "$f")"; done
cp validation/data/gemm/*.json "$OUT/seeds/gemm/"
python3 fuzz/make_dict.py input/*.cpp campaign/campaign_config.cpp >"$OUT/scenario.dict"
{ cat fuzz/nccl_tests.dict; python3 fuzz/make_dict.py validation/nccl_tests_log.cpp; } \
  >"$OUT/nccl.dict"
python3 fuzz/make_dict.py validation/gemm_log.cpp >"$OUT/gemm.dict"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
summary="$OUT/summary.txt"
: >"$summary"
fuzz_target() {  # NAME SEEDS DICT
  local name=$1 seeds=$2 dict=$3 log="$OUT/$1.log" rc=0
  mkdir -p "$OUT/corpus/$name"
  "$OUT/$name" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -dict="$dict" -print_final_stats=1 \
    -artifact_prefix="$OUT/artifacts/$name-" "$OUT/corpus/$name" "$seeds" >"$log" 2>&1 || rc=$?
  local runs speed rss
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  printf '%-22s %4ss %10s inputs %7s exec/s  peak %5s MB  %s\n' "$name" "$SECONDS_PER_TARGET" \
    "${runs:-?}" "${speed:-?}" "${rss:-?}" "$([ $rc -eq 0 ] && echo ok || echo "FOUND (exit $rc, $log)")" \
    | tee -a "$summary"
  [ $rc -eq 0 ] || status=1
}
fuzz_target fuzz_scenario_loader "$OUT/seeds/scenario" "$OUT/scenario.dict"
fuzz_target fuzz_nccl_tests_log "$OUT/seeds/nccl" "$OUT/nccl.dict"
fuzz_target fuzz_gemm_log "$OUT/seeds/gemm" "$OUT/gemm.dict"

rm -rf "$OUT/cli"
python3 fuzz/mutate_cli.py --binary build/clustersim --check "$CHECK" --run "$RUN" \
  --campaign "$CAMPAIGN" --seed "$SEED" --jobs "$JOBS" --out "$OUT/cli" | tee -a "$summary" \
  || status=1
exit $status
