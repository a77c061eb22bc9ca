#!/usr/bin/python3
"""tools/export.py: export a PyTorch module as an ATen graph (docs/graph-format.md).

Usage (with the system interpreter, which has Debian's python3-torch):

    /usr/bin/python3 tools/export.py FILE.py:FUNC -o DIR [--seed N] [--tracer auto|make_fx|export]
                                     [--graph-only] [--record-draws] [--weights FILE]
                                     [--int-range NAME=LO:HI ...] [--generate CONTEXT [--source-len N] [--encoder-once]]

FILE.py is imported (its directory first on sys.path) and FUNC() is called.
It returns (module, inputs) with inputs a tuple of tensors, or
(module, inputs, options) with options a dict; {"eval": False} keeps the
module in the mode FUNC left it in (by default it is put in eval mode).

The module is traced to ATen ops by PyTorch's own tracer and DIR gets:

    graph.txt               the graph, in the format of docs/graph-format.md
    weights.safetensors     parameters, buffers and constant tensors, by key
    inputs.safetensors      the example inputs, by input name
    expected.safetensors    the module's own outputs: output0, output1, ...

Tracing (make_fx, PyTorch 1.13 and later) runs in two passes:
  1. make_fx on the module with autograd on and every floating-point
     parameter and input requiring grad.  This is what keeps
     nn.TransformerEncoderLayer and nn.MultiheadAttention off their fused
     inference fast path (_transformer_encoder_layer_fwd,
     _native_multi_head_attention): the trace holds the decomposed ops.
  2. make_fx again over that ATen graph, functionalized, so that in-place
     ops become their out-of-place forms (as AOTAutograd hands Inductor).
Pass 1 decomposes the ops neither the compiler nor the host runs (DECOMPOSE:
affine_grid_generator, im2col and col2im, i.e. F.affine_grid, F.unfold and
F.fold) into the ATen ops they are made of (col2im as a sum of padded taps), and an InstanceNorm with
track_running_stats in eval mode is traced as the batch norm it is (PyTorch's
instance_norm writes the unchanged running statistics back, an in-place
copy a graph cannot hold).
Then aten.detach, aten.lift_fresh_copy and aten.alias (identities here)
are bypassed and dead nodes dropped.  An op of another library
(torchvision.ops' roi_align, nms, deform_conv2d) is refused, one line.  With --tracer export (the default
where torch.export exists) torch.export.export + run_decompositions is used.

An fp16 model PyTorch's CPU cannot run (torch 1.13 has no fp16 addmm or
convolution there) is traced on fake tensors instead; an op without an
fp16 CPU kernel is typed as its bf16 kernel types it, and the expected
outputs are an fp32 copy's, rounded to fp16 (said on stdout): they differ
from true fp16 arithmetic within fp16's precision.

--graph-only writes graph.txt alone, for timing-only simulation of a model
too large to export whole (an 8B-size layer's files are 850 MB).  The
module and inputs are moved to the meta device first (shapes and dtypes,
no data), so tracing and typing allocate nothing; the graph's `weights`
line still names weights.safetensors, which is not written, and the module
is not run (no expected outputs, no comparison).  If tracing on meta
tensors fails, it traces real tensors and just skips the files.

--record-draws turns each aten.rand / aten.randn node into a graph input
holding the values PyTorch drew for it (named after the node) in the run
of the module that gives expected.safetensors, so that a graph that merely uses draws (fractional max pooling's
samples, svd_lowrank's random projection) is deterministic and validates
exactly against PyTorch's outputs.  Without it those ops stay in the graph
and run with the device's own generator (docs/validation.md, "Random
ops").  An output that depends on an op that stays random (bernoulli,
rrelu in training) cannot reproduce PyTorch's draw: the export does not
compare it, and spyre run --check checks it by the interval of every draw.

Integer ranges (docs/graph-format.md, "Input ranges"): --int-range NAME=LO:HI
(or options {"int_range": {"NAME": (LO, HI)}}) writes `range=[LO, HI]` on
input NAME's line: a promise that every value lies there, which the
compiler relies on (an int64 mask's sum is exact on the device only if the
mask is known to be small) and the runtime checks before each run.  The
example input must obey it.  There is no default from the example's
observed values: one example does not bound the next input.

State (docs/graph-format.md): options {"state": {"NAME": N}} makes input
NAME a `state` line (its example value, the initial one, goes to the
weights file under NAME) and output N of the module its new value, an
`update` line; such outputs are not in `output` nor expected.safetensors.
--weights FILE names another export's weights file instead of writing one
(the steps of one model: tools/export.py checks it holds the same values).

--generate CONTEXT exports a causal language model for `spyre generate DIR`
(docs/serving.md, "Generating with a plain causal LM"): FUNC's module maps
ids, int64 [1, T], to logits [1, T, VOCAB], its inputs are (ids,) with
T <= CONTEXT.  It is refused (one line, exit 2) unless causal: the logits of
a prefix must not change when the tokens after it do (generate pads the
context with token 0).  DIR/step gets the export at ids [1, CONTEXT], the
example padded with token 0; each generated token reruns it (no KV cache).
With two or three inputs, (source ids [1, S][, source mask [1, S]], decoder
ids [1, T]), it is an encoder-decoder (docs/serving.md, "Generating with an
encoder-decoder model"): DIR/seq2seq gets the export with the source padded
with token 0 (mask 0) to --source-len N (default S; longer only with a mask)
and the decoder ids to CONTEXT, checked as above over the decoder ids and,
with a mask, refused unless padding the source changes no logit (a float32
source [1, ...] without a mask is features, as Whisper's log-mel frames:
exported at the example's shape, not padded); and
decoder_start.txt, the model's decoder start token (options
{"decoder_start": ID}, else its config's or generation_config's
decoder_start_token_id, else their bos_token_id) if it has one.
--encoder-once cuts that step where what is computed from the source
alone (or a source input the decoder reads itself) meets the decoder ids:
DIR/encoder (the source in, those values out) and DIR/decoder (them as
enc0, enc1, ..., then the decoder ids), for spyre generate to run the
encoder once; --int-range gives each part its own inputs' ranges.  The
steps are written beside DIR and moved in, in place of any other form.

--seed N (default 0) seeds torch before FILE.py is imported and before FUNC
and the module run.  Output is deterministic: the same FILE, FUNC, seed and
PyTorch version give byte-identical files.

A user error (bad FILE:FUNC, FUNC returning something else, an input or
output that is not a tensor, an op whose result is not a tensor, a module
that mutates its inputs or buffers) prints one line and exits with status 2.
"""
import argparse
import contextlib
import copy
import functools
import importlib.util
import inspect
import json
import operator
import os
import re
import shutil
import struct
import sys
import tempfile
import types

import torch
import torch.fx
from torch.utils._python_dispatch import TorchDispatchMode  # PyTorch 1.13 and later
from torch.utils._pytree import tree_map


class UserError(Exception):
    """A mistake in what the user asked for: one line, exit status 2."""


