#!/usr/bin/env python3
"""Prints a libFuzzer dictionary for a parser: every quoted name in its sources (the keys and
enum names it accepts), each as a bare word and as a JSON string, and the JSON tokens that reach
the edges of the reader (nesting, huge and tiny numbers, NUL).
Usage: fuzz/make_dict.py SOURCE... > DICT  (paths relative to the repository or absolute)"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKENS = ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-0", "1e309", "-1e309",
          "5e-324", "1e-308", "9223372036854775808", "18446744073709551616", "0.5", "\\u0000"]


def quoted(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(sources):
    names = set()
    for source in sources:
        path = Path(source) if Path(source).is_absolute() else ROOT / source
        if path.exists():
            names.update(re.findall(r'"([A-Za-z_][A-Za-z0-9_.\-]{1,40})"', path.read_text()))
    lines = []
    for i, name in enumerate(sorted(names)):
        lines += [f"word_{i}={quoted(name)}", f"key_{i}={quoted(quoted(name))}"]
    lines += [f"token_{i}={quoted(t)}" for i, t in enumerate(TOKENS)]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
