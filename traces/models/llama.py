"""A LLaMA decoder layer: RMSNorm, rotary position embeddings, grouped-query
causal self-attention, RMSNorm, SwiGLU MLP, two residual connections.  No
biases.  llama_tiny and llama_8b_layer have no KV cache (the whole sequence
at once, as in a prefill); the *_decode functions run one decode step
against a KV cache.

llama_tiny()      hidden 64, 4 query heads, 2 KV heads, FFN 160, x (2, 16, 64)
llama_8b_layer()  hidden 4096, 32 query heads, 8 KV heads, FFN 14336,
                  x (1, 512, 4096): one layer of Llama 3 8B (about 218 M
                  parameters, 0.9 GB in f32; never exported by the tests)
llama_8b_decode() the same layer for one decode step: the new token's hidden
                  state x (1, 1, 4096) at position 512 plus a KV cache of 512
                  positions, k_cache and v_cache (1, 8, 512, 128) (keys
                  already rotated); outputs the new hidden state and the
                  token's k and v (1, 8, 1, 128) for the caller to append
                  (bench/bench_llama.c exports it with --graph-only)
llama_tiny_decode() the tiny layer's decode step, context 16
llama_tiny_decode_masked(), llama_tiny_decode_plus_inf_mask()
                  the same step with an additive mask input (batch, 1, 1,
                  17) adding to the scores: rows masked whole, in part, with
                  +inf or NaN (PyTorch's softmax of such a row is NaN)

Written out by hand: RMSNorm as pow, mean, rsqrt, mul; rotary embeddings
from precomputed cos/sin buffers with rotate_half (slices and cat); K and V
heads repeated for grouped-query attention with expand + reshape; an
additive causal mask buffer (-inf above the diagonal, from torch.triu).

Export: /usr/bin/python3 tools/export.py traces/models/llama.py:FUNC -o DIR
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, hidden, n_heads, n_kv_heads, ffn, max_seq, rope_theta=500000.0):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = hidden // n_heads
        self.input_layernorm = RMSNorm(hidden)
        self.q_proj = nn.Linear(hidden, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, hidden, bias=False)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)

        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim
        inv_freq = 1.0 / (rope_theta ** exponents)
        angles = torch.outer(torch.arange(max_seq, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)  # (max_seq, head_dim)
        self.register_buffer("rope_cos", angles.cos())
        self.register_buffer("rope_sin", angles.sin())
        mask = torch.triu(torch.full((max_seq, max_seq), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask)

    def repeat_kv(self, t):
        """(batch, n_kv_heads, seq, head_dim) -> (batch, n_heads, seq, head_dim):
        each KV head serves n_heads / n_kv_heads consecutive query heads."""
        batch, n_kv, seq, head_dim = t.shape
        n_rep = self.n_heads // n_kv
        t = t[:, :, None, :, :].expand(batch, n_kv, n_rep, seq, head_dim)
        return t.reshape(batch, n_kv * n_rep, seq, head_dim)

    def attention(self, x):
        batch, seq, hidden = x.shape
        q = self.q_proj(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rope_cos[:seq], self.rope_sin[:seq]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        probs = F.softmax(scores + self.causal_mask[:seq, :seq], dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, hidden)
        return self.o_proj(context)

    def decode_attention(self, x, k_cache, v_cache, mask=None):
        """One new token (seq 1) at position k_cache.shape[2], attending to
        the cache and to itself (no causal mask: every position is in the
        past; mask, if given, is a caller's additive mask over them)."""
        batch, seq, hidden = x.shape
        pos = k_cache.shape[2]
        q = self.q_proj(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rope_cos[pos:pos + seq], self.rope_sin[pos:pos + seq]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        keys = self.repeat_kv(torch.cat((k_cache, k), dim=2))
        values = self.repeat_kv(torch.cat((v_cache, v), dim=2))
        scores = torch.matmul(q, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        probs = F.softmax(scores if mask is None else scores + mask, dim=-1)
        context = torch.matmul(probs, values).transpose(1, 2).reshape(batch, seq, hidden)
        return self.o_proj(context), k, v

    def forward(self, x):
        x = x + self.attention(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class LlamaDecodeStep(nn.Module):
    """forward(x, k_cache, v_cache) -> (new hidden state, k, v) of one
    decode step through a LlamaLayer."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, k_cache, v_cache):
        layer = self.layer
        attn, k, v = layer.decode_attention(layer.input_layernorm(x), k_cache, v_cache)
        x = x + attn
        h = layer.post_attention_layernorm(x)
        return x + layer.down_proj(F.silu(layer.gate_proj(h)) * layer.up_proj(h)), k, v


class LlamaMaskedDecodeStep(nn.Module):
    """forward(x, k_cache, v_cache, mask) -> (new hidden state, k, v): a
    decode step whose attention adds the caller's mask (batch, 1, 1,
    context + 1) to the scores."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, k_cache, v_cache, mask):
        layer = self.layer
        attn, k, v = layer.decode_attention(layer.input_layernorm(x), k_cache, v_cache, mask)
        x = x + attn
        h = layer.post_attention_layernorm(x)
        return x + layer.down_proj(F.silu(layer.gate_proj(h)) * layer.up_proj(h)), k, v


def _layer(hidden, n_heads, n_kv_heads, ffn, batch, seq):
    torch.manual_seed(0)
    model = LlamaLayer(hidden, n_heads, n_kv_heads, ffn, max_seq=seq)
    # RMSNorm starts as weight 1; move it off the identity so a compiler
    # that drops the scale is caught.
    with torch.no_grad():
        for norm in (model.input_layernorm, model.post_attention_layernorm):
            norm.weight.add_(0.1 * torch.randn(hidden))
    x = torch.randn(batch, seq, hidden)
    return model, (x,)


def llama_tiny():
    return _layer(64, 4, 2, 160, batch=2, seq=16)


def llama_8b_layer():
    return _layer(4096, 32, 8, 14336, batch=1, seq=512)


def llama_70b_layer():
    return _layer(8192, 64, 8, 28672, batch=1, seq=512)


def _decode(hidden, n_heads, n_kv_heads, ffn, context):
    torch.manual_seed(0)
    layer = LlamaLayer(hidden, n_heads, n_kv_heads, ffn, max_seq=context + 1)
    with torch.no_grad():
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            norm.weight.add_(0.1 * torch.randn(hidden))
    # the causal mask is a prefill's; a decode step has none
    del layer._buffers["causal_mask"]
    head_dim = hidden // n_heads
    x = torch.randn(1, 1, hidden)
    k_cache = torch.randn(1, n_kv_heads, context, head_dim)
    v_cache = torch.randn(1, n_kv_heads, context, head_dim)
    return LlamaDecodeStep(layer), (x, k_cache, v_cache)


def llama_tiny_decode():
    return _decode(64, 4, 2, 160, context=16)


def _masked_decode(rows):
    """The tiny decode step at batch len(rows), sequence b's mask row rows[b]
    (context 16 plus the new token: 17 values)."""
    step, (x, k_cache, v_cache) = _decode(64, 4, 2, 160, context=16)
    torch.manual_seed(1)
    batch = len(rows)
    x = torch.randn(batch, 1, 64)
    k_cache = torch.randn(batch, 2, 16, 16)
    v_cache = torch.randn(batch, 2, 16, 16)
    mask = torch.tensor(rows, dtype=torch.float32).view(batch, 1, 1, 17)
    return LlamaMaskedDecodeStep(step.layer), (x, k_cache, v_cache, mask)


def llama_tiny_decode_masked():
    inf = float("inf")
    return _masked_decode([[0.0] * 10 + [-inf] * 7,  # keys 10 on dropped
                           [-inf] * 17])  # every key dropped: PyTorch's row is NaN


def llama_tiny_decode_plus_inf_mask():
    inf, nan = float("inf"), float("nan")
    return _masked_decode([[0.0] * 16 + [inf],  # +inf: inf - inf in the softmax, NaN
                           [0.0] * 4 + [inf] + [-inf] * 12,
                           [0.0] * 8 + [nan] + [0.0] * 8,  # a NaN: the row's softmax NaN too
                           [0.0] * 12 + [-1e4] * 5])  # finite: as PyTorch's


def llama_8b_decode():
    return _decode(4096, 32, 8, 14336, context=512)


def llama_70b_decode():
    # Llama 3 70B's layer (issue 18): timing only, at TP 4 and 8
    return _decode(8192, 64, 8, 28672, context=512)