def describe(e):
    """An exception from the user's code, on one line."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


# --------------------------------------------------------------------------
# dtypes: one table for the graph text and for safetensors

DTYPES = [  # torch dtype, graph name, safetensors name
    (torch.float32, "f32", "F32"),
    (torch.float16, "f16", "F16"),
    (torch.bfloat16, "bf16", "BF16"),
    (torch.float64, "f64", "F64"),
    (torch.int64, "i64", "I64"),
    (torch.int32, "i32", "I32"),
    (torch.bool, "bool", "BOOL"),
]
GRAPH_DTYPE = {t: g for t, g, _ in DTYPES}
SAFETENSORS_DTYPE = {t: s for t, _, s in DTYPES}


def graph_dtype(dtype, what):
    if dtype not in GRAPH_DTYPE:
        raise UserError(f"{what}: dtype {dtype} is not one the graph format has "
                        f"({' '.join(GRAPH_DTYPE.values())})")
    return GRAPH_DTYPE[dtype]


# --------------------------------------------------------------------------
# safetensors: u64 little-endian header length, JSON header, raw data

def tensor_bytes(t):
    """Row-major little-endian bytes of a CPU tensor."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bf16: same bits as int16
        t = t.view(torch.int16)
    a = t.numpy()
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def write_safetensors(path, tensors):
    """tensors: list of (key, tensor), stored in that order."""
    header, blobs, offset = {}, [], 0
    for key, t in tensors:
        data = tensor_bytes(t)
        header[key] = {"dtype": SAFETENSORS_DTYPE[t.dtype], "shape": list(t.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # pad so the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


# --------------------------------------------------------------------------
# FILE.py:FUNC -> (module, inputs, options)

def import_func(spec):
    """FUNC of FILE.py, for the spec FILE.py:FUNC."""
    path, sep, func_name = spec.rpartition(":")
    if not sep or not path or not func_name:
        raise UserError(f"{spec}: expected FILE.py:FUNC")
    if not os.path.isfile(path):
        raise UserError(f"{path}: no such file")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    name = "_export_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    try:
        module_spec = importlib.util.spec_from_file_location(name, path)
        pymod = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(pymod)
    except Exception as e:
        raise UserError(f"{path}: import failed: {describe(e)}")
    func = getattr(pymod, func_name, None)
    if not callable(func):
        raise UserError(f"{path}: no function {func_name}")
    return func


def load_workload(spec, func=None):
    """(module, inputs, options) from FUNC(): FUNC of the spec FILE.py:FUNC,
    or func when given (spec then only names it, as LABEL:FUNC)."""
    if func is None:
        func = import_func(spec)
    try:
        result = func()
    except Exception as e:
        raise UserError(f"{spec}: FUNC raised {describe(e)}")
    if not isinstance(result, tuple) or len(result) not in (2, 3):
        raise UserError(f"{spec}: expected FUNC to return (module, inputs[, options]), "
                        f"got {type(result).__name__}")
    model, inputs = result[0], result[1]
    options = result[2] if len(result) == 3 else {}
    if not isinstance(model, torch.nn.Module):
        raise UserError(f"{spec}: FUNC returned a {type(model).__name__}, not a torch.nn.Module")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(x, torch.Tensor) for x in inputs):
        raise UserError(f"{spec}: expected FUNC's inputs to be a tuple of tensors")
    if not isinstance(options, dict) or set(options) - {"eval", "state", "decoder_start", "int_range"}:
        raise UserError(f"{spec}: expected FUNC's options to be a dict with keys from: eval, state, decoder_start, "
                        f"int_range")
    if not isinstance(options.get("state", {}), dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in options.get("state", {}).items()):
        raise UserError(f"{spec}: expected FUNC's state option to map input names to output indices")
    if not isinstance(options.get("int_range", {}), dict) or not all(
            isinstance(k, str) and isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(b, int) for b in v)
            for k, v in options.get("int_range", {}).items()):
        raise UserError(f"{spec}: expected FUNC's int_range option to map input names to (LO, HI) integers")
    return model, tuple(inputs), options


def input_names(model, count):
    """Names of forward's first `count` positional parameters (input0, ... if unknown)."""
    names = []
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        names.append(p.name)
    if len(names) < count:
        return [f"input{i}" for i in range(count)]
    return names[:count]


# --------------------------------------------------------------------------
# Tracing.  Each tracer returns (gm, roles): roles[i] says what the i-th
# placeholder is, ("input", index) or ("param", key, tensor).

def prepare(t):
    """A copy for tracing: a floating-point tensor requires grad."""
    t = t.detach().clone()
    return t.requires_grad_(True) if t.is_floating_point() else t


def with_grad(call, inputs):
    """(call(args), args) with autograd on and the inputs prepared; when
    autograd refuses an input that requires grad (batch norm's running
    statistics given as inputs), the inputs without grad."""
    args = [prepare(x) for x in inputs]
    try:
        with torch.enable_grad():
            return call(args), args
    except RuntimeError as e:
        if "is not differentiable" not in str(e):
            raise
        args = [x.detach() for x in args]
        with torch.enable_grad():
            return call(args), args


def _neg_one_to_one(n, align_corners, dtype):
    """PyTorch's linspace_from_neg_one: n points over [-1, 1] (pixel centres without align_corners)."""
    if n <= 1:
        return torch.zeros(1, dtype=dtype)
    if align_corners:
        return torch.arange(n, dtype=dtype) * (2.0 / (n - 1)) - 1.0
    return torch.arange(n, dtype=dtype) * (2.0 / n) + (1.0 / n - 1.0)


def affine_grid(theta, size, align_corners):
    """aten.affine_grid_generator (4-D and 5-D sizes): each output pixel's (x, y[, z], 1) times theta^T."""
    n, sp = size[0], list(size[2:])
    k = len(sp)
    cols = []
    for a in range(k):  # x along the last dim, y the one before, ...
        view = [1] * k
        view[k - 1 - a] = sp[k - 1 - a]
        cols.append(_neg_one_to_one(sp[k - 1 - a], align_corners, theta.dtype).view(view).expand(sp))
    cols.append(torch.ones(sp, dtype=theta.dtype))
    base = torch.stack(cols, -1).view(1, -1, k + 1)
    return (base @ theta.transpose(1, 2)).view(n, *sp, k)


def col2im(cols, output_size, kernel_size, dilation, padding, stride):
    """aten.col2im (F.fold), the adjoint of unfold: each kernel tap's column [N, C, LH, LW] spread to
    the stride by zeros, shifted to the tap, and the taps summed over the padded output (pads and
    adds; PyTorch's decomposition accumulates by index_put, which the compiler does not lower)."""
    unbatched = cols.dim() == 2
    cols = cols.unsqueeze(0) if unbatched else cols
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = output_size, kernel_size, dilation, padding, stride
    lh, lw = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    n, c = cols.shape[0], cols.shape[1] // (kh * kw)
    taps = cols.reshape(n, c, kh, kw, lh, lw)
    out = None
    for i in range(kh):
        for j in range(kw):
            v = taps[:, :, i, j].reshape(n, c, lh, 1, lw, 1)
            v = torch.nn.functional.pad(v, (0, sw - 1, 0, 0, 0, sh - 1)).reshape(n, c, lh * sh, lw * sw)
            v = torch.nn.functional.pad(v, (j * dw, w + 2 * pw - j * dw - lw * sw, i * dh, h + 2 * ph - i * dh - lh * sh))
            out = v if out is None else out + v
    out = out[:, :, ph:ph + h, pw:pw + w]
    return out.squeeze(0) if unbatched else out


def im2col(decomposed):
    """aten.im2col (F.unfold) by PyTorch's decomposition, over an input padded here when the paddings
    differ: PyTorch 1.13's pads height by the width's padding and width by the height's."""
    def unfold(x, kernel_size, dilation, padding, stride):
        (ph, pw) = padding
        if ph == pw:
            return decomposed(x, kernel_size, dilation, padding, stride)
        return decomposed(torch.nn.functional.pad(x, (pw, pw, ph, ph)), kernel_size, dilation, [0, 0], stride)
    return unfold


