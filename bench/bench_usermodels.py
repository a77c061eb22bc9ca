"""bench_usermodels: small models a new user brings (traces/models/usermodels.py: LSTM and
bidirectional GRU, a Conv1d audio net, a pre-norm TransformerEncoder, a UNet, a diffusion
ResBlock with a timestep embedding, a DCGAN generator, DLRM, an EmbeddingBag classifier, a
mixture of experts, a GNN layer, a TCN, PixelCNN's masked conv, a CLIP head, T5's
relative-position bias, an r3d-style 3-D block, bf16, mixed-precision and fp16 models, a GNN
pooling by scatter_reduce, a Conformer block and Mamba's selective scan, max pooling over NaN
pixels, nn.Unfold patches, Hugging Face's finfo.min masks (a GQA layer, a T5 block), a static KV
cache step and a top-2 mixture of experts by F.one_hot; and
traces/models/popular.py: Whisper's encoder block, a Stable-Diffusion mid block, MobileViT,
Swin's shifted windows, ConvNeXt, Inception, squeeze-excitation, PointNet, a VAE, a Bahdanau
decoder step, a patch-8 ViT), each exported afresh into $SPYRE_BUILD/models/NAME and run with `spyre run DIR --check` on spyre.  Prints
per model `MODEL.spyre.cycles=`, `.fallback_ops=`, `.check=ok|vacuous|fail|error` (bench_models'
lines) and `.host_ops=OP@LINE,...` (what `spyre compile --report` runs on the host), then
`usermodels_validated=N/M` (validated, host ops allowed) and last `usermodels_native=N/M` (no
host op and validated), counting runs.  SPYRE_USERMODELS=NAME,... picks some models,
SPYRE_CHIPS=spyre,spyre-4core the chips."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402

MODELS = ("lstm,bigru,audio,tenc,unet,diffusion_block,dcgan,dlrm,embbag,moe,gnn,tcn,pixelcnn,clip,"
          "relpos,r3d,bf16_cnn,mixed,half_mlp,half_cnn,gnn_pool,conformer,mamba,nanpool,unfold_patches,"
          "gqa_finfo,t5_block,kv_static,moe_top2,sage,tcn_weightnorm,centernet")
# traces/models/popular.py: blocks of popular repositories; its torchvision models (deeplab, fcn,
# mc3, r2plus1d, resnext, wide_resnet, regnet, efficientnet_v2, mobilenet_v3) take 10-60 s each
# and run only when SPYRE_USERMODELS names them
POPULAR = "whisper,sd_mid,mobilevit,swin,convnext,inception,se,pointnet,vae,bahdanau,vit_p8"
TORCHVISION = "deeplab,fcn,mc3,r2plus1d,resnext,wide_resnet,regnet,efficientnet_v2,mobilenet_v3"


def source(name):
    popular = (POPULAR + "," + TORCHVISION).split(",")
    return "traces/models/popular.py" if name in popular else "traces/models/usermodels.py"


if __name__ == "__main__":
    names = os.environ.get("SPYRE_USERMODELS", MODELS + "," + POPULAR).split(",")
    for name in names:  # export afresh: the export is part of what a user does
        shutil.rmtree(os.path.join(bench_models.build, "models", name), ignore_errors=True)
    chips = os.environ.get("SPYRE_CHIPS", "spyre").split(",")
    sys.exit(bench_models.run_all(names, chips, "usermodels_native", source, "usermodels_validated"))
