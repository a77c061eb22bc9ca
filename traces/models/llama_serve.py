"""Step graphs of a whole Llama-style model for serving (issue 17,
`spyre serve`, docs/serving.md): timing only, exported with --graph-only
(shapes and dtypes, no weights: the modules are built on the meta device,
so an 8B model allocates nothing).

A serving step runs the embedding, N identical layers, the final norm and
the LM head.  Its graphs here, each with the batch and context as shape
parameters:

  prefill_layer(chunk, context)  one layer over a chunk of `chunk` tokens of
      one sequence at positions context.., attending to the `context` cached
      positions before it and causally to itself; writes the chunk's keys
      and values into the layer's cache (state, index_copy along positions).
  decode_layer(batch, context)   one layer over one new token of each of
      `batch` sequences, each attending to its own `context` cached
      positions and to itself; writes the tokens' keys and values into the
      cache (a pool of slots, one row per (sequence, KV head, position):
      index_copy along the slots, so each sequence writes at its own
      position).
  ends(tokens, rows)             the embedding of `tokens` ids and the final
      norm and LM head of `rows` hidden states (a prefill chunk's last
      token, or every decoding sequence's token).
  decode_model(batch, context, layers)  the whole decode step in one graph
      (embedding, `layers` layers, norm, head), for checking that a step's
      cost is the sum of its parts (bench/bench_serve.c).

Sizes: "8b" is Llama 3 8B (hidden 4096, 32 query heads, 8 KV heads of 128,
FFN 14336, vocabulary 128256, 32 layers); "tiny" (hidden 64, 4 heads, 2 KV
heads, FFN 160, vocabulary 256, 2 layers) is for tests.

python3 traces/models/llama_serve.py grid DIR SIZE CONTEXT CHUNK BATCHES CONTEXTS ENDS
    writes a model directory for spyre serve: DIR/model.txt and the step
    graphs at the grid of shapes spyre serve interpolates between
    (docs/serving.md, "Step costs"): decode layers at BATCHES x CONTEXTS,
    the ends at ENDS batches (comma lists).
python3 traces/models/llama_serve.py step DIR SIZE KIND ARGS...
    writes one graph, e.g. `step D 8b decode_layer 3 1000`.
python3 traces/models/llama_serve.py random DIR SIZE N MAX_BATCH MAX_CONTEXT SEED
    writes N decode steps at random shapes (batch 1..MAX_BATCH, context a
    whole number of 64-token KV blocks up to MAX_CONTEXT, as spyre serve
    charges a decode step; seeded): DIR/decode_bB_cC and DIR/ends_bB, for
    `spyre serve --check-buckets DIR`.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

SIZES = {
    "8b": dict(hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, layers=32),
    "tiny": dict(hidden=64, heads=4, kv_heads=2, ffn=160, vocab=256, layers=2),
}
META = torch.device("meta")


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=META))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def linear(i, o):
    return nn.Linear(i, o, bias=False, device=META)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(nn.Module):
    def __init__(self, s, positions):
        super().__init__()
        h, self.heads, self.kv_heads = s["hidden"], s["heads"], s["kv_heads"]
        self.hd = h // self.heads
        self.norm1, self.norm2 = RMSNorm(h), RMSNorm(h)
        self.q, self.k = linear(h, h), linear(h, self.kv_heads * self.hd)
        self.v, self.o = linear(h, self.kv_heads * self.hd), linear(h, h)
        self.gate, self.up, self.down = linear(h, s["ffn"]), linear(h, s["ffn"]), linear(s["ffn"], h)
        inv = 1.0 / (500000.0 ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        ang = torch.outer(torch.arange(positions, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.register_buffer("rope_cos", ang.cos())
        self.register_buffer("rope_sin", ang.sin())

    def qkv(self, x, pos):
        """x (B, S, H) -> q (B, heads, S, hd), k and v (B, kv_heads, S, hd),
        rotated at positions pos (B*S,)."""
        b, s, _ = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        cos = self.rope_cos.index_select(0, pos).view(b, 1, s, self.hd)
        sin = self.rope_sin.index_select(0, pos).view(b, 1, s, self.hd)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin, v

    def finish(self, x, a):
        x = x + self.o(a)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class PrefillLayer(Layer):
    """forward(x (1, T, H), pos (T,), k_cache, v_cache (1, kv, C+T, hd),
    mask (T, C+T)) -> (x', k_cache', v_cache')."""

    def forward(self, x, pos, k_cache, v_cache, mask):
        t, ctx = x.shape[1], k_cache.shape[2] - x.shape[1]
        q, k, v = self.qkv(x, pos)
        rep = self.heads // self.kv_heads
        qg = q.reshape(1, self.kv_heads, rep * t, self.hd)  # a KV head's query heads as rows: the cache read once
        keys = torch.cat((k_cache[:, :, :ctx], k), dim=2) if ctx else k
        vals = torch.cat((v_cache[:, :, :ctx], v), dim=2) if ctx else v
        s = (qg @ keys.transpose(-1, -2)).view(1, self.kv_heads, rep, t, ctx + t) / math.sqrt(self.hd) + mask
        p = torch.softmax(s, dim=-1).view(1, self.kv_heads, rep * t, ctx + t)
        a = (p @ vals).view(1, self.heads, t, self.hd).transpose(1, 2).reshape(1, t, -1)
        return self.finish(x, a), torch.index_copy(k_cache, 2, pos, k), torch.index_copy(v_cache, 2, pos, v)


class DecodeLayer(Layer):
    """forward(x (B, 1, H), pos (B,), slots (B*kv,), k_pool, v_pool
    (B*kv*(C+1), hd)) -> (x', k_pool', v_pool'): sequence b's cache is rows
    (b*kv + g)*(C+1) + p of the pool; it attends to its first C positions."""

    def forward(self, x, pos, slots, k_pool, v_pool):
        b, ctx = x.shape[0], k_pool.shape[0] // (x.shape[0] * self.kv_heads) - 1
        q, k, v = self.qkv(x, pos)
        rep = self.heads // self.kv_heads
        qg = q.reshape(b, self.kv_heads, rep, self.hd)
        kc = k_pool.view(b, self.kv_heads, ctx + 1, self.hd)[:, :, :ctx]
        vc = v_pool.view(b, self.kv_heads, ctx + 1, self.hd)[:, :, :ctx]
        s = torch.cat((qg @ kc.transpose(-1, -2), qg @ k.transpose(-1, -2)), dim=-1) / math.sqrt(self.hd)
        p = torch.softmax(s, dim=-1)
        a = p[..., :ctx] @ vc + p[..., ctx:] @ v
        a = a.reshape(b, 1, -1)
        rows = b * self.kv_heads
        return (self.finish(x, a), torch.index_copy(k_pool, 0, slots, k.reshape(rows, self.hd)),
                torch.index_copy(v_pool, 0, slots, v.reshape(rows, self.hd)))


class Ends(nn.Module):
    """forward(ids (T,), x (R, H)) -> (embedding of ids, logits of x in two
    halves of the vocabulary).  The LM head is two linears: the compiler's
    matrix product takes at most 65,535 columns (compiler/back/be_matmul.c)
    and 8B's vocabulary is 128,256; the halves stay two outputs (a cat of
    them would run on the host) for the sampler to read."""

    def __init__(self, s):
        super().__init__()
        self.embed = nn.Embedding(s["vocab"], s["hidden"], device=META)
        self.norm = RMSNorm(s["hidden"])
        half = s["vocab"] // 2
        self.head0, self.head1 = linear(s["hidden"], half), linear(s["hidden"], s["vocab"] - half)

    def head(self, x):
        return self.head0(x), self.head1(x)

    def forward(self, ids, x):
        return (self.embed(ids), *self.head(self.norm(x)))


class DecodeModel(nn.Module):
    """The whole decode step: forward(ids (B, 1), pos, slots, pools...) ->
    (logits (B, 1, V) in two halves, pools'...)."""

    def __init__(self, s, context, layers):
        super().__init__()
        self.ends = Ends(s)
        self.layers = nn.ModuleList(DecodeLayer(s, context + 1) for _ in range(layers))

    def forward(self, ids, pos, slots, *pools):
        x = self.ends.embed(ids)
        out = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, pos, slots, pools[2 * i], pools[2 * i + 1])
            out += [k, v]
        return (*self.ends.head(self.ends.norm(x)), *out)


