#!/usr/bin/env python3
"""Size limits of the C++ sources: no file over 800 lines, no function body over 120 lines.

    check_sizes.py ROOT
    check_sizes.py --self-test


Every *.cpp, *.hpp, *.h and *.cc under ROOT is read (build trees and hidden folders are not
the project's sources). A function's length is counted as clang-tidy's
readability-function-size counts it: the line of its closing brace minus the line of its
opening brace. A lambda or local class counts towards the function it is written in. A
transcribed table (NCCL's tuning tables in nccl/tuning_tables.hpp, its environment variables
in input/nccl_variables.cpp) is data at namespace scope, not a function body, so it needs no
exemption; a function may be exempted only by naming it in EXEMPT with the reason.

The scanner is a brace counter over the source with comments, string and character literals
(raw strings included) and preprocessor lines blanked out, which is exact enough for
clang-formatted code. Exit 0 when every limit holds; otherwise each excess is printed as
file:line and the status is 1.
"""

import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
EXTENSIONS = (".cpp", ".hpp", ".h", ".cc")
# (relative path, function name) -> why it may exceed MAX_FUNCTION_LINES. Empty today.
EXEMPT = {}


def blank_non_code(text):
    """The text with comments, literals and preprocessor lines replaced by spaces.

    Newlines are kept, so line numbers are unchanged; a string literal keeps its quotes so
    that the code around it still reads as an expression.
    """
    out = []
    i = 0
    n = len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            at_line_start = True
            continue
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor directive, with its backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^ ()\\\t\n]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
            i = end
            continue
        if c in "\"'":
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


SCOPE_KEYWORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b")
LAMBDA = re.compile(r"\]\s*(\([^;]*\))?\s*(mutable\b|constexpr\b|noexcept\b|->[^;{]*)*\s*$")


def top_level_assignment(head):
    """Whether the declaration head has an `=` outside brackets (an initializer)."""
    depth = 0
    cleaned = re.sub(r"\boperator\s*(==|!=|<=|>=|=)", "operator", head)
    for k, ch in enumerate(cleaned):
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0:
            nxt = cleaned[k + 1] if k + 1 < len(cleaned) else ""
            prev = cleaned[k - 1] if k > 0 else ""
            if nxt != "=" and prev not in "=!<>":
                return True
    return False


def opens_function(head):
    """Whether a `{` that follows `head` (outside any function) opens a function body."""
    head = head.strip()
    if not head:
        return False
    if LAMBDA.search(head):
        return True
    if "(" not in head:
        return False
    if SCOPE_KEYWORDS.search(head.split("(")[0]):
        return False
    return not top_level_assignment(head)


def function_name(head):
    """The name a function body is declared with, for the report."""
    match = re.search(r"([~\w:]+(?:\s*<[^()]*>)?|operator\s*\S+)\s*\([^()]*(\([^()]*\)[^()]*)*\)"
                      r"[^()]*$", head.strip())
    if match:
        return match.group(1).strip()
    return head.strip()[-60:]


def functions(code):
    """(name, first line, last line) of each outermost function body in blanked code."""
    found = []
    stack = []  # one entry per open brace: None, or the (name, line) of a function body
    head_start = 0
    line = 1
    inside_function = 0
    for k, ch in enumerate(code):
        if ch == "\n":
            line += 1
        elif ch == "{":
            head = code[head_start:k]
            if inside_function == 0 and opens_function(head):
                stack.append((function_name(head), line))
                inside_function += 1
            else:
                stack.append(None)
                if inside_function:
                    inside_function += 1
            head_start = k + 1
        elif ch == "}":
            if stack:
                entry = stack.pop()
                if entry is not None:
                    found.append((entry[0], entry[1], line))
                    inside_function = 0
                elif inside_function:
                    inside_function -= 1
            head_start = k + 1
        elif ch == ";":
            head_start = k + 1
        elif ch == ":" and inside_function == 0:
            # `public:` / `private:` in a class; a constructor's initializer list keeps its head.
            if re.search(r"\b(public|private|protected)\s*$", code[head_start:k]):
                head_start = k + 1
    return found


