#!/usr/bin/env python3
"""Loads a model written by `ringtrain export` into torchvision's ResNet (docs/interop.md).

    from ringtrain_torchvision import resnet_from_safetensors
    model, meta = resnet_from_safetensors("model.safetensors")  # eval mode, strict load

Any depth, width and stem: width 1 is torchvision.models.resnetN itself; other widths scale
every stage's channels as ringtrain does (round(64 * width * 2^stage), at least 1). Needs torch
and torchvision, not the safetensors package.
"""
import json
import math
import struct

import torch
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

DTYPES = {"F32": torch.float32, "I64": torch.int64}
LAYERS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
          152: [3, 8, 36, 3]}


def load_safetensors(path):
    """(state_dict, metadata) of a safetensors file; torch alone, as docs/interop.md shows."""
    data = bytearray(open(path, "rb").read())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    state = {name: torch.frombuffer(data, dtype=DTYPES[t["dtype"]], count=math.prod(t["shape"]),
                                    offset=8 + n + t["data_offsets"][0]).reshape(t["shape"]).clone()
             for name, t in header.items()}
    return state, meta


def channels(width, multiple):
    """ringtrain's channel count: lround(64 * width * multiple), at least 1."""
    return max(1, int(64 * width * multiple + 0.5))


def build_resnet(depth, width=1.0, stem="cifar", classes=10, in_channels=3):
    """The torchvision ResNet ringtrain's resnet<depth> of this width and stem is."""
    block = Bottleneck if depth >= 50 else BasicBlock
    model = ResNet(block, LAYERS[depth], num_classes=classes)
    if width != 1.0:  # the same modules, every stage's channels scaled
        model.inplanes = channels(width, 1)
        for stage in range(4):
            layer = model._make_layer(block, channels(width, 2 ** stage), LAYERS[depth][stage],
                                      stride=1 if stage == 0 else 2)
            setattr(model, f"layer{stage + 1}", layer)
        model.fc = torch.nn.Linear(channels(width, 8) * block.expansion, classes)
    stem_out = channels(width, 1)
    model.bn1 = torch.nn.BatchNorm2d(stem_out)
    if stem == "cifar":  # a 3x3 convolution of stride 1 and no max pool
        model.conv1 = torch.nn.Conv2d(in_channels, stem_out, 3, stride=1, padding=1, bias=False)
        model.maxpool = torch.nn.Identity()
    else:
        model.conv1 = torch.nn.Conv2d(in_channels, stem_out, 7, stride=2, padding=3, bias=False)
    return model


def resnet_from_safetensors(path):
    """(model in eval mode with the file's weights, metadata) for a file `ringtrain export` wrote."""
    state, meta = load_safetensors(path)
    model = build_resnet(int(meta["depth"]), float(meta["width"]), meta["stem"],
                         int(meta["classes"]), int(meta["in_channels"]))
    model.load_state_dict(state)  # strict: every name and shape must match
    return model.eval(), meta
