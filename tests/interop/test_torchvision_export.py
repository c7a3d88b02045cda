#!/usr/bin/env python3
"""`ringtrain export` read by torch: the exported file loads into torchvision's ResNet, strictly,
and torch's eval-mode logits match ringtrain's on the same images.

    test_torchvision_export.py RINGTRAIN WRITE_LOGITS TOOLS_DIR

Two models: resnet18 at width 1 with the CIFAR stem, loaded with the lines docs/interop.md
shows (torchvision.models.resnet18, conv1 and maxpool replaced), and resnet50 at width 0.125
with the ImageNet stem, built by tools/ringtrain_torchvision.py. Exits 77 (skipped) when torch or
torchvision cannot be imported.
"""
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:
    print(f"skipped: torch, torchvision and numpy are needed ({e}); apt-get install "
          "python3-torchvision, or configure with -DRINGTRAIN_TORCH_PYTHON=<a python with them>")
    sys.exit(77)

# float32 on both sides, summed in different orders (oneDNN vs torch's kernels) through ~20
# layers with batch norm: observed differences are about 1e-6 of the logits' scale.
RTOL = 1e-4

ringtrain, write_logits, tools = sys.argv[1:4]
sys.path.insert(0, tools)
from ringtrain_torchvision import load_safetensors, resnet_from_safetensors  # noqa: E402


def run(*args):
    subprocess.run([str(a) for a in args], check=True, stdout=subprocess.DEVNULL)


def trained_export(d, name, *model_flags):
    """A checkpoint after 3 steps on a small synthetic set, exported; its path and the file's."""
    run(ringtrain, "train", "--data", f"{d}/small.h5", *model_flags, "--batch-size", "16",
        "--steps", "3", "--checkpoint-every", "3", "--checkpoint-dir", f"{d}/{name}", "--no-eval",
        "--device", "cpu", "--log-interval", "0")
    checkpoint = f"{d}/{name}/ckpt-step00000003.h5"
    run(ringtrain, "export", "--checkpoint", checkpoint, "--format", "safetensors",
        f"{d}/{name}.safetensors")
    return checkpoint, f"{d}/{name}.safetensors"


def compare(d, name, checkpoint, model, meta):
    n = 6
    run(write_logits, checkpoint, n, f"{d}/images.f32", f"{d}/logits.f32")
    shape = (n, int(meta["in_channels"]), int(meta["image_height"]), int(meta["image_width"]))
    images = torch.from_numpy(np.fromfile(f"{d}/images.f32", dtype=np.float32).reshape(shape))
    expected = np.fromfile(f"{d}/logits.f32", dtype=np.float32).reshape(n, -1)
    with torch.no_grad():
        logits = model(images).numpy()
    scale = float(np.abs(expected).max())
    worst = float(np.abs(logits - expected).max())
    print(f"{name}: max |torch - ringtrain| = {worst:.3g}, logits up to {scale:.3g}")
    assert worst <= RTOL * max(1.0, scale), f"{name}: logits differ by {worst} (scale {scale})"


def main():
    with tempfile.TemporaryDirectory() as d:
        run(ringtrain, "data", "synth", "--out", f"{d}/small.h5", "--train", "128", "--test", "32",
            "--height", "16", "--width", "16")
        checkpoint, path = trained_export(d, "r18", "--depth", "18", "--width", "1")
        # The lines of docs/interop.md, with this file's reader (safetensors may be absent).
        state, meta = load_safetensors(path)
        model = torchvision.models.resnet18(num_classes=10)
        model.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = torch.nn.Identity()
        model.load_state_dict(state)  # strict
        model.eval()
        assert meta["stem"] == "cifar" and meta["depth"] == "18", meta
        assert int(state["bn1.num_batches_tracked"]) == 3
        compare(d, "resnet18 width 1 cifar stem", checkpoint, model, meta)

        checkpoint, path = trained_export(d, "r50", "--depth", "50", "--width", "0.125",
                                          "--stem", "imagenet")
        model, meta = resnet_from_safetensors(path)
        compare(d, "resnet50 width 0.125 imagenet stem", checkpoint, model, meta)
    print("interop: ok")


if __name__ == "__main__":
    main()
