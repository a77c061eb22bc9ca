"""A LLaMA decoder layer: RMSNorm, rotary position embeddings, grouped-query
causal self-attention, RMSNorm, SwiGLU MLP, two residual connections.  No
biases, no KV cache (the whole sequence at once, as in a prefill).

llama_tiny()      hidden 64, 4 query heads, 2 KV heads, FFN 160, x (2, 16, 64)
llama_8b_layer()  hidden 4096, 32 query heads, 8 KV heads, FFN 14336,
                  x (1, 512, 4096): one layer of Llama 3 8B (about 218 M
                  parameters, 0.9 GB in f32; never exported by the tests)

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

    def forward(self, x):
        x = x + self.attention(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


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