def sources(root):
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if not (d.startswith("build") or d.startswith("."))]
            continue
        for name in sorted(files):
            if name.endswith(EXTENSIONS):
                yield os.path.join(rel_folder, name)


def excesses_in(root):
    """(lines of every excess, files checked, functions checked) under root."""
    excesses = []
    checked_files = 0
    checked_functions = 0
    for rel in sorted(sources(root)):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        checked_files += 1
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES:
            excesses.append(f"  {rel}: {lines} lines, above {MAX_FILE_LINES}")
        for name, first, last in functions(blank_non_code(text)):
            checked_functions += 1
            length = last - first
            if length > MAX_FUNCTION_LINES and (rel, name) not in EXEMPT:
                excesses.append(f"  {rel}:{first}: function {name}: {length} lines, "
                                f"above {MAX_FUNCTION_LINES}")
    return excesses, checked_files, checked_functions


def function_of_lines(name, body_lines, opener="{"):
    """A function whose body spans body_lines lines as clang-tidy counts them."""
    filler = [f"  int x{i} = {i};" for i in range(body_lines - 1)]
    return "\n".join([f"int {name}(int a) {opener}"] + filler + ["}"]) + "\n"


def self_test():
    """The scanner on sources whose sizes are known by construction. Returns the failures."""
    import tempfile
    tricky = "\n".join([
        "  // a comment with a brace {",
        "  /* and a block comment } */",
        '  const char* s = "}{";',
        '  const char* r = R"x(})x";',
        "  char c = '}';",
        "  int n = 1'000;",
        "  auto f = [&](int y) { return y + a; };",
        "  struct Local { int g() { return 1; } };",
    ])
    over = function_of_lines("over", MAX_FUNCTION_LINES + 1).replace("{\n", "{\n" + tricky + "\n", 1)
    over = over.replace("\n".join(f"  int x{i} = {i};" for i in range(8)) + "\n", "", 1)
    cases = {
        "a/at_limit.cpp": function_of_lines("at_limit", MAX_FUNCTION_LINES),
        "a/over.cpp": over,
        "a/class.hpp": "struct S {\n public:\n" + function_of_lines("S::member", 121) + "};\n",
        "a/table.cpp": "const int kTable[] = {\n" + "  1,\n" * 200 + "};\n",
        "a/long_file.cpp": "// x\n" * (MAX_FILE_LINES + 1),
        "a/file_at_limit.cpp": "// x\n" * MAX_FILE_LINES,
        "build/ignored.cpp": "// x\n" * 1000,
    }
    expected = [
        f"  a/class.hpp:3: function S::member: 121 lines, above {MAX_FUNCTION_LINES}",
        f"  a/long_file.cpp: {MAX_FILE_LINES + 1} lines, above {MAX_FILE_LINES}",
        f"  a/over.cpp:1: function over: 121 lines, above {MAX_FUNCTION_LINES}",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in cases.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found, _, _ = excesses_in(root)
    if found != expected:
        return ["expected:"] + expected + ["found:"] + found
    return []


def main():
    if sys.argv[1:] == ["--self-test"]:
        failures = self_test()
        print("\n".join(failures) if failures else "sizes: self-test passed")
        return 1 if failures else 0
    if len(sys.argv) != 2:
        print("usage: check_sizes.py ROOT | --self-test", file=sys.stderr)
        return 2
    root = sys.argv[1]
    excesses, checked_files, checked_functions = excesses_in(root)
    if checked_files == 0:
        print(f"sizes: no source file found under {root}", file=sys.stderr)
        return 1
    if excesses:
        print("sizes: limits exceeded (split along the code's seams, docs/CONTRIBUTING.md):")
        print("\n".join(excesses))
        return 1
    print(f"sizes: {checked_files} files of at most {MAX_FILE_LINES} lines, "
          f"{checked_functions} functions of at most {MAX_FUNCTION_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
