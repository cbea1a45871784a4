#!/usr/bin/env bash
# Runs a clustersim sweep on a Slurm cluster: one array task per shard, then a dependent job
# that merges the shards, ranks the points and draws the plots.
#
#   tools/slurm/sweep-array.sh SPEC --shards N [options] [-- SWEEP-ARGS...]
#
# options:
#   --shards N          array tasks (the sweep is split with `clustersim sweep --shard I/N`)
#   --out DIR           results directory on a filesystem every node sees
#                       (default: sweep-results/<spec name>); shards write DIR/shard-I,
#                       the merge writes DIR/merged, Slurm logs go to DIR/logs
#   --binary PATH       the clustersim binary (default: build/clustersim next to this script)
#   --cpus-per-task C   CPUs per array task; also the task's --jobs (default 1)
#   --time T            time limit per array task (sbatch --time)
#   --partition P       partition for both jobs
#   --max-parallel M    at most M array tasks at once (--array=1-N%M)
#   --wait              block until the merge job has finished; exit with its status
#   --sbatch ARGS       extra sbatch arguments for both jobs (one string, split on spaces)
#   SWEEP-ARGS          passed to every `clustersim sweep` (e.g. --evaluate check)
#
# Resuming: submit the same command again. Every shard skips the points it has recorded
# (results are keyed by a hash of the resolved scenario), so only unfinished work reruns; a
# task stopped by its time limit (SIGTERM) keeps what it had finished.
#
# The script submits itself: inside the jobs it is called as `sweep-array.sh task ...` and
# `sweep-array.sh merge ...` (internal modes).
set -euo pipefail

usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; }

die() { echo "sweep-array: $*" >&2; exit 2; }

abspath() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }

task_mode() {
  # task BINARY SPEC SHARDS OUT JOBS [SWEEP-ARGS...]
  local binary=$1 spec=$2 shards=$3 out=$4 jobs=$5
  shift 5
  local id=${SLURM_ARRAY_TASK_ID:?task mode runs inside a Slurm array job}
  echo "sweep-array: shard $id/$shards on $(hostname) with $jobs jobs"
  exec "$binary" sweep "$spec" --shard "$id/$shards" --out "$out/shard-$id" --jobs "$jobs" \
    --no-plots "$@"
}

merge_mode() {
  # merge BINARY SHARDS OUT
  local binary=$1 shards=$2 out=$3 missing=() parts=()
  for i in $(seq 1 "$shards"); do
    local d="$out/shard-$i"
    if [ ! -f "$d/results.jsonl" ]; then
      missing+=("$i (no results)")
      continue
    fi
    # A shard that finished its points rewrote its results and removed its work folder.
    [ -d "$d/.points" ] && missing+=("$i (unfinished)")
    parts+=("$d")
  done
  [ ${#parts[@]} -gt 0 ] || { echo "sweep-array: no shard produced results" >&2; exit 1; }
  "$binary" sweep merge "$out/merged" "${parts[@]}"
  if [ ${#missing[@]} -gt 0 ]; then
    echo "sweep-array: incomplete shards: ${missing[*]}; submit the same command again to" \
         "finish them (finished points are not redone)" >&2
    exit 1
  fi
}

case "${1:-}" in
  task) shift; task_mode "$@" ;;
  merge) shift; merge_mode "$@"; exit $? ;;
  ""|-h|--help) usage; exit 0 ;;
esac

spec=$1
shift
shards="" out="" binary="" cpus=1 time_limit="" partition="" max_parallel="" wait=0 extra=""
sweep_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shards) shards=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --binary) binary=${2:?}; shift 2 ;;
    --cpus-per-task) cpus=${2:?}; shift 2 ;;
    --time) time_limit=${2:?}; shift 2 ;;
    --partition) partition=${2:?}; shift 2 ;;
    --max-parallel) max_parallel=${2:?}; shift 2 ;;
    --wait) wait=1; shift ;;
    --sbatch) extra=${2:?}; shift 2 ;;
    --) shift; sweep_args=("$@"); break ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -f "$spec" ] || die "no sweep file $spec"
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || die "--shards N is required (a positive integer)"
[[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "--cpus-per-task must be a positive integer"
command -v sbatch >/dev/null || die "sbatch not found (is this a Slurm login node?)"
here=$(cd "$(dirname "$0")" && pwd)
[ -n "$binary" ] || binary="$here/../../build/clustersim"
[ -x "$binary" ] || die "no clustersim binary at $binary (build it or pass --binary)"
binary=$(abspath "$binary")
spec=$(abspath "$spec")
script=$(abspath "$0")

# Validate the sweep file before anything is queued (bad input: exit 2 with the message).
"$binary" sweep "$spec" --dry-run "${sweep_args[@]}" >/dev/null || die "the sweep file is invalid"
name=$(basename "$spec" .json)
[ -n "$out" ] || out="sweep-results/$name"
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)

common=(--parsable)
[ -n "$partition" ] && common+=(--partition "$partition")
# shellcheck disable=SC2206  # extra arguments are split on spaces on purpose
[ -n "$extra" ] && common+=($extra)
array="1-$shards"
[ -n "$max_parallel" ] && array="$array%$max_parallel"
task_opts=(--job-name "sweep-$name" --array "$array" --cpus-per-task "$cpus"
           --output "$out/logs/shard-%a.out")
[ -n "$time_limit" ] && task_opts+=(--time "$time_limit")

array_id=$(sbatch "${common[@]}" "${task_opts[@]}" \
  "$script" task "$binary" "$spec" "$shards" "$out" "$cpus" "${sweep_args[@]}")
array_id=${array_id%%;*}
echo "sweep-array: submitted array job $array_id ($shards shards of $spec)"

# afterany: the merge runs even when a shard failed or hit its time limit, and says so.
merge_opts=(--job-name "sweep-$name-merge" --dependency "afterany:$array_id" --ntasks 1
            --output "$out/logs/merge.out")
if [ "$wait" -eq 1 ]; then
  echo "sweep-array: waiting for the merge job"
  set +e
  sbatch "${common[@]}" --wait "${merge_opts[@]}" "$script" merge "$binary" "$shards" "$out" \
    >/dev/null
  rc=$?
  set -e
  cat "$out/logs/merge.out" 2>/dev/null || true
  echo "sweep-array: merge finished with status $rc; results in $out/merged"
  exit $rc
fi
merge_id=$(sbatch "${common[@]}" "${merge_opts[@]}" "$script" merge "$binary" "$shards" "$out")
echo "sweep-array: submitted merge job ${merge_id%%;*} (after $array_id); results will be in" \
     "$out/merged, logs in $out/logs"
