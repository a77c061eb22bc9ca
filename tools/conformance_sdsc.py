#!/usr/bin/python3
"""tools/conformance sdsc: run every torch-spyre kernel directory under DIR on the simulator.

    tools/conformance sdsc DIR [--spyre PATH] [--config NAME]

sdsc: every torch-spyre kernel directory under DIR (a directory holding
sdsc_N.json) runs with `spyre run KDIR --check`; one line per example (ok
with its cycles, mismatch or error with the reason), then
sdsc_examples_pass=N/M.  When a kernel directory's parent holds spyre-cli's
examples.py (the registry of its examples: shapes, dtype, inputs), its
tensor specs are passed as -i/-o exactly as its README's `spyre launch`
lines give them, and an example whose inputs are positive (div) gets
--positive.  Exit 0 when every example passes, else 1.
"""
import argparse
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def kernel_dirs(root):
    """Every directory under root holding an sdsc_N.json, sorted."""
    found = []
    for d, _, files in os.walk(root):
        if any(f.startswith("sdsc_") and f.endswith(".json") for f in files):
            found.append(d)
    return sorted(found)


def registry(kdir):
    """spyre-cli's examples.py beside kdir (imported without torch), or None."""
    path = os.path.join(os.path.dirname(kdir), "examples.py")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("spyre_cli_examples", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def example_args(kdir):
    """The -i/-o specs and input option of the example in kdir, from its registry."""
    reg = registry(kdir)
    name = os.path.basename(kdir)
    if reg is None or name not in getattr(reg, "EXAMPLES", {}):
        return []
    args = list(reg.cli_args(name))
    if reg.EXAMPLES[name].init == "positive":
        args.append("--positive")
    return args


def run_one(spyre, config, kdir):
    """(status, detail) of one example: ok / mismatch / error."""
    cmd = [spyre, "run", kdir, "--check", "--config", config] + example_args(kdir)
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = p.stdout.splitlines()
    cycles = next((l.split()[0] for l in lines if l.startswith("cycles=")), "")
    if p.returncode == 0:
        return "ok", cycles
    if p.returncode == 1:
        bad = next((l for l in lines if "MISMATCH" in l), "")
        return "mismatch", bad
    err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[0]
    return "error", err


def sdsc(args):
    dirs = kernel_dirs(args.dir)
    passed = 0
    for kdir in dirs:
        status, detail = run_one(args.spyre, args.config, kdir)
        passed += status == "ok"
        print("%s: %s %s" % (os.path.relpath(kdir, args.dir), status, detail), flush=True)
    print("sdsc_examples_pass=%d/%d" % (passed, len(dirs)))
    return 0 if dirs and passed == len(dirs) else 1


SUITES = {"sdsc": sdsc}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("dir")
    ap.add_argument("--spyre", default=os.path.join(HERE, "..", "build", "spyre"))
    ap.add_argument("--config", default="spyre")
    args = ap.parse_args()
    return SUITES[args.suite](args)


if __name__ == "__main__":
    sys.exit(main())
