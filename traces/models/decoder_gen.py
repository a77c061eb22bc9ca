"""Whole decoder-only models for token generation (issue 17): embedding, N
layers, final norm, LM head, run as a prefill step and a decode step that
read and update a KV cache (docs/graph-format.md, "State").

llama_gen_prefill / llama_gen_decode   Llama style: RMSNorm, rotary
    embeddings (cos/sin tables indexed by position), grouped-query attention
    (4 query heads, 2 KV heads), SwiGLU MLP, no biases.
gpt2_gen_prefill / gpt2_gen_decode     GPT-2 style: LayerNorm, learned
    position embeddings, multi-head attention (4 heads), GELU (tanh) MLP.

Both: 2 layers, hidden 64, vocabulary 256, context 64, prompts of up to 16
tokens (the prefill step's fixed length; a shorter prompt is padded at the
end and its logits are read at its last token), random weights seeded by
the export (larger than PyTorch's defaults, so that the next token is
usually clear of the second; see expected_tokens).

The step modules are functional: forward(ids, pos, k_cache0, v_cache0, ...)
returns (logits, k_cache0', v_cache0', ...), each cache' the cache with
the step's keys or values copied in at the positions pos (index_copy along
the sequence dimension).  The export makes the caches state (option
"state") and the copies `update` lines.  The decode step reads the cache
only: its attention is over the cache (positions before pos) plus the new
token's own key and value, so no step copies the whole cache.

python3 traces/models/decoder_gen.py tokens MODEL FILE  writes PyTorch's own
greedy generation of MODEL ("llama" or "gpt2") for the prompt PROMPT: the 32
tokens and, per token, the gap between the top two logits.
"""
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS, CONTEXT, PROMPT_MAX = 256, 64, 2, 4, 64, 16
PROMPT = [1, 2, 3, 4, 5, 6, 7, 8]
NEW_TOKENS = 32


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Block(nn.Module):
    """One layer of either style; llama selects RMSNorm/RoPE/GQA/SwiGLU."""

    def __init__(self, llama, kv_heads, ffn):
        super().__init__()
        self.llama, self.heads, self.kv_heads = llama, HEADS, kv_heads
        self.head_dim = HIDDEN // HEADS
        norm = (lambda: RMSNorm(HIDDEN)) if llama else (lambda: nn.LayerNorm(HIDDEN))
        self.norm1, self.norm2 = norm(), norm()
        self.q = nn.Linear(HIDDEN, HIDDEN, bias=not llama)
        self.k = nn.Linear(HIDDEN, kv_heads * self.head_dim, bias=not llama)
        self.v = nn.Linear(HIDDEN, kv_heads * self.head_dim, bias=not llama)
        self.o = nn.Linear(HIDDEN, HIDDEN, bias=not llama)
        if llama:
            self.gate = nn.Linear(HIDDEN, ffn, bias=False)
        self.up = nn.Linear(HIDDEN, ffn, bias=not llama)
        self.down = nn.Linear(ffn, HIDDEN, bias=not llama)

    def heads_of(self, t, n):
        return t.view(1, -1, n, self.head_dim).transpose(1, 2)  # (1, n, seq, head_dim)

    def mlp(self, x):
        if self.llama:
            return self.down(F.silu(self.gate(x)) * self.up(x))
        return self.down(F.gelu(self.up(x), approximate="tanh"))

    def attend_prompt(self, q, k, v, mask):
        """Causal attention of the prompt over itself (K/V heads repeated)."""
        rep = self.heads // self.kv_heads
        seq = k.shape[2]
        k = k[:, :, None].expand(1, self.kv_heads, rep, seq, self.head_dim).reshape(1, self.heads, seq, self.head_dim)
        v = v[:, :, None].expand(1, self.kv_heads, rep, seq, self.head_dim).reshape(1, self.heads, seq, self.head_dim)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + mask
        return torch.softmax(scores, dim=-1) @ v

    def attend_cache(self, q, k, v, k_cache, v_cache, valid):
        """One query token over the cache's valid positions (valid: 0 there,
        -inf elsewhere) and itself: the query heads of a KV head grouped as
        rows, so the cache is read once."""
        rep = self.heads // self.kv_heads
        qg = q.reshape(1, self.kv_heads, rep, self.head_dim)
        s_cache = qg @ k_cache.transpose(-1, -2) + valid
        s_new = qg @ k.transpose(-1, -2)
        p = torch.softmax(torch.cat((s_cache, s_new), dim=-1) / math.sqrt(self.head_dim), dim=-1)
        out = p[..., :CONTEXT] @ v_cache + p[..., CONTEXT:] @ v
        return out.reshape(1, self.heads, 1, self.head_dim)

    def forward(self, x, pos, cos, sin, k_cache, v_cache, mask, valid):
        h = self.norm1(x)
        q, k, v = self.heads_of(self.q(h), self.heads), self.heads_of(self.k(h), self.kv_heads), \
            self.heads_of(self.v(h), self.kv_heads)
        if self.llama:
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if valid is None:
            a = self.attend_prompt(q, k, v, mask)
        else:
            a = self.attend_cache(q, k, v, k_cache, v_cache, valid)
        x = x + self.o(a.transpose(1, 2).reshape(1, -1, HIDDEN))
        x = x + self.mlp(self.norm2(x))
        return x, torch.index_copy(k_cache, 2, pos, k), torch.index_copy(v_cache, 2, pos, v)


