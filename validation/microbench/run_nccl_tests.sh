#!/usr/bin/env bash
# Runs NVIDIA nccl-tests on a real GPU cluster and keeps everything `clustersim calibrate` needs:
# the raw text log of each run (with the preamble, device list and NCCL INFO version line) and
# the -J JSON file, inside one node and, when hosts are given, across nodes with mpirun.
#
#   validation/microbench/run_nccl_tests.sh [-t NCCL_TESTS_BUILD_DIR] [-o OUT_DIR]
#        [-g GPUS_PER_NODE] [-H host1,host2,...] [-b MIN] [-e MAX] [-n ITERS] [-w WARMUP]
#        [-x NCCL_VAR=value ...]
#
# Collectives: all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
# sendrecv_perf. The intra-node runs use one process with -g GPUS_PER_NODE; the inter-node runs
# use mpirun with one process per GPU (-np nodes×GPUs, -g 1), as NVIDIA's nccl-tests README shows.
# Then:  clustersim calibrate --nccl OUT_DIR/*.log -o calib.json
# nccl-tests itself: https://github.com/NVIDIA/nccl-tests (make MPI=1 for the multi-node runs).
set -euo pipefail

tests_dir=${NCCL_TESTS_DIR:-./nccl-tests/build}
out_dir=nccl-results-$(date -u +%Y%m%dT%H%M%SZ)
gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 8)
hosts=""
min_bytes=8
max_bytes=8G
iters=20
warmup=5
nccl_env=()

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
while getopts "t:o:g:H:b:e:n:w:x:h" opt; do
  case $opt in
    t) tests_dir=$OPTARG ;;
    o) out_dir=$OPTARG ;;
    g) gpus=$OPTARG ;;
    H) hosts=$OPTARG ;;
    b) min_bytes=$OPTARG ;;
    e) max_bytes=$OPTARG ;;
    n) iters=$OPTARG ;;
    w) warmup=$OPTARG ;;
    x) nccl_env+=("$OPTARG") ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[ "$gpus" -ge 1 ] || { echo "no GPUs found; pass -g" >&2; exit 2; }
collectives=(all_reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf sendrecv_perf)
for c in "${collectives[@]}"; do
  [ -x "$tests_dir/$c" ] || { echo "missing $tests_dir/$c (build nccl-tests, or pass -t)" >&2; exit 2; }
done
mkdir -p "$out_dir"

# Provenance lines that clustersim's parser reads ("# clustersim-env KEY=VALUE").
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
cuda=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || true)
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
header() {
  echo "# clustersim-env date=$date_utc"
  echo "# clustersim-env driver=$driver"
  [ -n "$cuda" ] && echo "# clustersim-env cuda=$cuda"
  echo "# clustersim-env host=$(hostname)"
  echo "# command: $*"
}

# NCCL_DEBUG=VERSION makes NCCL print "NCCL version X.Y.Z+cudaA.B" once (the parser keeps it).
export NCCL_DEBUG=${NCCL_DEBUG:-VERSION}
for kv in "${nccl_env[@]}"; do export "${kv?}"; done

run() {  # run NAME COMMAND...
  local name=$1
  shift
  local log="$out_dir/$name.log"
  echo "== $name"
  { header "$@"; "$@" 2>&1; } | tee "$log"
}

common=(-b "$min_bytes" -e "$max_bytes" -f 2 -n "$iters" -w "$warmup")

# Inside one node: one process drives all GPUs.
for c in "${collectives[@]}"; do
  run "${c}.intra.${gpus}gpu" "$tests_dir/$c" "${common[@]}" -g "$gpus" \
      -J "$out_dir/${c}.intra.${gpus}gpu.json"
done

# Across nodes: one MPI process per GPU.
if [ -n "$hosts" ]; then
  IFS=, read -r -a host_list <<<"$hosts"
  nodes=${#host_list[@]}
  np=$((nodes * gpus))
  host_arg=$(printf "%s:$gpus," "${host_list[@]}")
  host_arg=${host_arg%,}
  mpi_env=(-x NCCL_DEBUG -x LD_LIBRARY_PATH -x PATH)
  for kv in "${nccl_env[@]}"; do mpi_env+=(-x "${kv%%=*}"); done
  for c in "${collectives[@]}"; do
    run "${c}.inter.${nodes}x${gpus}" mpirun -np "$np" -H "$host_arg" --bind-to none \
        "${mpi_env[@]}" "$tests_dir/$c" "${common[@]}" -g 1 \
        -J "$out_dir/${c}.inter.${nodes}x${gpus}.json"
  done
  # A ring-only all-reduce isolates the network (NVIDIA's advice in nccl-tests#290).
  run "all_reduce_perf.inter.${nodes}x${gpus}.ring" mpirun -np "$np" -H "$host_arg" \
      --bind-to none "${mpi_env[@]}" -x NCCL_ALGO=Ring "$tests_dir/all_reduce_perf" \
      "${common[@]}" -g 1 -J "$out_dir/all_reduce_perf.inter.${nodes}x${gpus}.ring.json"
fi

echo "logs and JSON in $out_dir; next: clustersim calibrate --nccl $out_dir/*.log -o calib.json"
