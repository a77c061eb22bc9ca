"""Small models written the way a new user writes them: recurrent and convolutional
classifiers, a transformer encoder, generative blocks (UNet, diffusion ResBlock, DCGAN,
PixelCNN), recommendation and retrieval heads (DLRM, EmbeddingBag, CLIP), routing and
graph layers (mixture of experts, GNN, GNN pooling by scatter_reduce), a TCN, T5's
relative-position bias, a 3-D conv block, reduced-precision models (bf16, fp16, mixed),
sequence blocks (a Conformer block, Mamba's selective scan), and vision layers (max pooling
over NaN pixels, InstanceNorm with running statistics, nn.Unfold patches), language-model
and routing layers as Hugging Face writes them (finfo.min masks in a GQA layer and a T5 block, a
static KV cache step, a top-2 mixture of experts by F.one_hot), GraphSAGE (bincount degrees), a
weight-normed TCN and CenterNet's decode (integer // and %).  Seeded weights, eval mode, small
inputs: each exports and runs in seconds.  `bench/run usermodels` runs them all with
`spyre run DIR --check` (bench/bench_usermodels.py); the results are in
docs/conformance.md ("Whole models a user brings").  Export one with
  /usr/bin/python3 tools/export.py traces/models/usermodels.py:dlrm -o /tmp/dlrm
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def _perturb(model):
    """BatchNorm statistics and affine parameters off their defaults (a dropped one shows)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(n))
                m.running_var.copy_(1.0 + 0.2 * torch.rand(n))
                m.weight.add_(0.1 * torch.randn(n))
                m.bias.add_(0.1 * torch.randn(n))
    return model.eval()


class LSTMClassifier(nn.Module):
    """2-layer LSTM over a sequence, the last step's state to 10 classes."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(32, 64, num_layers=2, batch_first=True)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


def lstm():
    torch.manual_seed(0)
    return LSTMClassifier().eval(), (torch.randn(2, 16, 32),)


class BiGRUTagger(nn.Module):
    """Bidirectional GRU, a per-step softmax over 5 tags."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(32, 48, batch_first=True, bidirectional=True)
        self.head = nn.Linear(96, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y).softmax(-1)


def bigru():
    torch.manual_seed(0)
    return BiGRUTagger().eval(), (torch.randn(2, 12, 32),)


def audio():
    """Raw-waveform classifier: strided Conv1d, BatchNorm1d, ReLU, MaxPool1d, Conv1d, GELU,
    AdaptiveAvgPool1d, Linear; 2x1x4000 samples."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv1d(1, 16, 9, stride=4), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(4),
                      nn.Conv1d(16, 32, 5, padding=2), nn.GELU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                      nn.Linear(32, 8))
    return _perturb(m), (torch.randn(2, 1, 4000),)


def wav2vec2_fe(width=512, seconds=1.0):
    """wav2vec2/HuBERT's feature encoder: Conv1d(1, width, 10, stride 5), GroupNorm(width, width),
    GELU, then 4 Conv1d(width, width, 3, stride 2) and 2 Conv1d(width, width, 2, stride 2) with
    GELU, no bias; 1x16000 samples (1 s)."""
    torch.manual_seed(0)
    layers = [nn.Conv1d(1, width, 10, stride=5, bias=False), nn.GroupNorm(width, width), nn.GELU()]
    for k in (3, 3, 3, 3, 2, 2):
        layers += [nn.Conv1d(width, width, k, stride=2, bias=False), nn.GELU()]
    return _perturb(nn.Sequential(*layers)), (torch.randn(1, 1, int(16000 * seconds)),)


def wav2vec2_fe_small():
    """wav2vec2_fe with 64 channels over 0.25 s (4000 samples): the same layers, quick to simulate."""
    return wav2vec2_fe(64, 0.25)


def whisper_stem(frames=3000, width=384):
    """Whisper's encoder stem: Conv1d(80, width, 3, padding 1), GELU, Conv1d(width, width, 3,
    stride 2, padding 1), GELU over an 80 x frames log-mel spectrogram (Whisper-tiny: 384)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv1d(80, width, 3, padding=1), nn.GELU(), nn.Conv1d(width, width, 3, stride=2, padding=1),
                      nn.GELU())
    return _perturb(m), (torch.randn(1, 80, frames),)