def _one_hot(x, num_classes=-1):
    """F.one_hot with num_classes given, as a compare with arange (PyTorch's kernel reads the
    indices' max and min to check them, which tracing cannot).  The indices pass through
    index_select(arange) first: it refuses one outside [0, num_classes) as F.one_hot does (the
    launch and computed-index checks cover it), and the compiler takes it as the index itself."""
    if num_classes < 0:
        raise UserError("F.one_hot needs num_classes to be traced (without it the width is the "
                        "indices' max, a value the graph cannot know)")
    classes = torch.arange(num_classes, device=x.device)
    flat = x if x.dim() == 1 else x.reshape(-1)
    i = torch.index_select(classes, 0, flat).view(x.shape)
    return (i.unsqueeze(-1) == classes).to(torch.int64)


@contextlib.contextmanager
def traceable_one_hot():
    """Trace F.one_hot as _one_hot (see there)."""
    saved = torch.nn.functional.one_hot
    torch.nn.functional.one_hot = _one_hot
    try:
        yield
    finally:
        torch.nn.functional.one_hot = saved


def decompositions():
    from torch._decomp import get_decompositions
    aten = torch.ops.aten
    table = get_decompositions([aten.im2col])
    table[aten.im2col.default] = im2col(table[aten.im2col.default])
    table[aten.col2im.default] = col2im
    table[aten.affine_grid_generator.default] = affine_grid
    return table


def _instance_norm_eval(self, x):
    """An InstanceNorm's eval forward with running statistics: batch norm over them."""
    unbatched = x.dim() == self._get_no_batch_dim()
    y = torch.nn.functional.batch_norm(x.unsqueeze(0) if unbatched else x, self.running_mean, self.running_var,
                                       self.weight, self.bias, False, 0.0, self.eps)
    return y.squeeze(0) if unbatched else y


@contextlib.contextmanager
def instance_norms_as_batch_norm(model):
    """Trace eval-mode InstanceNorms with track_running_stats as batch norm (see the top)."""
    patched = [m for m in model.modules() if isinstance(m, torch.nn.modules.instancenorm._InstanceNorm)
               and m.track_running_stats and not m.training]
    for m in patched:
        m.forward = _instance_norm_eval.__get__(m)
    try:
        yield
    finally:
        for m in patched:
            del m.forward


def _alias(node, write):
    """Whether node's op writes its first argument in place (write) or returns a view of it."""
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None or not schema.arguments or not schema.returns:
        return False
    info = (schema.arguments[0] if write else schema.returns[0]).alias_info
    return info is not None and info.is_write == write


def outputs_written_through_views(gm):
    """Positions of gm's outputs written in place through a view of them (cache[:, :, 5:6] = v
    on a returned tensor): PyTorch 1.13's functionalize returns such an output's value from
    before the write."""
    base = {}
    for n in gm.graph.nodes:
        base[n] = base.get(n.args[0], n.args[0]) if _alias(n, False) else n
    written = {base[n.args[0]] for n in gm.graph.nodes if _alias(n, True) and base[n.args[0]] is not n.args[0]}
    flat = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]  # make_fx's outputs, flattened
    return {i for i, o in enumerate(flat) if isinstance(o, torch.fx.Node) and base.get(o, o) in written}


def cloning_outputs(fn, positions):
    """fn with its outputs at positions cloned: a read inside the functionalized function brings
    their writes in (see outputs_written_through_views)."""
    if not positions:
        return fn

    from torch.utils._pytree import tree_flatten, tree_unflatten

    def run(*a):
        outs, spec = tree_flatten(fn(*a))
        return tree_unflatten([o.clone() if i in positions else o for i, o in enumerate(outs)], spec)
    return run


def trace_make_fx(model, inputs, fake=False):
    """fake: trace on fake tensors (shapes and dtypes), for ops PyTorch's
    CPU kernels do not have (fp16 matmuls on PyTorch 1.13)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        from torch.func import functional_call, functionalize
    except ImportError:  # PyTorch 1.13
        from torch.nn.utils.stateless import functional_call
        from functorch.experimental import functionalize

    state = list(model.named_parameters()) + list(model.named_buffers())
    keys = [k for k, _ in state]

    def run(state_values, args):
        return functional_call(model, dict(zip(keys, state_values)), tuple(args))

    values = [prepare(v) for _, v in model.named_parameters()]
    values += [v.detach().clone() for _, v in model.named_buffers()]
    # pass 1: autograd on, so no fused fast path
    mode = "fake" if fake else "real"
    with instance_norms_as_batch_norm(model), traceable_one_hot():
        first, args = with_grad(lambda a: make_fx(run, tracing_mode=mode, decomposition_table=decompositions())(
            values, a), inputs)
    values = [v.detach() for v in values]
    args = [x.detach() for x in args]
    with torch.no_grad():  # pass 2: in-place ops to out-of-place
        gm = make_fx(functionalize(cloning_outputs(first, outputs_written_through_views(first))),
                     tracing_mode=mode)(values, args)

    roles = [("param", k, v) for k, v in state] + [("input", i) for i in range(len(inputs))]
    return gm, roles


def trace_export(model, inputs):
    """torch.export (PyTorch 2.x), decomposed to core ATen ops."""
    mha = getattr(torch.backends, "mha", None)
    if mha is not None and hasattr(mha, "set_fastpath_enabled"):
        mha.set_fastpath_enabled(False)
    with torch.enable_grad():
        ep = torch.export.export(model, tuple(prepare(x) for x in inputs))
    ep = ep.run_decompositions()
    sig = ep.graph_signature
    for spec in sig.output_specs:
        if spec.kind.name != "USER_OUTPUT":
            raise UserError(f"the module mutates {spec.target} ({spec.kind.name})")
    roles, user = [], 0
    for spec in sig.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            roles.append(("input", user))
            user += 1
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            t = ep.state_dict.get(spec.target)
            if t is None:
                t = ep.constants[spec.target]
            roles.append(("param", spec.target, t))
        else:
            raise UserError(f"torch.export input {spec.target} of kind {kind} is not supported")
    return ep.graph_module, roles


# --------------------------------------------------------------------------
# Clean-up of the traced graph

IDENTITIES = ("aten.detach.default", "aten.lift_fresh_copy.default", "aten.alias.default")


def clean(gm):
    """Bypass identity ops, refuse mutation, drop dead nodes."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and str(node.target) in IDENTITIES:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and schema is not None and schema.is_mutable:
            raise UserError(f"{node.target} mutates a tensor in place, which a graph cannot "
                            f"express (does the module change an input or a buffer, or "
                            f"run a random op such as dropout in training mode?)")
    gm.graph.eliminate_dead_code()
    gm.recompile()


def fetch_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


DRAWS = ("aten.rand.default", "aten.randn.default")  # what --record-draws records


def is_random(node):
    """Does node draw random numbers (PyTorch's nondeterministic_seeded tag)?"""
    tags = getattr(node.target, "tags", ())
    return node.op == "call_function" and any(t.name == "nondeterministic_seeded" for t in tags)


def fp16_to(dtype, value):
    """value (nested tuples, lists and dicts of anything) with its fp16 tensors made dtype."""
    return tree_map(lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float16 else t, value)


def retype(value, like):
    """value's tensors in the dtypes of like's (an op's result run in bf16
    for fp16), bf16 ones made fp16."""
    if isinstance(value, (tuple, list)):
        return type(value)(retype(v, k) for v, k in zip(value, like))
    if isinstance(value, torch.Tensor):
        return value.to(torch.float16 if like.dtype in (torch.bfloat16, torch.float16) else like.dtype)
    return value


