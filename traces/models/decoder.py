"""nn.TransformerDecoderLayer(64, 4, 128, dropout=0.0, batch_first=True):
tgt (2, 8, 64), memory (2, 16, 64), no masks.

Export: /usr/bin/python3 tools/export.py traces/models/decoder.py:decoder_small -o traces/decoder_small
"""
import torch
from torch import nn


def decoder_small():
    torch.manual_seed(0)
    model = nn.TransformerDecoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    # LayerNorm starts as weight 1, bias 0; move them off the identity so a
    # compiler that drops them is caught.
    with torch.no_grad():
        for norm in (model.norm1, model.norm2, model.norm3):
            norm.weight.add_(0.1 * torch.randn(64))
            norm.bias.add_(0.1 * torch.randn(64))
    tgt = torch.randn(2, 8, 64)
    memory = torch.randn(2, 16, 64)
    return model, (tgt, memory)