def tenc():
    """nn.TransformerEncoder, 2 pre-norm layers (norm_first), d 64, 4 heads."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, norm_first=True)
    return nn.TransformerEncoder(layer, 2).eval(), (torch.randn(2, 10, 64),)


class TinyUNet(nn.Module):
    """One-level U-Net: conv, max pool, conv, ConvTranspose2d(k2, s2), cat skip, 1x1 head."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, padding=1)
        self.mid = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = F.relu(self.down(x))
        b = F.relu(self.mid(F.max_pool2d(a, 2)))
        return self.out(torch.cat([a, self.up(b)], 1))


def unet():
    torch.manual_seed(0)
    return TinyUNet().eval(), (torch.randn(1, 3, 32, 32),)


def timestep_embedding(t, dim):
    """Sinusoidal embedding of diffusion timesteps t [N] -> [N, dim]."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    a = t[:, None].float() * freqs[None]
    return torch.cat([a.sin(), a.cos()], -1)


class DiffusionResBlock(nn.Module):
    """A diffusion UNet's ResBlock: GroupNorm, SiLU, conv, plus the timestep embedding's
    projection, GroupNorm, SiLU, conv, residual add."""

    def __init__(self, c=16, tdim=32):
        super().__init__()
        self.tdim = tdim
        self.temb = nn.Sequential(nn.Linear(tdim, 64), nn.SiLU(), nn.Linear(64, c))
        self.n1, self.c1 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(4, c), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, t):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.temb(timestep_embedding(t, self.tdim))[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


def diffusion_block():
    torch.manual_seed(0)
    return DiffusionResBlock().eval(), (torch.randn(2, 16, 16, 16), torch.tensor([3.0, 500.0]))


def dcgan():
    """DCGAN generator: z 2x16x1x1 -> 2x3x16x16 by ConvTranspose2d, BatchNorm2d, ReLU, Tanh."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False), nn.Tanh())
    return _perturb(m), (torch.randn(2, 16, 1, 1),)


class DLRM(nn.Module):
    """DLRM: bottom MLP on dense features, one embedding per sparse feature, pairwise dot
    products (bmm, the strict lower triangle by tril_indices), top MLP, sigmoid."""

    def __init__(self, tables=3, dim=16):
        super().__init__()
        self.bot = nn.Sequential(nn.Linear(13, dim), nn.ReLU())
        self.emb = nn.ModuleList([nn.Embedding(50, dim) for _ in range(tables)])
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(dim + pairs, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())

    def forward(self, dense, sparse):
        x = self.bot(dense)
        feats = torch.stack([x] + [e(sparse[:, i]) for i, e in enumerate(self.emb)], 1)
        z = torch.bmm(feats, feats.transpose(1, 2))
        li, lj = torch.tril_indices(feats.shape[1], feats.shape[1], -1)
        return self.top(torch.cat([x, z[:, li, lj]], 1))


def dlrm():
    torch.manual_seed(0)
    return DLRM().eval(), (torch.randn(4, 13), torch.randint(0, 50, (4, 3)))


class BagClassifier(nn.Module):
    """fastText-style text classifier: EmbeddingBag(mean) over token ids, Linear."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(100, 16, mode="mean")
        self.head = nn.Linear(16, 3)

    def forward(self, ids):
        return self.head(self.bag(ids))


def embbag():
    torch.manual_seed(0)
    return BagClassifier().eval(), (torch.randint(0, 100, (4, 7)),)


class MoE(nn.Module):
    """Top-2 mixture of experts: a softmax router, topk, and each expert's output weighted
    by its routing weight where it was picked (any over the top-k)."""

    def __init__(self, d=32, experts=4):
        super().__init__()
        self.router = nn.Linear(d, experts)
        self.experts = nn.ModuleList([nn.Linear(d, d) for _ in range(experts)])

    def forward(self, x):
        top, idx = self.router(x).softmax(-1).topk(2, -1)
        out = torch.zeros_like(x)
        for k, expert in enumerate(self.experts):
            picked = idx == k
            w = picked.any(-1, keepdim=True).float() * (top * picked.float()).sum(-1, keepdim=True)
            out = out + w * expert(x)
        return out


def moe():
    torch.manual_seed(0)
    return MoE().eval(), (torch.randn(8, 32),)


class GraphConv(nn.Module):
    """Message passing over an edge list: messages Linear(x)[src] summed into dst by
    index_add, a residual ReLU."""

    def __init__(self):
        super().__init__()
        self.msg = nn.Linear(16, 16)

    def forward(self, x, src, dst):
        agg = torch.zeros_like(x).index_add(0, dst, self.msg(x)[src])
        return F.relu(agg + x)


def gnn():
    torch.manual_seed(0)
    return GraphConv().eval(), (torch.randn(10, 16), torch.randint(0, 10, (30,)),
                                torch.randint(0, 10, (30,)))


class TCN(nn.Module):
    """Temporal convolutional network: dilated causal Conv1d (dilation 1, 2, 4), each input
    left-padded by F.pad."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(8, 16, 3, dilation=1), nn.Conv1d(16, 16, 3, dilation=2),
                                    nn.Conv1d(16, 8, 3, dilation=4)])

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            x = conv(F.pad(x, (2 * conv.dilation[0], 0)))
            x = F.relu(x) if i < len(self.convs) - 1 else x
        return x


