"""Upsampling models a user brings: transposed convolutions (1-D and 2-D), skip concats,
pixel_shuffle and torchvision's FCN head. Seeded weights, eval mode, small inputs; the
results of `spyre run --check` on each are in docs/conformance.md ("Whole models a user
brings"). Export one with
  /usr/bin/python3 tools/export.py traces/models/upsampling.py:dcgan -o /tmp/dcgan
"""
import torch
from torch import nn
import torch.nn.functional as F

from usermodels import _perturb  # BatchNorm statistics off their defaults


def _up(cin, cout):
    return [nn.ConvTranspose2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(True)]


def dcgan():
    """DCGAN generator: z [2, 32, 1, 1] -> [2, 3, 32, 32]; 4x4 stride-2 pad-1 chain."""
    torch.manual_seed(0)
    g = nn.Sequential(nn.ConvTranspose2d(32, 64, 4, 1, 0, bias=False), nn.BatchNorm2d(64),
                      nn.ReLU(True), *_up(64, 32), *_up(32, 16),
                      nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False), nn.Tanh())
    return _perturb(g), (torch.randn(2, 32, 1, 1),)


class FCNHead(nn.Module):
    """FCN-8s-style skip head: scores at 1/32, 1/16, 1/8, 2x up by ConvTranspose2d(4, s2),
    then 8x by ConvTranspose2d(16, s8, p4); FCN-32s's 32x by ConvTranspose2d(64, s32, p16)
    would be out of reach, so also a 16x one of kernel 32, stride 16, padding 8."""

    def __init__(self, nc=5):
        super().__init__()
        self.s32, self.s16, self.s8 = nn.Conv2d(64, nc, 1), nn.Conv2d(32, nc, 1), nn.Conv2d(16, nc, 1)
        self.up2a = nn.ConvTranspose2d(nc, nc, 4, 2, 1, bias=False)
        self.up2b = nn.ConvTranspose2d(nc, nc, 4, 2, 1, bias=False)
        self.up8 = nn.ConvTranspose2d(nc, nc, 16, 8, 4, bias=False)
        self.up16 = nn.ConvTranspose2d(nc, nc, 32, 16, 8, bias=False)

    def forward(self, f8, f16, f32):
        x = self.up2a(self.s32(f32)) + self.s16(f16)
        y = self.up2b(x) + self.s8(f8)
        return self.up8(y), self.up16(x)


def fcn_head():
    torch.manual_seed(0)
    return FCNHead().eval(), (torch.randn(1, 16, 8, 8), torch.randn(1, 32, 4, 4),
                              torch.randn(1, 64, 2, 2))


class UNetDecoder(nn.Module):
    """U-Net decoder: bottleneck [1, 64, 4, 4] and skips at 8, 16, 32; each level a
    ConvTranspose2d(k2, s2), a cat with the skip, two 3x3 conv + BN + ReLU; 1x1 head."""

    def __init__(self):
        super().__init__()
        chans = [64, 32, 16, 8]
        self.ups, self.blocks = nn.ModuleList(), nn.ModuleList()
        for a, b in zip(chans, chans[1:]):
            self.ups.append(nn.ConvTranspose2d(a, b, 2, 2))
            self.blocks.append(nn.Sequential(
                nn.Conv2d(2 * b, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(True),
                nn.Conv2d(b, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(True)))
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x, s8, s16, s32):
        for up, block, skip in zip(self.ups, self.blocks, (s8, s16, s32)):
            x = block(torch.cat([up(x), skip], 1))
        return self.head(x)


def unet_decoder():
    torch.manual_seed(0)
    return _perturb(UNetDecoder()), (torch.randn(1, 64, 4, 4), torch.randn(1, 32, 8, 8),
                                     torch.randn(1, 16, 16, 16), torch.randn(1, 8, 32, 32))


def audio_decoder():
    """WaveGAN/Encodec-like 1-D upsampler: [2, 64, 16] latents -> [2, 1, 2048] samples by
    ConvTranspose1d stride 8 (kernel 16) and stride 4 (kernels 8 and 25), ELU, Tanh."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv1d(64, 64, 7, padding=3), nn.ELU(),
                      nn.ConvTranspose1d(64, 32, 16, 8, 4), nn.BatchNorm1d(32), nn.ELU(),
                      nn.ConvTranspose1d(32, 16, 8, 4, 2), nn.ELU(),
                      nn.ConvTranspose1d(16, 8, 25, 4, 11, output_padding=1), nn.ELU(),
                      nn.Conv1d(8, 1, 7, padding=3), nn.Tanh())
    return _perturb(m), (torch.randn(2, 64, 16),)


def convt_groups():
    """ConvTranspose2d with groups, dilation and output_padding, alone and chained."""
    torch.manual_seed(0)
    m = nn.Sequential(
        nn.ConvTranspose2d(8, 16, 3, stride=2, padding=1, output_padding=1, groups=2),
        nn.ReLU(),
        nn.ConvTranspose2d(16, 8, 3, stride=2, padding=2, dilation=2, output_padding=1),
        nn.ReLU(),
        nn.ConvTranspose2d(8, 8, 3, stride=1, padding=1, groups=4, dilation=1))
    return m.eval(), (torch.randn(1, 8, 6, 6),)


class ESPCN(nn.Module):
    """ESPCN super-resolution x3 (conv 5x5, tanh, conv 3x3, tanh, conv 3x3, pixel_shuffle),
    beside SRCNN (bicubic x3 upsample, conv 9x9, 1x1, 5x5)."""

    def __init__(self, r=3):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 32, 5, padding=2), nn.Conv2d(32, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, r * r, 3, padding=1)
        self.s1, self.s2 = nn.Conv2d(1, 32, 9, padding=4), nn.Conv2d(32, 16, 1)
        self.s3 = nn.Conv2d(16, 1, 5, padding=2)
        self.r = r

    def forward(self, x):
        e = F.pixel_shuffle(self.c3(torch.tanh(self.c2(torch.tanh(self.c1(x))))), self.r)
        u = F.interpolate(x, scale_factor=self.r, mode="bicubic", align_corners=False)
        s = self.s3(F.relu(self.s2(F.relu(self.s1(u)))))
        return e, s


def super_resolution():
    torch.manual_seed(0)
    return ESPCN().eval(), (torch.randn(1, 1, 12, 12),)


def _fcn_resnet50():
    """torchvision's fcn_resnet50, random weights seeded, 5 classes, no auxiliary head."""
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.segmentation.fcn_resnet50(
        weights=None, weights_backbone=None, num_classes=5, aux_loss=False)


def fcn_resnet50_head():
    """torchvision's fcn_resnet50 (random weights, 5 classes), its classifier (FCNHead:
    3x3 conv 2048 -> 512, BN, ReLU, dropout, 1x1) and bilinear upsample to the input's size,
    on the backbone's features of a 64x64 image ([1, 2048, 8, 8], dilated stride 8)."""
    model = _fcn_resnet50()

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = model.classifier

        def forward(self, feat):
            return F.interpolate(self.classifier(feat), size=(64, 64), mode="bilinear",
                                 align_corners=False)

    return _perturb(Head()), (torch.randn(1, 2048, 8, 8),)


def fcn_resnet50():
    """The whole torchvision fcn_resnet50 on a 1x3x64x64 image."""
    model = _fcn_resnet50()

    class Out(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, x):
            return self.m(x)["out"]

    return _perturb(Out()), (torch.randn(1, 3, 64, 64),)
