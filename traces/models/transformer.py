"""The full nn.Transformer (encoder-decoder): d_model 64, 4 heads, 2 encoder and 2 decoder
layers, FFN 128, dropout 0, batch_first=True, with the masks users pass: a causal target
mask from nn.Transformer.generate_square_subsequent_mask (an additive float mask, -inf above
the diagonal) and a key padding mask (bool, True = padded) for the source and the memory.

Export: /usr/bin/python3 tools/export.py traces/models/transformer.py:transformer_small -o traces/transformer_small
"""
import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2,
                                    num_decoder_layers=2, dim_feedforward=128,
                                    dropout=0.0, batch_first=True)
        self.register_buffer("tgt_mask",
                             nn.Transformer.generate_square_subsequent_mask(8))

    def forward(self, src, tgt, src_key_padding_mask):
        return self.model(src, tgt, tgt_mask=self.tgt_mask,
                          src_key_padding_mask=src_key_padding_mask,
                          memory_key_padding_mask=src_key_padding_mask)


def transformer_small():
    torch.manual_seed(0)
    model = Seq2Seq()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn(64))
                m.bias.add_(0.1 * torch.randn(64))
    src = torch.randn(2, 16, 64)
    tgt = torch.randn(2, 8, 64)
    pad = torch.zeros(2, 16, dtype=torch.bool)
    pad[1, 12:] = True  # the second source's last 4 positions are padding
    return model, (src, tgt, pad)
