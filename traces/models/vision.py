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
        # ViT's head starts at zero weights: its output would be its bias
        # whatever the encoder computed, and --check would prove nothing
        for m in model.modules():
            if isinstance(m, nn.Linear) and not m.weight.any():
                m.weight.normal_(0.0, 0.02)
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


def vit_b_16_encoder():
    """ViT-B/16's encoder alone (position embeddings, 12 blocks, final LayerNorm) on
    tokens (1, 197, 768): the model between its token assembly and its head."""
    torch.manual_seed(0)
    model = _perturb_norms(torchvision.models.vit_b_16(weights=None)).eval()
    return model.encoder, (torch.randn(1, 197, 768),)


def vit_b_16_block():
    """ViT-B/16's first encoder block alone on tokens (1, 197, 768)."""
    torch.manual_seed(0)
    model = _perturb_norms(torchvision.models.vit_b_16(weights=None)).eval()
    return model.encoder.layers[0], (torch.randn(1, 197, 768),)


class _VitAfterPatches(nn.Module):
    """ViT's forward after its patch embedding (torchvision's _process_input
    past conv_proj): the class token, position embeddings, encoder, head."""

    def __init__(self, vit):
        super().__init__()
        self.vit = vit

    def forward(self, patches):
        n = patches.shape[0]
        x = patches.reshape(n, self.vit.hidden_dim, -1).permute(0, 2, 1)
        x = torch.cat([self.vit.class_token.expand(n, -1, -1), x], dim=1)
        return self.vit.heads(self.vit.encoder(x)[:, 0])


def vit_b_16_after_patches():
    """ViT-B/16 whole but its patch embedding (a 16 x 16, stride 16 convolution):
    input the embedding's output (1, 768, 14, 14)."""
    torch.manual_seed(0)
    model = _perturb_norms(torchvision.models.vit_b_16(weights=None)).eval()
    return _VitAfterPatches(model), (torch.randn(1, 768, 14, 14),)


# The zoo (`bench/run zoo`): more of torchvision's classifiers, as a user would try them,
# at 96 x 96 so that the whole set runs in minutes (random seeded weights, batch norms
# moved off their defaults as above).
def _small(build, **kw):
    torch.manual_seed(0)
    model = _perturb_norms(build(weights=None, **kw)).eval()
    return model, (torch.randn(1, 3, 96, 96),)


def squeezenet1_0():
    return _small(torchvision.models.squeezenet1_0)


def shufflenet_v2_x0_5():
    return _small(torchvision.models.shufflenet_v2_x0_5)


def efficientnet_b0():
    return _small(torchvision.models.efficientnet_b0)


def googlenet():
    return _small(torchvision.models.googlenet, aux_logits=False, init_weights=True)


def mnasnet0_5():
    return _small(torchvision.models.mnasnet0_5)


def regnet_x_400mf():
    return _small(torchvision.models.regnet_x_400mf)


def alexnet():
    return _small(torchvision.models.alexnet)


def resnet50():
    return _small(torchvision.models.resnet50)


def densenet121():
    return _small(torchvision.models.densenet121)


def convnext_tiny():
    return _small(torchvision.models.convnext_tiny)


def mobilenet_v3_small():
    return _small(torchvision.models.mobilenet_v3_small)


def swin_t():
    return _small(torchvision.models.swin_t)
