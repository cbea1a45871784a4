#!/usr/bin/env python3
"""Structure-aware mutation driver for the clustersim command line (Python 3, standard library).

It builds scenarios from the shipped ones (and small ones that simulate in about a second),
mutates them the way a generator or a hurried user would (numbers at the edges of every range,
wrong types, unknown and duplicate keys, deep nesting, truncation, trailing bytes, presets
written inline and then mutated), runs `clustersim check`, `run` and `campaign` on them and
classifies every outcome:

  crash             killed by a signal, or a sanitizer report
  hang              still running at the time limit
  over-memory       resident memory above the limit, or the tool ran out of memory
  unnamed-error     exit 2 whose message does not name the file and a JSON path (FILE:/...),
                    or exit 3/4 on bad input (those codes mean environment or internal error)
  wrongly-accepted  exit 0 or 1 on an input that is invalid by construction
  ok                anything else

Every input is a function of (--seed, tool, index), so a run is reproducible and a finding is
replayed with the same command; findings are saved under --out with the command and output.
fuzz/README.md describes the mutations and the budgets CI and the nightly job use.
"""

import argparse
import concurrent.futures
import copy
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Limits per invocation: (seconds, resident MiB). A valid small scenario runs in about a second.
LIMITS = {"check": (30, 1024), "run": (120, 3072), "campaign": (120, 2048)}
# Address space each child may map: a runaway allocation fails there instead of taking the
# machine down (SimGrid reserves actor stacks as virtual memory, hence the margin).
ADDRESS_SPACE_MIB = 16384

INT_KEYS = {
    "gpus", "dp", "tp", "pp", "cp", "vpp", "zero_stage", "global_batch", "micro_batch",
    "seq_len", "recompute_layers", "proj_fprop", "fc2_fprop", "num_layers", "hidden_size",
    "num_attention_heads", "num_kv_heads", "ffn_hidden_size", "vocab_size", "max_seq_len",
    "nodes", "gpus_per_node", "nics_per_node", "nodes_per_leaf", "sm_count", "trials", "seed",
    "trace_trial", "rank", "node", "outlier_min_tokens", "skip_batches", "max_tokens",
    "min_loss_mask_tokens", "empty_cache_every_steps", "layers_per_stage",
}
# Physical quantities for which 1e-308 is as absurd as a negative value.
TINY_REJECT = re.compile(r"(_GBps|_Gbps|_TBps|_GB|_MiB|_min)$|^(bf16|fp16|fp32|tf32|fp8)$")
STRINGS = ["", "x", "bf16", "fp8", "none", "full", "1f1b", "gpipe", "interleaved", "llama3",
           "fixed", "young", "async", "ring", "Ring", "h800-sxm", "llama3-8b", "\u00e9\u2603"]

SMALL = {
    "tp8": {"name": "tp8", "model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 8,
            "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": True},
            "training": {"global_batch": 4, "micro_batch": 1, "seq_len": 2048}},
    "pp2": {"name": "pp2", "model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 16,
            "parallelism": {"dp": 2, "tp": 4, "pp": 2, "sequence_parallel": True,
                            "zero_stage": 1},
            "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 2048,
                         "recompute": "selective"}},
    "dp16": {"name": "dp16", "model": "llama3-8b", "cluster": "h100-2048x8-rail", "gpus": 16,
             "parallelism": {"dp": 16, "tp": 1, "pp": 1, "zero_stage": 3},
             "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 1024,
                          "recompute": "full"},
             "comm": {"grad_dtype": "bf16", "nccl": {"NCCL_ALGO": "Ring"}}},
}


def load_json(relative):
    return json.loads((ROOT / relative).read_text())


def inline_presets(scenario):
    """The scenario with its model, cluster and GPU written inline, as a user pastes them."""
    s = copy.deepcopy(scenario)
    if isinstance(s.get("model"), str):
        s["model"] = load_json(f"models/presets/{s['model']}.json")
    if isinstance(s.get("cluster"), str):
        s["cluster"] = load_json(f"topologies/clusters/{s['cluster']}.json")
    cluster = s.get("cluster")
    if isinstance(cluster, dict) and isinstance(cluster.get("gpu"), str):
        cluster["gpu"] = load_json(f"topologies/gpus/{cluster['gpu']}.json")
    return s


