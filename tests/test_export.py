#!/usr/bin/python3
"""tests/test_export.py: checks tools/export.py and the committed traces.

Run with the system interpreter (Debian's python3-torch):

    /usr/bin/python3 tests/test_export.py

Prints one line per check and then "N passed, M failed"; exits 0 only if
nothing failed.  Everything is read back with readers written here, not with
the exporter's code: a small parser of docs/graph-format.md, a safetensors
reader, and an evaluator that runs a graph's text with torch.ops.aten.
"""
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPORT = os.path.join(ROOT, "tools", "export.py")
MODELS = os.path.join(ROOT, "traces", "models")

# The small workloads: traces/NAME/ holds the export of models/FILE:NAME.
SMALL = [
    ("mlp.py", "mlp"),
    ("encoder.py", "encoder_small"),
    ("encoder.py", "bert_handwritten_small"),
    ("gpt2.py", "gpt2_small_block_tiny"),
    ("llama.py", "llama_tiny"),
    ("decoder.py", "decoder_small"),
    ("embedding.py", "embed_small"),
    ("transformer.py", "transformer_small"),
]
FUSED_OPS = ("_transformer_encoder_layer_fwd", "_native_multi_head_attention")
FILES = ("graph.txt", "weights.safetensors", "inputs.safetensors", "expected.safetensors")

passed = failed = skipped = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {name}")
    else:
        failed += 1
        print(f"FAIL  {name}" + (f": {detail}" if detail else ""))
    return ok


def skip(name, why):
    global skipped
    skipped += 1
    print(f"skip  {name}: {why}")


# --------------------------------------------------------------------------
# Graph text reader (docs/graph-format.md)

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "f64": torch.float64, "i64": torch.int64, "i32": torch.int32, "bool": torch.bool}

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<value>%[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<number>-?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![A-Za-z0-9_.]))
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[()\[\],:=])
""", re.VERBOSE)


class GraphError(Exception):
    pass


def tokenize(line, lineno):
    tokens, pos = [], 0
    while pos < len(line):
        if line[pos] == "#":  # comment (strings are matched whole, so this is outside one)
            break
        m = TOKEN.match(line, pos)
        if not m:
            raise GraphError(f"line {lineno}: cannot read {line[pos:]!r}")
        if m.lastgroup != "space":
            tokens.append((m.lastgroup, m.group()))
        pos = m.end()
    return tokens


class Line:
    def __init__(self, tokens, lineno):
        self.tokens, self.pos, self.lineno = tokens, 0, lineno

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self, kind=None, text=None):
        k, t = self.peek()
        if k is None or (kind and k != kind) or (text and t != text):
            raise GraphError(f"line {self.lineno}: expected {text or kind}, found {t}")
        self.pos += 1
        return t

    def done(self):
        if self.pos != len(self.tokens):
            raise GraphError(f"line {self.lineno}: unexpected {self.tokens[self.pos][1]}")


def parse_type(ln):
    """("tensor", dtype, shape) or ("tuple", [types])."""
    if ln.peek()[1] == "(":
        ln.take(text="(")
        items = [parse_type(ln)]
        while ln.peek()[1] == ",":
            ln.take(text=",")
            items.append(parse_type(ln))
        ln.take(text=")")
        return ("tuple", items)
    dtype = ln.take("name")
    if dtype not in DTYPES:
        raise GraphError(f"line {ln.lineno}: unknown dtype {dtype}")
    ln.take(text="[")
    shape = []
    while ln.peek()[1] != "]":
        if shape:
            ln.take(text=",")
        shape.append(int(ln.take("number")))
    ln.take(text="]")
    return ("tensor", DTYPES[dtype], tuple(shape))


def skip_range(ln):
    """An integer input's or param's ` range=[LO, HI]`, not kept."""
    if ln.peek()[1] == "range":
        ln.take()
        ln.take(text="=")
        parse_value(ln)


def parse_value(ln):
    """An argument: ("value", name), ("int", i), ("float", f), ("bool", b),
    ("none", None), ("str", s), ("dtype", torch dtype), ("list", [...])."""
    kind, text = ln.peek()
    if kind == "value":
        return ("value", ln.take()[1:])
    if kind == "string":
        raw = ln.take()[1:-1]
        return ("str", re.sub(r"\\(.)", r"\1", raw))
    if kind == "number":
        text = ln.take()
        if re.fullmatch(r"-?\d+", text):
            return ("int", int(text))
        return ("float", float(text))
    if text == "[":
        ln.take()
        items = []
        while ln.peek()[1] != "]":
            if items:
                ln.take(text=",")
            items.append(parse_value(ln))
        ln.take(text="]")
        return ("list", items)
    if kind == "name":
        ln.take()
        if text in ("True", "False"):
            return ("bool", text == "True")
        if text == "None":
            return ("none", None)
        if text in DTYPES:
            return ("dtype", DTYPES[text])
    raise GraphError(f"line {ln.lineno}: expected an argument, found {text}")


def parse_args(ln):
    args, kwargs = [], {}
    ln.take(text="(")
    while ln.peek()[1] != ")":
        if args or kwargs:
            ln.take(text=",")
        k1, t1 = ln.peek()
        if k1 == "name" and ln.pos + 1 < len(ln.tokens) and ln.tokens[ln.pos + 1][1] == "=":
            ln.take()
            ln.take(text="=")
            kwargs[t1] = parse_value(ln)
        else:
            if kwargs:
                raise GraphError(f"line {ln.lineno}: positional argument after a keyword")
            args.append(parse_value(ln))
    ln.take(text=")")
    return args, kwargs


def read_graph(text):
    """Parse graph text; check names are defined once and every use defined."""
    g = {"name": None, "weights": None, "inputs": [], "params": [], "nodes": [],
         "outputs": None, "types": {}}
    for lineno, line in enumerate(text.splitlines(), 1):
        ln = Line(tokenize(line, lineno), lineno)
        kind, head = ln.peek()
        if kind is None:
            continue

        def define(name, typ):
            if name in g["types"]:
                raise GraphError(f"line {lineno}: %{name} is defined twice")
            g["types"][name] = typ

        if head == "graph":
            ln.take()
            g["name"] = ln.take("name")
        elif head == "weights":
            ln.take()
            g["weights"] = parse_value(ln)[1]
        elif head == "input":
            ln.take()
            name = ln.take("value")[1:]
            ln.take(text=":")
            define(name, parse_type(ln))
            skip_range(ln)
            g["inputs"].append(name)
        elif head == "param":
            ln.take()
            name = ln.take("value")[1:]
            ln.take(text=":")
            define(name, parse_type(ln))
            ln.take(text="=")
            g["params"].append((name, parse_value(ln)[1]))
            skip_range(ln)
        elif head == "output":
            ln.take()
            if g["outputs"] is not None:
                raise GraphError(f"line {lineno}: a second output line")
            g["outputs"] = [ln.take("value")[1:]]
            while ln.peek()[1] == ",":
                ln.take()
                g["outputs"].append(ln.take("value")[1:])
        elif head == "hint":
            continue
        elif kind == "value":
            name = ln.take()[1:]
            ln.take(text=":")
            typ = parse_type(ln)
            ln.take(text="=")
            op = ln.take("name")
            args, kwargs = parse_args(ln)
            define(name, typ)
            g["nodes"].append({"name": name, "op": op, "args": args, "kwargs": kwargs,
                               "line": lineno})
        else:
            raise GraphError(f"line {lineno}: unexpected {head}")
        ln.done()
    if g["outputs"] is None:
        raise GraphError("no output line")

    def uses(arg):
        if arg[0] == "value":
            yield arg[1]
        elif arg[0] == "list":
            for a in arg[1]:
                yield from uses(a)

    for node in g["nodes"]:
        for arg in node["args"] + list(node["kwargs"].values()):
            for name in uses(arg):
                if name not in g["types"]:
                    raise GraphError(f"line {node['line']}: %{name} is not defined")
    for name in g["outputs"]:
        if name not in g["types"]:
            raise GraphError(f"output %{name} is not defined")
    return g


# --------------------------------------------------------------------------
# Evaluating a graph's text with torch.ops.aten

NAMED_CONSTANTS = {
    "memory_format": lambda s: getattr(torch, s),
    "layout": lambda s: getattr(torch, s),
    "device": torch.device,
}


def run_graph(g, inputs, weights):
    env = dict(inputs)
    for name, key in g["params"]:
        env[name] = weights[key]
    nodes = {n["name"]: n for n in g["nodes"]}

    def arg(a, key=None):
        kind, v = a
        if kind == "value":
            return value(v)
        if kind == "list":
            return [arg(x) for x in v]
        if kind == "str" and key in NAMED_CONSTANTS:
            return NAMED_CONSTANTS[key](v)
        return v

    def value(name):  # evaluated on first use: ops may come in any order
        if name not in env:
            node = nodes[name]
            args = [arg(a) for a in node["args"]]
            kwargs = {k: arg(a, k) for k, a in node["kwargs"].items()}
            if node["op"] == "getitem":
                env[name] = args[0][args[1]]
            else:
                namespace, op, overload = node["op"].split(".")
                fn = getattr(getattr(getattr(torch.ops, namespace), op), overload)
                env[name] = fn(*args, **kwargs)
        return env[name]

    with torch.no_grad():
        outs = [value(name) for name in g["outputs"]]
        for name in g["types"]:
            value(name)
    return outs, env


def type_of(t):
    if isinstance(t, (tuple, list)):
        return ("tuple", [type_of(x) for x in t])
    return ("tensor", t.dtype, tuple(t.shape))


# --------------------------------------------------------------------------
# safetensors reader

ST_DTYPES = {"F32": (np.float32, torch.float32), "F16": (np.float16, torch.float16),
             "BF16": (np.int16, torch.bfloat16), "F64": (np.float64, torch.float64),
             "I64": (np.int64, torch.int64), "I32": (np.int32, torch.int32),
             "BOOL": (np.bool_, torch.bool)}


def read_safetensors(path):
    """{key: tensor}, in file order; checks the layout of the file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    tensors, end = {}, 0
    for key, info in header.items():
        np_dtype, torch_dtype = ST_DTYPES[info["dtype"]]
        begin, stop = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if begin != end or stop - begin != count * np.dtype(np_dtype).itemsize:
            raise ValueError(f"{path}: {key}: bad data_offsets {info['data_offsets']}")
        end = stop
        a = np.frombuffer(body[begin:stop], dtype=np.dtype(np_dtype).newbyteorder("<"))
        t = torch.from_numpy(a.astype(np_dtype)).reshape(info["shape"])
        tensors[key] = t.view(torch_dtype) if torch_dtype == torch.bfloat16 else t
    if end != len(body):
        raise ValueError(f"{path}: {len(body) - end} bytes after the last tensor")
    return tensors


