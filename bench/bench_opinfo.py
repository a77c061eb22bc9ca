#!/usr/bin/python3
"""bench_opinfo: the whole OpInfo conformance run (tests/conformance/opinfo.py
over every float32 op of PyTorch's op_db, two samples each, on spyre).
Prints the harness's opinfo_* totals and, last, the share of exported
samples that validate natively."""
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.environ.get("SPYRE_BUILD", os.path.join(root, "build"))
cmd = [sys.executable, os.path.join(root, "tests", "conformance", "opinfo.py"),
       "--spyre", os.path.join(build, "spyre"), "--jobs", "2"]
p = subprocess.run(cmd, capture_output=True, text=True)
totals = {}
for line in p.stdout.splitlines():
    if line.startswith("opinfo_") and "=" in line:
        key, value = line.split("=", 1)
        totals[key] = int(value)
        print(line)
if p.returncode or "opinfo_exported" not in totals:
    sys.stderr.write(p.stderr[-2000:])
    sys.exit(1)
share = totals["opinfo_native_pass"] / max(1, totals["opinfo_exported"])
print(f"opinfo_native_share={share:.3f}")