def campaign_sections(gpus):
    """The seed campaign's faults, checkpointing, cost and campaign sections, sized to `gpus`."""
    seed = load_json("scenarios/campaign-seed-before.json")
    faults = seed["faults"]
    for event in faults.get("events", []):
        if "rank" in event:
            event["rank"] = gpus - 1
        if "node" in event:
            event["node"] = 0
    campaign = dict(seed["campaign"], trials=20, step_time_s=2.0, mfu=0.4)
    return {"faults": faults, "checkpointing": seed["checkpointing"], "cost": seed["cost"],
            "campaign": campaign}


def seeds(tool):
    """(name, scenario) pairs mutated for `tool`."""
    small = list(SMALL.items())
    if tool == "check":
        shipped = [(p.stem, json.loads(p.read_text()))
                   for p in sorted((ROOT / "scenarios").glob("*.json"))]
        return shipped + small + [(n + "-inline", inline_presets(s)) for n, s in shipped + small]
    if tool == "run":
        return small + [(n + "-inline", inline_presets(s)) for n, s in small]
    with_sections = [(n + "-campaign", dict(s, **campaign_sections(s["gpus"]))) for n, s in small]
    return with_sections + [(n + "-inline", inline_presets(s)) for n, s in with_sections]


# ---- mutations ------------------------------------------------------------------------------
# Each takes (rng, document) and returns (document, description, invalid): `invalid` is True
# only when the result is invalid by construction, whatever else the document holds.