# --------------------------------------------------------------------------

def load_workload(file, func):
    spec = importlib.util.spec_from_file_location("_test_" + func, os.path.join(MODELS, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, func)()


def export(file, func, out_dir):
    return subprocess.run([sys.executable, EXPORT, f"{os.path.join(MODELS, file)}:{func}",
                           "-o", out_dir], capture_output=True, text=True)


# Floating-point tensors made on another machine are compared within a tolerance, never bit
# for bit. PyTorch's and OpenBLAS's kernels block and vectorise their sums differently on
# different CPUs (AVX2, AVX-512, ...), and even seeded random weights and inputs differ in the
# last bits: torch's normal sampler is vectorised per CPU capability (seen here with
# ATEN_CPU_CAPABILITY=default). A reordered sum moves a result by some units in the last
# place of the magnitudes summed, not of the result (which may cancel to near zero). The
# tolerance is therefore relative to the tensor's largest magnitude: 1e-5 of it is about 80
# fp32 roundings (2^-24 each) of that scale, room for sums over a few hundred terms through
# a few layers, and still 100 times finer than any DL16 tolerance the simulator is held to.
# Non-floating results (integers, bools) must be equal.
FP_SCALE_TOL = 1e-5


def tensor_err(a, b):
    """Largest |a - b| over FP_SCALE_TOL * max|b| (<= 1 is close), or inf on a mismatch of
    dtype, shape, or any value of a non-floating tensor."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return float("inf")
    if not a.is_floating_point():
        return 0.0 if torch.equal(a, b) else float("inf")
    if a.numel() == 0:
        return 0.0
    a, b = a.double(), b.double()
    if not torch.equal(torch.isnan(a), torch.isnan(b)):
        return float("inf")
    a, b = torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0)
    scale = b.abs().max().item()
    diff = (a - b).abs().max().item()
    return diff / (FP_SCALE_TOL * scale) if scale > 0 else (0.0 if diff == 0 else float("inf"))


def close_tensors(a, b):
    """Same keys, dtypes and shapes; values within tensor_err <= 1."""
    return list(a) == list(b) and all(tensor_err(a[k], b[k]) <= 1 for k in a)


def close_detail(a, b):
    return "keys " + " ".join(f"{k}: err/tol {tensor_err(a[k], b[k]):.3g}" if k in b else k
                              for k in a)


def check_export(file, func, out_dir):
    """Everything about one export directory, against the module itself."""
    model, inputs = load_workload(file, func)[:2]
    model.eval()
    with open(os.path.join(out_dir, "graph.txt")) as f:
        text = f.read()
    try:
        g = read_graph(text)
    except GraphError as e:
        check(f"{func}: graph.txt parses", False, str(e))
        return
    check(f"{func}: graph.txt parses, names defined once, every use defined, one output line",
          True)
    check(f"{func}: graph name and weights file", g["name"] == func
          and g["weights"] == "weights.safetensors", f"{g['name']} {g['weights']}")
    ops = {n["op"] for n in g["nodes"]}
    check(f"{func}: ops are aten.NAME.OVERLOAD or getitem",
          all(op == "getitem" or re.fullmatch(r"aten\.\w+\.\w+", op) for op in ops),
          " ".join(sorted(ops)))
    fused = [op for op in ops if any(f in op for f in FUSED_OPS)]
    check(f"{func}: no fused fast-path op", not fused, " ".join(fused))

    try:
        weights = read_safetensors(os.path.join(out_dir, "weights.safetensors"))
        ins = read_safetensors(os.path.join(out_dir, "inputs.safetensors"))
        expected = read_safetensors(os.path.join(out_dir, "expected.safetensors"))
    except (ValueError, KeyError) as e:
        check(f"{func}: safetensors files read back", False, str(e))
        return
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    state = {k: v.detach() for k, v in state.items()}
    check(f"{func}: weights.safetensors holds the module's parameters and buffers",
          close_tensors(weights, state), close_detail(weights, state))
    named_ins = dict(zip(g["inputs"], inputs))
    check(f"{func}: inputs.safetensors holds the example inputs, by input name",
          list(ins) == g["inputs"] and close_tensors(ins, named_ins), close_detail(ins, named_ins))
    check(f"{func}: every param key is in weights.safetensors",
          sorted(key for _, key in g["params"]) == sorted(weights))
    declared = [g["types"][n] for n in g["inputs"]] + [g["types"][n] for n, _ in g["params"]]
    actual = [type_of(ins[n]) for n in g["inputs"]] + [type_of(weights[k]) for _, k in g["params"]]
    check(f"{func}: input and param types match the stored tensors", declared == actual)

    with torch.enable_grad():  # as exported: autograd on, so no fused fast path
        outputs = model(*inputs)
    outputs = [o.detach() for o in (outputs if isinstance(outputs, (tuple, list)) else [outputs])]
    module_out = {f"output{i}": o for i, o in enumerate(outputs)}
    check(f"{func}: expected.safetensors matches the module's output (within FP_SCALE_TOL)",
          close_tensors(expected, module_out), close_detail(expected, module_out))

    try:
        graph_outs, env = run_graph(g, ins, weights)
    except Exception as e:
        check(f"{func}: graph.txt runs with torch.ops.aten", False, f"{type(e).__name__}: {e}")
        return
    wrong = [n for n in g["types"] if type_of(env[n]) != g["types"][n]]
    check(f"{func}: every value has its declared type when run", not wrong,
          f"{len(wrong)} wrong, first %{wrong[0]}" if wrong else "")
    errs = [tensor_err(o, e) for o, e in zip(graph_outs, expected.values())]
    check(f"{func}: graph.txt run with torch.ops.aten reproduces expected.safetensors",
          len(graph_outs) == len(expected) and all(err <= 1 for err in errs),
          f"err/tol {errs}")


LOWRANK = """import torch


class LowRank(torch.nn.Module):
    def forward(self, a):
        u, s, v = torch.svd_lowrank(a, q=2, niter=1)
        return u @ torch.diag(s) @ v.t()  # signs of the factors cancel


def lowrank():
    torch.manual_seed(0)
    return LowRank(), (torch.randn(6, 4) @ torch.randn(4, 5),)
"""


def check_recorded_draws(tmp):
    """--record-draws: svd_lowrank's randn becomes an input holding PyTorch's
    draw, so the graph is deterministic and reproduces PyTorch's output."""
    src = os.path.join(tmp, "lowrank.py")
    with open(src, "w") as f:
        f.write(LOWRANK)
    dirs = {}
    for flag in ("", "--record-draws"):
        out = os.path.join(tmp, "lowrank" + flag.replace("-", "_"))
        r = subprocess.run([sys.executable, EXPORT, f"{src}:lowrank", "-o", out] + ([flag] if flag else []),
                           capture_output=True, text=True)
        if not check(f"svd_lowrank exports {flag or 'without --record-draws'}", r.returncode == 0, r.stderr.strip()):
            return
        with open(os.path.join(out, "graph.txt")) as f:
            dirs[flag] = (read_graph(f.read()), out)
    g, out = dirs["--record-draws"]
    randn = [n for n in dirs[""][0]["nodes"] if n["op"] == "aten.randn.default"]
    check("svd_lowrank's graph draws with aten.randn without --record-draws", len(randn) == 1)
    check("with --record-draws its graph has no random op and an input for the draw",
          not [n for n in g["nodes"] if n["op"].startswith("aten.rand")] and g["inputs"][-1] == randn[0]["name"],
          f"inputs {g['inputs']}")
    ins = read_safetensors(os.path.join(out, "inputs.safetensors"))
    expected = read_safetensors(os.path.join(out, "expected.safetensors"))
    runs = [run_graph(g, ins, {})[0] for _ in range(2)]
    check("the recorded graph gives the same output on every run", all(
        torch.equal(a, b) for a, b in zip(*runs)))
    errs = [tensor_err(o, e) for o, e in zip(runs[0], expected.values())]
    check("the recorded graph reproduces PyTorch's output (FP_SCALE_TOL)", all(e <= 1 for e in errs),
          f"err/tol {errs}")


RECURRENT = """
import torch
from torch import nn


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.gru = nn.GRU(8, 8, num_layers=2)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        z, g = self.gru(y.transpose(0, 1))
        return z, h, c, g


def recurrent():
    torch.manual_seed(0)
    return Recurrent(), (torch.randn(2, 4, 6),)
"""


def check_recurrent_exports(tmp):
    """nn.LSTM and nn.GRU (2 layers, batch_first and not): their flat weights
    are traced once per time step; each is one param line and one tensor of
    weights.safetensors (it was one tensor per step, leaving bytes of the file
    that belong to no tensor), and the simulator's result is PyTorch's."""
    src = os.path.join(tmp, "recurrent.py")
    with open(src, "w") as f:
        f.write(RECURRENT)
    out = os.path.join(tmp, "recurrent")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:recurrent", "-o", out], capture_output=True, text=True)
    if not check("LSTM + GRU: export exits 0", r.returncode == 0, r.stderr.strip()):
        return
    with open(os.path.join(out, "graph.txt")) as f:
        g = read_graph(f.read())
    keys = [key for _, key in g["params"]]
    check("LSTM + GRU: one param line per weights key", len(keys) == len(set(keys)), " ".join(keys))
    try:
        weights = read_safetensors(os.path.join(out, "weights.safetensors"))
    except ValueError as e:
        check("LSTM + GRU: weights.safetensors is laid out tensor after tensor", False, str(e))
        return
    check("LSTM + GRU: every param key is in weights.safetensors", set(keys) == set(weights))
    ins = read_safetensors(os.path.join(out, "inputs.safetensors"))
    expected = read_safetensors(os.path.join(out, "expected.safetensors"))
    errs = [tensor_err(o, e) for o, e in zip(run_graph(g, ins, weights)[0], expected.values())]
    check("LSTM + GRU: graph.txt run with torch.ops.aten reproduces PyTorch (FP_SCALE_TOL)",
          len(errs) == 4 and all(e <= 1 for e in errs), f"err/tol {errs}")
    spyre = os.path.join(ROOT, "build", "spyre")
    if not os.path.exists(spyre):
        skip("LSTM + GRU: spyre run --check matches PyTorch", "no build/spyre")
        return
    r = subprocess.run([spyre, "run", out, "--check"], capture_output=True, text=True)
    mism = [ln for ln in r.stdout.splitlines() if "MISMATCH" in ln]
    check("LSTM + GRU: spyre run --check matches PyTorch (unsafe_split runs as split)",
          r.returncode == 0 and not mism and r.stdout.count("expected ") == 4,
          f"status {r.returncode}: {(mism or r.stderr.strip().splitlines() or [''])[-1]}")


VISION = """
import torch
from torch import nn
import torch.nn.functional as F


class Vision(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(2, affine=True, track_running_stats=True)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.tensor([0.3, -0.2]))
            self.norm.running_var.copy_(torch.tensor([1.5, 0.7]))

    def forward(self, x, theta, theta3):
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        g5 = F.affine_grid(theta3, (1, 1, 2, 3, 4), align_corners=True)
        p = F.unfold(x, 3, padding=1, stride=2)
        return (F.grid_sample(x, grid, align_corners=False), g5, p,
                F.fold(p, (6, 6), 3, padding=1, stride=2), self.norm(x))


def vision():
    torch.manual_seed(0)
    return Vision().eval(), (torch.randn(2, 2, 6, 6), torch.randn(2, 2, 3), torch.randn(1, 3, 4))


def nms():
    import torchvision

    class Nms(nn.Module):
        def forward(self, boxes, scores):
            return torchvision.ops.nms(boxes, scores, 0.5)

    return Nms(), (torch.tensor([[0.0, 0, 2, 2], [0.1, 0, 2, 2], [3, 3, 4, 4]]), torch.tensor([0.9, 0.8, 0.7]))
"""


def check_vision_exports(tmp):
    """F.affine_grid, F.unfold and F.fold (affine_grid_generator, im2col, col2im: neither the
    compiler nor the host had them) export as the ATen ops they are made of, and an eval-mode
    InstanceNorm with track_running_stats as batch norm (its in-place write-back of the
    unchanged running statistics was refused); the graph reproduces PyTorch's outputs and
    spyre run --check validates them.  A torchvision.ops op is refused in one line."""
    src = os.path.join(tmp, "vision.py")
    with open(src, "w") as f:
        f.write(VISION)
    out = os.path.join(tmp, "vision")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:vision", "-o", out], capture_output=True, text=True)
    if not check("affine_grid, unfold, fold, InstanceNorm(track_running_stats): export exits 0",
                 r.returncode == 0, r.stderr.strip()):
        return
    with open(os.path.join(out, "graph.txt")) as f:
        g = read_graph(f.read())
    ops = {n["op"] for n in g["nodes"]}
    gone = ("affine_grid_generator", "im2col", "col2im", "copy_")
    check("affine_grid, unfold, fold: decomposed, no write-back", not [o for o in ops if any(x in o for x in gone)],
          " ".join(sorted(ops)))
    weights = read_safetensors(os.path.join(out, "weights.safetensors"))
    ins = read_safetensors(os.path.join(out, "inputs.safetensors"))
    expected = read_safetensors(os.path.join(out, "expected.safetensors"))
    errs = [tensor_err(o, e) for o, e in zip(run_graph(g, ins, weights)[0], expected.values())]
    check("affine_grid, unfold, fold, InstanceNorm: graph.txt run with torch.ops.aten reproduces PyTorch",
          len(errs) == 5 and all(e <= 1 for e in errs), f"err/tol {errs}")
    spyre = os.path.join(ROOT, "build", "spyre")
    if os.path.exists(spyre):
        r = subprocess.run([spyre, "run", out, "--check"], capture_output=True, text=True)
        mism = [ln for ln in r.stdout.splitlines() if "MISMATCH" in ln]
        check("affine_grid, unfold, fold, InstanceNorm: spyre run --check matches PyTorch",
              r.returncode == 0 and not mism and r.stdout.count("expected ") == 5,
              f"status {r.returncode}: {(mism or r.stderr.strip().splitlines() or [''])[-1]}")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:nms", "-o", os.path.join(tmp, "nms")],
                       capture_output=True, text=True)
    check("torchvision.ops.nms: export exits 2 with one line naming the op",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "torchvision.nms" in r.stderr,
          f"status {r.returncode}, stderr {r.stderr.strip()!r}")