def meta(*shape, dtype=torch.float32):
    return torch.zeros(shape, dtype=dtype, device=META)


def prefill_layer(size, chunk, context):
    s = SIZES[size]
    kv = (1, s["kv_heads"], context + chunk, s["hidden"] // s["heads"])
    mask = meta(chunk, context + chunk)
    inputs = (meta(1, chunk, s["hidden"]), meta(chunk, dtype=torch.int64), meta(*kv), meta(*kv), mask)
    return PrefillLayer(s, context + chunk), inputs, {"state": {"k_cache": 1, "v_cache": 2}}


def decode_inputs(s, batch, context):
    rows = batch * s["kv_heads"]
    pool = (rows * (context + 1), s["hidden"] // s["heads"])
    return (meta(batch, dtype=torch.int64), meta(rows, dtype=torch.int64), meta(*pool), meta(*pool))


def decode_layer(size, batch, context):
    s = SIZES[size]
    inputs = (meta(batch, 1, s["hidden"]),) + decode_inputs(s, batch, context)
    return DecodeLayer(s, context + 1), inputs, {"state": {"k_pool": 1, "v_pool": 2}}


def ends(size, tokens, rows):
    s = SIZES[size]
    return Ends(s), (meta(tokens, dtype=torch.int64), meta(rows, s["hidden"])), {}


def decode_model(size, batch, context, layers):
    s = SIZES[size]
    pos, slots, k, v = decode_inputs(s, batch, context)
    pools = tuple(meta(*k.shape) for _ in range(2 * layers))
    # forward(*pools) has no parameter names: export names the inputs input0..
    state = {f"input{3 + j}": 2 + j for j in range(2 * layers)}
    return DecodeModel(s, context, layers), (meta(batch, 1, dtype=torch.int64), pos, slots) + pools, {"state": state}


STEPS = {"prefill_layer": prefill_layer, "decode_layer": decode_layer, "ends": ends, "decode_model": decode_model}


def export_step(out, size, kind, *args):
    """Export STEPS[kind](size, *args) graph-only into out (skipped if there)."""
    if os.path.exists(os.path.join(out, "graph.txt")):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "tools"))
    import importlib.util
    spec = importlib.util.spec_from_file_location("spyre_export", os.path.join(here, "..", "..", "tools", "export.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    os.makedirs(out, exist_ok=True)
    ex.export(f"llama_serve.py:{kind}", out, 0, "auto", graph_only=True, func=lambda: STEPS[kind](size, *args))


def grid(d, size, context, chunk, batches, contexts, ends_batches):
    """The model directory: model.txt and the graphs at the grid's shapes."""
    s = SIZES[size]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.txt"), "w") as f:
        f.write(f"# spyre serve model (traces/models/llama_serve.py grid, size {size}); docs/serving.md\n")
        f.write(f"layers {s['layers']}\ncontext {context}\nchunk {chunk}\n")
        f.write(f"kv_bytes_per_token {2 * s['layers'] * s['kv_heads'] * (s['hidden'] // s['heads']) * 2}\n")
    for c in range(0, context, chunk):
        export_step(os.path.join(d, f"prefill_c{c}"), size, "prefill_layer", chunk, c)
    export_step(os.path.join(d, "ends_prefill"), size, "ends", chunk, 1)
    for b in ends_batches:
        export_step(os.path.join(d, f"ends_b{b}"), size, "ends", b, b)
    for b in batches:
        for c in contexts:
            export_step(os.path.join(d, f"decode_b{b}_c{c}"), size, "decode_layer", b, c)


def main(argv):
    if len(argv) == 8 and argv[0] == "grid":
        ints = lambda t: [int(x) for x in t.split(",")]
        grid(argv[1], argv[2], int(argv[3]), int(argv[4]), ints(argv[5]), ints(argv[6]), ints(argv[7]))
    elif len(argv) == 7 and argv[0] == "random":
        import random
        rng = random.Random(int(argv[6]))
        for _ in range(int(argv[3])):
            b, c = rng.randint(1, int(argv[4])), 64 * rng.randint(1, int(argv[5]) // 64)
            export_step(os.path.join(argv[1], f"decode_b{b}_c{c}"), argv[2], "decode_layer", b, c)
            export_step(os.path.join(argv[1], f"ends_b{b}"), argv[2], "ends", b, b)
    elif len(argv) >= 4 and argv[0] == "step" and argv[3] in STEPS:
        export_step(argv[1], argv[2], argv[3], *[int(x) for x in argv[4:]])
    else:
        sys.exit(__doc__.split("\n\n")[-1])


if __name__ == "__main__":
    main(sys.argv[1:])
