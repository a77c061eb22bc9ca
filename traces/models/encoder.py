"""Transformer encoder layers.

encoder_small()          nn.TransformerEncoderLayer(64, 4, 128), input (2, 16, 64)
bert_base()              nn.TransformerEncoderLayer(768, 12, 3072), input (1, 128, 768)
bert_handwritten_small() BertLayer(64, 4, 128), x (2, 16, 64), mask (2, 1, 1, 16)
bert_handwritten()       BertLayer(768, 12, 3072), x (1, 128, 768), mask (1, 1, 1, 128)

All use dropout 0 and batch_first=True.  BertLayer is a BERT encoder layer
written out by hand: q/k/v projections, scaled dot-product attention with an
additive mask (0 to keep a key, -10000 to drop it, as BERT does), output
projection, residual + LayerNorm, GELU feed-forward, residual + LayerNorm.

Export: /usr/bin/python3 tools/export.py traces/models/encoder.py:FUNC -o DIR
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class BertLayer(nn.Module):
    def __init__(self, d_model, nhead, d_ff, eps=1e-12):
        super().__init__()
        self.nhead = nhead
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.attn_out = nn.Linear(d_model, d_model)
        self.attn_norm = nn.LayerNorm(d_model, eps=eps)
        self.ffn_in = nn.Linear(d_model, d_ff)
        self.ffn_out = nn.Linear(d_ff, d_model)
        self.ffn_norm = nn.LayerNorm(d_model, eps=eps)

    def forward(self, x, attn_mask):
        batch, seq, d_model = x.shape
        head_dim = d_model // self.nhead

        def heads(t):  # (batch, seq, d_model) -> (batch, nhead, seq, head_dim)
            return t.view(batch, seq, self.nhead, head_dim).transpose(1, 2)

        q = heads(self.query(x))
        k = heads(self.key(x))
        v = heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head_dim)
        probs = F.softmax(scores + attn_mask, dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, d_model)
        x = self.attn_norm(x + self.attn_out(context))
        return self.ffn_norm(x + self.ffn_out(F.gelu(self.ffn_in(x))))


def _jitter_norms(model):
    """LayerNorm starts as weight 1, bias 0; move it off the identity so a
    compiler that drops the affine part is caught."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))


def _padding_mask(batch, seq, padded):
    """Additive mask (batch, 1, 1, seq): the last `padded` keys of the last
    sequence of the batch are dropped."""
    mask = torch.zeros(batch, 1, 1, seq)
    mask[-1, :, :, seq - padded:] = -10000.0
    return mask


def _encoder(d_model, nhead, d_ff, batch, seq):
    torch.manual_seed(0)
    model = nn.TransformerEncoderLayer(d_model, nhead, d_ff, dropout=0.0, batch_first=True)
    _jitter_norms(model)
    src = torch.randn(batch, seq, d_model)
    return model, (src,)


def _bert(d_model, nhead, d_ff, batch, seq, padded):
    torch.manual_seed(0)
    model = BertLayer(d_model, nhead, d_ff)
    _jitter_norms(model)
    x = torch.randn(batch, seq, d_model)
    return model, (x, _padding_mask(batch, seq, padded))


def encoder_small():
    return _encoder(64, 4, 128, batch=2, seq=16)


def bert_base():
    return _encoder(768, 12, 3072, batch=1, seq=128)


def bert_handwritten_small():
    return _bert(64, 4, 128, batch=2, seq=16, padded=4)


def bert_handwritten():
    return _bert(768, 12, 3072, batch=1, seq=128, padded=16)
