"""torchvision classifiers with random (seeded) weights, eval mode, batch 1, 224 x 224:
ResNet-18, MobileNetV2 and ViT-B/16 (Debian's python3-torchvision 0.14).

BatchNorm's running statistics start at mean 0, variance 1 and its affine parameters at
1 and 0; they are moved off those values so that a compiler that drops any of them is
caught. Nothing is downloaded (weights=None).

Too large to store (ResNet-18 45 MB, MobileNetV2 14 MB, ViT-B/16 350 MB of f32); export
where needed, e.g.
  /usr/bin/python3 tools/export.py traces/models/vision.py:resnet18 -o /tmp/resnet18
"""
import torch
from torch import nn
import torchvision


def _perturb_norms(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(n))
                m.running_var.copy_(1.0 + 0.2 * torch.rand(n))
                m.weight.add_(0.1 * torch.randn(n))
                m.bias.add_(0.1 * torch.randn(n))
            elif isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn(m.weight.shape))
                m.bias.add_(0.1 * torch.randn(m.bias.shape))
    return model


def _classifier(build):
    torch.manual_seed(0)
    model = _perturb_norms(build(weights=None)).eval()
    x = torch.randn(1, 3, 224, 224)
    return model, (x,)


def resnet18():
    return _classifier(torchvision.models.resnet18)


def mobilenet_v2():
    return _classifier(torchvision.models.mobilenet_v2)


def vit_b_16():
    return _classifier(torchvision.models.vit_b_16)
