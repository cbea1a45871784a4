#!/usr/bin/env bash
# One GPU's measurements for the calibration, in one go (about three minutes on an H100/H200):
# gemm_sweep on the GEMMs of three layer shapes (random inputs, and zeros for one of them),
# torch_probe.py, and nvidia-smi's clocks and power sampled every 250 ms throughout.
#
# Usage: validation/microbench/probe_gpu.sh OUT_DIR [GEMM_SWEEP]
# GEMM_SWEEP is a built gemm_sweep; without it the script builds one with nvcc.
set -u
out=${1:?usage: probe_gpu.sh OUT_DIR [GEMM_SWEEP]}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
sweep=${2:-}
if [ -z "$sweep" ]; then
  sweep=$(mktemp -d)/gemm_sweep
  nvcc -O3 -std=c++17 -arch=sm_90 -o "$sweep" "$here/gemm_sweep.cu" -lcublasLt || exit 1
fi
nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv -lms 250 > "$out/nvidia-smi.csv" 2>&1 &
smi=$!
llama70b="--hidden 8192 --ffn 28672 --heads 64 --kv-heads 8 --vocab 128256 --seq 8192 --tp 8 --gated"
"$sweep" $llama70b --square --dtypes bf16,fp8 -o "$out/gemm-llama3-70b-tp8.json"
"$sweep" $llama70b --square --dtypes bf16 --fill zeros -o "$out/gemm-llama3-70b-tp8-zeros.json"
"$sweep" --hidden 12288 --ffn 49152 --heads 96 --vocab 51200 --seq 2048 --tp 8 --dtypes bf16 \
  -o "$out/gemm-gpt3-175b-tp8.json"
"$sweep" --hidden 4096 --ffn 14336 --heads 32 --kv-heads 8 --vocab 128256 --seq 8192 --tp 1 \
  --gated --dtypes bf16,fp8 -o "$out/gemm-llama3-8b-tp1.json"
PYTHONUNBUFFERED=1 python3 "$here/torch_probe.py" -o "$out/torch-probe.json"
kill "$smi"