def tcn():
    torch.manual_seed(0)
    return TCN().eval(), (torch.randn(2, 8, 50),)


class MaskedConv2d(nn.Conv2d):
    """PixelCNN's type-A masked convolution: weights at and after the centre pixel zeroed."""

    def __init__(self, cin, cout, k):
        super().__init__(cin, cout, k, padding=k // 2)
        mask = torch.ones_like(self.weight)
        mask[:, :, k // 2, k // 2:] = 0
        mask[:, :, k // 2 + 1:] = 0
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


def pixelcnn():
    torch.manual_seed(0)
    return nn.Sequential(MaskedConv2d(3, 16, 5), nn.ReLU()).eval(), (torch.randn(1, 3, 16, 16),)


class ClipHead(nn.Module):
    """CLIP's contrastive head: both projections L2-normalized, logit scale exp, matmul."""

    def __init__(self):
        super().__init__()
        self.image, self.text = nn.Linear(32, 16), nn.Linear(24, 16)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, image, text):
        a = F.normalize(self.image(image), dim=-1)
        b = F.normalize(self.text(text), dim=-1)
        return self.logit_scale.exp() * a @ b.t()


def clip():
    torch.manual_seed(0)
    return ClipHead().eval(), (torch.randn(4, 32), torch.randn(5, 24))


class T5RelPosAttention(nn.Module):
    """Self-attention scores plus T5's bucketed relative-position bias (causal buckets:
    exact below 8, logarithmic to 16), a learned bias per bucket."""

    def __init__(self, buckets=16, exact=8, max_distance=128):
        super().__init__()
        self.buckets, self.exact, self.max_distance = buckets, exact, max_distance
        self.bias = nn.Embedding(buckets, 1)

    def bucket(self, n):
        large = self.exact + (torch.log(n.float().clamp(min=1) / self.exact)
                              / math.log(self.max_distance / self.exact)
                              * (self.buckets - self.exact)).long()
        large = torch.min(large, torch.full_like(large, self.buckets - 1))
        return torch.where(n < self.exact, n, large)

    def forward(self, q):
        pos = torch.arange(q.shape[1])
        rel = pos[None, :] - pos[:, None]
        n = -torch.min(rel, torch.zeros_like(rel))
        bias = self.bias(self.bucket(n)).squeeze(-1)
        return (q @ q.transpose(1, 2) + bias).softmax(-1)


def relpos():
    torch.manual_seed(0)
    return T5RelPosAttention().eval(), (torch.randn(2, 20, 8),)


class R3DBlock(nn.Module):
    """r3d_18-style: a 3x7x7 stem Conv3d (BN, ReLU), a residual 3x3x3 block, global pool."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(8), nn.ReLU())
        self.block = nn.Sequential(nn.Conv3d(8, 8, 3, padding=1, bias=False), nn.BatchNorm3d(8), nn.ReLU(),
                                   nn.Conv3d(8, 8, 3, padding=1, bias=False), nn.BatchNorm3d(8))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.block(x))
        return self.head(F.adaptive_avg_pool3d(x, 1).flatten(1))


def r3d():
    torch.manual_seed(0)
    return _perturb(R3DBlock()), (torch.randn(1, 3, 4, 16, 16),)


def bf16_cnn():
    """A small CNN with bfloat16 weights and input."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(8, 4)).to(torch.bfloat16)
    return m.eval(), (torch.randn(1, 3, 16, 16).to(torch.bfloat16),)


class MixedHead(nn.Module):
    """Mixed precision: an fp16 input computed in fp32 (Linear, softmax), the result fp16."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        return self.proj(x.float()).softmax(-1).half()


def mixed():
    torch.manual_seed(0)
    return MixedHead().eval(), (torch.randn(4, 16).half(),)


def half_mlp():
    """An MLP converted by model.half(), fp16 input (tools/export.py computes its expected
    outputs in fp32, then rounds them to fp16)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 8))
    return m.half().eval(), (torch.randn(4, 32).half(),)


