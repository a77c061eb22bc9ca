#!/usr/bin/python3
"""tools/fuzz_ops.py: differential fuzzing of the compiler and simulator against PyTorch.

Usage (the system interpreter, which has torch):

    /usr/bin/python3 tools/fuzz_ops.py [--start N] [--count N] [--out DIR]
                                       [--spyre build/spyre] [--configs spyre,spyre-4core]
    /usr/bin/python3 tools/fuzz_ops.py --show SEED       # print one case's module

Each seed builds a small random module of statements over a float input x (NaN, inf,
-0.0, huge and tiny values among its elements), an int64 input i and a float table w:
integer index arithmetic feeding gathers (index_select, embedding, take, gather, x[i]),
clamp/where/remainder/floor_divide with tensor and scalar bounds, comparisons and masks,
reductions over odd shapes (size 0 and 1 dims), broadcasting, views with steps.  Every
statement is tried in PyTorch while the module is built, so the module runs as written.
It is exported (tools/export.py, in process) and `spyre run DIR --check` runs on each
chip.  A second run replaces i by values out of every table's range: PyTorch must raise
and spyre must refuse (exit 2), or both agree on the values.

One line per case and chip: ok, REFUSED (exit 2, its line), or BUG: a MISMATCH, an output
more than 5% off PyTorch's where --check passed by a vacuous bound, a crash, a sanitizer
report, an exit other than 0, 2, 3 (or 1 with a MISMATCH), or an index PyTorch refuses that ran.  The exit status is 1 when
any case is a BUG.
"""
import argparse, os, random, re, shutil, subprocess, sys
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export as exporter  # noqa: E402

SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e30, -1e30, 1e-40, 70000.0, 0.5, -2.5]
SHAPES = [(5,), (3, 7), (2, 1, 6), (1, 4), (4, 1), (2, 3, 5), (3, 0), (1,), (6, 8)]
CONSTS = [-7, -3, -2, -1, 0, 1, 2, 3, 5, 8, 1000]
MASKFILL = ["0.0", "-1e30", "float('nan')", "3", "-1"]
FCONSTS = ["0.5", "-1.5", "2.0", "3.0", "-0.0", "float('nan')", "float('inf')", "1e30", "0.0"]


def pick_dim(r, t):
    return r.randrange(t.dim()) - (t.dim() if r.random() < .3 else 0) if t.dim() else 0


def float_unary(r, a):
    return r.choice(["torch.abs({a})", "(-{a})", "torch.floor({a})", "torch.ceil({a})",
                     "torch.round({a})", "torch.trunc({a})", "torch.sign({a})", "torch.relu({a})",
                     "torch.sigmoid({a})", "torch.tanh({a})", "torch.sqrt(torch.abs({a}))",
                     "torch.exp(torch.clamp({a}, max=10.0))", "torch.reciprocal({a})",
                     "torch.frac({a})", "torch.nan_to_num({a})", "torch.square({a})",
                     "torch.log1p(torch.abs({a}))"]).format(a=a)


def float_scalar(r, a):
    c = r.choice(FCONSTS)
    lo, hi = r.choice(["None", "-1.0", "0.0", "2.0", "float('nan')"]), r.choice(["None", "1.0", "-2.0", "3.5", "float('nan')"])
    if lo == "None" and hi == "None":
        hi = "1.0"
    return r.choice(["({a} + {c})", "({a} * {c})", "({a} / {c})", "torch.remainder({a}, {c})",
                     "torch.fmod({a}, {c})", "torch.floor_divide({a}, {c})",
                     "torch.clamp({a}, {lo}, {hi})", "torch.clamp_min({a}, {c})",
                     "torch.clamp_max({a}, {c})", "torch.pow({a}, 2)", "({c} - {a})",
                     "torch.div({a}, {c}, rounding_mode='floor')",
                     "torch.div({a}, {c}, rounding_mode='trunc')"]).format(a=a, c=c, lo=lo, hi=hi)


def float_binary(r, a, b):
    return r.choice(["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / {b})",
                     "torch.maximum({a}, {b})", "torch.minimum({a}, {b})",
                     "torch.remainder({a}, {b})", "torch.fmod({a}, {b})",
                     "torch.floor_divide({a}, {b})", "torch.atan2({a}, {b})",
                     "torch.clamp({a}, min={b})", "torch.clamp({a}, max={b})",
                     "torch.where({a} > {b}, {a}, {b})", "torch.where({a} != {a}, {b}, {a})"]
                    ).format(a=a, b=b)


