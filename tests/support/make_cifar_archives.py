#!/usr/bin/python3
"""Writes small CIFAR-10 archives in the layout of the official ones, for the import tests.

  make_cifar_archives.py FORMAT VARIANT OUT.tar.gz [--expected DIR] [--per-batch N]

FORMAT: py2 (pickles byte-compatible with the official files, which Python 2's cPickle wrote at
protocol 2: assembled here opcode by opcode, then checked with pickle.loads), p2 and p4
(numpy's own pickling under Python 3 at protocols 2 and 4), bin (the binary distribution).
VARIANT: ok, or one broken member: missing (no test batch), corrupt (data_batch_3 cut short),
global (data_batch_2 calls os.system), label (a label of 10 in data_batch_4), empty
(test_batch holds no images), names (class names that are not UTF-8 text: b"c\xffat"); or
one crafted to take memory: memo (data_batch_1 is 150 MB of MEMOIZE opcodes), huge
(data_batch_1 holds 81 920 images, 250 MB), many (six batches of 12 000 images, 72 000 in all).
The crafted ones hold zeros, so they compress to little.
--expected DIR: writes what an import must store: train_images.bin and test_images.bin (NHWC
uint8, from numpy's transpose of the CHW rows), train_labels.bin and test_labels.bin (int32
little-endian), classes.txt. The data depend only on --per-batch (fixed seed).
"""
import argparse
import io
import os
import pickle
import struct
import tarfile

import numpy as np

CLASSES = [b"airplane", b"automobile", b"bird", b"cat", b"deer",
           b"dog", b"frog", b"horse", b"ship", b"truck"]


class Py2Pickler:
    """The opcodes cPickle (Python 2) writes at protocol 2 for the CIFAR-10 dicts."""

    def __init__(self):
        self.memo = 0

    def put(self):
        self.memo += 1
        i = self.memo
        return b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i)

    @staticmethod
    def int_(v):
        if 0 <= v < 256:
            return b"K" + bytes([v])
        if 0 <= v < 65536:
            return b"M" + struct.pack("<H", v)
        return b"J" + struct.pack("<i", v)

    def str_(self, b):
        head = b"U" + bytes([len(b)]) if len(b) < 256 else b"T" + struct.pack("<I", len(b))
        return head + b + self.put()

    def list_(self, items, item):
        out = b"]" + self.put()
        for start in range(0, len(items), 1000):  # cPickle's batches of 1000
            chunk = items[start:start + 1000]
            body = b"".join(item(v) for v in chunk)
            out += body + b"a" if len(chunk) == 1 else b"(" + body + b"e"
        return out

    def array(self, rows):
        n, width = rows.shape
        return (b"cnumpy.core.multiarray\n_reconstruct\n" + self.put() + b"cnumpy\nndarray\n" +
                self.put() + b"K\x00\x85U\x01b\x87R" + self.put() + b"(K\x01" + self.int_(n) +
                self.int_(width) + b"\x86cnumpy\ndtype\n" + self.put() + b"U\x02u1K\x00K\x01\x87R" +
                self.put() + b"(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89" +
                self.str_(rows.tobytes()) + b"tb")

    def value(self, v):
        if isinstance(v, np.ndarray):
            return self.array(v)
        if isinstance(v, int):
            return self.int_(v)
        if isinstance(v, bytes):
            return self.str_(v)
        return self.list_(v, self.value)

    def dumps(self, d):
        out = b"\x80\x02}" + self.put() + b"("
        for k, v in d.items():
            out += self.str_(k) + self.value(v)
        return out + b"u."


def batch_dicts(per_batch, sizes=None):
    rng = np.random.default_rng(20091)
    batches = []
    for i in range(6):
        if sizes:
            per_batch = sizes[i]
        rows = (np.zeros((per_batch, 3072), np.uint8) if sizes else
                rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8))
        labels = [int(v) for v in rng.integers(0, 10, size=per_batch)]
        name = b"testing batch 1 of 1" if i == 5 else b"training batch %d of 5" % (i + 1)
        files = [b"image_%d_%d.png" % (i, j) for j in range(per_batch)]
        batches.append({b"data": rows, b"labels": labels, b"batch_label": name, b"filenames": files})
    return batches