class TypeRecorder(torch.fx.Interpreter):
    """Runs the graph on real tensors and keeps each node's result type:
    (dtype, shape) for a tensor, a list of them for a tuple.  With upcast,
    an op PyTorch's CPU has no fp16 kernel for runs in fp32 for its values,
    typed as the CPU types it in bf16 (fp16's result types: a norm's
    statistics stay fp32 or not as for bf16) with bf16 read as fp16."""

    def __init__(self, gm, upcast=False):
        super().__init__(gm)
        self.types = {}
        self.upcast = upcast

    def call_function(self, target, args, kwargs):
        try:
            return super().call_function(target, args, kwargs)
        except RuntimeError as e:
            if not self.upcast or "'Half'" not in str(e):
                raise
        up, bf = fp16_to(torch.float32, (args, kwargs)), fp16_to(torch.bfloat16, (args, kwargs))
        value = super().call_function(target, *up)
        try:
            like = super().call_function(target, *bf)
        except RuntimeError:  # no bf16 kernel either: fp32 results are fp16
            like = tree_map(lambda t: t.half() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t,
                            value)
        return retype(value, like)

    def run_node(self, node):
        result = super().run_node(node)
        if node.op == "output":
            return result
        if isinstance(result, torch.Tensor):
            self.types[node] = (result.dtype, tuple(result.shape))
        elif (isinstance(result, (tuple, list)) and result
              and all(isinstance(r, torch.Tensor) for r in result)):
            self.types[node] = [(r.dtype, tuple(r.shape)) for r in result]
        else:
            raise UserError(f"{node.target} (node {node.name}) produces a "
                            f"{type(result).__name__}, not a tensor")
        return result


def flatten(value):
    """The leaves of nested lists, tuples and dicts, in order."""
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in flatten(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in flatten(v)]
    return [value]


# --------------------------------------------------------------------------
# Graph text

def sanitize(name):
    """A NAME of the graph format: [A-Za-z_][A-Za-z0-9_.]*, dots as _."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return name if re.match(r"[A-Za-z_]", name) else "_" + name


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_type(t, what):
    if isinstance(t, list):
        return "(" + ", ".join(format_type(e, what) for e in t) + ")"
    dtype, shape = t
    return f"{graph_dtype(dtype, what)}[{', '.join(str(d) for d in shape)}]"


def op_name(node):
    if node.target is operator.getitem:
        return "getitem"
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)  # "aten.addmm.default"
    raise UserError(f"node {node.name} calls {node.target}, which is not an ATen op")


def refuse_foreign_ops(gm):
    """An op of another library's namespace (torchvision.roi_align, nms, deform_conv2d) has no
    lowering in the compiler and no host kernel in the reference executor: one line, at export."""
    for node in gm.graph.nodes:
        if isinstance(node.target, torch._ops.OpOverload) and node.target.namespace not in ("aten", "prims"):
            raise UserError(f"node {node.name} calls {node.target}, an op of the {node.target.namespace} "
                            f"library that neither the compiler nor the host (the reference executor) can "
                            f"run; it is not exported")


def format_arg(a, names, where):
    if isinstance(a, torch.fx.Node):
        return "%" + names[a]
    if a is None:
        return "None"
    if isinstance(a, bool):
        return "True" if a else "False"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        return repr(a)  # round-trips; "inf", "-inf", "nan"
    if isinstance(a, str):
        return quote(a)
    if isinstance(a, torch.dtype):
        return graph_dtype(a, where)
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(format_arg(x, names, where) for x in a) + "]"
    if isinstance(a, torch.device):
        return quote(str(a))  # "cpu"
    if isinstance(a, (torch.layout, torch.memory_format)):
        return quote(str(a).replace("torch.", ""))  # "strided", "contiguous_format"
    raise UserError(f"{where}: cannot write argument {a!r} ({type(a).__name__})")


def graph_text(name, comment, gm, roles, in_names, types, state=None, weights="weights.safetensors", ranges=None):
    """The graph; also returns the params as a list of (key, tensor).
    state maps an input's name to the output that is its new value: the
    input becomes a `state` line (its key its name, its initial value in
    the weights file) and that output an `update` line.  ranges maps an
    integer input's name to its declared (lo, hi): ` range=[lo, hi]`."""
    state, ranges = state or {}, ranges or {}
    names, used = {}, set()

    def define(node, base):
        name = sanitize(base)
        if name in used:
            i = 1
            while f"{name}_{i}" in used:
                i += 1
            name = f"{name}_{i}"
        used.add(name)
        names[node] = name

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(roles), "a role for every placeholder"
    consts = [n for n in gm.graph.nodes if n.op == "get_attr"]
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    out_node = next(n for n in gm.graph.nodes if n.op == "output")

    inputs = sorted((r[1], n) for n, r in zip(placeholders, roles) if r[0] == "input")
    params = [(n, r[1], r[2]) for n, r in zip(placeholders, roles) if r[0] == "param"]
    # nn.LSTM/GRU's flat weights are traced once per step: several get_attr
    # nodes of one target share one param line (and one tensor in the file)
    first = {}
    for n in consts:
        first.setdefault(n.target, n)
    params += [(n, n.target, fetch_attr(gm, n.target)) for n in first.values()]
    for index, node in inputs:
        define(node, in_names[index])
    for node, key, _ in params:
        define(node, key)
    for n in consts:
        names[n] = names[first[n.target]]
    for node in ops:
        define(node, node.name)

    lines = [f"# {comment}", f"graph {name}", f"weights {quote(weights)}"]
    for _, node in inputs:
        kind = "state" if names[node] in state else "input"
        key = f" = {quote(names[node])}" if kind == "state" else ""
        if names[node] in ranges:
            key += " range=[%d, %d]" % ranges[names[node]]
        lines.append(f"{kind} %{names[node]}: {format_type(types[node], names[node])}{key}")
    for node, key, t in params:
        # an integer weight's own values bound what the compiler may compute from it
        # (--graph-only's are meta tensors, without values)
        rng = " range=[%d, %d]" % (t.min(), t.max()) if isinstance(t, torch.Tensor) and not t.is_meta and t.dtype in (
            torch.int64, torch.int32) and t.numel() and -RANGE_MAX <= t.min() and t.max() <= RANGE_MAX else ""
        lines.append(f"param %{names[node]}: {format_type(types[node], names[node])} = {quote(key)}{rng}")
    for node in ops:
        where = f"%{names[node]} = {node.target}"
        args = [format_arg(a, names, where) for a in node.args]
        args += [f"{k}={format_arg(v, names, where)}" for k, v in node.kwargs.items()]
        lines.append(f"%{names[node]}: {format_type(types[node], where)} = "
                     f"{op_name(node)}({', '.join(args)})")
    outs = flatten(out_node.args[0])
    for i, o in enumerate(outs):
        if not isinstance(o, torch.fx.Node):
            raise UserError(f"output {i} of the module is {o!r}, not a tensor")
    updated = {i: n for n, i in state.items()}
    if set(state) - {names[n] for _, n in inputs} or set(updated) - set(range(len(outs))):
        raise UserError(f"the state option names inputs or outputs the module does not have: {state}")
    lines.append("output " + ", ".join("%" + names[o] for i, o in enumerate(outs) if i not in updated))
    lines += [f"update %{updated[i]} = %{names[outs[i]]}" for i in sorted(updated)]
    return "\n".join(lines) + "\n", [(key, t) for _, key, t in params]


# --------------------------------------------------------------------------

