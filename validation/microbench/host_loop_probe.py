#!/usr/bin/env python3
"""host_loop_probe: the host's cost per rank of DeepSpeed 2021's ZeRO-3 parameter gather.

DeepSpeed v0.3.13 .. v0.5.4 gathers every parameter tensor with `_allgather_param`
(deepspeed/runtime/zero/partition_parameters.py): after torch.cuda.synchronize() it builds the
list of per-rank views that torch.distributed.all_gather fills, one Python iteration per rank:

    for i in range(world_size):
        partitions.append(flat_tensor.narrow(0, partition_size * i, partition_size))
        if i == torch.distributed.get_rank(group=ds_process_group):
            ...

Parameters under stage3_param_persistence_threshold (1e5 elements: norms, biases) are not
gathered per use; after each optimizer step `_allgather_params` gathers them all at once and
copies each one out of the gathered partitions in a second Python loop, one `narrow`, `view`,
`narrow` and `copy_` per parameter and rank holding part of it (timed too, per iteration).

The GPU is idle while this runs (the synchronize came before it and the all-gather is issued
after it), so at a thousand ranks it is milliseconds per tensor. The loop touches no GPU: it is
timed here on the CPU, with a one-rank gloo process group made by new_group as Megatron-LM's data
parallel group is, on flat FP16 tensors of 320 elements per rank. It also times the two calls
of the loop body alone, and a tiny `copy_` (PyTorch's dispatch of a copy, without the CUDA
driver's cudaMemcpyAsync), for reference.

Usage: host_loop_probe.py -o host-loop.json [--ranks 8,64,640,2240] [--repeats 200]
Needs PyTorch (any build; Debian's python3-torch works). Writes one JSON document, atomically.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.distributed as dist

from torch_probe import cpu_model

PARTITION_ELEMENTS = 320


def per_rank_us(fn, ranks, repeats):
    """Median over `repeats` timings of fn(), per rank, in microseconds."""
    for _ in range(20):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / ranks / 1e3)
    return statistics.median(samples)


def partition_loop(flat, ranks, group):
    partitions = []
    for i in range(ranks):
        partitions.append(flat.narrow(0, PARTITION_ELEMENTS * i, PARTITION_ELEMENTS))
        if i == dist.get_rank(group=group):
            pass
    return partitions


def coalesced_copy_loop(partitions, replicated, ranks, param_partition_size, param_size,
                        param_offset):
    """_allgather_params' copy of one parameter out of the gathered partitions, rank by rank."""
    for i in range(ranks):
        param_start = i * param_partition_size
        if param_start < param_size:
            numel_to_copy = min(param_size - param_start, param_partition_size)
            part_to_copy = partitions[i].narrow(0, param_offset, numel_to_copy)
            replicated.view(-1).narrow(0, param_start, numel_to_copy).copy_(part_to_copy)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--ranks", default="8,64,640,2240")
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    ranks_list = [int(r) for r in args.ranks.split(",")]

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    group = dist.new_group([0])
    torch.set_num_threads(1)

    loop = {}
    for ranks in ranks_list:
        flat = torch.zeros(ranks * PARTITION_ELEMENTS, dtype=torch.float16)
        loop[str(ranks)] = round(
            per_rank_us(lambda: partition_loop(flat, ranks, group), ranks, args.repeats), 3)

    # _allgather_params (the once-a-step gather of the persistent parameters): one parameter of
    # 12288 elements (a LayerNorm weight at h = 12288) among the stage's persistent ones.
    coalesced = {}
    param_size = 12288
    for ranks in ranks_list:
        param_partition_size = -(-param_size // ranks)
        flat = torch.zeros(ranks * 8 * param_partition_size, dtype=torch.float16)
        partitions = [flat.narrow(0, 8 * param_partition_size * i, 8 * param_partition_size)
                      for i in range(ranks)]
        replicated = torch.empty(param_size, dtype=torch.float16)
        holding = -(-param_size // param_partition_size)
        coalesced[str(ranks)] = round(
            per_rank_us(lambda: coalesced_copy_loop(partitions, replicated, ranks,
                                                    param_partition_size, param_size, 0),
                        holding, args.repeats), 3)

    n = 1000
    flat = torch.zeros(n * PARTITION_ELEMENTS, dtype=torch.float16)
    narrow = per_rank_us(
        lambda: [flat.narrow(0, PARTITION_ELEMENTS * i, PARTITION_ELEMENTS) for i in range(n)], n,
        args.repeats)
    get_rank = per_rank_us(lambda: [dist.get_rank(group=group) for _ in range(n)], n,
                           args.repeats)
    src = torch.zeros(PARTITION_ELEMENTS, dtype=torch.float16)
    dst = torch.empty_like(src)
    copy = per_rank_us(lambda: [dst.copy_(src, non_blocking=True) for _ in range(n)], n,
                       args.repeats)

    doc = {
        "format": "clustersim-host-loop-probe/1",
        "tool": "validation/microbench/host_loop_probe.py",
        "environment": {
            "cpu": cpu_model(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
        },
        "partition_elements": PARTITION_ELEMENTS,
        "repeats": args.repeats,
        "partition_loop_us_per_rank": loop,
        "coalesced_copy_loop_us_per_rank": coalesced,
        "narrow_us": round(narrow, 3),
        "get_rank_group_us": round(get_rank, 3),
        "tiny_cpu_copy_us": round(copy, 3),
    }
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.output)
    json.dump(doc, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