FOLD = """
import torch
from torch import nn
import torch.nn.functional as F


class Fold(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 2 * 16)

    def forward(self, x, tokens):
        p = F.unfold(x, (3, 2), dilation=(1, 2), padding=(1, 1), stride=(2, 3))
        learned = self.proj(tokens).transpose(1, 2)
        return (F.fold(p, (9, 7), (3, 2), dilation=(1, 2), padding=(1, 1), stride=(2, 3)),
                F.fold(learned, (8, 8), 4, padding=1, stride=2),
                F.unfold(x, (3, 2), dilation=2, padding=(0, 1), stride=(2, 1)))


def fold():
    torch.manual_seed(0)
    return Fold().eval(), (torch.randn(2, 3, 9, 7), torch.randn(2, 16, 16))
"""


def check_fold_exports(tmp):
    """F.fold (col2im) exports as a sum of its kernel taps' columns, each spread to the stride
    and shifted by pads (PyTorch's decomposition accumulated them by index_put, which ran on
    the host): a fold of F.unfold's patches (uneven kernel, dilation, padding, stride) and an
    overlapping fold of a Linear's patches run natively and validate on both chips, as does an
    unfold padded unevenly (PyTorch 1.13's im2col decomposition swaps the paddings: it failed to
    trace)."""
    src = os.path.join(tmp, "fold.py")
    with open(src, "w") as f:
        f.write(FOLD)
    out = os.path.join(tmp, "fold")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:fold", "-o", out], capture_output=True, text=True)
    if not check("F.fold: export exits 0", r.returncode == 0, r.stderr.strip()):
        return
    with open(os.path.join(out, "graph.txt")) as f:
        ops = {n["op"] for n in read_graph(f.read())["nodes"]}
    check("F.fold: no col2im, no index_put", not [o for o in ops if "col2im" in o or "index_put" in o],
          " ".join(sorted(ops)))
    spyre = os.path.join(ROOT, "build", "spyre")
    for cfg in ("spyre", "spyre-4core") if os.path.exists(spyre) else ():
        r = subprocess.run([spyre, "run", out, "--check", "--config", cfg], capture_output=True, text=True)
        mism = [ln for ln in r.stdout.splitlines() if "MISMATCH" in ln]
        check(f"F.fold: spyre run --check on {cfg} matches PyTorch with fallback_ops=0",
              r.returncode == 0 and not mism and "fallback_ops=0 " in r.stdout and r.stdout.count("expected ") == 3,
              f"status {r.returncode}: {(mism or r.stderr.strip().splitlines() or [''])[-1]}")


