"""Token embedding followed by LayerNorm: nn.Embedding(100, 64), int64 ids (2, 16).

Export: /usr/bin/python3 tools/export.py traces/models/embedding.py:embed_small -o traces/embed_small
"""
import torch
from torch import nn


class EmbedNorm(nn.Module):
    def __init__(self, vocab, d_model):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, ids):
        return self.norm(self.embed(ids))


def embed_small():
    torch.manual_seed(0)
    model = EmbedNorm(100, 64)
    # LayerNorm starts as weight 1, bias 0; move them off the identity so a
    # compiler that drops them is caught.
    with torch.no_grad():
        model.norm.weight.add_(0.1 * torch.randn(64))
        model.norm.bias.add_(0.1 * torch.randn(64))
    ids = torch.randint(0, 100, (2, 16), dtype=torch.int64)
    return model, (ids,)