def write_graph(out_dir, how, spec, func_name, tracer, seed, gm, roles, in_names, types, state=None,
                weights="weights.safetensors", ranges=None):
    """Write out_dir/graph.txt, its comment saying where it came from (how: the
    options that matter); return the graph's parameters."""
    comment = (f"{func_name}: exported by tools/export.py{how} from {os.path.basename(spec)} "
               f"(torch {torch.__version__}, {tracer}, seed {seed})")
    text, params = graph_text(sanitize(func_name), comment, gm, roles, in_names, types, state, weights, ranges)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "graph.txt"), "w") as f:
        f.write(text)
    return params


class DrawRecorder(TorchDispatchMode):
    """Keeps, in call order, what each DRAWS op returns while the module runs."""

    def __init__(self):
        super().__init__()
        self.values = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if str(func) in DRAWS:
            self.values.append(out.detach().clone())
        return out


def record_draws(gm, roles, recorder, in_names, inputs, drawn):
    """Each draw node becomes a graph input holding the value PyTorch drew for
    it while the module ran (drawn, in call order: the graph's order, as it
    is the trace of that run); returns the inputs and names with the draws
    appended."""
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and str(n.target) in DRAWS]
    if len(nodes) != len(drawn) or any(recorder.types[n] != (v.dtype, tuple(v.shape)) for n, v in zip(nodes, drawn)):
        raise RuntimeError(f"the module drew {len(drawn)} tensors but the graph has {len(nodes)} draws, "
                           f"or of other types")
    inputs, in_names = list(inputs), list(in_names)
    for node, value in zip(nodes, drawn):
        last = [n for n in gm.graph.nodes if n.op == "placeholder"][-1]  # roles follow placeholder order
        with gm.graph.inserting_after(last):
            ph = gm.graph.placeholder(node.name)
        node.replace_all_uses_with(ph)
        gm.graph.erase_node(node)
        roles.append(("input", len(inputs)))
        inputs.append(value)
        in_names.append(sanitize(node.name))
    gm.recompile()
    return tuple(inputs), in_names


def drawn_outputs(gm):
    """The indices of the outputs that depend on a random op."""
    drawn = set()
    for node in gm.graph.nodes:
        if is_random(node) or any(a in drawn for a in node.all_input_nodes):
            drawn.add(node)
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return {i for i, o in enumerate(flatten(out.args[0])) if o in drawn}


def has_fp16(model, inputs):
    """Does the module hold or take an fp16 tensor?"""
    tensors = list(model.parameters()) + list(model.buffers()) + list(inputs)
    return any(t.dtype == torch.float16 for t in tensors)


def fp32_copy(model, inputs):
    """The module and inputs with fp16 tensors made fp32."""
    model = copy.deepcopy(model)
    for t in list(model.parameters()) + list(model.buffers()):
        if t.dtype == torch.float16:
            t.data = t.data.float()
    return model, fp16_to(torch.float32, tuple(inputs))


def to_meta(model, inputs):
    """The module and inputs on the meta device: shapes and dtypes, no data."""
    return model.to("meta"), tuple(x.to("meta") for x in inputs)


def check_shared(path, params):
    """--weights: every parameter (and state) is in the safetensors file
    path, with the same dtype, shape and bytes."""
    try:
        with open(path, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(size))
            data = f.read()
    except (OSError, ValueError, struct.error) as e:
        raise UserError(f"{path}: cannot read the shared weights: {describe(e)}")
    for key, t in params:
        h = header.get(key)
        if h is None or h["dtype"] != SAFETENSORS_DTYPE[t.dtype] or h["shape"] != list(t.shape) or \
                data[h["data_offsets"][0]:h["data_offsets"][1]] != tensor_bytes(t):
            raise UserError(f"{path}: {key} is not this module's (missing, or other values)")


RANGE_MAX = 1 << 24  # graph.h GR_RANGE_MAX: a range=[LO, HI] stays within +-this


def parse_ranges(specs):
    """--int-range NAME=LO:HI options as {NAME: (LO, HI)}."""
    ranges = {}
    for spec in specs or []:
        name, _, span = spec.partition("=")
        lo, _, hi = span.partition(":")
        if name in ranges:
            raise UserError(f"--int-range {spec}: {name} is given a range twice")
        try:
            ranges[name] = (int(lo), int(hi))
        except ValueError:
            raise UserError(f"--int-range {spec}: not NAME=LO:HI with integers LO <= HI")
        if ranges[name][0] > ranges[name][1]:
            raise UserError(f"--int-range {spec}: not NAME=LO:HI with integers LO <= HI")
        if max(-ranges[name][0], ranges[name][1]) > RANGE_MAX:
            raise UserError(f"--int-range {spec}: reaches past +-{RANGE_MAX}, the integers fp32 holds exactly")
    return ranges


def check_ranges(ranges, in_names, inputs, graph_only, state):
    """Each ranged input is an integer input whose example values obey it."""
    for name, (lo, hi) in ranges.items():
        if name not in in_names:
            raise UserError(f"--int-range {name}: the module has no input {name} (its inputs: {', '.join(in_names)})")
        if name in state:
            raise UserError(f"--int-range {name}: {name} is state (a range is for an input the user gives)")
        x = inputs[in_names.index(name)]
        if not isinstance(x, torch.Tensor) or x.dtype not in (torch.int64, torch.int32):
            raise UserError(f"--int-range {name}: input {name} is not an int64 or int32 tensor (a bool is [0, 1] "
                            f"by its type)")
        if not graph_only and x.numel() and (int(x.min()) < lo or int(x.max()) > hi):
            bad = int(x.min()) if int(x.min()) < lo else int(x.max())
            raise UserError(f"--int-range {name}={lo}:{hi}: the example input {name} holds {bad}")


