"""A GPT-2 transformer block: pre-LayerNorm, causal self-attention, GELU (tanh
approximation) MLP, two residual connections.

gpt2_small_block_tiny()  d_model 64, 4 heads, x (2, 16, 64)
gpt2_block()             d_model 768, 12 heads, x (1, 128, 768)

The causal mask is a bool buffer (True above the diagonal, from torch.triu)
and masked scores are set to -inf with masked_fill.

Export: /usr/bin/python3 tools/export.py traces/models/gpt2.py:FUNC -o DIR
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class GPT2Block(nn.Module):
    def __init__(self, d_model, nhead, max_seq):
        super().__init__()
        self.nhead = nhead
        self.ln_1 = nn.LayerNorm(d_model)
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.attn_proj = nn.Linear(d_model, d_model)
        self.ln_2 = nn.LayerNorm(d_model)
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.mlp_proj = nn.Linear(4 * d_model, d_model)
        future = torch.triu(torch.ones(max_seq, max_seq, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", future)

    def attention(self, x):
        batch, seq, d_model = x.shape
        head_dim = d_model // self.nhead
        q, k, v = self.c_attn(x).split(d_model, dim=2)
        q = q.view(batch, seq, self.nhead, head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.nhead, head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.nhead, head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
        scores = scores.masked_fill(self.causal_mask[:seq, :seq], float("-inf"))
        probs = F.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, d_model)
        return self.attn_proj(context)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(h)


def _block(d_model, nhead, batch, seq):
    torch.manual_seed(0)
    model = GPT2Block(d_model, nhead, max_seq=seq)
    # LayerNorm starts as weight 1, bias 0; move it off the identity so a
    # compiler that drops the affine part is caught.
    with torch.no_grad():
        for norm in (model.ln_1, model.ln_2):
            norm.weight.add_(0.1 * torch.randn(d_model))
            norm.bias.add_(0.1 * torch.randn(d_model))
    x = torch.randn(batch, seq, d_model)
    return model, (x,)


def gpt2_small_block_tiny():
    return _block(64, 4, batch=2, seq=16)


def gpt2_block():
    return _block(768, 12, batch=1, seq=128)