def paths(value, prefix=()):
    """Every (path, value) below `value`, containers included."""
    out = [(prefix, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, prefix + (i,))
    return out


def pointer(path):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def put(doc, path, value):
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return doc


def under_nccl(path):
    return len(path) >= 2 and path[0] == "comm" and path[1] == "nccl"


def leaf_key(path):
    names = [p for p in path if isinstance(p, str)]
    return names[-1] if names else ""


def mutate_number(rng, doc):
    numbers = [(p, v) for p, v in paths(doc) if isinstance(v, (int, float))
               and not isinstance(v, bool)]
    if not numbers:
        return doc, "no number", False
    path, old = rng.choice(numbers)
    key = leaf_key(path)
    nccl = under_nccl(path)
    choices = [
        (-1, not nccl), (-0.5, not nccl), (-1e-300, not nccl), (1e308, not nccl),
        (0, False), (old * 2, False), (old / 2 if old else 1, False), (old + 1, False),
        (rng.uniform(0, 2 * (abs(old) or 1)), False), (1e-308, bool(TINY_REJECT.search(key))),
        (5e-324, bool(TINY_REJECT.search(key))), (2 ** 63, key in INT_KEYS),
        (2 ** 64 + 7, key in INT_KEYS), (-(2 ** 63) - 1, not nccl), (10 ** 25, key in INT_KEYS),
        (1.5, key in INT_KEYS and not nccl), (2 ** 31, False), (2 ** 53 + 1, False),
    ]
    value, invalid = rng.choice(choices)
    return put(doc, path, value), f"{pointer(path)} = {value!r} (was {old!r})", invalid


def mutate_type(rng, doc):
    nodes = [(p, v) for p, v in paths(doc) if p and not under_nccl(p)]
    path, old = rng.choice(nodes)
    if isinstance(old, bool):
        choices = [1, "true", None, []]
    elif isinstance(old, (int, float)):
        choices = ["12", None, [], {}, True]
    elif isinstance(old, str):
        choices = [7, None, [old], {}, False]
    else:
        choices = [7, None, True] + ([[]] if isinstance(old, dict) else [{}])
    value = rng.choice(choices)
    return put(doc, path, value), f"{pointer(path)}: {type(old).__name__} -> {value!r}", True


def mutate_unknown_key(rng, doc):
    objects = [(p, v) for p, v in paths(doc) if isinstance(v, dict) and not under_nccl(p)]
    path, obj = rng.choice(objects)
    obj["zz_" + rng.choice(["gpu", "rate", "x", "latency_us", "interval"])] = rng.choice(
        [1, "x", True, None, {}])
    return doc, f"unknown key in {pointer(path)}", True


def mutate_delete(rng, doc):
    keyed = [(p, v) for p, v in paths(doc) if p and isinstance(p[-1], str)]
    path, _ = rng.choice(keyed)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    del parent[path[-1]]
    return doc, f"deleted {pointer(path)}", False


def mutate_string(rng, doc):
    strings = [(p, v) for p, v in paths(doc) if isinstance(v, str)]
    if not strings:
        return doc, "no string", False
    path, old = rng.choice(strings)
    value = rng.choice(STRINGS)
    return put(doc, path, value), f"{pointer(path)} = {value!r} (was {old!r})", False


def mutate_flip(rng, doc):
    flags = [(p, v) for p, v in paths(doc) if isinstance(v, bool)]
    if not flags:
        return doc, "no boolean", False
    path, old = rng.choice(flags)
    return put(doc, path, not old), f"{pointer(path)} = {not old}", False


def mutate_deep(rng, doc):
    nodes = [(p, v) for p, v in paths(doc) if p]
    path, _ = rng.choice(nodes)
    depth = rng.choice([70, 1000, 100000])
    return put(doc, path, {"__deep__": depth}), f"{pointer(path)} nested {depth} deep", True


STRUCTURE = [mutate_number, mutate_number, mutate_number, mutate_delete, mutate_string,
             mutate_flip]
INVALID = [mutate_number, mutate_type, mutate_unknown_key, mutate_deep]


def render(doc):
    """JSON text; {"__deep__": n} becomes n nested arrays (too deep for json.dumps)."""
    text = json.dumps(doc, indent=1)

    def deep(match):
        n = int(match.group(1))
        return "[" * n + "]" * n
    return re.sub(r'\{\s*"__deep__": (\d+)\s*\}', deep, text)


def text_mutation(rng, text):
    """A mutation of the text itself: (text, description); always invalid."""
    kind = rng.choice(["truncate", "trailing", "duplicate", "overflow"])
    if kind == "truncate":
        end = len(text.rstrip())
        cut = rng.randrange(0, end - 1) if end > 1 else 0
        return text[:cut], f"truncated at byte {cut}"
    if kind == "trailing":
        tail = rng.choice(["\0garbage", "\0", "}", " x", "\n{}", ",", "\ufeff"])
        return text + tail, f"trailing {tail!r}"
    keys = [m for m in re.finditer(r'\n(\s*)("[^"\n]+"): ([^\n]*?),?\n', text)]
    if kind == "duplicate" and keys:
        m = rng.choice(keys)
        line = f"\n{m.group(1)}{m.group(2)}: {m.group(3).rstrip(',')},"
        return text[:m.start()] + line + text[m.start():], f"duplicate key {m.group(2)}"
    numbers = list(re.finditer(r'(?<=: )-?\d[\d.eE+-]*(?=,?\n)', text))
    if not numbers:
        return text + "\0", "trailing NUL"
    m = rng.choice(numbers)
    literal = rng.choice(["1e309", "-1e309", "1E400", "123456789012345678901234567890e300"])
    return text[:m.start()] + literal + text[m.end():], f"number {m.group(0)} -> {literal}"


def make_input(tool, index, seed, seed_docs):
    """(name, text, description, invalid) of input `index` for `tool`: deterministic."""
    rng = random.Random(f"{seed}/{tool}/{index}")
    name, base = rng.choice(seed_docs)
    doc = copy.deepcopy(base)
    notes, invalid = [f"seed {name}"], False
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        doc, note, _ = rng.choice(STRUCTURE)(rng, doc)
        notes.append(note)
    roll = rng.random()
    if roll < 0.45:
        doc, note, invalid = rng.choice(INVALID)(rng, doc)
        notes.append(note)
    text = render(doc)
    if 0.45 <= roll < 0.6:
        text, note = text_mutation(rng, text)
        notes.append(note)
        invalid = True
    return name, text, "; ".join(notes), invalid


# ---- running and classifying -----------------------------------------------------------------

def limit_child():
    os.setsid()
    limit = ADDRESS_SPACE_MIB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_one(binary, tool, path, workdir):
    """Runs `clustersim TOOL FILE` with a time limit; returns its outcome and peak memory."""
    seconds, _ = LIMITS[tool]
    args = [binary, tool, str(path)] + (["--trials", "20"] if tool == "campaign" else [])
    start = time.monotonic()
    proc = subprocess.Popen(args, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=limit_child)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stderr.read()))
    reader.start()
    timed_out = False
    while True:
        # wait4 (not Popen.wait) so that the peak memory is this child's own.
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > seconds:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = b"".join(chunks)
    return {"args": args, "code": proc.returncode, "timed_out": timed_out,
            "stderr": err.decode("utf-8", "replace")[-4000:],
            "seconds": time.monotonic() - start, "rss_mib": usage.ru_maxrss / 1024}


