"""A Llama-3-8B-size whole model in spyre generate's format (decoder_gen.py:
a prefill step and a decode step, the KV caches as state, index_copy
updates), for timing only (issue 17: `spyre generate --no-values`).

The layers are llama_serve.py's "8b" ones (hidden 4096, 32 query heads,
8 KV heads of 128, FFN 14336, RoPE base 500000), built on the meta device,
so nothing is allocated; the export is --graph-only.  The vocabulary of
128,256 is two LM-head halves (llama_serve.Ends: the compiler's matrix
product takes at most 65,535 columns); the first half is the first output,
which spyre generate takes for the logits (its vocabulary is then 64,128:
no matter under --no-values, which computes no token).  Context CONTEXT,
prompts of up to PROMPT_MAX tokens (the prefill step's fixed length).

python3 traces/models/decoder_gen8b.py DIR [LAYERS]
    exports DIR/prefill and DIR/decode graph-only (default 32 layers; the
    model is too big to commit: bench/gen8b exports it on demand).
"""
import inspect
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_serve as ls  # noqa: E402

SIZE = ls.SIZES["8b"]
CONTEXT, PROMPT_MAX = 1024, 128


class Layer(ls.Layer):
    def forward(self, x, pos, k_cache, v_cache, mask):
        """The prefill (mask (T, T), causal) or the decode step (mask
        (1, CONTEXT): 0 at the cache positions before pos, -inf from it)."""
        t, rep = x.shape[1], self.heads // self.kv_heads
        q, k, v = self.qkv(x, pos)
        if t > 1:  # the prompt over itself: a KV head's query heads as rows
            qg = q.reshape(1, self.kv_heads, rep * t, self.hd)
            s = (qg @ k.transpose(-1, -2)).view(1, self.kv_heads, rep, t, t) / math.sqrt(self.hd) + mask
            p = torch.softmax(s, dim=-1).view(1, self.kv_heads, rep * t, t)
            a = (p @ v).view(1, self.heads, t, self.hd).transpose(1, 2).reshape(1, t, -1)
        else:  # one token over the cache (read once) and itself
            qg = q.reshape(1, self.kv_heads, rep, self.hd)
            s = torch.cat((qg @ k_cache.transpose(-1, -2) + mask, qg @ k.transpose(-1, -2)), dim=-1)
            p = torch.softmax(s / math.sqrt(self.hd), dim=-1)
            a = (p[..., :CONTEXT] @ v_cache + p[..., CONTEXT:] @ v).reshape(1, 1, -1)
        return self.finish(x, a), torch.index_copy(k_cache, 2, pos, k), torch.index_copy(v_cache, 2, pos, v)


class Decoder(nn.Module):
    """forward(ids (1, S), pos (S,), k_cache0, v_cache0, ...) -> (logits of
    the vocabulary's first half, of its second, caches'...)."""

    def __init__(self, layers):
        super().__init__()
        self.ends = ls.Ends(SIZE)
        self.layers = nn.ModuleList(Layer(SIZE, CONTEXT) for _ in range(layers))
        self.register_buffer("causal_mask", torch.triu(torch.full((PROMPT_MAX, PROMPT_MAX), float("-inf")), 1))
        self.register_buffer("cache_mask", torch.triu(torch.full((CONTEXT, CONTEXT), float("-inf"))))

    def run(self, ids, pos, *caches):
        mask = self.causal_mask if ids.shape[1] > 1 else self.cache_mask.index_select(0, pos)
        x = self.ends.embed(ids)
        out = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, pos, caches[2 * i], caches[2 * i + 1], mask)
            out += [k, v]
        return (*self.ends.head(self.ends.norm(x)), *out)


def model_class(layers):
    """Decoder with a forward whose parameters are named (the export names
    the graph's inputs after them; generate needs %ids and %pos)."""
    def forward(self, *args):
        return self.run(*args)
    names = ["self", "ids", "pos"] + [f"{kv}_cache{i}" for i in range(layers) for kv in ("k", "v")]
    forward.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    return type(f"Decoder{layers}", (Decoder,), {"forward": forward})


def workload(layers, decode):
    s = SIZE
    kv = (1, s["kv_heads"], CONTEXT, s["hidden"] // s["heads"])
    t = 1 if decode else PROMPT_MAX
    inputs = (ls.meta(1, t, dtype=torch.int64), ls.meta(t, dtype=torch.int64)) + \
        tuple(ls.meta(*kv) for _ in range(2 * layers))
    state = {f"{kv}_cache{i}": 2 + 2 * i + (kv == "v") for i in range(layers) for kv in ("k", "v")}
    return model_class(layers)(layers), inputs, {"state": state}


def export_model(d, layers):
    here = os.path.dirname(os.path.abspath(__file__))
    tools = os.path.join(here, "..", "..", "tools", "export.py")
    import importlib.util
    spec = importlib.util.spec_from_file_location("spyre_export", tools)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    for step in ("prefill", "decode"):
        out = os.path.join(d, step)
        os.makedirs(out, exist_ok=True)
        ex.export(f"decoder_gen8b.py:{step}", out, 0, "auto", graph_only=True,
                  func=lambda: workload(layers, step == "decode"))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[-1])
    export_model(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else SIZE["layers"])
