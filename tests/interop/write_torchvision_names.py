#!/usr/bin/env python3
"""Writes the reference lists the export's names are tested against: every entry of
torchvision.models.resnet18() and resnet50() state_dicts (width 1, 10 classes), one per line
as `NAME SHAPE` with SHAPE like [64,3,7,7] ([] for a scalar), in state_dict order.

    python3 tests/interop/write_torchvision_names.py tests/data

Run once with torchvision installed; the lists are committed (tests/data/).
"""
import os
import sys

import torchvision


def main():
    out = sys.argv[1]
    for depth in (18, 50):
        model = getattr(torchvision.models, f"resnet{depth}")(num_classes=10)
        path = os.path.join(out, f"torchvision_resnet{depth}_state_dict.txt")
        with open(path, "w") as f:
            for name, tensor in model.state_dict().items():
                f.write(f"{name} [{','.join(str(d) for d in tensor.shape)}]\n")
        print(f"wrote {path} (torchvision {torchvision.__version__})")


if __name__ == "__main__":
    main()
