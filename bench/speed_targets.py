#!/usr/bin/env python3
"""Every speed target of the project in one table: wall time, CPU time and peak memory of each
case, against its target (bench/README.md lists the targets and where they come from).

Usage: bench/speed_targets.py [--build DIR] [--skip NAME ...] [--only NAME ...] [--timeout S]

Cases (NAME):
  sweep        clustersim sweep sweeps/seed-1024-layouts.json --jobs 2      < 120 s
  run-1024     clustersim run on every shipped 1024-GPU scenario, each      < 1 s, < 300 MB
  run-16384    clustersim run scenarios/llama3-405b-16384.json               < 5 s
  run-131072   the same layout on 131072 GPUs (an inline 16384 x 8 cluster,
               dp and global batch x 8: the same micro-batches per step)     < 60 s, < 4 GB
  micro-1e5    the default scenario at 10^5 micro-batches against 16         memory < 2x
  validate     clustersim validate --suite published-runs (the whole suite)  < 60 s
  regress      clustersim regress --baseline regress/baseline.json           < 5 s
  collective   clustersim collective allreduce 1 GiB on 1024 GPUs,
               --granularity step                                            < 10 s

Each case runs under GNU time (/usr/bin/time -v) in a temporary directory. On a machine shared
with other work, CPU time (user + sys) is the steadier figure; wall time is what the targets
state. A case that runs past --timeout (default 1800 s) is reported as such. Needs Python 3 and
GNU time; the tool is taken from BUILD/clustersim (build it first).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd, cwd, timeout):
    """Runs `cmd` under GNU time; returns (exit code or 'timeout', wall s, cpu s, peak MB)."""
    log = Path(cwd) / "time.log"
    start = time.monotonic()
    try:
        proc = subprocess.run(["/usr/bin/time", "-v", "-o", str(log)] + cmd, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, None, None
    wall = time.monotonic() - start
    fields = {}
    for line in log.read_text().splitlines():
        key, _, value = line.strip().rpartition(": ")
        fields[key] = value
    cpu = float(fields["User time (seconds)"]) + float(fields["System time (seconds)"])
    rss_mb = int(fields["Maximum resident set size (kbytes)"]) * 1024 / 1e6
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr)
    return proc.returncode, wall, cpu, rss_mb


def scenario_with(path, out, change):
    doc = json.loads(Path(path).read_text())
    change(doc)
    Path(out).write_text(json.dumps(doc))
    return str(out)


def cluster_131072(doc):
    cluster = json.loads((ROOT / "topologies/clusters/h100-2048x8-rail.json").read_text())
    cluster["name"] = "h100-16384x8-rail"
    cluster["nodes"] = 16384
    doc["cluster"] = cluster
    doc["gpus"] = 131072
    par = doc["parallelism"]
    old_dp = par.get("dp") or doc["gpus"] // (par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1))
    par["dp"] = 131072 // (par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1))
    # The same micro-batches per step: the global batch grows with the data-parallel size.
    doc["training"]["global_batch"] = doc["training"]["global_batch"] * par["dp"] // old_dp


def micro_batches(n):
    def change(doc):
        par = doc["parallelism"]
        dp = par.get("dp") or doc["gpus"] // (par.get("tp", 1) * par.get("pp", 1))
        doc["training"]["global_batch"] = dp * doc["training"].get("micro_batch", 1) * n
    return change


def cases(binary, work):
    tool = str(binary)
    yield ("sweep", "wall < 120 s",
           [[tool, "sweep", str(ROOT / "sweeps/seed-1024-layouts.json"), "--jobs", "2",
             "--out", str(work / "sweep"), "--no-plots", "-q"]],
           lambda r: r[0][1] < 120)
    for path in sorted((ROOT / "scenarios").glob("*.json")):
        if json.loads(path.read_text()).get("gpus") == 1024:
            yield ("run-1024 " + path.stem, "wall < 1 s, peak < 300 MB",
                   [[tool, "run", str(path), "--quiet"]],
                   lambda r: r[0][1] < 1 and r[0][3] < 300)
    yield ("run-16384", "wall < 5 s",
           [[tool, "run", str(ROOT / "scenarios/llama3-405b-16384.json"), "--quiet"]],
           lambda r: r[0][1] < 5)
    big = scenario_with(ROOT / "scenarios/llama3-405b-16384.json", work / "llama-131072.json",
                        cluster_131072)
    yield ("run-131072", "wall < 60 s, peak < 4 GB", [[tool, "run", big, "--quiet"]],
           lambda r: r[0][1] < 60 and r[0][3] < 4000)
    seed = ROOT / "scenarios/seed-optimized-1024.json"
    many = scenario_with(seed, work / "seed-1e5.json", micro_batches(100000))
    sixteen = scenario_with(seed, work / "seed-16.json", micro_batches(16))
    yield ("micro-1e5", "peak(10^5) < 2 x peak(16)",
           [[tool, "run", many, "--quiet"], [tool, "run", sixteen, "--quiet"]],
           lambda r: r[0][3] < 2 * r[1][3])
    yield ("validate", "wall < 60 s", [[tool, "validate", "--suite", "published-runs", "--quiet"]],
           lambda r: r[0][1] < 60)
    yield ("regress", "wall < 5 s",
           [[tool, "regress", "--baseline", str(ROOT / "regress/baseline.json")]],
           lambda r: r[0][1] < 5)
    yield ("collective", "wall < 10 s",
           [[tool, "collective", "--op", "allreduce", "--gpus", "1024", "-b", "1G", "-e", "1G",
             "--granularity", "step"]],
           lambda r: r[0][1] < 10)


def cell(x, fmt):
    return "-" if x is None else fmt.format(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--skip", nargs="*", default=[], help="case names to leave out")
    parser.add_argument("--only", nargs="*", default=[], help="run only these cases")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    binary = Path(args.build) / "clustersim"
    if not binary.is_file() or not shutil.which("/usr/bin/time"):
        sys.exit(f"speed_targets: needs {binary} (build it first) and GNU time (/usr/bin/time)")
    print("| case | target | wall | CPU | peak | met |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, target, commands, met in cases(binary.resolve(), work):
            family = name.split()[0]
            if family in args.skip or (args.only and family not in args.only):
                continue
            results = [timed(c, tmp, args.timeout) for c in commands]
            failed = [r for r in results if r[0] not in (0, 1)]
            for r in results:
                verdict = ("timeout" if r[0] == "timeout" else f"exit {r[0]}") if failed else (
                    "yes" if met(results) else "no")
                print(f"| {name} | {target} | {cell(r[1], '{:.2f} s')} | {cell(r[2], '{:.2f} s')} "
                      f"| {cell(r[3], '{:.0f} MB')} | {verdict} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
