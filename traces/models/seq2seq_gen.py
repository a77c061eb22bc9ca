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
MELS, FRAMES, WHISPER_START, WHISPER_TOKENS = 16, 64, 1, 16


class Attention(nn.Module):
    """Multi-head attention of queries x over keys and values kv; mask
    [1 or T, 1 or S] broadcast over heads, True where attention is allowed
    (None: everywhere)."""

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
        if mask is not None:
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


class Whisper(nn.Module):
    """A tiny Whisper: log-mel features [1, MELS, FRAMES] through a conv1d
    stem (two GELU convolutions, the second of stride 2), sinusoidal
    positions and the encoder layers (no mask: the features are not padded);
    the decoder as Seq2Seq's, cross-attending to every frame."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(decoder_start_token_id=WHISPER_START)
        self.conv1 = nn.Conv1d(MELS, D_MODEL, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(D_MODEL, D_MODEL, kernel_size=3, stride=2, padding=1)
        self.register_buffer("enc_pos", sinusoids(FRAMES // 2, D_MODEL))
        self.shared = nn.Embedding(VOCAB, D_MODEL)
        self.dec_pos = nn.Embedding(CONTEXT, D_MODEL)
        self.encoder = nn.ModuleList([EncoderLayer() for _ in range(N_LAYER)])
        self.decoder = nn.ModuleList([DecoderLayer() for _ in range(N_LAYER)])
        self.encoder_layer_norm = nn.LayerNorm(D_MODEL)
        self.decoder_layer_norm = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.register_buffer("bias", torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 1.0 if name.startswith(("shared", "dec_pos", "lm_head")) else 0.2)

    def forward(self, input_features, decoder_input_ids):
        x = F.gelu(self.conv2(F.gelu(self.conv1(input_features)))).permute(0, 2, 1) + self.enc_pos
        for layer in self.encoder:
            x = layer(x, None)
        memory = self.encoder_layer_norm(x)
        t = decoder_input_ids.size(1)
        x = self.shared(decoder_input_ids) + self.dec_pos(torch.arange(t, device=decoder_input_ids.device))
        for layer in self.decoder:
            x = layer(x, self.bias[:t, :t], memory, None)
        return self.lm_head(self.decoder_layer_norm(x))


def sinusoids(length, channels):
    """Whisper's sinusoidal positions [length, channels]: sines then cosines."""
    inv = torch.exp(-math.log(10000) / (channels // 2 - 1) * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


def build():
    torch.manual_seed(0)
    return Seq2Seq().eval()


def seq2seq_gen():
    src = torch.tensor([SOURCE])
    return build(), (src, torch.ones_like(src), torch.tensor([[DECODER_START]]))


def build_whisper():
    torch.manual_seed(0)
    return Whisper().eval()


def features():
    """The example's log-mel features, f32[1, MELS, FRAMES]."""
    return torch.randn(1, MELS, FRAMES, generator=torch.Generator().manual_seed(1))


def whisper_gen():
    return build_whisper(), (features(), torch.tensor([[WHISPER_START]]))


@torch.no_grad()
def generate(model, source, n):
    """PyTorch's greedy generation: (tokens, gaps), gaps[i] the top-two
    logit gap of token i; source the ids, or a features tensor."""
    src = source if torch.is_tensor(source) else torch.tensor([source])
    srcs = (src,) if torch.is_tensor(source) else (src, torch.ones_like(src))
    ids = torch.tensor([[model.config.decoder_start_token_id]])
    tokens, gaps = [], []
    for _ in range(n):
        row = model(*srcs, ids)[0, -1]
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


def write_whisper(features_path, tokens_path):
    """The example's features as raw little-endian fp32 (spyre generate
    --source-file) and PyTorch's greedy tokens for them."""
    x = features()
    with open(features_path, "wb") as f:
        f.write(x.numpy().astype("<f4").tobytes())
    tokens, gaps = generate(build_whisper(), x, WHISPER_TOKENS)
    with open(tokens_path, "w") as f:
        f.write("tokens " + ",".join(map(str, tokens)) + "\n")
        f.write("gaps " + ",".join(f"{g:.6g}" for g in gaps) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "tokens":
        write_tokens(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "whisper":
        write_whisper(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: seq2seq_gen.py tokens FILE | whisper FEATURES_FILE TOKENS_FILE")
