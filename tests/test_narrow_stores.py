#!/usr/bin/python3
"""tests/test_narrow_stores.py: no wider value is stored into a narrow isa_insn field unchecked.

    /usr/bin/python3 tests/test_narrow_stores.py BUILD/compile_commands.json

isa_insn's strides are 32-bit fields, its counts 16-bit and its few-bit
operands 8-bit (isa/isa.h): a value computed wider must be stored through
isa_set, which marks the instruction bad when it does not fit, so that
isa_check refuses it instead of the program silently taking the wrapped
value; an address's 56-bit offset and 8-bit register (isa_addr's
bit-fields) go through isa_addr_at.  This test compiles every source file
of the build again with gcc's -Wconversion (syntax only) and fails on any
narrowing warning on a line that stores into one of those fields (read
from isa/isa.h, so a field narrowed later is covered too).
An explicit cast says the value fits (and why, in a comment): it is not flagged.
Prints each such line, then "N files, M stores unchecked"; exits 0 only when
M is 0.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def narrow_fields():
    """The names of isa_insn's fields narrower than 64 bits, and of isa_addr's
    bit-fields (its register and offset)."""
    text = open(os.path.join(ROOT, "isa", "isa.h")).read()
    body = re.search(r"typedef struct isa_insn \{(.*?)\} isa_insn;", text, re.S).group(1)
    names = []
    for decl in re.findall(r"^\s*u?int(?:8|16|32)_t\s+([^;]+);", body, re.M):
        names += [re.sub(r"\[.*", "", n).strip() for n in decl.split(",")]
    addr = re.search(r"typedef struct \{([^}]*)\} isa_addr;", text, re.S).group(1)
    names += re.findall(r"^\s*u?int(?:8|16|32|64)_t\s+(\w+)\s*:\s*\d+\s*;", addr, re.M)
    assert "off" in names and "reg" in names, names
    return names


def syntax_only(entry):
    """entry's compile command, checking only, with -Wconversion: its stderr."""
    args, skip = [], False
    for a in shlex.split(entry["command"]) if "command" in entry else entry["arguments"]:
        if skip or a == "-o":
            skip = not skip
            continue
        if a != "-c" and not a.startswith("-O"):
            args.append(a)
    # -O0: optimizing lets gcc see a constant's value and not warn, so a
    # store would pass in one build type and fail in another
    args += ["-O0", "-fsyntax-only", "-Wconversion", "-Wno-sign-conversion", "-Wno-float-conversion"]
    env = dict(os.environ, LC_ALL="C")  # plain quotes in the messages
    return subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True, env=env).stderr


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_narrow_stores.py BUILD/compile_commands.json")
    entries, seen = [], set()
    for e in json.load(open(sys.argv[1])):
        if e["file"] not in seen:
            seen.add(e["file"])
            entries.append(e)
    fields = "|".join(map(re.escape, narrow_fields()))
    # a store (=, +=, ...) into one of them, through -> or ., or a designated initializer
    store = re.compile(r"(->|\.)(%s)\s*(\[[^]]*\])?\s*[-+*/|&^]?=(?!=)" % fields)
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        outputs = list(pool.map(syntax_only, entries))
    bad = 0
    for out in outputs:
        for line in out.splitlines():
            m = re.match(r"(.+?):(\d+):\d+: warning: (conversion from|implicit conversion loses"
                         r" integer precision:) .* to '(u?int(8|16|32)_t|[\w ]+:\d+|signed char)'", line)  # gcc, clang; a bit-field (8 bits: signed char)
            if not m:
                continue
            src = open(m.group(1)).read().splitlines()[int(m.group(2)) - 1]
            if store.search(src):
                bad += 1
                print("%s\n    %s" % (line, src.strip()))
    print("%d files, %d stores unchecked" % (len(entries), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