def export(spec, out_dir, seed, tracer, graph_only=False, func=None, draws=False, weights=None, int_ranges=None):
    """Export FUNC() of the spec FILE.py:FUNC into out_dir; with func, that
    function instead (in-process callers such as tests/conformance/opinfo.py);
    draws: --record-draws; weights: --weights; int_ranges: --int-range's
    {NAME: (LO, HI)} (over the options' "int_range")."""
    torch.manual_seed(seed)
    model, inputs, options = load_workload(spec, func)
    state = options.get("state", {})
    ranges = parse_ranges(f"{k}={lo}:{hi}" for k, (lo, hi) in options.get("int_range", {}).items())
    ranges.update(int_ranges or {})
    wfile = weights or "weights.safetensors"
    if options.get("eval", True):
        model.eval()
    if graph_only:
        real = (model, inputs)
        try:
            model, inputs = to_meta(model, inputs)
        except Exception:
            model, inputs = real
    func_name = spec.rpartition(":")[2]
    in_names = [sanitize(n) for n in input_names(model, len(inputs))]
    if len(set(in_names)) != len(in_names):
        in_names = [f"input{i}" for i in range(len(inputs))]
    check_ranges(ranges, in_names, inputs, graph_only, state)

    if tracer == "auto":
        tracer = "export" if hasattr(torch, "export") and hasattr(torch.export, "export") else "make_fx"
    trace = trace_export if tracer == "export" else trace_make_fx

    def trace_and_type(model, inputs, fake=False):
        torch.manual_seed(seed)
        try:
            gm, roles = trace(model, inputs, fake=True) if fake else trace(model, inputs)
        except UserError:
            raise
        except Exception as e:
            if not fake and trace is trace_make_fx and has_fp16(model, inputs):
                return trace_and_type(model, inputs, fake=True)
            raise UserError(f"{spec}: tracing failed: {describe(e)}")
        clean(gm)
        refuse_foreign_ops(gm)
        # Types of every value, from running the graph itself.
        flat = [r[2].detach() if r[0] == "param" else inputs[r[1]].detach() for r in roles]
        recorder = TypeRecorder(gm, upcast=fake)
        torch.manual_seed(seed)
        with torch.no_grad():
            outputs = flatten(recorder.run(*flat))
        return gm, roles, recorder, outputs, fake

    try:
        gm, roles, recorder, graph_outputs, fake = trace_and_type(model, inputs)
    except Exception:
        if not graph_only or model is real[0] and inputs is real[1]:
            raise
        # meta tensors are not enough for this module: trace real ones
        torch.manual_seed(seed)
        model, inputs, options = load_workload(spec, func)
        if options.get("eval", True):
            model.eval()
        gm, roles, recorder, graph_outputs, fake = trace_and_type(model, inputs)

    if graph_only:
        write_graph(out_dir, " --graph-only", spec, func_name, tracer, seed, gm, roles, in_names, recorder.types,
                    state, wfile, ranges)
        return

    # PyTorch's own outputs, computed as traced (autograd on: no fast path);
    # where PyTorch's CPU cannot run the fp16 model, an fp32 copy's, rounded.
    torch.manual_seed(seed)
    drawn = DrawRecorder() if draws else None
    run_model, run_inputs = (model, inputs) if not fake else fp32_copy(model, inputs)
    try:
        with drawn or contextlib.nullcontext():
            expected = flatten(with_grad(lambda a: run_model(*a), run_inputs)[0])
    except Exception as e:
        raise UserError(f"{spec}: the module raised {describe(e)}")
    if fake:
        expected = [o.to(g.dtype) if isinstance(o, torch.Tensor) and g.dtype == torch.float16 else o
                    for o, g in zip(expected, graph_outputs)]
        print(f"export.py: {spec}: PyTorch {torch.__version__}'s CPU cannot run this fp16 model: traced on fake "
              f"tensors; expected outputs computed by an fp32 copy, then rounded to the outputs' dtypes (they "
              f"differ from fp16 arithmetic within fp16's precision)")
    for i, o in enumerate(expected):
        if not isinstance(o, torch.Tensor):
            raise UserError(f"{spec}: output {i} of the module is a {type(o).__name__}, not a tensor")
    expected = [o.detach() for o in expected]
    if len(expected) != len(graph_outputs):
        raise RuntimeError(f"graph has {len(graph_outputs)} outputs, the module {len(expected)}")
    graph_inputs = inputs
    if draws:
        graph_inputs, in_names = record_draws(gm, roles, recorder, in_names, inputs, drawn.values)
        flat = [r[2] if r[0] == "param" else graph_inputs[r[1]] for r in roles]
        recorder = TypeRecorder(gm)  # the graph changed: its types and outputs again
        with torch.no_grad():
            graph_outputs = flatten(recorder.run(*[t.detach() for t in flat]))
    random = drawn_outputs(gm)  # PyTorch's draws are not ours: not compared
    if not model.training:  # a training-mode graph may hold random ops
        for i, (g, e) in enumerate(zip(graph_outputs, expected)):
            if i in random:
                if g.shape != e.shape or g.dtype != e.dtype:
                    raise RuntimeError(f"the traced graph's output {i} differs in type from the module's")
                continue
            tol = 2e-2 if fake else 1e-4  # fp16 rounding per op against once
            if g.shape != e.shape or g.dtype != e.dtype or not torch.allclose(
                    g.double(), e.double(), rtol=tol, atol=tol / 10, equal_nan=True):
                raise RuntimeError(f"the traced graph does not reproduce output {i} of the module")

    params = write_graph(out_dir, "", spec, func_name, tracer, seed, gm, roles, in_names, recorder.types,
                         state, wfile, ranges)
    params += [(n, x) for n, x in zip(in_names, graph_inputs) if n in state]  # a state's initial value
    if weights:
        check_shared(os.path.join(out_dir, weights), params)
    else:
        write_safetensors(os.path.join(out_dir, "weights.safetensors"), params)
    write_safetensors(os.path.join(out_dir, "inputs.safetensors"),
                      [(n, x) for n, x in zip(in_names, graph_inputs) if n not in state])
    shown = [o for i, o in enumerate(expected) if i not in state.values()]  # updates are not outputs
    write_safetensors(os.path.join(out_dir, "expected.safetensors"),
                      [(f"output{i}", o) for i, o in enumerate(shown)])


def causal_logits(spec, run, ids):
    """run(ids)'s logits for ids [1, T], checked to be [1, T, VOCAB]."""
    try:
        with torch.no_grad():
            logits = run(ids)
    except Exception as e:
        raise UserError(f"{spec}: --generate: the module raised {describe(e)}")
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() != 3 \
            or tuple(logits.shape[:2]) != tuple(ids.shape):
        got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise UserError(f"{spec}: --generate: the module must return logits [1, T, VOCAB] for ids [1, T]; "
                        f"for ids {tuple(ids.shape)} it returned {got}")
    return logits