ONE_HOT = """
import torch
from torch import nn
import torch.nn.functional as F


class Top2(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 4, bias=False)

    def forward(self, x):
        v, i = torch.topk(self.gate(x), 2, dim=-1)
        return torch.einsum("nk,nke->ne", F.softmax(v, -1), F.one_hot(i, 4).to(x.dtype))


class Widthless(nn.Module):
    def forward(self, i):
        return F.one_hot(i)


class Classes(nn.Module):
    def forward(self, i):
        return F.one_hot(i, 5).float() * 2


def classes():
    return Classes(), (torch.tensor([0, 1, 4, 2]),)


def top2():
    torch.manual_seed(0)
    return Top2().eval(), (torch.randn(6, 8),)


def widthless():
    return Widthless(), (torch.tensor([0, 2, 1]),)
"""


def check_one_hot_exports(tmp):
    """F.one_hot with num_classes traces as a compare with arange (PyTorch's kernel reads the
    indices' max and min, and tracing failed: "trying to get value out of a tracing tensor"):
    a top-2 router's one-hot runs natively and matches PyTorch on both chips; a class out of
    range refuses the launch as PyTorch raises; without num_classes the export exits 2 with
    one line."""
    src = os.path.join(tmp, "one_hot.py")
    with open(src, "w") as f:
        f.write(ONE_HOT)
    out = os.path.join(tmp, "top2")
    spyre = os.path.join(ROOT, "build", "spyre")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:top2", "-o", out], capture_output=True, text=True)
    if check("F.one_hot: export exits 0", r.returncode == 0, r.stderr.strip()):
        for cfg in ("spyre", "spyre-4core") if os.path.exists(spyre) else ():
            r = subprocess.run([spyre, "run", out, "--check", "--config", cfg], capture_output=True, text=True)
            mism = [ln for ln in r.stdout.splitlines() if "MISMATCH" in ln]
            check(f"F.one_hot: spyre run --check on {cfg} matches PyTorch with fallback_ops=0",
                  r.returncode == 0 and not mism and "fallback_ops=0 " in r.stdout and "expected " in r.stdout,
                  f"status {r.returncode}: {(mism or r.stderr.strip().splitlines() or [''])[-1]}")
    # a class outside [0, 5) (PyTorch raises) refuses the launch, not a zero row
    out = os.path.join(tmp, "classes")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:classes", "-o", out], capture_output=True, text=True)
    if check("F.one_hot of an input: export exits 0", r.returncode == 0, r.stderr.strip()) and os.path.exists(spyre):
        for bad, said in (((7, 1, 0, 2), "the value 7 at element 0"), ((0, -1, 0, 2), "the value -1 at element 1")):
            ids = os.path.join(tmp, "classes.f32")
            with open(ids, "wb") as f:
                f.write(struct.pack("4f", *bad))
            r = subprocess.run([spyre, "run", out, "--input", f"i={ids}"], capture_output=True, text=True)
            check(f"F.one_hot of {bad}: the launch exits 2 naming {said}",
                  r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                  f"status {r.returncode}: {r.stderr.strip()!r}")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:widthless", "-o", os.path.join(tmp, "widthless")],
                       capture_output=True, text=True)
    check("F.one_hot without num_classes: export exits 2 with one line",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "num_classes" in r.stderr,
          f"status {r.returncode}, stderr {r.stderr.strip()!r}")


CACHE = """
import torch
from torch import nn


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = nn.Linear(8, 8)

    def forward(self, x, cache_k, cache_v, pos):
        ck, cv = cache_k.clone(), cache_v.clone()
        ck.index_copy_(1, pos, self.k(x))
        cv[:, 3:4] = x
        return (ck @ cv.transpose(1, 2)).softmax(-1), ck, cv


def cache():
    torch.manual_seed(0)
    return Cache().eval(), (torch.randn(2, 1, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 8), torch.tensor([3]))
"""


def check_written_outputs_export(tmp):
    """A returned tensor written in place through a view of it (a KV cache's cv[:, 3:4] = x)
    exports with the write (PyTorch 1.13's functionalize returned its value from before it, and
    export stopped: "does not reproduce output 2"); with index_copy_ into the other cache (an
    index input) it runs natively and matches PyTorch on both chips."""
    src = os.path.join(tmp, "cache.py")
    with open(src, "w") as f:
        f.write(CACHE)
    out = os.path.join(tmp, "cache")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:cache", "-o", out], capture_output=True, text=True)
    if not check("cache written through a slice: export exits 0", r.returncode == 0, r.stderr.strip()):
        return
    spyre = os.path.join(ROOT, "build", "spyre")
    for cfg in ("spyre", "spyre-4core") if os.path.exists(spyre) else ():
        r = subprocess.run([spyre, "run", out, "--check", "--config", cfg], capture_output=True, text=True)
        mism = [ln for ln in r.stdout.splitlines() if "MISMATCH" in ln]
        check(f"cache written through a slice: spyre run --check on {cfg} matches PyTorch with fallback_ops=0",
              r.returncode == 0 and not mism and "fallback_ops=0 " in r.stdout and r.stdout.count("expected ") == 3,
              f"status {r.returncode}: {(mism or r.stderr.strip().splitlines() or [''])[-1]}")


def check_state_exports(tmp):
    """The whole models' steps (decoder_gen.py): the caches are state lines
    with update lines, not inputs or outputs; the decode step reads the
    prefill's weights file (--weights); a fresh export is the committed one."""
    for model in ("llama", "gpt2"):
        out = os.path.join(tmp, f"{model}_gen")
        spec = os.path.join(MODELS, "decoder_gen.py")
        r = [subprocess.run([sys.executable, EXPORT, f"{spec}:{model}_gen_{step}", "-o", os.path.join(out, step)]
                            + (["--weights", "../prefill/weights.safetensors"] if step == "decode" else []),
                            capture_output=True, text=True) for step in ("prefill", "decode")]
        if not check(f"{model}_gen: both steps export", all(x.returncode == 0 for x in r),
                     " ".join(x.stderr.strip() for x in r)):
            continue
        caches = [f"{kv}_cache{i}" for i in range(2) for kv in "kv"]
        weights = read_safetensors(os.path.join(out, "prefill", "weights.safetensors"))
        for step in ("prefill", "decode"):
            with open(os.path.join(out, step, "graph.txt")) as f:
                text = f.read()
            states = re.findall(r"^state %(\w+): f32\[1, (\d+), 64, 16\] = \"(\w+)\"$", text, re.M)
            updates = re.findall(r"^update %(\w+) = %(\w+)$", text, re.M)
            check(f"{model}_gen/{step}: the caches are state lines keyed by name, each with one update line",
                  [n for n, _, k in states] == caches and all(n == k for n, _, k in states)
                  and [n for n, _ in updates] == caches, f"{states} {updates}")
            check(f"{model}_gen/{step}: each update is an index_copy of its cache at %pos",
                  all(re.search(rf"^%{v}: [^=]+= aten\.index_copy\.default\(%{n}, 2, %pos, %\w+\)$", text, re.M)
                      for n, v in updates))
            inputs = read_safetensors(os.path.join(out, step, "inputs.safetensors"))
            check(f"{model}_gen/{step}: inputs.safetensors holds ids and pos, not the caches",
                  sorted(inputs) == ["ids", "pos"], str(sorted(inputs)))
            committed = os.path.join(ROOT, "traces", f"{model}_gen", step, "graph.txt")
            if os.path.exists(committed) and f"torch {torch.__version__}," in text:
                with open(committed) as f:
                    check(f"traces/{model}_gen/{step}: graph.txt identical to a fresh export", f.read() == text,
                          "run traces/export_all.sh")
        check(f"{model}_gen: the prefill's weights file holds the caches, empty",
              all(c in weights and not weights[c].any() for c in caches))
        r = subprocess.run([sys.executable, EXPORT, f"{spec}:{model}_gen_decode", "-o", os.path.join(out, "bad"),
                            "--weights", os.path.join(ROOT, "traces", "mlp", "weights.safetensors")],
                           capture_output=True, text=True)
        check(f"{model}_gen: --weights naming another module's file exits 2 with one line",
              r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "is not this module's" in r.stderr,
              f"status {r.returncode}, stderr {r.stderr.strip()!r}")


