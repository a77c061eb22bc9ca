"""The position tables a user's transformer builds from arange, each a small module over
scores or q/k of a few heads: a T5 relative-position bucket, causal and sliding-window
masks, ALiBi, rotary tables applied by rotate_half, learned absolute positions.

Export: /usr/bin/python3 tools/export.py traces/models/positions.py:FUNC -o DIR
(FUNC one of relpos, causal, window, alibi, rotary, learned)
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


class RelPos(nn.Module):
    """T5's bidirectional=False bucket: exact below 8, log-spaced up to 15."""

    def forward(self, q):
        L = q.shape[1]
        rel = torch.arange(L)[None, :] - torch.arange(L)[:, None]
        n = -torch.min(rel, torch.zeros_like(rel))
        large = 8 + (torch.log(n.float().clamp(min=1) / 8) / math.log(128 / 8) * 8).long()
        large = torch.min(large, torch.full_like(large, 15))
        b = torch.where(n < 8, n, large)
        bias = F.embedding(b, torch.arange(16.0)[:, None] * 0.1).squeeze(-1)
        return (q @ q.transpose(1, 2) + bias).softmax(-1)


def relpos():
    torch.manual_seed(0)
    return RelPos(), (torch.randn(2, 20, 8),)


class Causal(nn.Module):
    def forward(self, q):
        L = q.shape[1]
        i = torch.arange(L)
        mask = i[None, :] > i[:, None]
        return (q @ q.transpose(1, 2)).masked_fill(mask, float("-inf")).softmax(-1)


def causal():
    torch.manual_seed(0)
    return Causal(), (torch.randn(2, 24, 16),)


class Window(nn.Module):
    """Causal sliding window of 4: key j seen from query i when i - 4 < j <= i."""

    def forward(self, q):
        L = q.shape[1]
        d = torch.arange(L)[:, None] - torch.arange(L)[None, :]
        keep = (d >= 0) & (d < 4)
        return (q @ q.transpose(1, 2)).masked_fill(~keep, float("-inf")).softmax(-1)


def window():
    torch.manual_seed(0)
    return Window(), (torch.randn(2, 24, 16),)


class Alibi(nn.Module):
    """ALiBi over 4 heads: slope 2^(-8 h / n) times the distance j - i."""

    def forward(self, q):
        H, L = q.shape[1], q.shape[2]
        slopes = torch.pow(2.0, -8.0 * torch.arange(1, H + 1) / H)
        dist = torch.arange(L)[None, :] - torch.arange(L)[:, None]
        bias = slopes[:, None, None] * dist[None]
        return (q @ q.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias).softmax(-1)


def alibi():
    torch.manual_seed(0)
    return Alibi(), (torch.randn(2, 4, 16, 8),)


def rotate_half(x):
    x1, x2 = x.chunk(2, -1)
    return torch.cat((-x2, x1), -1)


class Rotary(nn.Module):
    """Rotary embeddings (GPT-NeoX/Llama layout) on q and k, then the scores."""

    def forward(self, q, k):
        L, D = q.shape[2], q.shape[3]
        inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
        freqs = torch.outer(torch.arange(L).float(), inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        return q @ k.transpose(-1, -2)


def rotary():
    torch.manual_seed(0)
    return Rotary(), (torch.randn(1, 2, 16, 32), torch.randn(1, 2, 16, 32))


class Learned(nn.Module):
    """Learned absolute positions (GPT-2's wpe) added to token embeddings."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(50, 32)
        self.wpe = nn.Embedding(64, 32)
        self.ln = nn.LayerNorm(32)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])[None]
        return self.ln(self.wte(ids) + self.wpe(pos))


def learned():
    torch.manual_seed(0)
    return Learned(), (torch.randint(0, 50, (2, 16)),)
