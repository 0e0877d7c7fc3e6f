#!/usr/bin/python3
"""torchvision's side of the image input pipeline benchmark (bench_image_pipeline.cpp):
the ImageNet training recipe over a folder of JPEG class folders,
    Resize(256) -> RandomCrop(224) -> RandomHorizontalFlip() -> to float -> Normalize
in three variants:
  pil        torchvision.datasets.ImageFolder as the ImageNet example runs it:
             PIL decodes every JPEG at full size (pil_loader), transforms on PIL
             images, ToTensor, Normalize;
  pil-draft  the same with a loader that calls PIL's Image.draft("RGB", (256, 256))
             first, so libjpeg decodes a large JPEG at 1/2, 1/4 or 1/8 scale by the
             same rule as taihu (the scaled image's sides stay >= 256);
  tvio       torchvision.io: read_file + decode_jpeg (libjpeg-turbo) to a uint8
             tensor, then tensor transforms: Resize(256, antialias=True),
             RandomCrop(224), RandomHorizontalFlip(), ConvertImageDtype(float),
             Normalize (--tvio-order float-first converts before resizing: 3.5x
             slower here, so uint8 first is the default);
  pil-u8, pil-draft-u8, tvio-u8
             the same up to the crop and flip, but the samples stay uint8 (PIL:
             PILToTensor) and the main process converts and normalises each
             batch ((x - 255 mean) / (255 std), timed): what NVIDIA's ImageNet
             examples do (fast_collate) so that workers ship 4x fewer bytes through
             shared memory, which costs a lot on some machines.
Cases (every image of the folder, after an untimed warm pass):
  read       the file's bytes only
  decode     decode only (pil: open + convert("RGB"); pil-draft: with draft;
             tvio: read_file + decode_jpeg)
  transform  the transforms only, on images decoded beforehand, one thread
  loader     DataLoader(batch 32, shuffle, drop_last, num_workers W; W > 0 with
             persistent_workers) delivering batches to this process; images/s
             received from the 4th batch to the end of an epoch, after one warm
             epoch (as bench_image_pipeline's feed case).
  ipc        (not in the default list) DataLoader moving constant 3x224x224
             samples, float32 and uint8, no decoding: what shipping batches from
             workers through shared memory costs by itself (variants ipc-float32,
             ipc-uint8)
torch.set_num_threads(1) in this process (DataLoader's workers run one thread
each anyway): figures with W = 0 are per core.

    /usr/bin/python3 bench/image_pipeline_torch.py --dir FOLDER [--variants pil,pil-draft,tvio]
        [--workers 0,1,2] [--cases read,decode,transform,loader] [--batch 32] [--repeats 1]
        [--json FILE] [--csv FILE] [--label TEXT]
"""
import argparse
import json
import os
import statistics
import sys
import time

import PIL
import torch
import torchvision
from PIL import Image, features
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T
from torchvision.io import ImageReadMode, decode_jpeg, read_file

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def pil_draft_loader(path):
    with open(path, "rb") as f:
        img = Image.open(f)
        img.draft("RGB", (256, 256))
        return img.convert("RGB")


def pil_transform():
    return T.Compose([T.Resize(256), T.RandomCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize(MEAN, STD)])


def tvio_transform(order):
    if order == "float-first":  # resize in float, no round trip to uint8
        return T.Compose([T.ConvertImageDtype(torch.float), T.Resize(256, antialias=True), T.RandomCrop(224),
                          T.RandomHorizontalFlip(), T.Normalize(MEAN, STD)])
    return T.Compose([T.Resize(256, antialias=True), T.RandomCrop(224), T.RandomHorizontalFlip(),
                      T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])


def tvio_decode(path):
    return decode_jpeg(read_file(path), mode=ImageReadMode.RGB)


class TensorImageFolder(Dataset):
    """ImageFolder's files and labels, decoded by torchvision.io."""

    def __init__(self, root, transform):
        folder = torchvision.datasets.ImageFolder(root)
        self.samples = folder.samples
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return self.transform(tvio_decode(path)), label


def pil_u8_transform():
    return T.Compose([T.Resize(256), T.RandomCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()])


def tvio_u8_transform():
    return T.Compose([T.Resize(256, antialias=True), T.RandomCrop(224), T.RandomHorizontalFlip()])


class ConstantSamples(Dataset):
    """1000 copies of one 3x224x224 sample: only the DataLoader's own work."""

    def __init__(self, dtype, n=1000):
        self.sample = torch.zeros(3, 224, 224, dtype=dtype)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.sample.clone(), 0


def make_dataset(variant, root, order):
    if variant == "pil":
        return torchvision.datasets.ImageFolder(root, transform=pil_transform())
    if variant == "pil-draft":
        return torchvision.datasets.ImageFolder(root, transform=pil_transform(), loader=pil_draft_loader)
    if variant == "tvio":
        return TensorImageFolder(root, tvio_transform(order))
    if variant == "pil-u8":
        return torchvision.datasets.ImageFolder(root, transform=pil_u8_transform())
    if variant == "pil-draft-u8":
        return torchvision.datasets.ImageFolder(root, transform=pil_u8_transform(), loader=pil_draft_loader)
    if variant == "tvio-u8":
        return TensorImageFolder(root, tvio_u8_transform())
    raise SystemExit(f"unknown variant {variant}")


MEAN_255 = torch.tensor(MEAN).view(1, 3, 1, 1) * 255
STD_255 = torch.tensor(STD).view(1, 3, 1, 1) * 255


