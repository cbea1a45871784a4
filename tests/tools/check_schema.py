#!/usr/bin/env python3
"""`clustersim schema` against the shipped files and against the loader.

usage: check_schema.py CLUSTERSIM SOURCE_DIR

1. Every shipped scenario (scenarios/*.json, validation/suites/*/*.scenario.json), model preset,
   GPU preset and cluster preset validates against the schema of its kind, checked by a real
   JSON Schema implementation (python3-jsonschema, Draft 2020-12).
2. Starting scenarios written by `clustersim init` (a dense and an MoE model) validate too.
3. Files the loader refuses are refused by the schema too: an unknown key, and for every
   bounded number of a scenario's parallelism, training and campaign sections a value just
   beyond the schema's bound, which `clustersim check` must refuse (exit 2) at that key.

Exits 77 (ctest: skipped) when the jsonschema module is missing.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("skipped: the Python module jsonschema is missing (Debian: apt-get install "
          "python3-jsonschema)")
    sys.exit(77)

TOOL, SOURCE = sys.argv[1], sys.argv[2]
BASE_SCENARIO = os.path.join(SOURCE, "scenarios", "seed-optimized-1024.json")

FILES = {
    "scenario": ["scenarios/*.json", "validation/suites/*/*.scenario.json"],
    "model": ["models/presets/*.json"],
    "gpu": ["topologies/gpus/*.json"],
    "cluster": ["topologies/clusters/*.json"],
}


def schema_of(kind):
    out = subprocess.run([TOOL, "schema", kind], check=True, capture_output=True, text=True)
    schema = json.loads(out.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def validate_shipped(validators):
    failures, counts = [], {}
    for kind, patterns in FILES.items():
        paths = sorted(p for pattern in patterns for p in glob.glob(os.path.join(SOURCE, pattern)))
        counts[kind] = len(paths)
        for path in paths:
            for error in validators[kind].iter_errors(load(path)):
                where = "/" + "/".join(str(p) for p in error.absolute_path)
                failures.append(f"{os.path.relpath(path, SOURCE)}:{where}: {error.message}")
    return failures, counts


INIT_OPTIONS = [[], ["--model", "deepseek-v3", "--gpus", "256"], ["--model", "llama3-8b", "--gpus", "4"]]


def validate_init(validator):
    failures = []
    for options in INIT_OPTIONS:
        out = subprocess.run([TOOL, "init", *options], check=True, capture_output=True, text=True)
        for error in validator.iter_errors(json.loads(out.stdout)):
            where = "/" + "/".join(str(p) for p in error.absolute_path)
            failures.append(f"init {' '.join(options)}:{where}: {error.message}")
    return failures


def loader_refuses(document, pointer):
    """`clustersim check` on `document` exits 2 naming `pointer`; returns the message."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(document, f)
        out = subprocess.run([TOOL, "check", path], capture_output=True, text=True)
    message = out.stderr.strip()
    if out.returncode != 2 or f"probe.json:{pointer}:" not in message:
        return f"loader: exit {out.returncode}, expected 2 naming {pointer}: {message}"
    return None


def beyond(prop):
    """A value just outside the schema's upper bound (None when there is none)."""
    if "maximum" in prop:
        bound = prop["maximum"]
        return bound + 1 if prop["type"] == "integer" else bound * 2 + 1
    if "exclusiveMaximum" in prop:
        return prop["exclusiveMaximum"] * 2
    return None


def probes(validator):
    """(document, pointer) pairs the loader must refuse: one unknown key, then each bound."""
    base = load(BASE_SCENARIO)
    unknown = json.loads(json.dumps(base))
    unknown["training"]["micro_batch_sz"] = 1
    yield unknown, "/training/micro_batch_sz"
    defs = validator.schema["$defs"]
    for section in ("parallelism", "training", "campaign"):
        for key, prop in sorted(defs[section]["properties"].items()):
            value = beyond(prop)
            if value is None:
                continue
            doc = json.loads(json.dumps(base))
            doc.setdefault(section, {})[key] = value
            yield doc, f"/{section}/{key}"


def check_refusals(validator):
    failures, count = [], 0
    for document, pointer in probes(validator):
        count += 1
        if validator.is_valid(document):
            failures.append(f"{pointer}: the schema accepts what the loader refuses")
        problem = loader_refuses(document, pointer)
        if problem:
            failures.append(f"{pointer}: {problem}")
    return failures, count


def main():
    validators = {kind: schema_of(kind) for kind in FILES}
    failures, counts = validate_shipped(validators)
    failures += validate_init(validators["scenario"])
    refusal_failures, probed = check_refusals(validators["scenario"])
    failures += refusal_failures
    total = sum(counts.values())
    print(f"validated {total} shipped files against `clustersim schema`: " +
          ", ".join(f"{n} {kind}" for kind, n in counts.items()))
    print(f"{len(INIT_OPTIONS)} scenarios written by `clustersim init` validated")
    print(f"{probed} files refused by both the loader and the schema")
    if any(n == 0 for n in counts.values()) or probed < 10:
        failures.append("too few files found: is SOURCE_DIR the repository root?")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
