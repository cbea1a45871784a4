#!/usr/bin/env bash
# Integration test: a single-node Slurm cluster on this machine runs a small sweep as a job
# array through tools/slurm/sweep-array.sh, then the dependent merge job joins the shards.
# The merged results must equal an unsharded run of the same sweep.
#
#   test_slurm_sweep.sh CLUSTERSIM_BINARY SOURCE_DIR
#
# Exit 77 (ctest: skipped) when Slurm is not installed and cannot be installed here, unless
# CLUSTERSIM_REQUIRE_SLURM=1 (CI), where that is a failure.
set -euo pipefail
binary=$1
source_dir=$2
setup="$source_dir/tools/slurm/setup-local-slurm.sh"
spec="$source_dir/tests/sweep/data/tiny-sweep.json"

skip() {
  if [ "${CLUSTERSIM_REQUIRE_SLURM:-0}" = 1 ]; then
    echo "FAIL: $* (CLUSTERSIM_REQUIRE_SLURM=1)" >&2
    exit 1
  fi
  echo "SKIP: $*" >&2
  exit 77
}

rc=0
"$setup" install || rc=$?
[ $rc -eq 0 ] || skip "Slurm is not installed and cannot be installed here"

work=$(mktemp -d "${TMPDIR:-/tmp}/clustersim-slurm-XXXXXX")
cleanup() {
  "$setup" stop "$work/slurm" || true
  rm -rf "$work"
}
trap cleanup EXIT

rc=0
start_out=$("$setup" start "$work/slurm") || rc=$?
[ $rc -ne 77 ] || skip "the local Slurm cannot start here (not root)"
[ $rc -eq 0 ] || { echo "FAIL: the local Slurm did not start" >&2; exit 1; }
eval "$start_out"
echo "local Slurm up: $SLURM_CONF"

# 3 shards of the 48-point sweep, evaluated with the fast analytic evaluator.
"$source_dir/tools/slurm/sweep-array.sh" "$spec" --shards 3 --out "$work/results" \
  --binary "$binary" --wait -- --evaluate check

"$binary" sweep "$spec" --evaluate check --jobs 2 --quiet --out "$work/local"

fail=0
for i in 1 2 3; do
  [ -f "$work/results/logs/shard-$i.out" ] || { echo "FAIL: no log of array task $i" >&2; fail=1; }
  grep -q "shard $i/3" "$work/results/logs/shard-$i.out" \
    || { echo "FAIL: array task $i did not run shard $i/3" >&2; fail=1; }
done
if ! cmp -s "$work/results/merged/results.jsonl" "$work/local/results.jsonl"; then
  echo "FAIL: merged results differ from the unsharded sweep" >&2
  diff <(cut -c1-200 "$work/results/merged/results.jsonl") <(cut -c1-200 "$work/local/results.jsonl") | head -20 >&2 || true
  fail=1
fi
lines=$(wc -l < "$work/results/merged/results.jsonl")
[ "$lines" -eq 48 ] || { echo "FAIL: $lines merged records, expected 48" >&2; fail=1; }
[ $fail -eq 0 ] && echo "PASS: 3 array tasks + merge job = the unsharded sweep ($lines points)"
exit $fail