def pickled(fmt, d):
    if fmt == "py2":
        data = Py2Pickler().dumps(d)
        back = pickle.loads(data, encoding="bytes")
        assert back.keys() == d.keys() and all(
            np.array_equal(back[k], d[k]) if isinstance(d[k], np.ndarray) else back[k] == d[k]
            for k in d), "the hand-assembled pickle does not load as the dict"
        return data
    return pickle.dumps(d, protocol=2 if fmt == "p2" else 4)


def members(fmt, batches, variant):
    names = ["data_batch_%d" % (i + 1) for i in range(5)] + ["test_batch"]
    out = []
    if fmt == "bin":
        for name, b in zip(names, batches):
            records = np.concatenate([np.array(b[b"labels"], np.uint8)[:, None], b[b"data"]], 1)
            out.append(("cifar-10-batches-bin/" + name + ".bin", records.tobytes()))
        out.append(("cifar-10-batches-bin/batches.meta.txt", b"\n".join(CLASSES) + b"\n\n"))
        out.append(("cifar-10-batches-bin/readme.html", b"<html></html>\n"))
        return out
    for name, b in zip(names, batches):
        out.append(("cifar-10-batches-py/" + name, pickled(fmt, b)))
    meta = {b"num_cases_per_batch": len(batches[0][b"labels"]), b"label_names": CLASSES,
            b"num_vis": 3072}
    out.append(("cifar-10-batches-py/batches.meta", pickled(fmt, meta)))
    out.append(("cifar-10-batches-py/readme.html", b"<html></html>\n"))
    if variant == "corrupt":
        out[2] = (out[2][0], out[2][1][:len(out[2][1]) // 2])
    if variant == "global":
        out[1] = (out[1][0], b"\x80\x02cos\nsystem\nq\x01U\x02idq\x02\x85Rq\x03.")
    if variant == "memo":
        out[0] = (out[0][0], b"\x80\x04N" + b"\x94" * (150 << 20) + b".")
    return out


def write_expected(folder, batches):
    os.makedirs(folder, exist_ok=True)
    for split, group in (("train", batches[:5]), ("test", batches[5:])):
        rows = np.concatenate([b[b"data"] for b in group])
        nhwc = rows.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        np.ascontiguousarray(nhwc).tofile(os.path.join(folder, split + "_images.bin"))
        labels = np.concatenate([np.array(b[b"labels"], "<i4") for b in group])
        labels.tofile(os.path.join(folder, split + "_labels.bin"))
    with open(os.path.join(folder, "classes.txt"), "wb") as f:
        f.write(b"\n".join(CLASSES) + b"\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("format", choices=["py2", "p2", "p4", "bin"])
    parser.add_argument("variant", choices=["ok", "missing", "corrupt", "global", "label", "empty",
                                            "names", "memo", "huge", "many"])
    parser.add_argument("out")
    parser.add_argument("--expected")
    parser.add_argument("--per-batch", type=int, default=3)
    args = parser.parse_args()
    sizes = {"empty": [3, 3, 3, 3, 3, 0], "huge": [81920, 3, 3, 3, 3, 3], "many": [12000] * 6}
    batches = batch_dicts(args.per_batch, sizes.get(args.variant))
    if args.variant == "label":
        batches[3][b"labels"][-1] = 10
    if args.variant == "names":
        CLASSES[3] = b"c\xffat"
    files = members(args.format, batches, args.variant)
    if args.variant == "missing":
        files = [f for f in files if "test_batch" not in f[0]]
    with tarfile.open(args.out, "w:gz", compresslevel=1 if sizes.get(args.variant) else 9) as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    if args.expected:
        write_expected(args.expected, batches)


if __name__ == "__main__":
    main()