NOT_PLAIN_LMS = """
import torch


class Bidirectional(torch.nn.Module):
    # every position sees the mean of the whole sequence: not causal
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(32, 16)
        self.head = torch.nn.Linear(16, 32)

    def forward(self, ids):
        x = self.emb(ids)
        return self.head(x + x.mean(1, keepdim=True))


class WithLoss(Bidirectional):
    # nanoGPT's own signature: (logits, loss)
    def forward(self, ids):
        return self.head(self.emb(ids)), None


def bidirectional():
    return Bidirectional(), (torch.tensor([[1, 2, 3]]),)


def with_loss():
    return WithLoss(), (torch.tensor([[1, 2, 3]]),)


def float_ids():
    return Bidirectional(), (torch.zeros(1, 3),)


def no_ids():
    return Bidirectional(), ()


class FromTheEnd(torch.nn.Module):
    # positions counted from the last token: causal, but each logit depends on the length
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(32, 16)
        self.pos = torch.nn.Embedding(16, 16)
        self.head = torch.nn.Linear(16, 32)

    def forward(self, ids):
        return self.head(self.emb(ids) + self.pos(torch.arange(ids.size(1) - 1, -1, -1)))


def from_the_end():
    return FromTheEnd(), (torch.tensor([[1, 2, 3]]),)
"""

NOT_SEQ2SEQS = """
import torch


class SourceMean(torch.nn.Module):
    # the decoder sees the mean of the source's embeddings, over all of it
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(32, 16)
        self.head = torch.nn.Linear(16, 32)

    def forward(self, src, tgt):
        return self.head(self.emb(tgt) + self.emb(src).mean(1, keepdim=True))


class BidirectionalDecoder(SourceMean):
    # every decoder position sees the mean of the whole decoder sequence: not causal
    def forward(self, src, tgt):
        y = self.emb(tgt)
        return self.head(y + y.mean(1, keepdim=True) + self.emb(src).mean(1, keepdim=True))


class IgnoresMask(SourceMean):
    # takes the source mask but averages over the padding too
    def forward(self, src, mask, tgt):
        return super().forward(src, tgt)


def bidirectional_decoder():
    return BidirectionalDecoder(), (torch.tensor([[1, 2, 3]]), torch.tensor([[2]]))


def ignores_mask():
    src = torch.tensor([[1, 2, 3]])
    return IgnoresMask(), (src, torch.ones_like(src), torch.tensor([[2]]))


def no_mask():
    return SourceMean(), (torch.tensor([[1, 2, 3]]), torch.tensor([[2]]))


class IgnoresSource(SourceMean):
    # nothing computed from the source reaches the logits: no encoder to split off
    def forward(self, src, tgt):
        return self.head(self.emb(tgt))


def ignores_source():
    return IgnoresSource(), (torch.tensor([[1, 2, 3]]), torch.tensor([[2]]))
"""


def check_seq2seq_exports(tmp):
    """--generate CONTEXT of an encoder-decoder (docs/serving.md,
    "Generating with an encoder-decoder model"): seq2seq_gen.py's module
    exports into DIR/seq2seq with the source padded to --source-len, its
    mask 0 there, the decoder ids to CONTEXT and its decoder start token,
    as committed; a decoder that is not causal, a mask the module ignores
    and a source to pad without a mask exit 2 with one line."""
    out = os.path.join(tmp, "seq2seq_gen")
    r = subprocess.run([sys.executable, EXPORT, os.path.join(MODELS, "seq2seq_gen.py") + ":seq2seq_gen", "-o", out,
                        "--generate", "32", "--source-len", "16"], capture_output=True, text=True)
    if check("seq2seq_gen --generate 32 --source-len 16: export exits 0", r.returncode == 0, r.stderr.strip()):
        step = os.path.join(out, "seq2seq")
        with open(os.path.join(step, "graph.txt")) as f:
            text = f.read()
        check("seq2seq_gen: the source and its mask padded to 16, the decoder ids to the context",
              re.findall(r"^input .*$", text, re.M) == ["input %input_ids: i64[1, 16]",
                                                        "input %attention_mask: i64[1, 16]",
                                                        "input %decoder_input_ids: i64[1, 32]"])
        inputs = read_safetensors(os.path.join(step, "inputs.safetensors"))
        check("seq2seq_gen: the example source padded with token 0, its mask 0 there",
              inputs["input_ids"].tolist()[0][10:] == [0] * 6
              and inputs["attention_mask"].tolist() == [[1] * 10 + [0] * 6])
        with open(os.path.join(step, "decoder_start.txt")) as f:
            check("seq2seq_gen: decoder_start.txt holds config.decoder_start_token_id", f.read() == "2\n")
        committed = os.path.join(ROOT, "traces", "seq2seq_gen", "seq2seq", "graph.txt")
        if os.path.exists(committed) and f"torch {torch.__version__}," in text:
            with open(committed) as f:
                check("traces/seq2seq_gen/seq2seq: graph.txt identical to a fresh export", f.read() == text,
                      "run traces/export_all.sh")
    path = os.path.join(tmp, "not_seq2seqs.py")
    with open(path, "w") as f:
        f.write(NOT_SEQ2SEQS)
    for func, more, why in [
            ("bidirectional_decoder", [], "the module is not causal: the logits at position 0 change"),
            ("ignores_mask", ["--source-len", "6"], "the module's logits change when the source of 1 tokens is"),
            ("no_mask", ["--source-len", "6"], "the module takes no source mask, so its source cannot be padded"),
            ("ignores_source", ["--encoder-once"], "--encoder-once: no encoder to run once")]:
        r = subprocess.run([sys.executable, EXPORT, f"{path}:{func}", "-o", os.path.join(tmp, func),
                            "--generate", "8"] + more, capture_output=True, text=True)
        check(f"--generate refuses {func} with one line, exit 2",
              r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr
              and not os.path.exists(os.path.join(tmp, func)),
              f"status {r.returncode}, stderr {r.stderr.strip()!r}")
    r = subprocess.run([sys.executable, EXPORT, f"{path}:no_mask", "-o", os.path.join(tmp, "no_mask"),
                        "--generate", "8"], capture_output=True, text=True)
    check("--generate exports an encoder-decoder without a mask at its example's source length",
          r.returncode == 0 and not os.path.exists(os.path.join(tmp, "no_mask", "seq2seq", "decoder_start.txt")),
          r.stderr.strip())
    check_encoder_once(tmp)
    check_split_seq2seqs(tmp)
    check_features_source(tmp)


SPLIT_SEQ2SEQS = """
import types

import torch
from torch import nn


class MaskInDecoder(nn.Module):
    # cross-attention whose scores read the source mask itself (a broadcast [1, S])
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 16)

    def forward(self, src, mask, tgt):
        mem = self.emb(src)
        q = self.emb(tgt)
        scores = (q @ mem.transpose(1, 2)) * mask - 1e4 * (1 - mask)
        causal = torch.tril(torch.ones(tgt.shape[1], tgt.shape[1]))
        self_scores = (q @ q.transpose(1, 2)).masked_fill(causal == 0, -1e4)
        return self.head(scores.softmax(-1) @ mem + self_scores.softmax(-1) @ q)


def mask_in_decoder():
    torch.manual_seed(0)
    src = torch.tensor([[1, 2, 3]])
    return MaskInDecoder(), (src, torch.ones_like(src), torch.tensor([[2]]))


def with_configs(config, generation_config):
    m, inputs = mask_in_decoder()
    m.config, m.generation_config = types.SimpleNamespace(**config), types.SimpleNamespace(**generation_config)
    return m, inputs


def start_from_generation_config():  # config's decoder start first, then generation_config's
    return with_configs({"bos_token_id": 1}, {"decoder_start_token_id": 7, "bos_token_id": 3})


def start_from_bos():
    return with_configs({"bos_token_id": 5}, {})


def start_from_config():
    return with_configs({"decoder_start_token_id": 4, "bos_token_id": 5}, {"decoder_start_token_id": 7})


class SourceBias(nn.Module):
    # the decoder's MLP output projection (a row-parallel linear under --tp) takes its bias from the source
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 32)
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 32, bias=False)
        self.head = nn.Linear(32, 16)

    def forward(self, src, mask, tgt):
        bias = (self.emb(src) * mask[..., None]).sum((0, 1)) / mask.sum()
        y = nn.functional.linear(torch.relu(self.fc1(self.emb(tgt) + 0 * self.fc1.bias[:32])), self.fc2.weight, bias)
        return self.head(y)


def source_bias():
    torch.manual_seed(3)  # PyTorch's greedy tokens change with the bias doubled (added on both cards)
    src = torch.tensor([[1, 2, 3]])
    return SourceBias(), (src, torch.ones_like(src), torch.tensor([[2]]))
"""


def pytorch_greedy(module, src, start, n):
    """PyTorch's greedy tokens of an encoder-decoder module(src, mask, tgt):
    the decoder ids growing from start, unpadded."""
    ids = [start]
    for _ in range(n):
        with torch.no_grad():
            logits = module(src, torch.ones_like(src), torch.tensor([ids]))
        ids.append(int(logits[0, -1].argmax()))
    return ids[1:]


