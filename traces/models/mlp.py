"""A two-layer MLP: Linear(64, 256) -> GELU -> Linear(256, 64), batch 8.

Export: /usr/bin/python3 tools/export.py traces/models/mlp.py:mlp -o traces/mlp
"""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_hidden, d_model)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def mlp():
    torch.manual_seed(0)
    model = MLP(64, 256)
    x = torch.randn(8, 64)
    return model, (x,)