def split_points(n):
    return sorted({1, n // 2, n - 1} - {0})


def check_causal(spec, run, context):
    """Refuse a module whose logits at a position depend on the tokens
    after it: spyre generate pads the context with token 0 after the tokens
    so far and reads the last one's logits, so they must also not depend on
    the length.  Random tokens against the same ones with their tail set to
    0, and against the unpadded head, at three split points.  run(ids): the
    logits of the (decoder) ids.  The vocabulary."""
    vocab = causal_logits(spec, run, torch.zeros(1, context, dtype=torch.int64)).shape[2]
    full = torch.randint(0, vocab, (1, context), generator=torch.Generator().manual_seed(0))
    ref = causal_logits(spec, run, full)
    tol = 1e-4 * max(1.0, float(ref.abs().max()))
    for k in split_points(context):
        padded = full.clone()
        padded[:, k:] = 0
        head = causal_logits(spec, run, padded)[0, :k]
        diff = (head - ref[0, :k]).abs().amax(dim=1)
        if bool((diff > tol).any()):
            raise UserError(f"{spec}: --generate: the module is not causal: the logits at position "
                            f"{int((diff > tol).nonzero()[0])} change when the tokens from position {k} on do "
                            f"(spyre generate pads the context with token 0 after the tokens so far)")
        diff = (head - causal_logits(spec, run, full[:, :k])[0]).abs().amax(dim=1)
        if bool((diff > tol).any()):
            raise UserError(f"{spec}: --generate: the module's logits depend on the sequence length: at position "
                            f"{int((diff > tol).nonzero()[0])} they differ between {k} tokens and {context} tokens "
                            f"padded with token 0 (spyre generate always runs {context})")
    return vocab


def check_source_padding(spec, model, source_len, mask_dtype, vocab, context):
    """Refuse an encoder-decoder whose logits change when the source is
    padded: spyre generate pads the source with token 0 to source_len, its
    mask 0 there.  Random source tokens cut at three points, padded and
    masked against unpadded, on random decoder ids."""
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(0, vocab, (1, source_len), generator=gen)
    tgt = torch.randint(0, vocab, (1, context), generator=gen)
    for k in split_points(source_len):
        padded, mask = torch.zeros_like(src), torch.zeros(1, source_len, dtype=mask_dtype)
        padded[:, :k], mask[:, :k] = src[:, :k], 1
        got = causal_logits(spec, lambda t: model(padded, mask, t), tgt)
        ref = causal_logits(spec, lambda t: model(src[:, :k], torch.ones(1, k, dtype=mask_dtype), t), tgt)
        tol = 1e-4 * max(1.0, float(ref.abs().max()))
        if bool(((got - ref).abs() > tol).any()):
            raise UserError(f"{spec}: --generate: the module's logits change when the source of {k} tokens is "
                            f"padded to {source_len} with its mask 0 after them (spyre generate pads the source; "
                            f"does the module apply its mask input?)")


def padded_to(x, n):
    """x [1, m], m <= n, padded with 0 to [1, n]."""
    out = torch.zeros(1, n, dtype=x.dtype)
    out[:, :x.shape[1]] = x
    return out


def is_ids(x, most):
    return x.dtype == torch.int64 and x.dim() == 2 and x.shape[0] == 1 and 1 <= x.shape[1] <= most


def is_features(x, mask):
    """A features source (Whisper's log-mel frames [1, MELS, FRAMES]): float32 [1, ...], fixed, unmasked."""
    return mask is None and x.dtype == torch.float32 and x.dim() >= 2 and x.shape[0] == 1


def decoder_start(spec, model, options):
    """The decoder start token the model declares, or None: options'
    decoder_start, else as Hugging Face's generate looks for it, its
    config's or generation_config's decoder_start_token_id, else their
    bos_token_id."""
    configs = [getattr(model, "config", None), getattr(model, "generation_config", None)]
    found = [options.get("decoder_start")] + [getattr(c, key, None) for key in ("decoder_start_token_id",
                                                                             "bos_token_id") for c in configs]
    start = next((x for x in found if x is not None), None)
    if start is not None and (not isinstance(start, int) or start < 0):
        raise UserError(f"{spec}: --generate: the decoder start token must be an id >= 0, got {start!r}")
    return start


def subgraph(gm, state, inputs, outputs):
    """The part of gm's graph that computes outputs (nodes of gm, or a
    structure of them: the output's) from the state placeholders it uses
    (of state) and inputs (nodes of gm, its placeholders in that order), as
    a GraphModule; and the positions in state of those it uses."""
    g, env, need, stack = torch.fx.Graph(), {}, set(), []
    torch.fx.node.map_arg(outputs, stack.append)
    while stack:
        n = stack.pop()
        if n not in need and n not in inputs:
            need.add(n)
            stack += n.all_input_nodes
    used = [i for i, n in enumerate(state) if n in need]
    for n in [state[i] for i in used] + inputs:
        env[n] = g.placeholder(n.name)
        need.discard(n)
    for n in gm.graph.nodes:
        if n in need:
            if n.op == "placeholder":
                raise RuntimeError(f"the split needs {n.name}, which is not one of its inputs")
            env[n] = g.node_copy(n, lambda a: env[a])
    g.output(torch.fx.node.map_arg(outputs, lambda n: env[n]))
    return torch.fx.GraphModule(gm, g), used


def part_module(model, keys, part, names):
    """model, its forward replaced by part's graph (subgraph's: of the
    parameters and buffers of keys it uses, then inputs named names): a
    module export() traces as it does model."""
    gm, used = part
    keys = [keys[i] for i in used]
    holder = torch.nn.Module()  # model's tensors that part uses, under their names
    for k in keys:
        *path, leaf = k.split(".")
        m = holder
        for name in path:
            if name not in m._modules:
                m.add_module(name, torch.nn.Module())
            m = m._modules[name]
        t = functools.reduce(getattr, k.split("."), model)
        if isinstance(t, torch.nn.Parameter):
            m.register_parameter(leaf, t)
        else:
            m.register_buffer(leaf, t)

    def forward(self, *args):
        return gm(*[functools.reduce(getattr, k.split("."), self) for k in keys], *args)
    forward.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ["self"] + names])
    holder.forward = types.MethodType(forward, holder)
    return holder


def split_encoder(spec, model, padded):
    """The step model(*padded) cut where what is computed from the source
    alone (a source input itself included, read by the decoder directly)
    meets the decoder ids: (encoder, its inputs, decoder, its inputs, the
    decoder's inputs that are the module's: {name: the module's name}), the
    encoder's outputs the decoder's first inputs (enc0, ...), then the
    decoder ids; checked to compose to the model's logits."""
    gm, roles = trace_make_fx(model, padded)
    keys = [r[1] for r in roles if r[0] == "param"]
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    state, srcs, tgt = phs[:len(keys)], phs[len(keys):-1], phs[-1]
    seen = {}  # node -> which inputs it is computed from: "s" the source's, "t" the decoder ids
    for n in gm.graph.nodes:
        seen[n] = {"t"} if n is tgt else {"s"} if n in srcs else set().union(*(seen[a] for a in n.all_input_nodes))
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    cut = [n for n in gm.graph.nodes if (n.op != "placeholder" or n in srcs) and seen[n] == {"s"} and
           any(u is out or "t" in seen[u] for u in n.users)]
    if not cut:
        raise UserError(f"{spec}: --encoder-once: no encoder to run once: nothing computed from the source "
                        f"alone reaches the decoder")
    names = [sanitize(n) for n in input_names(model, len(padded))]
    encoder = part_module(model, keys, subgraph(gm, state, srcs, tuple(cut)), names[:-1])
    with torch.no_grad():
        memory = tuple(t.detach() for t in encoder(*padded[:-1]))
    logits = out.args[0][0] if isinstance(out.args[0], (list, tuple)) and len(out.args[0]) == 1 else out.args[0]
    decoder = part_module(model, keys, subgraph(gm, state, cut + [tgt], logits),
                          [f"enc{i}" for i in range(len(cut))] + names[-1:])
    with torch.no_grad():
        got, want = decoder(*memory, padded[-1]), model(*padded)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        raise RuntimeError("the encoder and decoder split does not reproduce the module's logits")
    passed = {f"enc{i}": names[srcs.index(n)] for i, n in enumerate(cut) if n in srcs}
    return encoder, padded[:-1], decoder, memory + (padded[-1],), dict(passed, **{names[-1]: names[-1]})


def own_ranges(more, inputs, names):
    """--int-range's ranges (each of one of the module's inputs) of one
    part's inputs: names maps each to the module's input it holds."""
    ranges = more.get("int_ranges") or {}
    for name in set(ranges) - set(inputs):
        raise UserError(f"--int-range {name}: the module has no input {name} (its inputs: {', '.join(inputs)})")
    return {n: ranges[m] for n, m in names.items() if m in ranges}


def export_seq2seq(spec, out_dir, seed, tracer, context, source_len, graph_only, model, inputs, options,
                   encoder_once=False, **more):
    """--generate CONTEXT of an encoder-decoder (forward(source ids [1, S][,
    source mask [1, S]], decoder ids [1, T]) -> logits [1, T, VOCAB]):
    out_dir/seq2seq gets the export with the source padded to source_len
    (default S; longer only with a mask) and the decoder ids to CONTEXT, and
    decoder_start.txt when the model declares its start token; with
    encoder_once, out_dir/encoder and out_dir/decoder (split_encoder)."""
    src, tgt, mask = inputs[0], inputs[-1], inputs[1] if len(inputs) == 3 else None
    features = is_features(src, mask)
    if features and source_len is not None:
        raise UserError(f"{spec}: --source-len {source_len}: the source is features {tuple(src.shape)}, "
                        f"exported at the example's shape (features are not padded)")
    source_len = source_len or src.shape[1]
    if not (is_ids(src, source_len) or features) or not is_ids(tgt, context) or \
            mask is not None and tuple(mask.shape) != tuple(src.shape):
        raise UserError(f"{spec}: --generate {context}: an encoder-decoder's inputs must be the source ids, int64 "
                        f"[1, S] with S <= --source-len, optionally its mask [1, S] (or features: a float32 "
                        f"[1, ...], no mask), then the decoder ids, int64 "
                        f"[1, T] with T <= {context}; got {[f'{x.dtype} {tuple(x.shape)}' for x in inputs]}")
    if mask is None and src.shape[1] != source_len:
        raise UserError(f"{spec}: --source-len {source_len}: the module takes no source mask, so its source "
                        f"cannot be padded: export it at its example's length, {src.shape[1]}")
    start = decoder_start(spec, model, options)
    padded = (src if features else padded_to(src, source_len),)
    padded += (padded_to(mask, source_len),) if mask is not None else ()
    padded += (padded_to(tgt, context),)
    if not graph_only:
        vocab = check_causal(spec, lambda t: model(*padded[:-1], t), context)
        if mask is not None:
            check_source_padding(spec, model, source_len, mask.dtype, vocab, context)
    step = os.path.join(out_dir, "decoder" if encoder_once else "seq2seq")
    if encoder_once:
        encoder, enc_in, decoder, dec_in, dec_names = split_encoder(spec, model, padded)
        names = [sanitize(n) for n in input_names(model, len(padded))]
        export(spec, os.path.join(out_dir, "encoder"), seed, tracer, graph_only,
               func=lambda: (encoder, enc_in, options),
               **dict(more, int_ranges=own_ranges(more, names, {n: n for n in names[:-1]})))
        export(spec, step, seed, tracer, graph_only, func=lambda: (decoder, dec_in, options),
               **dict(more, int_ranges=own_ranges(more, names, dec_names)))
    else:
        export(spec, step, seed, tracer, graph_only, func=lambda: (model, padded, options), **more)
    if start is not None:
        with open(os.path.join(step, "decoder_start.txt"), "w") as f:
            f.write(f"{start}\n")


