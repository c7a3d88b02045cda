#!/usr/bin/env python3
"""PyTorch's DataLoader over an h5py dataset, for side-by-side comparison with bench_loader: the
same augmentation (random crop with zero padding 4, horizontal flip, per-channel normalisation)
with torchvision's transforms, into f32 NCHW batches, from a file in ringtrain's HDF5 schema
(bench_loader --file writes one). Each worker opens the file itself, as h5py requires. Median
images/s over the timed epochs (an untimed first one starts the workers). Uses Debian's
python3-torch, python3-torchvision and python3-h5py.

    /usr/bin/python3 bench/pytorch_loader.py --file /tmp/ringtrain_bench_loader.h5 --workers 2
"""
import argparse
import time

import h5py
import numpy as np
import torch
import torchvision.transforms as T


class H5Images(torch.utils.data.Dataset):
    def __init__(self, path, transform):
        self.path, self.transform, self.file = path, transform, None
        with h5py.File(path, "r") as f:
            images = f["/train/images"]
            self.count, self.size = images.shape[0], images.shape[1]
            sample = images[: min(self.count, 4096)].astype(np.float64) / 255
            self.mean = sample.mean(axis=(0, 1, 2)).tolist()
            self.std = sample.std(axis=(0, 1, 2)).tolist()

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        if self.file is None:
            self.file = h5py.File(self.path, "r")
        image = self.file["/train/images"][i]
        label = int(self.file["/train/labels"][i])
        return self.transform(image), label


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--file", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs")
    a = p.parse_args()
    data = H5Images(a.file, None)
    data.transform = T.Compose([T.ToTensor(), T.RandomCrop(data.size, padding=4),
                                T.RandomHorizontalFlip(), T.Normalize(data.mean, data.std)])
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch_size, shuffle=True,
                                         num_workers=a.workers, drop_last=True,
                                         persistent_workers=a.workers > 0)
    rates = []
    for epoch in range(a.epochs + 1):
        t0, n = time.perf_counter(), 0
        for images, _ in loader:
            n += images.shape[0]
        if epoch > 0:
            rates.append(n / (time.perf_counter() - t0))
    rates.sort()
    print(f"pytorch {torch.__version__} DataLoader over h5py, {a.workers} worker(s), "
          f"batch {a.batch_size}, {data.count} images: {rates[len(rates) // 2]:.0f} img/s")


if __name__ == "__main__":
    main()