def check_split_tokens(path, tmp, func, how):
    """spyre generate of path:func exported with --encoder-once (into
    tmp/func) against PyTorch's greedy tokens, on spyre or as how says."""
    where = " ".join(how) or "on spyre"
    spyre = os.path.join(ROOT, "build", "spyre")
    if not os.path.exists(spyre):
        return skip(f"--encoder-once {func}: spyre generate {where}: tokens are PyTorch's", "no build/spyre")
    out = os.path.join(tmp, func)
    if not os.path.exists(out):
        subprocess.run([sys.executable, EXPORT, f"{path}:{func}", "-o", out, "--generate", "8", "--source-len", "6",
                        "--encoder-once"], capture_output=True, text=True)
    spec = importlib.util.spec_from_file_location("split_seq2seqs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    module, _ = getattr(mod, func)()
    want = ",".join(map(str, pytorch_greedy(module.eval(), torch.tensor([[1, 2, 3]]), 2, 5)))
    r = subprocess.run([spyre, "generate", out, "--source", "1,2,3", "--decoder-start", "2", "--max-new-tokens", "5"]
                       + how, capture_output=True, text=True)
    got = re.search(r"^tokens=(.*)$", r.stdout, re.M)
    check(f"--encoder-once {func}: spyre generate {where}: tokens are PyTorch's",
          r.returncode == 0 and got and got.group(1) == want, r.stderr.strip() or (got and got.group(1), want))


def check_split_seq2seqs(tmp):
    """--encoder-once of a decoder that reads the source mask input itself:
    the encoder passes it on as an output (the decoder's input carrying its
    --int-range, each part given the ranges of its own inputs) and spyre
    generate's tokens are PyTorch's, as they are at --tp 2 for a decoder
    input that is the bias of the linear a --tp split makes row-parallel.
    Exported into a DIR holding another
    form, that form is gone.  The decoder start token: options, config's
    and generation_config's decoder_start_token_id, then bos_token_id."""
    path = os.path.join(tmp, "split_seq2seqs.py")
    with open(path, "w") as f:
        f.write(SPLIT_SEQ2SEQS)
    out = os.path.join(tmp, "mask_in_decoder")
    os.makedirs(os.path.join(out, "seq2seq"))  # a stale form
    r = subprocess.run([sys.executable, EXPORT, f"{path}:mask_in_decoder", "-o", out, "--generate", "8",
                        "--source-len", "6", "--encoder-once", "--int-range", "mask=0:1", "--int-range", "tgt=0:15",
                        "--int-range", "src=0:15"], capture_output=True, text=True)
    if not check("--encoder-once of a decoder reading the source mask: export exits 0", r.returncode == 0,
                 r.stderr.strip()):
        return
    check("--generate: the DIR holds the new form only, no temporary directory beside it",
          sorted(os.listdir(out)) == ["decoder", "encoder"] and sorted(os.listdir(tmp)).count("mask_in_decoder") == 1
          and not [n for n in os.listdir(tmp) if ".export-" in n], f"{os.listdir(out)} {os.listdir(tmp)}")
    inputs = {}
    for step in ("encoder", "decoder"):
        with open(os.path.join(out, step, "graph.txt")) as f:
            inputs[step] = re.findall(r"^input %(.*)$", f.read(), re.M)
    check("--encoder-once --int-range: each part carries the ranges of its own inputs, the mask's passed on",
          inputs["encoder"] == ["src: i64[1, 6] range=[0, 15]", "mask: i64[1, 6] range=[0, 1]"]
          and inputs["decoder"][0] == "enc0: i64[1, 6] range=[0, 1]"
          and inputs["decoder"][-1] == "tgt: i64[1, 8] range=[0, 15]", str(inputs))
    for func, how in (("mask_in_decoder", []), ("mask_in_decoder", ["--tp", "2"]), ("source_bias", ["--tp", "2"])):
        check_split_tokens(path, tmp, func, how)
    for func, start in (("start_from_config", 4), ("start_from_generation_config", 7), ("start_from_bos", 5)):
        d = os.path.join(tmp, func)
        r = subprocess.run([sys.executable, EXPORT, f"{path}:{func}", "-o", d, "--generate", "8", "--graph-only"],
                           capture_output=True, text=True)
        text = open(os.path.join(d, "seq2seq", "decoder_start.txt")).read() if r.returncode == 0 else r.stderr
        check(f"--generate {func}: decoder_start.txt holds {start}", text == f"{start}\n", text.strip())


def check_encoder_once(tmp):
    """--encoder-once: seq2seq_gen.py's step cut into DIR/encoder (the
    source in, what the decoder reads of it out, the encoder's parameters
    and the cross-attentions' key and value projections) and DIR/decoder
    (those outputs, then the decoder ids); spyre generate runs the encoder
    once and its tokens are PyTorch's greedy ones on both chips and split
    for two cards."""
    out = os.path.join(tmp, "seq2seq_once")
    r = subprocess.run([sys.executable, EXPORT, os.path.join(MODELS, "seq2seq_gen.py") + ":seq2seq_gen", "-o", out,
                        "--generate", "32", "--source-len", "16", "--encoder-once"], capture_output=True, text=True)
    if not check("seq2seq_gen --encoder-once: export exits 0", r.returncode == 0, r.stderr.strip()):
        return
    graphs = {}
    for step in ("encoder", "decoder"):
        with open(os.path.join(out, step, "graph.txt")) as f:
            graphs[step] = f.read()
    enc_in = re.findall(r"^input %(\w+)", graphs["encoder"], re.M)
    dec_in = re.findall(r"^input %(\w+)", graphs["decoder"], re.M)
    n_out = len(re.findall(r"^output (.*)$", graphs["encoder"], re.M)[0].split(","))
    check("--encoder-once: the encoder takes the source, the decoder its outputs then the decoder ids",
          enc_in == ["input_ids", "attention_mask"] and dec_in == [f"enc{i}" for i in range(n_out)]
          + ["decoder_input_ids"], f"{enc_in} {dec_in}")
    enc_params = re.findall(r'^param .* = "([\w.]+)"', graphs["encoder"], re.M)
    dec_params = re.findall(r'^param .* = "([\w.]+)"', graphs["decoder"], re.M)
    check("--encoder-once: each part holds only the parameters it uses",
          "decoder.0.encoder_attn.k_proj.weight" in enc_params and "lm_head.weight" not in enc_params
          and not any(k.startswith("encoder.") for k in dec_params)
          and "decoder.0.encoder_attn.k_proj.weight" not in dec_params, f"{enc_params} {dec_params}")
    spyre = os.path.join(ROOT, "build", "spyre")
    if not os.path.exists(spyre):
        return skip("--encoder-once: spyre generate tokens equal PyTorch's", "no build/spyre")
    with open(os.path.join(ROOT, "traces", "seq2seq_gen", "expected_tokens.txt")) as f:
        want = re.search(r"^tokens (.*)$", f.read(), re.M).group(1)
    for how in (["--config", "spyre"], ["--config", "spyre-4core"], ["--tp", "2"]):
        r = subprocess.run([spyre, "generate", out, "--source", "165,236,25,234,244,245,94,96,248,179",
                            "--max-new-tokens", "32"] + how, capture_output=True, text=True)
        got = re.search(r"^tokens=(.*)$", r.stdout, re.M)
        check(f"--encoder-once: spyre generate {' '.join(how)}: the encoder runs once, the tokens are PyTorch's",
              r.returncode == 0 and "encoder: cycles=" in r.stdout and got and got.group(1) == want,
              r.stderr.strip() or (got and got.group(1)))


def generate(out, *args):
    return subprocess.run([os.path.join(ROOT, "build", "spyre"), "generate", out] + list(args),
                          capture_output=True, text=True)


def check_features_source(tmp):
    """A features source (docs/serving.md, "Generating with an
    encoder-decoder model"): seq2seq_gen.py's tiny Whisper (log-mel
    features f32[1, 16, 64] into a conv1d stem) exports with its features as
    the step's first input, at the example's shape; spyre generate
    --source-file reads them as raw fp32 (as spyre run --input) and its
    tokens are PyTorch's greedy ones on both chips, split for two cards and
    with --encoder-once; a bad, missing or misshapen file and a source of
    the other kind: one line, exit 2."""
    out, once = os.path.join(tmp, "whisper_gen"), os.path.join(tmp, "whisper_once")
    spec = os.path.join(MODELS, "seq2seq_gen.py") + ":whisper_gen"
    feats, tokens = os.path.join(tmp, "whisper_features.bin"), os.path.join(tmp, "whisper_tokens.txt")
    r = subprocess.run([sys.executable, os.path.join(MODELS, "seq2seq_gen.py"), "whisper", feats, tokens],
                       capture_output=True, text=True)
    if not check("seq2seq_gen.py whisper: writes the features and PyTorch's tokens", r.returncode == 0,
                 r.stderr.strip()):
        return
    for o, more in ((out, []), (once, ["--encoder-once"])):
        r = subprocess.run([sys.executable, EXPORT, spec, "-o", o, "--generate", "32"] + more,
                           capture_output=True, text=True)
        if not check(f"whisper_gen --generate 32 {' '.join(more)}: export exits 0", r.returncode == 0,
                     r.stderr.strip()):
            return
    with open(os.path.join(out, "seq2seq", "graph.txt")) as f:
        check("whisper_gen: the features are the step's first input, at the example's shape",
              re.findall(r"^input %(\w+): (.*)$", f.read(), re.M)
              == [("input_features", "f32[1, 16, 64]"), ("decoder_input_ids", "i64[1, 32]")])
    r = subprocess.run([sys.executable, EXPORT, spec, "-o", os.path.join(tmp, "w_len"), "--generate", "32",
                        "--source-len", "80"], capture_output=True, text=True)
    check("whisper_gen --source-len: refused, one line, exit 2 (features are not padded)",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "features are not padded" in r.stderr,
          r.stderr.strip())
    if not os.path.exists(os.path.join(ROOT, "build", "spyre")):
        return skip("whisper_gen: spyre generate --source-file tokens equal PyTorch's", "no build/spyre")
    with open(tokens) as f:
        want = re.search(r"^tokens (.*)$", f.read(), re.M).group(1)
    for d, how in ((out, ["--config", "spyre"]), (out, ["--config", "spyre-4core"]), (out, ["--tp", "2"]),
                   (once, ["--config", "spyre"])):
        r = generate(d, "--source-file", feats, "--max-new-tokens", "16", *how)
        got = re.search(r"^tokens=(.*)$", r.stdout, re.M)
        check(f"{os.path.basename(d)} {' '.join(how)}: spyre generate --source-file tokens are PyTorch's",
              r.returncode == 0 and got and got.group(1) == want, r.stderr.strip() or (got and got.group(1)))
    short = os.path.join(tmp, "whisper_short.bin")
    with open(short, "wb") as f:
        f.write(b"\0" * 100)
    ids = os.path.join(ROOT, "traces", "seq2seq_gen")
    for d, args, why in [
            (out, ["--source-file", os.path.join(tmp, "absent.bin")], "--source-file: input input_features: "),
            (out, ["--source-file", short], "has 100 bytes but shape (1, 16, 64) needs 4096 bytes of fp32"),
            (out, ["--source", "1,2"], "the source is features, not ids: give --source-file FILE"),
            (out, ["--prompt", "3"], "the source is features: give --source-file FILE"),
            (ids, ["--source-file", feats], "--source-file is for a features source"),
            (os.path.join(ROOT, "traces", "nanogpt_gen"), ["--source-file", feats], "--source-file is for an "
             "encoder-decoder")]:
        r = generate(d, *args, "--max-new-tokens", "2")
        check(f"spyre generate {os.path.basename(d)} {args[0]} {os.path.basename(args[1])}: one line, exit 2",
              r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr,
              f"status {r.returncode}, stderr {r.stderr.strip()!r}")


def check_generate_exports(tmp):
    """--generate CONTEXT (docs/serving.md, "Generating with a plain causal
    LM"): nanogpt_gen.py's module exports into DIR/step with ids [1,
    CONTEXT], as committed; a module that is not causal, that returns more
    than the logits, or whose input is not ids, exits 2 with one line."""
    out = os.path.join(tmp, "nanogpt_gen")
    r = subprocess.run([sys.executable, EXPORT, os.path.join(MODELS, "nanogpt_gen.py") + ":nanogpt_gen", "-o", out,
                        "--generate", "48"], capture_output=True, text=True)
    if check("nanogpt_gen --generate 48: export exits 0", r.returncode == 0, r.stderr.strip()):
        with open(os.path.join(out, "step", "graph.txt")) as f:
            text = f.read()
        check("nanogpt_gen --generate 48: one input, the ids padded to the context",
              re.findall(r"^input .*$", text, re.M) == ["input %idx: i64[1, 48]"])
        check("nanogpt_gen --generate 48: the example ids are the prompt padded with token 0",
              read_safetensors(os.path.join(out, "step", "inputs.safetensors"))["idx"].tolist()
              == [list(range(1, 9)) + [0] * 40])
        committed = os.path.join(ROOT, "traces", "nanogpt_gen", "step", "graph.txt")
        if os.path.exists(committed) and f"torch {torch.__version__}," in text:
            with open(committed) as f:
                check("traces/nanogpt_gen/step: graph.txt identical to a fresh export", f.read() == text,
                      "run traces/export_all.sh")
    path = os.path.join(tmp, "not_plain_lms.py")
    with open(path, "w") as f:
        f.write(NOT_PLAIN_LMS)
    for func, why in [("bidirectional", "the module is not causal: the logits at position 0 change"),
                      ("with_loss", "the module must return logits [1, T, VOCAB]"),
                      ("float_ids", "FUNC's inputs must be one int64 tensor of ids [1, T]"),
                      ("no_ids", "FUNC's inputs must be one int64 tensor of ids [1, T]"),
                      ("from_the_end", "the module's logits depend on the sequence length")]:
        r = subprocess.run([sys.executable, EXPORT, f"{path}:{func}", "-o", os.path.join(tmp, func),
                            "--generate", "8"], capture_output=True, text=True)
        check(f"--generate refuses {func} with one line, exit 2",
              r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr
              and not os.path.exists(os.path.join(tmp, func)),
              f"status {r.returncode}, stderr {r.stderr.strip()!r}")


HOSTCHAIN = """
import torch


class HostChain(torch.nn.Module):
    # logcumsumexp and special_erfcx have no device lowering: three host ops in a row
    def forward(self, x):
        return torch.special.erfcx(torch.logcumsumexp(torch.logcumsumexp(x, 1), 1))


def host_chain():
    torch.manual_seed(0)
    return HostChain(), (torch.randint(-8, 8, (8, 64)).float() / 4,)  # exact in DL16
"""


def check_host_chain(tmp):
    """Three host ops in a row pass their values in fp32 (docs/runtime.md,
    "Host fallback"): the output matches PyTorch's within fp32 rounding
    (1e-5 relative is some 80 fp32 ulps, for the two libms' differences;
    measured 2.4e-07), where DL16 between the host ops gave 9.6e-04.  The
    input is exact in DL16, so the device's upload rounds nothing."""
    src = os.path.join(tmp, "hostchain.py")
    with open(src, "w") as f:
        f.write(HOSTCHAIN)
    out = os.path.join(tmp, "host_chain")
    r = subprocess.run([sys.executable, EXPORT, f"{src}:host_chain", "-o", out], capture_output=True, text=True)
    if not check("host chain: export exits 0", r.returncode == 0, r.stderr.strip()):
        return
    spyre = os.path.join(ROOT, "build", "spyre")
    if not os.path.exists(spyre):
        skip("host chain: spyre run --check matches PyTorch in fp32", "no build/spyre")
        return
    r = subprocess.run([spyre, "run", out, "--check"], capture_output=True, text=True)
    m = re.search(r"^expected special_erfcx: max_abs_err=\S+ max_rel_err=(\S+) .* ok$", r.stdout, re.M)
    check("host chain: three host ops match PyTorch within fp32 rounding",
          r.returncode == 0 and "fallback_ops=3 " in r.stdout and m is not None and float(m.group(1)) < 1e-5,
          m.group(0) if m else (r.stderr.strip().splitlines() or [""])[-1])


def check_fp16_export(tmp):
    """A model.half() module, which PyTorch 1.13's CPU cannot run (no fp16
    addmm): it exports, its graph is fp16, its expected outputs are an fp32
    copy's rounded to fp16 (and the export says so), and the simulator's
    result matches them."""
    out = os.path.join(tmp, "half_mlp")
    r = export("usermodels.py", "half_mlp", out)
    if not check("fp16 MLP: export exits 0", r.returncode == 0, r.stderr.strip()):
        return
    check("fp16 MLP: the export says its expected outputs are fp32-computed", "fp32 copy" in r.stdout, r.stdout)
    with open(os.path.join(out, "graph.txt")) as f:
        g = read_graph(f.read())
    names = g["inputs"] + [n for n, _ in g["params"]] + g["outputs"]
    check("fp16 MLP: every input, param and output is f16",
          all(g["types"][n][1] == torch.float16 for n in names), str({n: g["types"][n] for n in names}))
    model, inputs = load_workload("usermodels.py", "half_mlp")
    with torch.no_grad():
        want = model.float()(*(x.float() for x in inputs)).half()
    got = read_safetensors(os.path.join(out, "expected.safetensors"))["output0"]
    check("fp16 MLP: expected.safetensors is the fp32 module's output rounded to fp16",
          got.dtype == torch.float16 and torch.equal(got, want), f"{got.dtype} {(got.float() - want.float()).abs().max()}")
    spyre = os.path.join(ROOT, "build", "spyre")
    if not os.path.exists(spyre):
        skip("fp16 MLP: spyre run --check matches PyTorch", "no build/spyre")
        return
    r = subprocess.run([spyre, "run", out, "--check"], capture_output=True, text=True)
    check("fp16 MLP: spyre run --check matches PyTorch on the device alone",
          r.returncode == 0 and "fallback_ops=0 " in r.stdout and re.search(r"^check addmm_1: .* ok$", r.stdout, re.M),
          (r.stderr.strip().splitlines() or [""])[-1])


TIMESERIES = """
import torch
from torch import nn


class TimeSeries(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x, valid):
        h = torch.tanh(self.inp(x))
        last = valid.sum(1) - 1
        return self.out(h.gather(1, last[:, None, None].expand(-1, 1, 16)).squeeze(1))


def timeseries():
    valid = torch.ones(3, 9, dtype=torch.long)
    valid[1, 6:] = 0
    valid[2, 4:] = 0
    return TimeSeries(), (torch.randn(3, 9, 3), valid)


def timeseries_option():
    model, inputs = timeseries()
    return model, inputs, {"int_range": {"valid": (0, 1)}}


class Buffered(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.arange(9))

    def forward(self, x):
        return x.index_select(1, self.pos.flip(0))


def buffered():
    return Buffered(), (torch.randn(3, 9),)
"""


def check_int_range_export(tmp):
    """--int-range valid=0:1 puts range=[0, 1] on the mask's input line, and
    the mask's count (the last valid step's gather) runs on the device with
    PyTorch's values; a range the example input leaves, one given twice, one
    past 2^24 or one on a state input exits 2 with one line."""
    model = os.path.join(tmp, "timeseries.py")
    with open(model, "w") as f:
        f.write(TIMESERIES)
    out = os.path.join(tmp, "timeseries")
    r = subprocess.run([sys.executable, EXPORT, f"{model}:timeseries", "-o", out, "--int-range", "valid=0:1"],
                       capture_output=True, text=True)
    check("--int-range: the export succeeds", r.returncode == 0, r.stderr.strip())
    if r.returncode:
        return
    with open(os.path.join(out, "graph.txt")) as f:
        text = f.read()
    check("--int-range: the input line declares the range",
          re.search(r"^input %valid: i64\[3, 9\] range=\[0, 1\]$", text, re.M) is not None)
    r = subprocess.run([sys.executable, EXPORT, f"{model}:timeseries_option", "-o", os.path.join(tmp, "option")],
                       capture_output=True, text=True)
    with open(os.path.join(tmp, "option", "graph.txt") if r.returncode == 0 else os.devnull) as f:
        check("options {\"int_range\": ...}: the input line declares the range",
              re.search(r"^input %valid: i64\[3, 9\] range=\[0, 1\]$", f.read(), re.M) is not None, r.stderr.strip())
    r = subprocess.run([sys.executable, EXPORT, f"{model}:buffered", "-o", os.path.join(tmp, "buffered"),
                        "--graph-only"], capture_output=True, text=True)
    with open(os.path.join(tmp, "buffered", "graph.txt") if r.returncode == 0 else os.devnull) as f:
        check("--graph-only with an integer buffer: exported, its param without a range (no values)",
              re.search(r"^param %\w+: i64\[9\] = \"pos\"$", f.read(), re.M) is not None, r.stderr.strip())
    r = subprocess.run([sys.executable, EXPORT, f"{model}:timeseries", "-o", os.path.join(tmp, "bad"),
                        "--int-range", "valid=0:0"], capture_output=True, text=True)
    check("--int-range an example input leaves exits 2 with one line",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "holds 1" in r.stderr,
          f"status {r.returncode}, stderr {r.stderr.strip()!r}")
    refused = [(["valid=0:1", "valid=0:1"], "valid is given a range twice", f"{model}:timeseries"),
               (["valid=0:16777217"], "reaches past +-16777216", f"{model}:timeseries"),
               (["k_cache0=0:1"], "k_cache0 is state", os.path.join(MODELS, "decoder_gen.py") + ":llama_gen_decode")]
    for ranges, why, spec in refused:
        r = subprocess.run([sys.executable, EXPORT, spec, "-o", os.path.join(tmp, "bad")]
                           + [a for x in ranges for a in ("--int-range", x)], capture_output=True, text=True)
        check(f"--int-range {' '.join(ranges)} exits 2 with one line",
              r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr,
              f"status {r.returncode}, stderr {r.stderr.strip()!r}")
    spyre = os.path.join(ROOT, "build", "spyre")
    if not os.path.exists(spyre):
        skip("--int-range: spyre run --check matches PyTorch", "no build/spyre")
        return
    for cfg in ("spyre", "spyre-4core"):
        r = subprocess.run([spyre, "run", out, "--check", "--config", cfg], capture_output=True, text=True)
        check(f"--int-range: the mask's count and gather run on {cfg} alone and match PyTorch",
              r.returncode == 0 and "fallback_ops=0 " in r.stdout and re.search(r"^check .* ok$", r.stdout, re.M),
              (r.stderr.strip().splitlines() or [""])[-1])


def check_probe6_exports(tmp):
    """Two Hugging Face encoders of traces/models/probe6.py, on the device alone with PyTorch's
    values on both chips: RoBERTa's position ids (the integer cumsum of the padding mask, its
    bound proven), and LayoutLM with --int-range bbox=0:63 (the box gathered and subtracted in
    one kernel once stopped the compile: "internal: load of bbox not bound")."""
    spyre = os.path.join(ROOT, "build", "spyre")
    for func, ranges in (("roberta", []), ("layoutlm", ["--int-range", "bbox=0:63"])):
        out = os.path.join(tmp, "p6_" + func)
        r = subprocess.run([sys.executable, EXPORT, f"{os.path.join(MODELS, 'probe6.py')}:{func}", "-o", out] + ranges,
                           capture_output=True, text=True)
        if not check(f"probe6 {func}: export exits 0", r.returncode == 0, r.stderr.strip()):
            continue
        if not os.path.exists(spyre):
            skip(f"probe6 {func}: spyre run --check matches PyTorch", "no build/spyre")
            continue
        for cfg in ("spyre", "spyre-4core"):
            r = subprocess.run([spyre, "run", out, "--check", "--config", cfg], capture_output=True, text=True)
            checks = [l for l in r.stdout.splitlines() if l.startswith("check ")]
            check(f"probe6 {func}: runs on {cfg} alone and matches PyTorch",
                  r.returncode == 0 and "fallback_ops=0 " in r.stdout and checks and all(l.endswith(" ok") for l in checks),
                  (r.stderr.strip().splitlines() or [""])[-1])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_fp16_export(tmp)
        check_host_chain(tmp)
        check_int_range_export(tmp)
        check_probe6_exports(tmp)
        check_recorded_draws(tmp)
        check_state_exports(tmp)
        check_generate_exports(tmp)
        check_seq2seq_exports(tmp)
        check_recurrent_exports(tmp)
        check_vision_exports(tmp)
        check_fold_exports(tmp)
        check_one_hot_exports(tmp)
        check_written_outputs_export(tmp)
        fresh = {}
        for file, func in SMALL:
            out = os.path.join(tmp, func)
            r = export(file, func, out)
            if check(f"{func}: export exits 0", r.returncode == 0, r.stderr.strip()):
                fresh[func] = out

        for file, func in SMALL[:2]:  # mlp and encoder_small in full
            if func in fresh:
                check_export(file, func, fresh[func])

        # The committed traces are the export of the same code: the graph text identical;
        # weights, inputs and PyTorch's outputs close (see FP_SCALE_TOL).
        for file, func in SMALL:
            committed = os.path.join(ROOT, "traces", func)
            if func not in fresh:
                continue
            if not os.path.isdir(committed):
                check(f"traces/{func}: committed", False, "missing; run traces/export_all.sh")
                continue
            with open(os.path.join(committed, "graph.txt")) as f:
                first = f.readline()
            m = re.search(r"\(torch (\S+),", first)
            if not m or m.group(1) != torch.__version__:
                skip(f"traces/{func}: identical to a fresh export",
                     f"made with torch {m.group(1) if m else '?'}, this is {torch.__version__}")
                continue
            with open(os.path.join(committed, FILES[0]), "rb") as a, \
                    open(os.path.join(fresh[func], FILES[0]), "rb") as b:
                check(f"traces/{func}: graph.txt identical to a fresh export", a.read() == b.read(),
                      "run traces/export_all.sh")
            for name in FILES[1:]:
                old, new = (read_safetensors(os.path.join(d, name)) for d in (committed, fresh[func]))
                check(f"traces/{func}: {name} close to a fresh export's (FP_SCALE_TOL)",
                      close_tensors(old, new), close_detail(old, new) + "; run traces/export_all.sh")

        # The committed small traces run as written.
        for file, func in SMALL[2:]:
            committed = os.path.join(ROOT, "traces", func)
            if os.path.isdir(committed):
                check_export(file, func, committed)

        # User errors: one line, status 2.
        for spec, what in [("mlp.py:no_such_func", "a missing FUNC"),
                           ("no_such_file.py:mlp", "a missing FILE"),
                           ("mlp.py", "no :FUNC")]:
            r = subprocess.run([sys.executable, EXPORT, os.path.join(MODELS, spec),
                                "-o", os.path.join(tmp, "bad")], capture_output=True, text=True)
            check(f"export of {what} exits 2 with one line",
                  r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
                  f"status {r.returncode}, stderr {r.stderr.strip()!r}")

    summary = f"{passed} passed, {failed} failed"
    print(summary + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