def classify(result, file_name, invalid, tool, rss_mib):
    code, err = result["code"], result["stderr"]
    if result["timed_out"]:
        return "hang"
    if code < 0 or "Sanitizer" in err or "runtime error:" in err:
        return "crash"
    if "out of memory" in err or rss_mib > LIMITS[tool][1]:
        return "over-memory"
    if code == 2:
        return "ok" if re.search(re.escape(file_name) + r":/", err) else "unnamed-error"
    if code in (3, 4):
        return "unnamed-error"
    if code in (0, 1) and invalid:
        return "wrongly-accepted"
    return "ok"


def measure(binary, tool, index, seed, seed_docs, workdir):
    name, text, description, invalid = make_input(tool, index, seed, seed_docs)
    path = Path(workdir) / f"{tool}-{index}.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    result = run_one(binary, tool, path, workdir)
    outcome = classify(result, path.name, invalid, tool, result["rss_mib"])
    if outcome == "ok":
        path.unlink()
    return index, outcome, description, result, path


def run_tool(binary, tool, count, seed, jobs, out):
    seed_docs = seeds(tool)
    workdir = out / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    counts, findings = {}, []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(measure, binary, tool, i, seed, seed_docs, workdir)
                   for i in range(count)]
        for future in concurrent.futures.as_completed(futures):
            index, outcome, description, result, path = future.result()
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome != "ok":
                findings.append(save_finding(out, tool, index, outcome, description, result,
                                             path))
    wall = time.monotonic() - start
    return {"tool": tool, "inputs": count, "outcomes": counts, "wall_s": round(wall, 1),
            "inputs_per_s": round(count / wall, 2) if wall > 0 else None,
            "findings": sorted(findings)}


def save_finding(out, tool, index, outcome, description, result, path):
    folder = out / "findings" / outcome
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{tool}-{index}.json"
    path.replace(target)
    report = {"tool": tool, "index": index, "outcome": outcome, "mutation": description,
              "exit_code": result["code"], "seconds": round(result["seconds"], 2),
              "peak_rss_MiB": round(result["rss_mib"]), "command": " ".join(result["args"][:2] + [str(target)] + result["args"][3:]),
              "stderr": result["stderr"]}
    (folder / f"{tool}-{index}.txt").write_text(json.dumps(report, indent=1) + "\n")
    return str(target)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(ROOT / "build" / "clustersim"))
    parser.add_argument("--check", type=int, default=200, help="mutated inputs for check")
    parser.add_argument("--run", type=int, default=10, help="mutated inputs for run")
    parser.add_argument("--campaign", type=int, default=10, help="mutated inputs for campaign")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "build-fuzz" / "cli"))
    parser.add_argument("--show", type=str, help="print input TOOL:INDEX and exit")
    args = parser.parse_args()
    if args.show:
        tool, index = args.show.split(":")
        _, text, description, invalid = make_input(tool, int(index), args.seed, seeds(tool))
        sys.stderr.write(f"{description}; invalid by construction: {invalid}\n")
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    # Children run in the work folder: a relative --binary is taken from here.
    args.binary = str(Path(args.binary).resolve())
    summary = []
    for tool in ("check", "run", "campaign"):
        count = getattr(args, tool)
        if count > 0:
            summary.append(run_tool(args.binary, tool, count, args.seed, args.jobs, out))
            s = summary[-1]
            print(f"{tool:9s} {s['inputs']:6d} inputs  {s['inputs_per_s']} inputs/s  "
                  f"{json.dumps(s['outcomes'], sort_keys=True)}", flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    bad = sum(n for s in summary for k, n in s["outcomes"].items() if k != "ok")
    print(f"findings: {bad} (inputs and messages in {out}/findings; replay one with "
          f"--seed {args.seed} --show TOOL:INDEX)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