def compare(r, a, b):
    return r.choice(["({a} > {b})", "({a} <= {b})", "({a} == {b})", "({a} != {b})",
                     "torch.isnan({a})", "torch.isinf({a})", "torch.isfinite({a})",
                     "({a} >= 0)", "({a} < 1.5)"]).format(a=a, b=b)


def int_ops(r, a, b):
    c = r.choice(CONSTS[:-1])
    nz = r.choice([-7, -3, -2, 2, 3, 5, 8])
    lo = r.randint(-10, 10)
    hi = lo + r.randint(-2, 12)
    return r.choice(["({a} + {c})", "({a} * {c})", "({a} - {b})", "({c} - {a})",
                     "torch.remainder({a}, {nz})", "torch.floor_divide({a}, {nz})",
                     "torch.div({a}, {nz}, rounding_mode='floor')",
                     "torch.div({a}, {nz}, rounding_mode='trunc')",
                     "torch.clamp({a}, {lo}, {hi})", "torch.clamp({a}, min={b})",
                     "torch.abs({a})", "(-{a})", "torch.maximum({a}, {b})",
                     "torch.minimum({a}, {b})", "torch.where({a} > {c}, {a}, {b})",
                     "torch.remainder({a}, {b})", "torch.fmod({a}, {nz})",
                     "torch.sign({a})", "({a} * {b})"]
                    ).format(a=a, b=b, c=c, nz=nz, lo=lo, hi=hi)


def index_ops(r, idx, t, x, w, inrange):
    """an index statement reading table t (or w) at idx"""
    n = t.shape[0] if t.dim() else 1
    wrap = (lambda e, m: "torch.remainder(%s, %d)" % (e, m)) if inrange else (lambda e, m: e)
    if r.random() < .3 and inrange:
        wrap = lambda e, m: "torch.clamp(%s, 0, %d)" % (e, m - 1)  # noqa: E731
    return r.choice([
        "torch.index_select(w, 0, %s.reshape(-1))" % wrap(idx, w.shape[0]),
        "F.embedding(%s, w)" % wrap(idx, w.shape[0]),
        "torch.take({t}, %s)" % wrap(idx, max(t.numel(), 1)),
        "{t}[%s]" % wrap(idx, max(n, 1)),
        "w[%s]" % wrap(idx, w.shape[0]),
        "torch.gather(w, 0, %s.reshape(-1, 1).expand(-1, w.shape[1]))" % wrap(idx, w.shape[0]),
        "torch.gather({t}, -1, %s.reshape(-1)[:1].reshape([1] * {t}.dim()).expand(*{t}.shape[:-1], 1))"
        % wrap(idx, max(t.shape[-1], 1) if t.dim() else 1),
    ])


def reduce_op(r, a, t):
    d = pick_dim(r, t)
    k = r.choice(["True", "False"])
    return r.choice(["torch.sum({a}, {d}, keepdim={k})", "torch.mean({a}, {d}, keepdim={k})",
                     "torch.amax({a}, {d}, keepdim={k})", "torch.amin({a}, {d}, keepdim={k})",
                     "torch.prod({a}, {d}, keepdim={k})", "torch.argmax({a}, {d}, keepdim={k})",
                     "torch.argmin({a}, {d}, keepdim={k})", "torch.sum({a})", "torch.amax({a})",
                     "torch.max({a}, {d}, keepdim={k})[0]", "torch.max({a}, {d})[1]",
                     "torch.cumsum({a}, {d})", "torch.logsumexp({a}, {d})",
                     "torch.count_nonzero({a}, {d})", "torch.any({a} > 0, {d})",
                     "torch.all({a} > 0, {d})"]).format(a=a, d=d, k=k)


def view_op(r, a, t):
    d = pick_dim(r, t)
    ops = ["{a}.reshape(-1)", "{a}.unsqueeze(0)", "{a}.flip({d})", "{a}.contiguous()"]
    if t.dim() >= 1:
        ops += ["{a}[..., ::2]", "{a}[..., 1::3]", "{a}.narrow({d}, 0, 1)", "{a}.select({d}, -1)",
                "torch.cat([{a}, {a}], {d})", "{a}.unsqueeze(-1).expand(*{a}.shape, 2)"]
    if t.dim() >= 2:
        ops += ["{a}.transpose(0, 1)", "{a}.permute(*reversed(range({a}.dim())))", "{a}[::2, ::-1]"
                if False else "{a}[::2]", "{a}.t()" if t.dim() == 2 else "{a}.transpose(-1, -2)"]
    return r.choice(ops).format(a=a, d=d)


