"""An encoder-decoder model as users write it (BART / Marian style), for
`spyre generate` with --source (docs/serving.md, "Generating with an
encoder-decoder model"): forward(input_ids [1, S], attention_mask [1, S],
decoder_input_ids [1, T]) -> logits [1, T, VOCAB].  A shared token
embedding and learned positions; 2 encoder layers (self-attention over the
source, its padding masked out, then a GELU feed-forward, each with a
LayerNorm before it and a residual around it: pre-LN, as mBART's) and 2
decoder layers (self-attention under a torch.tril mask, cross-attention
over the encoder's output, the feed-forward, pre-LN too), a final
LayerNorm after each stack; the LM head tied to the embedding.  Hidden 64, 4 heads, feed-forward 128,
vocabulary 256, source 16, decoder context 32; decoder start token 2 (as
BART's config.decoder_start_token_id).

    /usr/bin/python3 tools/export.py traces/models/seq2seq_gen.py:seq2seq_gen -o DIR --generate 32 --source-len 16

writes the step over the source and the whole decoder context into
DIR/seq2seq (traces/export_all.sh: traces/seq2seq_gen).

python3 traces/models/seq2seq_gen.py tokens FILE  writes PyTorch's own greedy
generation for SOURCE (unpadded, no mask: the decoder ids growing by one
token a step from the start token, as HF's generate(use_cache=False) runs
it): the NEW_TOKENS tokens and, per token, the gap between the top two
logits.
"""
import math
import sys
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, N_HEAD, FFN, N_LAYER, SOURCE_LEN, CONTEXT = 256, 64, 4, 128, 2, 16, 32
DECODER_START = 2
SOURCE = [165, 236, 25, 234, 244, 245, 94, 96, 248, 179]
NEW_TOKENS = 32


class Attention(nn.Module):
    """Multi-head attention of queries x over keys and values kv; mask
    [1 or T, 1 or S] broadcast over heads, True where attention is allowed."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D_MODEL, D_MODEL)
        self.k_proj = nn.Linear(D_MODEL, D_MODEL)
        self.v_proj = nn.Linear(D_MODEL, D_MODEL)
        self.out_proj = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x, kv, mask):
        B, T, C = x.size()
        S = kv.size(1)
        q = self.q_proj(x).view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        k = self.k_proj(kv).view(B, S, N_HEAD, C // N_HEAD).transpose(1, 2)
        v = self.v_proj(kv).view(B, S, N_HEAD, C // N_HEAD).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // N_HEAD))
        att = att.masked_fill(~mask, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.out_proj(y)


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D_MODEL, FFN)
        self.fc2 = nn.Linear(FFN, D_MODEL)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.self_attn_layer_norm = nn.LayerNorm(D_MODEL)
        self.ffn = FeedForward()
        self.final_layer_norm = nn.LayerNorm(D_MODEL)

    def forward(self, x, src_mask):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, src_mask)
        return x + self.ffn(self.final_layer_norm(x))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.self_attn_layer_norm = nn.LayerNorm(D_MODEL)
        self.encoder_attn = Attention()
        self.encoder_attn_layer_norm = nn.LayerNorm(D_MODEL)
        self.ffn = FeedForward()
        self.final_layer_norm = nn.LayerNorm(D_MODEL)

    def forward(self, x, causal, memory, src_mask):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, causal)
        x = x + self.encoder_attn(self.encoder_attn_layer_norm(x), memory, src_mask)
        return x + self.ffn(self.final_layer_norm(x))


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(decoder_start_token_id=DECODER_START)
        self.shared = nn.Embedding(VOCAB, D_MODEL)
        self.enc_pos = nn.Embedding(SOURCE_LEN, D_MODEL)
        self.dec_pos = nn.Embedding(CONTEXT, D_MODEL)
        self.encoder = nn.ModuleList([EncoderLayer() for _ in range(N_LAYER)])
        self.decoder = nn.ModuleList([DecoderLayer() for _ in range(N_LAYER)])
        self.encoder_layer_norm = nn.LayerNorm(D_MODEL)
        self.decoder_layer_norm = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.register_buffer("bias", torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))
        # larger normal weights than BART's 0.02, so that each next token is
        # clear of the second (SOURCE's top-two gaps: see expected_tokens.txt)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 1.0 if name.startswith(("shared", "enc_pos", "dec_pos")) else 0.2)

    def encode(self, input_ids, attention_mask):
        s = input_ids.size(1)
        src_mask = (attention_mask != 0)[:, None, None, :]
        x = self.shared(input_ids) + self.enc_pos(torch.arange(s, device=input_ids.device))
        for layer in self.encoder:
            x = layer(x, src_mask)
        return self.encoder_layer_norm(x), src_mask

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        memory, src_mask = self.encode(input_ids, attention_mask)
        t = decoder_input_ids.size(1)
        x = self.shared(decoder_input_ids) + self.dec_pos(torch.arange(t, device=decoder_input_ids.device))
        causal = self.bias[:t, :t]
        for layer in self.decoder:
            x = layer(x, causal, memory, src_mask)
        return self.lm_head(self.decoder_layer_norm(x))


def build():
    torch.manual_seed(0)
    return Seq2Seq().eval()


def seq2seq_gen():
    src = torch.tensor([SOURCE])
    return build(), (src, torch.ones_like(src), torch.tensor([[DECODER_START]]))


@torch.no_grad()
def generate(model, source, n):
    """PyTorch's greedy generation: (tokens, gaps), gaps[i] the top-two
    logit gap of token i."""
    src = torch.tensor([source])
    ids = torch.tensor([[model.config.decoder_start_token_id]])
    tokens, gaps = [], []
    for _ in range(n):
        row = model(src, torch.ones_like(src), ids)[0, -1]
        top = torch.topk(row, 2).values
        tokens.append(int(row.argmax()))
        gaps.append(float(top[0] - top[1]))
        ids = torch.cat((ids, torch.tensor([[tokens[-1]]])), dim=1)
    return tokens, gaps


def write_tokens(path):
    tokens, gaps = generate(build(), SOURCE, NEW_TOKENS)
    with open(path, "w") as f:
        f.write(f"# PyTorch's greedy generation by traces/models/seq2seq_gen.py (torch {torch.__version__})\n")
        f.write("source " + ",".join(map(str, SOURCE)) + "\n")
        f.write(f"decoder_start {DECODER_START}\n")
        f.write("tokens " + ",".join(map(str, tokens)) + "\n")
        f.write("gaps " + ",".join(f"{g:.6g}" for g in gaps) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "tokens":
        sys.exit("usage: seq2seq_gen.py tokens FILE")
    write_tokens(sys.argv[2])