def half_cnn():
    """A CNN converted by model.half() (Conv2d, BatchNorm2d, ReLU, pooling, Linear, softmax)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(8, 4), nn.Softmax(-1))
    return _perturb(m).half(), (torch.randn(1, 3, 16, 16).half(),)


class GraphPool(nn.Module):
    """Message passing over an edge list (2, E) with edge weights: messages from the
    (src, dst) features, their sum by scatter_add, the in-degree by index_add_, their
    max by scatter_reduce("amax", include_self=False); mean + max to a Linear, ReLU."""

    def __init__(self):
        super().__init__()
        self.msg = nn.Linear(32, 16)
        self.upd = nn.Linear(32, 16)

    def forward(self, x, edge_index, edge_w):
        src, dst = edge_index[0], edge_index[1]
        m = self.msg(torch.cat([x[src], x[dst]], -1)) * edge_w[:, None]
        at = dst[:, None].expand(-1, 16)
        agg = torch.zeros(x.shape[0], 16).scatter_add(0, at, m)
        deg = torch.zeros(x.shape[0]).index_add_(0, dst, torch.ones_like(edge_w))
        mx = torch.zeros(x.shape[0], 16).scatter_reduce(0, at, m, "amax", include_self=False)
        return F.relu(self.upd(torch.cat([x, agg / deg.clamp(min=1)[:, None] + mx], -1)))


def gnn_pool():
    torch.manual_seed(0)
    return GraphPool().eval(), (torch.randn(10, 16), torch.randint(0, 10, (2, 30)), torch.rand(30))


class ConformerBlock(nn.Module):
    """Conformer: half-step feed-forwards (SiLU), self-attention with a learned
    relative-position bias (table indexed by i - j), a conv module (pointwise Conv1d,
    GLU, depthwise Conv1d, BatchNorm1d, Swish, pointwise), final LayerNorm."""

    def __init__(self, d=32, heads=4, k=7, t=16):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(0.1), nn.Linear(4 * d, d))
        self.ln_att, self.heads = nn.LayerNorm(d), heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.pos = nn.Parameter(torch.randn(2 * t - 1, heads) * 0.1)
        self.ln_conv = nn.LayerNorm(d)
        self.pw1, self.pw2 = nn.Conv1d(d, 2 * d, 1), nn.Conv1d(d, d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ln = nn.LayerNorm(d)

    def attn(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(x).chunk(3, -1))
        idx = torch.arange(t)
        s = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        s = s + self.pos[idx[None, :] - idx[:, None] + t - 1].permute(2, 0, 1)
        return self.out((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        x = x + self.attn(self.ln_att(x))
        c = F.glu(self.pw1(self.ln_conv(x).transpose(1, 2)), dim=1)
        c = self.bn(self.dw(c))
        x = x + self.pw2(c * torch.sigmoid(c)).transpose(1, 2)
        return self.ln(x + 0.5 * self.ff2(x))


def conformer():
    torch.manual_seed(0)
    return _perturb(ConformerBlock()), (torch.randn(2, 16, 32),)


class SelectiveScan(nn.Module):
    """Mamba's selective SSM: in-projection, causal depthwise Conv1d, SiLU, input-dependent
    (dt, B, C) by split, softplus, A = -exp(A_log), discretized by einsum and exp, a
    Python loop over time for the scan, the skip D, gated by SiLU(z)."""

    def __init__(self, d=16, n=8):
        super().__init__()
        self.inp, self.outp = nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.conv = nn.Conv1d(d, d, 4, padding=3, groups=d)
        self.xproj, self.dtproj = nn.Linear(d, 1 + 2 * n), nn.Linear(1, d)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1).float()).repeat(d, 1))
        self.D = nn.Parameter(torch.ones(d))
        self.n = n

    def forward(self, x):
        b, l, d = x.shape
        x, z = self.inp(x).chunk(2, -1)
        x = F.silu(self.conv(x.transpose(1, 2))[..., :l].transpose(1, 2))
        dt, B, C = torch.split(self.xproj(x), [1, self.n, self.n], dim=-1)
        dt = F.softplus(self.dtproj(dt))
        dA = torch.exp(torch.einsum("bld,dn->bldn", dt, -torch.exp(self.A_log)))
        dBx = torch.einsum("bld,bln,bld->bldn", dt, B, x)
        h, ys = torch.zeros(b, d, self.n), []
        for i in range(l):
            h = dA[:, i] * h + dBx[:, i]
            ys.append(torch.einsum("bdn,bn->bd", h, C[:, i]))
        return self.outp((torch.stack(ys, 1) + x * self.D) * F.silu(z))


def mamba():
    torch.manual_seed(0)
    return SelectiveScan().eval(), (torch.randn(2, 8, 16),)


class NanPool(nn.Module):
    """adaptive_max_pool2d and max_pool2d over an image with NaN pixels: PyTorch's max is NaN."""

    def forward(self, x):
        return F.adaptive_max_pool2d(x, (2, 2)), F.max_pool2d(x, 2)