GENERATE_FORMS = ("step", "seq2seq", "encoder", "decoder", "prefill", "decode")  # spyre generate's DIR/...


def export_generate(spec, out_dir, *args, **kwargs):
    """--generate: export_steps written into a fresh directory beside
    out_dir, then moved into it in place of every step directory spyre
    generate reads (it refuses a DIR with two forms: a stale one would run
    instead); a failed export leaves nothing (no encoder without its
    decoder)."""
    parent, base = os.path.split(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{base}.export-", dir=parent)
    try:
        export_steps(spec, tmp, *args, **kwargs)
        os.makedirs(out_dir, exist_ok=True)
        for form in GENERATE_FORMS:
            shutil.rmtree(os.path.join(out_dir, form), ignore_errors=True)
        for name in os.listdir(tmp):
            os.rename(os.path.join(tmp, name), os.path.join(out_dir, name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def export_steps(spec, out_dir, seed, tracer, context, source_len=None, graph_only=False, encoder_once=False, **more):
    """--generate CONTEXT: FUNC's causal LM (forward(ids [1, T]) -> logits
    [1, T, VOCAB]) exported into out_dir/step with ids [1, CONTEXT]: the
    example ids padded with token 0 (docs/serving.md); or, with two or three
    inputs, an encoder-decoder (export_seq2seq); more: export's options."""
    torch.manual_seed(seed)
    model, inputs, options = load_workload(spec)
    if options.get("state"):
        raise UserError(f"{spec}: --generate takes a module without state (the step rereads the whole context); "
                        f"the state option is for the prefill and decode steps")
    if options.get("eval", True):
        model.eval()
    if len(inputs) in (2, 3):
        return export_seq2seq(spec, out_dir, seed, tracer, context, source_len, graph_only, model, inputs, options,
                              encoder_once, **more)
    if source_len is not None or encoder_once:
        raise UserError(f"{spec}: --source-len and --encoder-once are for an encoder-decoder (inputs: source ids[, "
                        f"mask], decoder ids)")
    if len(inputs) != 1 or not is_ids(inputs[0], context):
        raise UserError(f"{spec}: --generate {context}: FUNC's inputs must be one int64 tensor of ids [1, T] with "
                        f"T <= {context}; got {[f'{x.dtype} {tuple(x.shape)}' for x in inputs]}")
    padded = padded_to(inputs[0], context)
    if not graph_only:  # timing only computes no token: any module will do
        check_causal(spec, model, context)
    export(spec, os.path.join(out_dir, "step"), seed, tracer, graph_only, func=lambda: (model, (padded,), options),
           **more)


def main():
    parser = argparse.ArgumentParser(
        prog="export.py", description="Export a PyTorch module as an ATen graph "
        "(docs/graph-format.md).")
    parser.add_argument("workload", metavar="FILE.py:FUNC",
                        help="FUNC() returns (module, inputs[, options])")
    parser.add_argument("-o", dest="out_dir", metavar="DIR", required=True,
                        help="directory to write graph.txt and the safetensors files to")
    parser.add_argument("--seed", type=int, default=0, help="torch seed (default 0)")
    parser.add_argument("--graph-only", action="store_true",
                        help="write graph.txt only (traced on meta tensors; no safetensors files, "
                        "no run of the module): for timing-only simulation")
    parser.add_argument("--record-draws", action="store_true",
                        help="make each rand/randn node a graph input holding PyTorch's draw")
    parser.add_argument("--weights", metavar="FILE",
                        help="the graph's weights line names FILE (relative to DIR), which must already hold "
                        "every parameter with these values (a model's steps sharing one file); no "
                        "weights.safetensors is written")
    parser.add_argument("--tracer", choices=("auto", "make_fx", "export"), default="auto",
                        help="auto: torch.export where PyTorch has it, else make_fx")
    parser.add_argument("--int-range", action="append", metavar="NAME=LO:HI",
                        help="declare that every value of int64/int32 input NAME lies in [LO, HI] (a mask: 0:1; "
                        "token ids: 0:VOCAB-1): the compiler may rely on it (integer arithmetic on the device is "
                        "exact only for small values) and spyre run refuses (exit 2) an input outside it; "
                        "repeatable; bool inputs are [0, 1] by their type")
    parser.add_argument("--generate", type=int, metavar="CONTEXT",
                        help="export a causal language model (forward(ids [1, T]) -> logits [1, T, VOCAB], FUNC's "
                        "inputs (ids,)) for spyre generate DIR: one step over CONTEXT tokens, written to DIR/step, "
                        "each new token rerunning it (no KV cache); refused (exit 2) unless the logits of a "
                        "prefix are unchanged by the tokens after it (docs/serving.md); with two or three inputs "
                        "(source ids[, source mask], decoder ids) an encoder-decoder, written to DIR/seq2seq")
    parser.add_argument("--source-len", type=int, metavar="N",
                        help="with --generate of an encoder-decoder: the source's fixed length, the example's "
                        "padded with token 0 and mask 0 (default: the example's length; longer needs a mask input)")
    parser.add_argument("--encoder-once", action="store_true",
                        help="with --generate of an encoder-decoder: split the step where what is computed from the "
                        "source alone meets the decoder ids, into DIR/encoder (run once per source) and DIR/decoder "
                        "(the encoder's outputs and the decoder ids), instead of DIR/seq2seq")
    args = parser.parse_args()  # usage errors exit with status 2
    if args.generate is not None and args.generate < 1:
        parser.error(f"--generate {args.generate}: the context must be at least 1 token")
    if args.source_len is not None and (args.generate is None or args.source_len < 1):
        parser.error(f"--source-len {args.source_len}: needs --generate, and at least 1 token")
    if args.encoder_once and args.generate is None:
        parser.error("--encoder-once needs --generate")
    try:
        more = dict(draws=args.record_draws, weights=args.weights, int_ranges=parse_ranges(args.int_range))
        if args.generate is not None:
            export_generate(args.workload, args.out_dir, args.seed, args.tracer, args.generate, args.source_len,
                            args.graph_only, args.encoder_once, **more)
        else:
            export(args.workload, args.out_dir, args.seed, args.tracer, args.graph_only, **more)
    except UserError as e:
        print(f"export.py: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