class Decoder(nn.Module):
    def __init__(self, llama):
        super().__init__()
        self.llama = llama
        kv_heads = 2 if llama else HEADS
        self.kv_shape = (1, kv_heads, CONTEXT, HIDDEN // HEADS)
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        if not llama:
            self.wpe = nn.Embedding(CONTEXT, HIDDEN)
        self.layers = nn.ModuleList(Block(llama, kv_heads, 160 if llama else 256) for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN) if llama else nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
        head_dim = HIDDEN // HEADS
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(CONTEXT, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("rope_cos", angles.cos())
        self.register_buffer("rope_sin", angles.sin())
        self.register_buffer("causal_mask", torch.triu(torch.full((PROMPT_MAX, PROMPT_MAX), float("-inf")), 1))
        # row p: 0 for the cache positions before p, -inf from p on (a row
        # gathered by position, as the rotary tables are: no compare of
        # positions on the device)
        self.register_buffer("cache_mask", torch.triu(torch.full((CONTEXT, CONTEXT), float("-inf"))))
        with torch.no_grad():  # weights large enough for clear argmaxes
            for p in self.parameters():
                if p.dim() == 2:
                    p.normal_(0, 1.0 / math.sqrt(p.shape[1]) if p.shape[1] != HIDDEN or p.shape[0] == VOCAB else 0.2)
            self.embed.weight.normal_(0, 1.0)

    def forward(self, ids, pos, k_cache0, v_cache0, k_cache1, v_cache1):  # the caches named for the export
        """ids (1, S), pos (S,): one step of S tokens at positions pos; the
        decode step (S == 1) attends over the cache, the prefill step over
        its own tokens (causally: the prefill starts at position 0)."""
        caches = (k_cache0, v_cache0, k_cache1, v_cache1)
        decode = ids.shape[1] == 1
        x = self.embed(ids)
        cos = sin = None
        if self.llama:
            cos, sin = self.rope_cos.index_select(0, pos), self.rope_sin.index_select(0, pos)
        else:
            x = x + self.wpe(pos)
        valid = self.cache_mask.index_select(0, pos) if decode else None
        out = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, pos, cos, sin, caches[2 * i], caches[2 * i + 1], self.causal_mask, valid)
            out += [k, v]
        return (self.head(self.norm(x)), *out)


def build(llama):
    torch.manual_seed(0)
    return Decoder(llama).eval()


def empty_caches(model):
    return [torch.zeros(model.kv_shape) for _ in range(2 * LAYERS)]


def step_inputs(model, decode):
    """The export's example inputs: the prompt padded to PROMPT_MAX at
    positions 0.., or its last token at the next position; empty caches."""
    if decode:
        ids, pos = torch.tensor([[PROMPT[-1]]]), torch.tensor([len(PROMPT)])
    else:
        ids = torch.tensor([PROMPT + [0] * (PROMPT_MAX - len(PROMPT))])
        pos = torch.arange(PROMPT_MAX)
    return (ids, pos, *empty_caches(model))


def workload(llama, decode):
    model = build(llama)
    state = {f"{kv}_cache{i}": 1 + 2 * i + (kv == "v") for i in range(LAYERS) for kv in ("k", "v")}
    return model, step_inputs(model, decode), {"state": state}


def llama_gen_prefill():
    return workload(True, False)


def llama_gen_decode():
    return workload(True, True)


def gpt2_gen_prefill():
    return workload(False, False)


def gpt2_gen_decode():
    return workload(False, True)


@torch.no_grad()
def generate(model, prompt, n):
    """Greedy generation as spyre generate runs it: (tokens, gaps), gaps[i]
    the top-two logit gap of token i."""
    caches = empty_caches(model)
    ids = torch.tensor([prompt + [0] * (PROMPT_MAX - len(prompt))])
    logits, *caches = model(ids, torch.arange(PROMPT_MAX), *caches)
    row = logits[0, len(prompt) - 1]
    tokens, gaps = [], []
    for i in range(n):
        top = torch.topk(row, 2).values
        tokens.append(int(row.argmax()))
        gaps.append(float(top[0] - top[1]))
        if i == n - 1:
            break
        logits, *caches = model(torch.tensor([[tokens[-1]]]), torch.tensor([len(prompt) + i]), *caches)
        row = logits[0, 0]
    return tokens, gaps


def write_tokens(name, path):
    model = build(name == "llama")
    tokens, gaps = generate(model, PROMPT, NEW_TOKENS)
    with open(path, "w") as f:
        f.write(f"# PyTorch's greedy generation by traces/models/decoder_gen.py ({name}, torch {torch.__version__})\n")
        f.write("prompt " + ",".join(map(str, PROMPT)) + "\n")
        f.write("tokens " + ",".join(map(str, tokens)) + "\n")
        f.write("gaps " + ",".join(f"{g:.6g}" for g in gaps) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "tokens" or sys.argv[2] not in ("llama", "gpt2"):
        sys.exit("usage: decoder_gen.py tokens llama|gpt2 FILE")
    write_tokens(sys.argv[2], sys.argv[3])