def nanpool():
    torch.manual_seed(0)
    x = torch.randn(1, 2, 6, 6)
    x[0, 0, 1, 1] = float("nan")
    x[0, 1, 4, 5] = float("nan")
    return NanPool().eval(), (x,)


def instnorm_stats():
    """Conv2d, InstanceNorm2d(affine, track_running_stats) in eval mode (its running statistics), ReLU."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True, track_running_stats=True),
                      nn.ReLU())
    with torch.no_grad():
        m[1].running_mean.copy_(0.1 * torch.randn(8))
        m[1].running_var.copy_(1.0 + 0.2 * torch.rand(8))
        m[1].weight.add_(0.1 * torch.randn(8))
    return m.eval(), (torch.randn(2, 3, 8, 8),)


class UnfoldPatches(nn.Module):
    """nn.Unfold(4, stride 4) patches of a 16x16 image, a Linear per patch (a ViT stem written by hand)."""

    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(4, stride=4)
        self.proj = nn.Linear(3 * 16, 32)

    def forward(self, x):
        return self.proj(self.unfold(x).transpose(1, 2))


def unfold_patches():
    torch.manual_seed(0)
    return UnfoldPatches().eval(), (torch.randn(2, 3, 16, 16),)


def _rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]), dim=-1)


class _RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class GQAFinfoMask(nn.Module):
    """A Qwen2/Llama layer as Hugging Face writes it: RMSNorm, rotary embedding, grouped-query
    attention by repeat_interleave, and a padding-plus-causal mask filled with
    torch.finfo(f32).min (one sequence left-padded: its first rows are masked whole)."""

    def __init__(self, vocab=100, d=64, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.emb = nn.Embedding(vocab, d)
        self.norm, self.final_norm = _RMSNorm(d), _RMSNorm(d)
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, kv_heads * self.hd), nn.Linear(d, kv_heads * self.hd)
        self.o, self.lm = nn.Linear(d, d, bias=False), nn.Linear(d, vocab, bias=False)
        self.register_buffer("inv_freq", 1.0 / (1e6 ** (torch.arange(0, self.hd, 2).float() / self.hd)))

    def forward(self, ids, attention_mask):
        B, T = ids.shape
        x = self.emb(ids)
        y = self.norm(x)
        q = self.q(y).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        f = torch.einsum("i,j->ij", torch.arange(T, dtype=torch.float32), self.inv_freq)
        cos, sin = torch.cat((f, f), -1).cos(), torch.cat((f, f), -1).sin()
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        k = torch.repeat_interleave(k, self.h // self.kvh, dim=1)
        v = torch.repeat_interleave(v, self.h // self.kvh, dim=1)
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None] & attention_mask[:, None, None, :].bool()
        bias = torch.zeros(B, 1, T, T).masked_fill(~keep, torch.finfo(torch.float32).min)
        w = (q @ k.transpose(-1, -2)) * self.hd ** -0.5 + bias
        a = (w.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        return self.lm(self.final_norm(x + self.o(a)))


def gqa_finfo():
    torch.manual_seed(0)
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0
    return GQAFinfoMask().eval(), (torch.randint(0, 100, (2, 9)), mask)


class T5EncoderBlock(nn.Module):
    """A T5 encoder block as Hugging Face writes it: the bidirectional relative-position bucket
    (log of the distance cast to int64, no clamp: distance 0 takes log 0), the padding mask
    as (1 - mask) * finfo(f32).min, RMS layer norms, unscaled attention, a ReLU FFN."""

    def __init__(self, d=64, heads=4, buckets=32, max_distance=128):
        super().__init__()
        self.h, self.hd, self.buckets, self.max_distance = heads, d // heads, buckets, max_distance
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.rel = nn.Embedding(buckets, heads)
        self.n1, self.n2 = _RMSNorm(d), _RMSNorm(d)
        self.wi, self.wo = nn.Linear(d, 128, bias=False), nn.Linear(128, d, bias=False)

    def bucket(self, rel):
        nb = self.buckets // 2
        ret = (rel > 0).to(torch.long) * nb
        n = torch.abs(rel)
        exact = nb // 2
        large = exact + (torch.log(n.float() / exact) / math.log(self.max_distance / exact)
                         * (nb - exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, nb - 1))
        return ret + torch.where(n < exact, n, large)

    def forward(self, x, mask):
        B, T, C = x.shape
        pos = torch.arange(T, dtype=torch.long)
        bias = self.rel(self.bucket(pos[None, :] - pos[:, None])).permute(2, 0, 1).unsqueeze(0)
        bias = bias + (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        y = self.n1(x)
        heads = lambda t: t.view(B, T, self.h, self.hd).transpose(1, 2)  # noqa: E731
        s = heads(self.q(y)) @ heads(self.k(y)).transpose(3, 2) + bias
        a = (F.softmax(s.float(), -1).type_as(s) @ heads(self.v(y))).transpose(1, 2).reshape(B, T, C)
        x = x + self.o(a)
        return x + self.wo(F.relu(self.wi(self.n2(x))))


def t5_block():
    torch.manual_seed(0)
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[0, 9:] = 0
    return T5EncoderBlock().eval(), (torch.randn(2, 12, 64), mask)


class StaticCacheStep(nn.Module):
    """A decode step over preallocated caches, returned updated: K written by index_copy_ at the
    position, V by slice assignment; attention over the positions written so far."""

    def __init__(self, d=64, heads=4, length=16):
        super().__init__()
        self.h, self.hd, self.length = heads, d // heads, length
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, cache_k, cache_v, pos):
        B = x.shape[0]
        q, k, v = (f(x).view(B, 1, self.h, self.hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        ck, cv = cache_k.clone(), cache_v.clone()
        ck.index_copy_(2, pos, k)
        cv[:, :, 5:6] = v
        seen = torch.arange(self.length)[None, None, None, :] <= pos.view(1, 1, 1, 1)
        w = ((q @ ck.transpose(-1, -2)) / math.sqrt(self.hd)).masked_fill(~seen, float("-inf"))
        return self.o((w.softmax(-1) @ cv).transpose(1, 2).reshape(B, 1, -1)), ck, cv


def kv_static():
    torch.manual_seed(0)
    return StaticCacheStep().eval(), (torch.randn(2, 1, 64), torch.randn(2, 4, 16, 16), torch.randn(2, 4, 16, 16),
                                      torch.tensor([5]))


class Top2MoE(nn.Module):
    """A GShard-style top-2 mixture of experts: topk of the router, softmax over the two,
    F.one_hot dispatch and combine by einsum, SiLU expert MLPs as batched weights."""

    def __init__(self, d=32, experts=4, hidden=64):
        super().__init__()
        self.e = experts
        self.gate = nn.Linear(d, experts, bias=False)
        self.w1 = nn.Parameter(0.1 * torch.randn(experts, d, hidden))
        self.w2 = nn.Parameter(0.1 * torch.randn(experts, hidden, d))

    def forward(self, x):
        B, T, D = x.shape
        xt = x.reshape(-1, D)
        top, idx = torch.topk(self.gate(xt), 2, dim=-1)
        combine = torch.einsum("nk,nke->ne", F.softmax(top, -1), F.one_hot(idx, self.e).to(x.dtype))
        xe = torch.einsum("ne,nd->end", (combine > 0).to(x.dtype), xt)
        ye = torch.einsum("enh,ehd->end", F.silu(torch.einsum("end,edh->enh", xe, self.w1)), self.w2)
        return torch.einsum("ne,end->nd", combine, ye).view(B, T, D)


def moe_top2():
    torch.manual_seed(0)
    return Top2MoE().eval(), (torch.randn(2, 8, 32),)


class SAGEConv(nn.Module):
    """GraphSAGE mean aggregation over an edge list: degree by torch.bincount, neighbours
    summed by index_add_, a Linear of self and of the mean, ReLU, F.normalize."""

    def __init__(self, i=16, o=32):
        super().__init__()
        self.self_lin, self.nbr_lin = nn.Linear(i, o), nn.Linear(i, o, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        deg = torch.bincount(dst, minlength=x.shape[0]).clamp(min=1).float()
        agg = torch.zeros_like(x).index_add_(0, dst, x[src]) / deg[:, None]
        return F.normalize(F.relu(self.self_lin(x) + self.nbr_lin(agg)), dim=-1)


def sage():
    torch.manual_seed(0)
    return SAGEConv().eval(), (torch.randn(12, 16), torch.randint(0, 12, (2, 40)))


class WeightNormTCN(nn.Module):
    """TCN residual blocks as in locuslab/TCN: causal dilated Conv1d (1, 2, 4) under
    nn.utils.weight_norm, padding chomped off the right, ReLU, dropout, a 1x1 downsample."""

    class Block(nn.Module):
        def __init__(self, i, o, k, d):
            super().__init__()
            self.p = (k - 1) * d
            wn = nn.utils.weight_norm
            self.c1 = wn(nn.Conv1d(i, o, k, padding=self.p, dilation=d))
            self.c2 = wn(nn.Conv1d(o, o, k, padding=self.p, dilation=d))
            self.drop = nn.Dropout(0.2)
            self.down = nn.Conv1d(i, o, 1) if i != o else None

        def forward(self, x):
            y = self.drop(F.relu(self.c1(x)[:, :, :-self.p]))
            y = self.drop(F.relu(self.c2(y)[:, :, :-self.p]))
            return F.relu(y + (x if self.down is None else self.down(x)))

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(self.Block(4, 16, 3, 1), self.Block(16, 16, 3, 2), self.Block(16, 16, 3, 4))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.blocks(x)[:, :, -1])


def tcn_weightnorm():
    torch.manual_seed(0)
    return WeightNormTCN().eval(), (torch.randn(2, 4, 40),)


class CenterNetDecode(nn.Module):
    """CenterNet head and decode: sigmoid heatmap, 3x3 max-pool peak mask, topk over the
    flattened heatmap, class and pixel by // and %, the peaks' positions plus their offsets
    (the offset map picked by one-hot: a gather at computed indices checks only vacuously)."""

    def __init__(self, classes=3, k=10):
        super().__init__()
        self.k = k
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU())
        self.hm = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, classes, 1))
        self.reg = nn.Conv2d(32, 2, 1)
        with torch.no_grad():
            self.hm[-1].bias.fill_(-2.19)

    def forward(self, x):
        f = self.backbone(x)
        hm, reg = self.hm(f).sigmoid(), self.reg(f)
        b, _, h, w = hm.shape
        hm = hm * (F.max_pool2d(hm, 3, 1, 1) == hm).float()
        scores, inds = hm.view(b, -1).topk(self.k)
        cls, pix = inds // (h * w), inds % (h * w)
        ys, xs = (pix // w).float(), (pix % w).float()
        pick = (pix[:, :, None] == torch.arange(h * w)).float()           # (b, k, h w)
        off = pick @ reg.view(b, 2, -1).transpose(1, 2)                   # (b, k, 2)
        return scores, cls, torch.stack([xs + off[..., 0], ys + off[..., 1]], -1)


def centernet():
    torch.manual_seed(0)
    return _perturb(CenterNetDecode()), (torch.randn(2, 3, 32, 32),)