def cast_op(r, a, t):
    if t.dtype == torch.bool:
        return r.choice(["{a}.float()", "{a}.long()", "torch.logical_not({a})", "(~{a})",
                         "torch.logical_and({a}, {a}.flip(-1))", "{a}.sum()"]).format(a=a)
    if t.is_floating_point():
        return r.choice(["torch.clamp({a}, -20, 20).nan_to_num().long()",
                         "torch.floor(torch.nan_to_num({a}, 0.0, 9.0, -9.0)).long()",
                         "{a}.int()" if r.random() < .2 else "torch.nan_to_num({a}).clamp(-50, 50).long()"]
                        ).format(a=a)
    return r.choice(["{a}.float()", "({a}.float() / 3.0)", "{a}.to(torch.int32)"]).format(a=a)


def build(seed):
    """(source, example x, i) for a seed"""
    r = random.Random(seed)
    torch.manual_seed(seed)
    xs = r.choice(SHAPES)
    x = torch.randn(xs) * r.choice([1.0, 3.0, 100.0])
    if x.numel() and r.random() < .7:
        flat = x.view(-1)
        for _ in range(r.randint(1, 3)):
            flat[r.randrange(flat.numel())] = r.choice(SPECIAL)
    ishape = r.choice([(4,), (2, 3), (1,), (5,), (2, 1)])
    i = torch.randint(0, r.choice([3, 6]), ishape)
    w = torch.randn(r.choice([6, 7, 16]), r.choice([1, 4, 5]))
    env = {"x": x, "i": i, "w": w}
    g = {"torch": torch, "F": F}
    lines = []
    for k in range(r.randint(3, 9)):
        names = list(env)
        floats = [n for n in names if env[n].is_floating_point()]
        ints = [n for n in names if env[n].dtype in (torch.int64, torch.int32)]
        bools = [n for n in names if env[n].dtype == torch.bool]
        def recent(pool):
            return pool[-1 - min(int(r.expovariate(0.8)), len(pool) - 1)]
        for _try in range(20):
            kind = r.choice(["fu", "fs", "fb", "cmp", "int", "int", "idx", "idx", "red", "view", "cast", "mask"])
            a = recent(names)
            b = recent(names)
            try:
                if kind == "fu":
                    e = float_unary(r, recent(floats))
                elif kind == "fs":
                    e = float_scalar(r, recent(floats))
                elif kind == "fb":
                    e = float_binary(r, recent(floats), recent(floats))
                elif kind == "cmp":
                    e = compare(r, recent(floats), recent(floats))
                elif kind == "int":
                    e = int_ops(r, recent(ints), recent(ints))
                elif kind == "idx":
                    e = index_ops(r, recent(ints), env[a], x, w, r.random() < .6).format(t=a)
                elif kind == "red":
                    e = reduce_op(r, a, env[a])
                elif kind == "view":
                    e = view_op(r, a, env[a])
                elif kind == "cast":
                    e = cast_op(r, a, env[a])
                else:
                    m = r.choice(bools) if bools else "(%s > 0)" % recent(floats)
                    e = r.choice(["torch.where({m}, {a}, {c})", "{a}.masked_fill({m}, {c})",
                                  "torch.where({m}, {a}, {b})"]).format(
                        m=m, a=a, b=b, c=r.choice(MASKFILL))
            except IndexError:
                continue
            g.update(env)
            try:
                v = eval(e, g)
            except Exception:
                continue
            if not isinstance(v, torch.Tensor) or v.numel() > 4096:
                continue
            name = "v%d" % k
            env[name] = v
            lines.append("        %s = %s" % (name, e))
            break
    made = [n for n in env if n.startswith("v")]
    if not made:
        return None
    outs = made[-1:] + ([r.choice(made[:-1])] if len(made) > 1 and r.random() < .6 else [])
    lines = live(lines, outs)
    src = ("class M(nn.Module):\n    def __init__(self, w):\n        super().__init__()\n"
           "        self.w = nn.Parameter(w)\n\n    def forward(self, x, i):\n        w = self.w\n"
           + "\n".join(lines) + "\n        return (%s,)\n" % ", ".join(outs))
    return src, x, i, w


def live(lines, outs):
    """the statements the outputs read (PyTorch runs dead ones, the export drops them)"""
    need, kept = set(outs), []
    for line in reversed(lines):
        name, e = line.strip().split(" = ", 1)
        if name in need:
            kept.append(line)
            need |= set(re.findall(r"\bv\d+\b", e))
    return kept[::-1]


def module(src, w):
    g = {"torch": torch, "nn": nn, "F": F}
    exec(src, g)
    return g["M"](w.clone())


