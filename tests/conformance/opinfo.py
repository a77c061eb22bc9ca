#!/usr/bin/python3
"""tests/conformance/opinfo.py: PyTorch's own OpInfo samples as the conformance
gate (docs/conformance.md).

Usage (with the system interpreter, which has Debian's python3-torch):

    /usr/bin/python3 tests/conformance/opinfo.py [--ops FILE | --op NAME ...]
        [--samples N] [--config NAME] [--jobs N] [--spyre PATH] [--keep DIR]
        [--strict]

Every op of PyTorch's op_db (torch.testing._internal.common_methods_invocations)
that supports float32 on the CPU, or those named (--op NAME, or a file of
names with --ops), gives up to N (default 2) of its float32 samples.  Each
sample becomes a module calling the op on the sample's tensors, exported by
tools/export.py (in this process) and run by `spyre run DIR --check`.  One
line per sample:

    OP#I RESULT: detail

RESULT is pass (the device's result matches PyTorch's within the runtime's
tolerances), refused (the compiler or runtime declines it: exit 2 naming
what is missing), mismatch (exit 1: a wrong result), crash (a signal, a
timeout, exit 3 -- the compiled program broke the chip's rules -- or any
other status) or noexport (the sample cannot be exported: a non-tensor
output, a random op, an export error; not part of the gate).  Then totals,
one key=value per line:

    opinfo_ops= opinfo_samples= opinfo_exported= opinfo_native_pass=
    opinfo_pass= opinfo_refused= opinfo_mismatch= opinfo_crash=
    opinfo_ops_all_pass=

opinfo_pass counts samples that validate with host fallback allowed,
opinfo_native_pass those that validate with no fallback op (the run prints
no `fallback_ops=` line, or `fallback_ops=0`; a pass through fallback
says `pass: fallback_ops=N`).  --strict exits 1 when a
sample is a mismatch or a crash, or when an op named in the --ops file
has an exported sample that does not pass, unless its line says
`refused` after the name (an op the compiler must refuse, not compute
wrong); CI runs the fixed subset tests/conformance/ci-ops.txt so.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)  # the expecttest stand-in, before torch's test internals import it
sys.path.insert(1, os.path.join(ROOT, "tools"))

import torch  # noqa: E402

import export  # noqa: E402  (tools/export.py)

RUN_TIMEOUT = 120  # seconds per `spyre run` of one sample (a hang is a crash)


def flatten_tensors(value, out):
    """Replace every tensor inside value (lists, tuples, dicts) by a slot
    number, appending the tensor to out; returns the rebuilt structure."""
    if isinstance(value, torch.Tensor):
        out.append(value)
        return ("__slot__", len(out) - 1)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(flatten_tensors(v, out) for v in value)
    if isinstance(value, dict):
        return {k: flatten_tensors(v, out) for k, v in value.items()}
    return value


def fill(value, tensors):
    """The inverse of flatten_tensors: slots replaced by tensors."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "__slot__":
        return tensors[value[1]]
    if isinstance(value, (list, tuple)):
        return type(value)(fill(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: fill(v, tensors) for k, v in value.items()}
    return value


class OpModule(torch.nn.Module):
    """Calls one OpInfo op on a sample: the sample's tensors are the
    module's inputs, everything else is fixed."""

    def __init__(self, op, shape):
        super().__init__()
        self.op, self.shape = op, shape

    def forward(self, *tensors):
        inp, args, kwargs = fill(self.shape, tensors)
        out = self.op.op(inp, *args, **kwargs)
        if isinstance(out, torch.Tensor):
            return out
        if isinstance(out, (list, tuple)) and out and all(isinstance(o, torch.Tensor) for o in out):
            return tuple(out)
        raise export.UserError(f"the op returns a {type(out).__name__}, not tensors")


def samples_of(op, count):
    """Up to count float32 samples of op on the CPU (a generator may fail)."""
    try:
        it = op.sample_inputs("cpu", torch.float32, requires_grad=False)
        out = []
        for s in it:
            out.append(s)
            if len(out) == count:
                break
        return out, None
    except Exception as e:  # a sample generator that fails on this PyTorch
        return [], export.describe(e)


def export_sample(op, sample, out_dir, label):
    """Export one sample into out_dir; None or the reason it cannot be."""
    tensors = []
    shape = flatten_tensors((sample.input, tuple(sample.args), dict(sample.kwargs)), tensors)
    tensors = [t.detach().clone() for t in tensors]

    def workload():
        return OpModule(op, shape), tuple(tensors)

    try:
        export.export(f"opinfo:{label}", out_dir, 0, "auto", func=workload, draws=True)
        return None
    except export.UserError as e:
        return str(e)
    except Exception as e:
        return export.describe(e)


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def run_sample(spyre, config, out_dir):
    """(result, detail) of `spyre run out_dir --check`."""
    cmd = [spyre, "run", out_dir, "--check", "--config", config]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "crash", f"no result within {RUN_TIMEOUT} s"
    err = first_line(p.stderr)
    if p.returncode == 0:
        n = fallback_ops(p.stdout)
        return "pass", (f"fallback_ops={n}" if n else "")
    if p.returncode == 1:
        bad = [line for line in (p.stdout + p.stderr).splitlines() if "MISMATCH" in line or "mismatch" in line]
        return "mismatch", (bad[0].strip() if bad else err)
    if p.returncode == 2:
        return "refused", err
    if p.returncode == 3:
        return "crash", "the program broke the chip's rules: " + err
    return "crash", f"exit {p.returncode}: {err}"


def fallback_ops(out):
    """The host-fallback ops a run reports (`fallback_ops=N`), 0 if none."""
    for line in out.splitlines():
        for word in line.split():
            if word.startswith("fallback_ops=") and word[13:].isdigit():
                return int(word[13:])
    return 0


def op_list(args):
    from torch.testing._internal.common_methods_invocations import op_db
    wanted = list(args.op or [])
    if args.ops:
        with open(args.ops) as f:
            for line in f:
                words = line.split("#")[0].split()
                if words:
                    wanted.append(words[0])
                    if words[1:] == ["refused"]:
                        args.may_refuse.add(words[0])
                    elif words[1:]:
                        raise SystemExit(f"opinfo.py: {args.ops}: expected NAME [refused], got {line.strip()}")
    ops = [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]
    if not wanted:
        return ops
    by_name = {}
    for op in ops:
        by_name.setdefault(op.name + ("." + op.variant_test_name if op.variant_test_name else ""), op)
    missing = [w for w in wanted if w not in by_name]
    if missing:
        raise SystemExit(f"opinfo.py: no float32 OpInfo named {', '.join(missing)}")
    return [by_name[w] for w in wanted]


# Ops whose values are whatever memory held: a trace may or may not
# reproduce them, and no comparison with them means anything.
SCOPE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native-scope.txt")
UNINITIALIZED_OPS = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided"}
UNINITIALIZED = "the op's values are uninitialized memory (nothing to compare)"


def main():
    ap = argparse.ArgumentParser(prog="opinfo.py", description="OpInfo conformance gate")
    ap.add_argument("--op", action="append", help="an OpInfo name (NAME or NAME.VARIANT); repeatable")
    ap.add_argument("--ops", help="a file of OpInfo names, one per line (# comments)")
    ap.add_argument("--samples", type=int, default=2, help="float32 samples per op (default 2)")
    ap.add_argument("--config", default="spyre", help="chip configuration (default spyre)")
    ap.add_argument("--jobs", type=int, default=2, help="spyre runs at once (default 2)")
    ap.add_argument("--spyre", default=os.path.join(ROOT, "build", "spyre"), help="the spyre program")
    ap.add_argument("--keep", help="keep every exported sample under this directory")
    ap.add_argument("--strict", action="store_true", help="exit 1 on a mismatch or a crash")
    ap.add_argument("--scope", default=SCOPE_FILE,
                    help="the documented native scope, one OpInfo name a line (default native-scope.txt)")
    args = ap.parse_args()
    args.may_refuse = set()
    if not os.access(args.spyre, os.X_OK):
        raise SystemExit(f"opinfo.py: {args.spyre}: not an executable (build first: tools/setup)")
    ops = op_list(args)
    scratch = args.keep or tempfile.mkdtemp(prefix="spyre-opinfo-")
    counts = dict.fromkeys(("samples", "exported", "native_pass", "pass", "refused", "mismatch", "crash"), 0)
    per_op = {}
    native = {}
    pending = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for op in ops:
            name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
            samples, why = samples_of(op, args.samples)
            per_op[name] = []
            if why:
                print(f"{name}#0 noexport: the sample generator failed: {why}", flush=True)
            for i, s in enumerate(samples):
                label = f"{name}#{i}"
                d = os.path.join(scratch, export.sanitize(label))
                counts["samples"] += 1
                why = UNINITIALIZED if op.name in UNINITIALIZED_OPS else export_sample(op, s, d, export.sanitize(name))
                if why:
                    print(f"{label} noexport: {first_line(why)}", flush=True)
                    continue
                counts["exported"] += 1
                pending.append((name, label, pool.submit(run_sample, args.spyre, args.config, d)))
            while pending and pending[0][2].done():
                report(pending.pop(0), counts, per_op, native)
        for item in pending:
            report(item, counts, per_op, native)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    all_pass = sum(1 for r in per_op.values() if r and all(x == "pass" for x in r))
    print(f"opinfo_ops={len(per_op)}")
    print(f"opinfo_samples={counts['samples']}")
    print(f"opinfo_exported={counts['exported']}")
    print(f"opinfo_native_pass={counts['native_pass']}")
    print(f"opinfo_pass={counts['pass']}")
    print(f"opinfo_refused={counts['refused']}")
    print(f"opinfo_mismatch={counts['mismatch']}")
    print(f"opinfo_crash={counts['crash']}")
    print(f"opinfo_ops_all_pass={all_pass}")
    scope_report(args.scope, per_op, native)
    if not args.strict:
        return 0
    short = [n for n, r in per_op.items() if n not in args.may_refuse and any(x != "pass" for x in r)]
    if args.ops and short:
        print(f"opinfo.py: listed ops with a sample that does not pass: {', '.join(short)}", file=sys.stderr)
    return 1 if counts["mismatch"] or counts["crash"] or (args.ops and short) else 0


def report(item, counts, per_op, native):
    name, label, fut = item
    result, detail = fut.result()
    counts[result] += 1
    counts["native_pass"] += result == "pass" and not detail
    per_op[name].append(result)
    native.setdefault(name, []).append(result == "pass" and not detail)
    print(f"{label} {result}" + (f": {detail}" if detail else ""), flush=True)


def scope_report(path, per_op, native):
    """The documented native scope's ops that ran: how many pass every
    exported sample natively (issue 14's gate: at least 90%)."""
    if not path or not os.path.exists(path):
        return
    with open(path) as f:
        scope = [line.split("#")[0].strip() for line in f]
    ran = [n for n in scope if n and native.get(n)]
    if not ran:
        return
    good = [n for n in ran if all(native[n])]
    print(f"opinfo_native_scope_ops={len(ran)}")
    print(f"opinfo_native_scope_ops_native={len(good)}")
    print(f"opinfo_native_scope_share={len(good) / len(ran):.3f}")
    short = [n for n in ran if not all(native[n])]
    print(f"opinfo_native_scope_short={','.join(short)}")


if __name__ == "__main__":
    sys.exit(main())