def normalise_u8(batch):
    """uint8 N x 3 x H x W -> normalised floats, as ToTensor + Normalize per sample."""
    return batch.float().sub_(MEAN_255).div_(STD_255)


def timed(paths, body):
    start = time.perf_counter()
    for p in paths:
        body(p)
    return len(paths) / (time.perf_counter() - start)


def loader_rate(dataset, workers, batch, repeats, seed, u8):
    torch.manual_seed(seed)
    loader = DataLoader(dataset, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                        persistent_workers=workers > 0)
    # From the 4th batch (start-up left out), or from the start in an epoch of few batches.
    skipped = max(0, min(3, len(loader) - 1))
    rates = []
    for epoch in range(repeats + 1):  # epoch 0 warms up (workers, page cache)
        batches = 0
        start = time.perf_counter()
        for data, labels in loader:
            if u8:
                data = normalise_u8(data)
            batches += 1
            if batches == skipped:
                start = time.perf_counter()
        rate = (batches - skipped) * batch / (time.perf_counter() - start)
        if epoch > 0:
            rates.append(rate)
    return rates, (batches - skipped) * batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--variants", default="pil,pil-draft,tvio")
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--cases", default="read,decode,transform,loader")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--tvio-order", default="uint8-first", choices=["uint8-first", "float-first"])
    ap.add_argument("--json")
    ap.add_argument("--csv")
    ap.add_argument("--label", default="")
    ap.add_argument("--info", action="store_true", help="print the libraries' versions and features, then exit")
    args = ap.parse_args()

    torch.set_num_threads(1)
    info = {
        "torch": torch.__version__, "torchvision": torchvision.__version__, "pillow": PIL.__version__,
        "pillow_simd": "post" in PIL.__version__,  # Pillow-SIMD versions read like 9.0.0.post1
        "pil_libjpeg_turbo": features.check_feature("libjpeg_turbo"),
        "pil_jpeg_version": features.version("jpg"), "torch_threads": torch.get_num_threads(),
        "torchvision_image_backend": torchvision.get_image_backend(),
    }
    print("# " + json.dumps(info), flush=True)
    if args.info:
        return

    folder = torchvision.datasets.ImageFolder(args.dir)
    paths = [p for p, _ in folder.samples]
    n = len(paths)
    variants = args.variants.split(",")
    cases = args.cases.split(",")
    workers_list = [int(w) for w in args.workers.split(",")]

    def emit(variant, case, workers, images, rates):
        rate = statistics.median(rates)
        row = {"system": "pytorch", "label": args.label, "variant": variant, "case": case, "workers": workers,
               "images": images, "batch": args.batch if case == "loader" else 0,
               "images_per_second": round(rate, 2), "ms_per_image": round(1e3 / rate, 4),
               "repeats": [round(r, 2) for r in rates], "torch_threads": torch.get_num_threads()}
        if variant == "tvio":
            row["tvio_order"] = args.tvio_order
        print(f"{variant:10} {case:10} {workers:8} {images:7} {rate:12.1f} {1e3 / rate:10.3f}   "
              f"[{' '.join(f'{r:.1f}' for r in rates)}]", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
        if args.csv:
            fresh = not os.path.exists(args.csv)
            with open(args.csv, "a") as f:
                if fresh:
                    f.write("system,label,variant,case,workers,images,images_per_second,ms_per_image\n")
                f.write(f"pytorch,{args.label},{variant},{case},{workers},{images},{rate:.2f},{1e3 / rate:.4f}\n")

    def repeat(body):
        timed(paths, body)  # warm
        return [timed(paths, body) for _ in range(args.repeats)]

    print(f"{'variant':10} {'case':10} {'workers':>8} {'images':>7} {'images/s':>12} {'ms/image':>10}   repeats",
          flush=True)
    if "read" in cases:
        def read(p):
            with open(p, "rb") as f:
                f.read()
        emit("-", "read", 0, n, repeat(read))
    decoders = {
        "pil": lambda p: Image.open(p).convert("RGB"),
        "pil-draft": pil_draft_loader,
        "tvio": tvio_decode,
    }
    if "ipc" in cases:
        for dtype in (torch.float32, torch.uint8):
            for workers in workers_list:
                rates, images = loader_rate(ConstantSamples(dtype), workers, args.batch, args.repeats, seed=1,
                                            u8=False)
                emit(f"ipc-{str(dtype).split('.')[-1]}", "loader", workers, images, rates)
    for variant in variants:
        split = not variant.endswith("-u8")  # -u8 variants decode and transform as the others
        if "decode" in cases and split:
            emit(variant, "decode", 0, n, repeat(decoders[variant]))
        if "transform" in cases and split:
            images = [decoders[variant](p) for p in paths]
            transform = pil_transform() if variant != "tvio" else tvio_transform(args.tvio_order)
            indices = list(range(n))
            timed(indices, lambda i: transform(images[i]))
            rates = [timed(indices, lambda i: transform(images[i])) for _ in range(args.repeats)]
            emit(variant, "transform", 0, n, rates)
            del images
        if "loader" in cases:
            dataset = make_dataset(variant, args.dir, args.tvio_order)
            for workers in workers_list:
                rates, images = loader_rate(dataset, workers, args.batch, args.repeats, seed=1,
                                            u8=variant.endswith("-u8"))
                emit(variant, "loader", workers, images, rates)


if __name__ == "__main__":
    sys.exit(main())
