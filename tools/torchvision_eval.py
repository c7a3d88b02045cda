#!/usr/bin/env python3
"""Evaluates a `ringtrain export` file with torchvision on a split of a ringtrain HDF5 dataset:
the same images, normalisation and loss as `ringtrain eval`, computed by PyTorch.

    /usr/bin/python3 tools/torchvision_eval.py model.safetensors data/cifar10.h5 [--split test]

Needs torch, torchvision, h5py and numpy.
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringtrain_torchvision import resnet_from_safetensors  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a file `ringtrain export` wrote")
    parser.add_argument("data", help="a ringtrain HDF5 dataset")
    parser.add_argument("--split", default="test", choices=["train", "test"])
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    model, meta = resnet_from_safetensors(args.model)
    mean = np.array(json.loads(meta["norm_mean"]), np.float32)
    std = np.array(json.loads(meta["norm_std"]), np.float32)
    with h5py.File(args.data, "r") as f:
        images = f[f"{args.split}/images"][:]
        labels = torch.from_numpy(f[f"{args.split}/labels"][:].astype(np.int64))
    loss, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(images), args.batch_size):
            x = (images[i:i + args.batch_size].astype(np.float32) / 255 - mean) / std
            logits = model(torch.from_numpy(x.transpose(0, 3, 1, 2).copy()))
            y = labels[i:i + args.batch_size]
            loss += torch.nn.functional.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
    n = len(images)
    print(f"{args.model} on {args.data} ({args.split}, {n} images), torch {torch.__version__}: "
          f"loss {loss / n:.4f}  top-1 {100 * correct / n:.2f}%")


if __name__ == "__main__":
    main()