def run_spyre(spyre, d, cfg):
    try:
        p = subprocess.run([spyre, "run", d, "--check", "--config", cfg], capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "BUG timeout"
    out = p.stdout + p.stderr
    if p.returncode == 1 and "MISMATCH" in out:
        return "BUG mismatch %s" % " | ".join(l for l in out.splitlines() if "MISMATCH" in l)[:400]
    if p.returncode not in (0, 2, 3):
        return "BUG rc=%d %s" % (p.returncode, " | ".join(out.strip().splitlines()[-3:]))
    if re.search(r"AddressSanitizer|runtime error:|LeakSanitizer", out):
        return "BUG sanitizer %s" % " | ".join(l for l in out.splitlines() if "ERROR" in l or "runtime error" in l)[:300]
    if p.returncode == 2:
        lines = out.strip().splitlines()
        return "REFUSED %s" % (lines[0] if lines else "")
    if p.returncode == 3 or "MISMATCH" in out:
        return "BUG mismatch %s" % " | ".join(l for l in out.splitlines() if "MISMATCH" in l)[:400]
    for m in re.finditer(r"^expected (\S+): max_abs_err=(\S+) max_rel_err=(\S+).* vacuous=\d+", out, re.M):
        ab, rel = float(m.group(2)), float(m.group(3))
        if not (ab <= 0.05 or rel <= 0.05):
            return "BUG off %s" % m.group(0)
    fb = re.search(r"fallback_ops=\d+", out)
    return "ok %s" % (fb.group(0) if fb else "")


def out_of_range(i, r):
    j = i.clone().view(-1)
    j[r.randrange(j.numel())] = r.choice([1000, -1000, 7, 16, -17])
    return j.view(i.shape)


def case(seed, args):
    built = build(seed)
    if built is None:
        return ["%d skip" % seed]
    src, x, i, w = built
    d = os.path.join(args.out, str(seed))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "case.py"), "w") as f:
        f.write("import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n" + src)
    try:
        exporter.export("fuzz%d:make" % seed, d, 0, "make_fx", func=lambda: (module(src, w), (x, i)))
    except BaseException as e:  # noqa: B036 the exporter's user errors exit
        return ["%d EXPORTFAIL %s" % (seed, str(e).splitlines()[0][:200] if str(e) else type(e).__name__)]
    res = ["%d %s %s" % (seed, cfg, run_spyre(args.spyre, d, cfg)) for cfg in args.configs]
    # the same graph with an index out of range
    r = random.Random(seed + 7)
    j = out_of_range(i, r)
    try:
        with torch.no_grad():
            want = module(src, w)(x, j)
        raised = None
    except Exception as e:
        raised = str(e).splitlines()[0][:80]
    od = d + "_oor"
    shutil.rmtree(od, ignore_errors=True)
    shutil.copytree(d, od)
    exporter.write_safetensors(os.path.join(od, "inputs.safetensors"), [("x", x), ("i", j)])
    if raised:
        os.remove(os.path.join(od, "expected.safetensors"))
    else:
        want = want if isinstance(want, tuple) else (want,)
        exporter.write_safetensors(os.path.join(od, "expected.safetensors"),
                                   [("output%d" % k, v.contiguous()) for k, v in enumerate(want)])
    for cfg in args.configs[:1]:
        v = run_spyre(args.spyre, od, cfg)
        if raised and v.startswith("ok"):
            v = "BUG ran an index PyTorch refuses (%s)" % raised
        res.append("%d_oor %s %s" % (seed, cfg, v))
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--out", default="/tmp/fuzz_ops")
    p.add_argument("--spyre", default="build/spyre")
    p.add_argument("--configs", default="spyre,spyre-4core")
    p.add_argument("--show", type=int)
    p.add_argument("--finite", action="store_true",
                   help="no infinities nor values past DL16's range (which DL16 cannot hold)")
    args = p.parse_args()
    if args.show is not None:
        print(build(args.show)[0])
        return 0
    args.configs = args.configs.split(",")
    if args.finite:
        for pool in (SPECIAL, FCONSTS, MASKFILL):
            pool[:] = [v for v in pool if not re.search(r"inf|e\+?30|70000", str(v))]
        FCONSTS.remove("0.0")  # x / 0 is an infinity
        FCONSTS.remove("-0.0")
    args.spyre = os.path.abspath(args.spyre)
    bugs = 0
    for seed in range(args.start, args.start + args.count):
        for line in case(seed, args):
            print(line, flush=True)
            bugs += " BUG" in line
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
