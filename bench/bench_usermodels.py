"""bench_usermodels: small models a new user brings (traces/models/usermodels.py: LSTM and
bidirectional GRU, a Conv1d audio net, a pre-norm TransformerEncoder, a UNet, a diffusion
ResBlock with a timestep embedding, a DCGAN generator, DLRM, an EmbeddingBag classifier, a
mixture of experts, a GNN layer, a TCN, PixelCNN's masked conv, a CLIP head, T5's
relative-position bias, an r3d-style 3-D block, bf16, mixed-precision and fp16 models), each
exported afresh into $SPYRE_BUILD/models/NAME and run with `spyre run DIR --check` on spyre.  Prints
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

SOURCE = "traces/models/usermodels.py"
MODELS = ("lstm,bigru,audio,tenc,unet,diffusion_block,dcgan,dlrm,embbag,moe,gnn,tcn,pixelcnn,clip,"
          "relpos,r3d,bf16_cnn,mixed,half_mlp,half_cnn")

if __name__ == "__main__":
    names = os.environ.get("SPYRE_USERMODELS", MODELS).split(",")
    for name in names:  # export afresh: the export is part of what a user does
        shutil.rmtree(os.path.join(bench_models.build, "models", name), ignore_errors=True)
    chips = os.environ.get("SPYRE_CHIPS", "spyre").split(",")
    sys.exit(bench_models.run_all(names, chips, "usermodels_native", SOURCE, "usermodels_validated"))
