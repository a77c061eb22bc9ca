"""A causal language model as users write it (nanoGPT / GPT-2 style), for
`spyre generate` without a KV cache (docs/serving.md, "Generating with a
plain causal LM"): forward(idx: LongTensor[1, T]) -> logits[1, T, VOCAB],
with token and learned position embeddings, hand-written attention under a
torch.tril mask, LayerNorm, a GELU MLP and an LM head tied to the token
embedding.  2 layers, hidden 64, 4 heads, vocabulary 256, context 48.

    /usr/bin/python3 tools/export.py traces/models/nanogpt_gen.py:nanogpt_gen -o DIR --generate 48

writes the step over the whole context into DIR/step (traces/export_all.sh:
traces/nanogpt_gen).

python3 traces/models/nanogpt_gen.py tokens FILE  writes PyTorch's own greedy
generation (the ids growing by one token a step, no padding, as
HF's generate(use_cache=False) runs it) for PROMPT: the NEW_TOKENS tokens and,
per token, the gap between the top two logits.
"""
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, N_EMBD, N_LAYER, N_HEAD, BLOCK_SIZE = 256, 64, 2, 4, 48
PROMPT = [1, 2, 3, 4, 5, 6, 7, 8]
NEW_TOKENS = 32


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
        self.c_proj = nn.Linear(N_EMBD, N_EMBD)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK_SIZE, BLOCK_SIZE)).view(1, 1, BLOCK_SIZE, BLOCK_SIZE))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(N_EMBD, dim=2)
        k = k.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        q = q.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        v = v.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(N_EMBD, 4 * N_EMBD)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * N_EMBD, N_EMBD)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(N_EMBD)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(N_EMBD)
        self.mlp = MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, N_EMBD)
        self.wpe = nn.Embedding(BLOCK_SIZE, N_EMBD)
        self.h = nn.ModuleList([Block() for _ in range(N_LAYER)])
        self.ln_f = nn.LayerNorm(N_EMBD)
        self.lm_head = nn.Linear(N_EMBD, VOCAB, bias=False)
        self.wte.weight = self.lm_head.weight  # tied
        # larger normal weights than nanoGPT's 0.02, so that each next token
        # is clear of the second (PROMPT's 32 top-two gaps are all above 0.15)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 1.0 if name.startswith(("wte", "wpe")) else 0.2)

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def build():
    torch.manual_seed(0)
    return GPT().eval()


def nanogpt_gen():
    return build(), (torch.tensor([PROMPT]),)


@torch.no_grad()
def generate(model, prompt, n):
    """PyTorch's greedy generation: (tokens, gaps), gaps[i] the top-two
    logit gap of token i."""
    ids = torch.tensor([prompt])
    tokens, gaps = [], []
    for _ in range(n):
        row = model(ids)[0, -1]
        top = torch.topk(row, 2).values
        tokens.append(int(row.argmax()))
        gaps.append(float(top[0] - top[1]))
        ids = torch.cat((ids, torch.tensor([[tokens[-1]]])), dim=1)
    return tokens, gaps


def write_tokens(path):
    tokens, gaps = generate(build(), PROMPT, NEW_TOKENS)
    with open(path, "w") as f:
        f.write(f"# PyTorch's greedy generation by traces/models/nanogpt_gen.py (torch {torch.__version__})\n")
        f.write("prompt " + ",".join(map(str, PROMPT)) + "\n")
        f.write("tokens " + ",".join(map(str, tokens)) + "\n")
        f.write("gaps " + ",".join(f"{g:.6g}" for g in gaps) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "tokens":
        sys.exit("usage: nanogpt_gen.py tokens FILE")
    write_tokens(sys.argv[2])
