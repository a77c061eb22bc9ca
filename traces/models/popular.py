"""Architectures from popular repositories, written small the way their authors write them
(Whisper's encoder block, a Stable-Diffusion mid block, MobileViT, Swin's shifted windows,
ConvNeXt, Inception, squeeze-excitation, PointNet, a VAE, a Bahdanau attention decoder step)
and torchvision models at small inputs (segmentation, video, ResNeXt, Wide ResNet, RegNet,
EfficientNetV2, MobileNetV3, ViT with patch 8).  Seeded weights, eval mode.  `bench/run
usermodels` runs them with the models of usermodels.py (bench/bench_usermodels.py).  Export
one with
  /usr/bin/python3 tools/export.py traces/models/popular.py:swin -o /tmp/swin
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

from usermodels import _perturb, timestep_embedding


def _sinusoids(length, channels):
    """Whisper's sinusoidal position table."""
    inc = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class WhisperBlock(nn.Module):
    """Whisper's audio encoder: two Conv1d + GELU stem (the second strided), sinusoidal
    positions, one pre-norm attention block with an MLP, a final LayerNorm."""

    def __init__(self, n_mels=16, d=64, heads=4, frames=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("pos", _sinusoids(frames // 2, d))
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln_post = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        x = x + self.pos
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.ln_post(x)


def whisper():
    torch.manual_seed(0)
    return WhisperBlock().eval(), (torch.randn(1, 16, 32),)


class SDResBlock(nn.Module):
    def __init__(self, c, tdim):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)
        self.t = nn.Linear(tdim, c)
        self.n2, self.c2 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(F.silu(temb))[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class SDAttention(nn.Module):
    """diffusers' AttentionBlock: GroupNorm, q/k/v over the H*W tokens, one head."""

    def __init__(self, c):
        super().__init__()
        self.norm = nn.GroupNorm(8, c)
        self.q, self.k, self.v, self.o = (nn.Linear(c, c) for _ in range(4))

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.norm(x).view(b, c, h * w).transpose(1, 2)
        a = torch.softmax(self.q(t) @ self.k(t).transpose(1, 2) / math.sqrt(c), dim=-1)
        return x + self.o(a @ self.v(t)).transpose(1, 2).reshape(b, c, h, w)


class SDMidBlock(nn.Module):
    """Stable Diffusion's UNet mid block: ResBlock, self-attention, ResBlock, with the
    timestep's sinusoidal embedding through a Linear-SiLU-Linear MLP."""

    def __init__(self, c=32, tdim=64):
        super().__init__()
        self.tmlp = nn.Sequential(nn.Linear(32, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.r1, self.attn, self.r2 = SDResBlock(c, tdim), SDAttention(c), SDResBlock(c, tdim)

    def forward(self, x, t):
        temb = self.tmlp(timestep_embedding(t, 32))
        return self.r2(self.attn(self.r1(x, temb)), temb)


def sd_mid():
    torch.manual_seed(0)
    return SDMidBlock().eval(), (torch.randn(2, 32, 8, 8), torch.tensor([10.0, 500.0]))


class MobileViTBlock(nn.Module):
    """MobileViT: local 3x3 + 1x1 conv, unfold into 2x2 patches by reshape/permute, a
    transformer layer over the patches, fold back, 1x1 conv, concat with the input, 3x3 fuse."""

    def __init__(self, c=16, d=32, p=2):
        super().__init__()
        self.p = p
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU(),
                                   nn.Conv2d(c, d, 1, bias=False))
        self.tf = nn.TransformerEncoderLayer(d, 2, 2 * d, batch_first=True, norm_first=True,
                                             activation="gelu")
        self.proj = nn.Sequential(nn.Conv2d(d, c, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.fuse = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU())

    def forward(self, x):
        y = self.local(x)
        b, d, h, w = y.shape
        p = self.p
        y = y.reshape(b, d, h // p, p, w // p, p).permute(0, 3, 5, 2, 4, 1)
        y = y.reshape(b * p * p, (h // p) * (w // p), d)
        y = self.tf(y)
        y = y.reshape(b, p, p, h // p, w // p, d).permute(0, 5, 3, 1, 4, 2).reshape(b, d, h, w)
        return self.fuse(torch.cat([x, self.proj(y)], 1))


def mobilevit():
    torch.manual_seed(0)
    return _perturb(MobileViTBlock()), (torch.randn(1, 16, 8, 8),)


class SwinWindowAttention(nn.Module):
    """Swin Transformer block with shifted windows: roll by -ws//2, partition into ws x ws
    windows, attention with a relative position bias gathered from a learned table, the
    shift mask, reverse partition, roll back; pre-norm MLP."""

    def __init__(self, d=32, heads=2, ws=4, res=8):
        super().__init__()
        self.d, self.heads, self.ws, self.shift = d, heads, ws, ws // 2
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.table = nn.Parameter(0.02 * torch.randn((2 * ws - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("rel_index", rel[:, :, 0] * (2 * ws - 1) + rel[:, :, 1])
        img = torch.zeros(1, res, res, 1)
        cnt = 0
        for hs in (slice(0, -ws), slice(-ws, -self.shift), slice(-self.shift, None)):
            for wsl in (slice(0, -ws), slice(-ws, -self.shift), slice(-self.shift, None)):
                img[:, hs, wsl, :] = cnt
                cnt += 1
        win = self.partition(img).view(-1, ws * ws)
        mask = win[:, None, :] - win[:, :, None]
        self.register_buffer("mask", mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0))
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def partition(self, x):
        b, h, w, c = x.shape
        ws = self.ws
        return x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)

    def forward(self, x):
        b, h, w, c = x.shape
        ws, nh = self.ws, self.heads
        s = torch.roll(self.norm1(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = self.partition(s)
        bw, n, _ = win.shape
        qkv = self.qkv(win).reshape(bw, n, 3, nh, c // nh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = (q * (c // nh) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.rel_index.view(-1)].view(n, n, nh).permute(2, 0, 1)
        a = a + bias.unsqueeze(0)
        nw = self.mask.shape[0]
        a = a.view(bw // nw, nw, nh, n, n) + self.mask.unsqueeze(1).unsqueeze(0)
        a = a.view(-1, nh, n, n).softmax(-1)
        o = self.proj((a @ v).transpose(1, 2).reshape(bw, n, c))
        o = o.view(b, h // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        x = x + torch.roll(o, shifts=(self.shift, self.shift), dims=(1, 2))
        return x + self.mlp(self.norm2(x))


def swin():
    torch.manual_seed(0)
    return SwinWindowAttention().eval(), (torch.randn(1, 8, 8, 32),)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt: depthwise 7x7, permute to channels-last, LayerNorm, Linear 4x, GELU, Linear,
    layer scale gamma, permute back, residual."""

    def __init__(self, c=32):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(1e-1 * torch.rand(c) + 0.5)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pw2(F.gelu(self.pw1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


def convnext():
    torch.manual_seed(0)
    return ConvNeXtBlock().eval(), (torch.randn(1, 32, 14, 14),)


class InceptionBlock(nn.Module):
    """GoogLeNet's Inception module: 1x1, 1x1-3x3, 1x1-5x5 and 3x3 avg pool (stride 1)-1x1
    branches, each Conv-BN-ReLU, concatenated over channels."""

    def __init__(self, c=16):
        super().__init__()

        def cbr(i, o, k):
            return nn.Sequential(nn.Conv2d(i, o, k, padding=k // 2, bias=False), nn.BatchNorm2d(o), nn.ReLU())
        self.b1 = cbr(c, 8, 1)
        self.b2 = nn.Sequential(cbr(c, 8, 1), cbr(8, 12, 3))
        self.b3 = nn.Sequential(cbr(c, 4, 1), cbr(4, 6, 5))
        self.b4 = nn.Sequential(nn.AvgPool2d(3, stride=1, padding=1), cbr(c, 6, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


def inception():
    torch.manual_seed(0)
    return _perturb(InceptionBlock()), (torch.randn(1, 16, 12, 12),)


class SEBlock(nn.Module):
    """Squeeze-excitation on a conv's output: global mean, FC-ReLU-FC-sigmoid, rescale."""

    def __init__(self, c=32, r=4):
        super().__init__()
        self.conv = nn.Conv2d(16, c, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(c, c // r), nn.Linear(c // r, c)

    def forward(self, x):
        y = F.relu(self.conv(x))
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(y.mean((2, 3))))))
        return y * s[:, :, None, None]


def se():
    torch.manual_seed(0)
    return SEBlock().eval(), (torch.randn(2, 16, 10, 10),)


class PointNet(nn.Module):
    """PointNet classifier: shared MLP as Conv1d 1x1 + BN + ReLU over points, max over points,
    FC head."""

    def __init__(self):
        super().__init__()
        self.feat = nn.Sequential(nn.Conv1d(3, 32, 1), nn.BatchNorm1d(32), nn.ReLU(),
                                  nn.Conv1d(32, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
                                  nn.Conv1d(64, 128, 1))
        self.head = nn.Sequential(nn.Linear(128, 32), nn.ReLU(), nn.Linear(32, 5))

    def forward(self, pts):
        return self.head(torch.max(self.feat(pts), 2)[0])


def pointnet():
    torch.manual_seed(0)
    return _perturb(PointNet()), (torch.randn(2, 3, 256),)


class VAE(nn.Module):
    """A VAE's forward: encoder to mu and logvar, z = mu + exp(logvar / 2) * eps (eps given),
    decoder with sigmoid, the KL term."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 48), nn.ReLU())
        self.mu, self.logvar = nn.Linear(48, 8), nn.Linear(48, 8)
        self.dec = nn.Sequential(nn.Linear(8, 48), nn.ReLU(), nn.Linear(48, 64))

    def forward(self, x, eps):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.exp(0.5 * logvar) * eps
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1).mean()
        return torch.sigmoid(self.dec(z)), kl


def vae():
    torch.manual_seed(0)
    return VAE().eval(), (torch.randn(4, 64), torch.randn(4, 8))


class BahdanauStep(nn.Module):
    """One seq2seq decoder step with additive attention: score = v . tanh(W h + U s),
    softmax over encoder states, context, a GRUCell, output projection."""

    def __init__(self, enc=32, dec=32, att=24, emb=16, vocab=20):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.W, self.U = nn.Linear(dec, att, bias=False), nn.Linear(enc, att)
        self.v = nn.Linear(att, 1, bias=False)
        self.cell = nn.GRUCell(emb + enc, dec)
        self.out = nn.Linear(dec + enc, vocab)

    def forward(self, tok, hidden, enc_states):
        score = self.v(torch.tanh(self.W(hidden).unsqueeze(1) + self.U(enc_states))).squeeze(2)
        alpha = F.softmax(score, dim=1)
        ctx = torch.bmm(alpha.unsqueeze(1), enc_states).squeeze(1)
        h = self.cell(torch.cat([self.emb(tok), ctx], 1), hidden)
        return F.log_softmax(self.out(torch.cat([h, ctx], 1)), -1), h, alpha


def bahdanau():
    torch.manual_seed(0)
    return BahdanauStep().eval(), (torch.tensor([3, 7]), torch.randn(2, 32), torch.randn(2, 9, 32))


def _tv(name, shape, **kw):
    import torchvision
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None, **kw)
    return _perturb(m), (torch.randn(*shape),)


def deeplab():
    from torchvision.models import segmentation
    torch.manual_seed(0)
    m = segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=5,
                                                 aux_loss=False)
    return _perturb(_Out(m)), (torch.randn(1, 3, 64, 64),)


def fcn():
    from torchvision.models import segmentation
    torch.manual_seed(0)
    m = segmentation.fcn_resnet50(weights=None, weights_backbone=None, num_classes=5, aux_loss=False)
    return _perturb(_Out(m)), (torch.randn(1, 3, 64, 64),)


class _Out(nn.Module):
    """Segmentation models return a dict; the "out" entry."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def _video(name):
    from torchvision.models import video
    torch.manual_seed(0)
    m = getattr(video, name)(weights=None, num_classes=10)
    return _perturb(m), (torch.randn(1, 3, 4, 32, 32),)


def mc3():
    return _video("mc3_18")


def r2plus1d():
    return _video("r2plus1d_18")


def resnext():
    return _tv("resnext50_32x4d", (1, 3, 64, 64), num_classes=10)


def wide_resnet():
    return _tv("wide_resnet50_2", (1, 3, 64, 64), num_classes=10)


def regnet():
    return _tv("regnet_y_400mf", (1, 3, 64, 64), num_classes=10)


def efficientnet_v2():
    return _tv("efficientnet_v2_s", (1, 3, 64, 64), num_classes=10)


def mobilenet_v3():
    return _tv("mobilenet_v3_large", (1, 3, 64, 64), num_classes=10)


def vit_p8():
    """A small torchvision VisionTransformer: patch 8 on 32x32 (16 tokens), 2 layers, d 64."""
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                          mlp_dim=128, num_classes=10)
    nn.init.normal_(m.heads.head.weight, std=0.1)  # torchvision starts it at zero: every output 0
    return m.eval(), (torch.randn(1, 3, 32, 32),)
