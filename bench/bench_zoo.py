"""bench_zoo: twelve more torchvision classifiers at 96 x 96 (traces/models/vision.py's zoo:
SqueezeNet, ShuffleNetV2, EfficientNet-B0, GoogLeNet, MNASNet, RegNetX-400MF, AlexNet,
ResNet-50, DenseNet-121, ConvNeXt-T, MobileNetV3-Small, Swin-T), each exported into
$SPYRE_BUILD/models/NAME and run with `spyre run DIR --check` on spyre, as a new user would
try them.  Prints per model `MODEL.spyre.cycles=`, `.mac_utilization=`, `.fallback_ops=` and
`.check=ok|vacuous|fail|error` (bench_models' lines), last `zoo_validated=N/M`: the models
that run with no host op and validate with finite bounds.  SPYRE_ZOO=NAME,... picks some."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402

ZOO = ("squeezenet1_0,shufflenet_v2_x0_5,efficientnet_b0,googlenet,mnasnet0_5,regnet_x_400mf,alexnet,"
       "resnet50,densenet121,convnext_tiny,mobilenet_v3_small,swin_t")

if __name__ == "__main__":
    sys.exit(bench_models.run_all(os.environ.get("SPYRE_ZOO", ZOO).split(","), ["spyre"], "zoo_validated"))
