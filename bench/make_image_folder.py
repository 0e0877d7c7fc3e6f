#!/usr/bin/env python3
"""Writes a folder of synthetic, photo-like JPEGs in class folders (torchvision's
ImageFolder layout), for the image input pipeline benchmarks (never committed).

    /usr/bin/python3 bench/make_image_folder.py OUT [--images 1000] [--classes 10]
                     [--quality 90] [--seed 1]

Content: what makes a JPEG of a photo as large and as slow to decode as a photo
is broadband detail, so each image is a sum of
  - a smooth random field with a natural image's 1/f amplitude spectrum
    (colour channels correlated, as in photos: a shared luminance field plus
    weaker chroma fields),
  - a few hard-edged shapes (objects: discs and rectangles of other colours,
    themselves textured), and
  - fine texture (sensor-like noise, slightly blurred).
Quality 90, 4:2:0 chroma subsampling (PIL's default, as most cameras and
ImageNet's files), baseline (not progressive). A 500x375 image comes out at
about 100-115 KB (mean 106 KB with the defaults), as ImageNet's photos of that
size; the whole default set is 162 MB (mean 162 KB, median 115 KB).

Sizes are ImageNet-like, a fixed mix (shuffled by the seed):
  500x375 35%, 375x500 15%, 500x333 10%, 640x480 20%, 800x600 15%, 1024x768 5%
(width x height). Shorter side >= 512, where a decoder may decode a JPEG at 1/2
scale for a 256 resize: 800x600 and 1024x768, 20% of the images.

Prints a summary (count, mean/median file size, sizes) and writes it to
OUT.summary.json, beside the folder rather than in it (OUT holds class folders only).
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
from PIL import Image

MIX = [((500, 375), 0.35), ((375, 500), 0.15), ((500, 333), 0.10), ((640, 480), 0.20), ((800, 600), 0.15),
       ((1024, 768), 0.05)]


def pink_field(rng, h, w, exponent=1.0):
    """A zero-mean, unit-variance random field with amplitude ~ 1/f^exponent."""
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    f = np.sqrt(fx * fx + fy * fy)
    f[0, 0] = 1.0
    amplitude = 1.0 / f ** exponent
    amplitude[0, 0] = 0.0
    phase = rng.uniform(0, 2 * np.pi, size=amplitude.shape)
    spectrum = amplitude * np.exp(1j * phase)
    field = np.fft.irfft2(spectrum, s=(h, w))
    field -= field.mean()
    return field / (field.std() + 1e-12)


def blur3(x):
    """A 3x3 binomial blur (per channel), to take the edge off pixel noise."""
    p = np.pad(x, ((1, 1), (1, 1), (0, 0)), mode="edge")
    row = (p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]) / 4
    return (row[:-2] + 2 * row[1:-1] + row[2:]) / 4


def make_image(rng, w, h):
    # Smooth scene: luminance with a 1/f spectrum, chroma smoother and weaker.
    lum = pink_field(rng, h, w, 0.8)
    chroma = [pink_field(rng, h, w, 1.4) for _ in range(2)]
    base = rng.uniform(80, 170, size=3)
    tint = rng.normal(0, 1, size=(3, 3)) * np.array([1.0, 0.5, 0.5])[None, :]
    img = np.empty((h, w, 3), np.float64)
    for c in range(3):
        img[..., c] = base[c] + 46 * lum * (1 + 0.15 * tint[c, 0]) + 18 * (tint[c, 1] * chroma[0] +
                                                                           tint[c, 2] * chroma[1])
    # Objects: hard edges, each with a texture of its own.
    yy, xx = np.mgrid[0:h, 0:w]
    for _ in range(rng.integers(3, 9)):
        colour = rng.uniform(20, 235, size=3)
        texture = pink_field(rng, h, w, 0.8)[..., None] * rng.uniform(10, 30)
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        if rng.random() < 0.5:
            r = rng.uniform(0.05, 0.3) * min(h, w)
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        else:
            hh, ww = rng.uniform(0.05, 0.35) * h, rng.uniform(0.05, 0.35) * w
            mask = (np.abs(yy - cy) < hh) & (np.abs(xx - cx) < ww)
        alpha = rng.uniform(0.6, 1.0)
        img[mask] = (1 - alpha) * img[mask] + alpha * (colour + texture[mask])
    # Fine texture: sensor-like noise, slightly blurred.
    noise = blur3(rng.normal(0, 1, size=(h, w, 3)))
    img += rng.uniform(6, 11) * noise
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    sizes = []
    for (wh, share) in MIX:
        sizes += [wh] * round(share * args.images)
    while len(sizes) < args.images:
        sizes.append(MIX[0][0])
    sizes = sizes[:args.images]
    rng.shuffle(sizes)

    file_sizes = []
    by_size = {}
    for i, (w, h) in enumerate(sizes):
        folder = os.path.join(args.out, f"class{i % args.classes:02d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"img{i:05d}.jpg")
        make_image(rng, w, h).save(path, "JPEG", quality=args.quality)
        n = os.path.getsize(path)
        file_sizes.append(n)
        by_size.setdefault(f"{w}x{h}", []).append(n)
        if (i + 1) % 100 == 0:
            print(f"{i + 1}/{args.images}", file=sys.stderr)

    summary = {
        "images": len(file_sizes),
        "classes": args.classes,
        "quality": args.quality,
        "seed": args.seed,
        "total_mb": sum(file_sizes) / 1e6,
        "mean_kb": statistics.mean(file_sizes) / 1e3,
        "median_kb": statistics.median(file_sizes) / 1e3,
        "shorter_side_ge_512": sum(1 for w, h in sizes if min(w, h) >= 512) / len(sizes),
        "sizes": {k: {"count": len(v), "mean_kb": statistics.mean(v) / 1e3} for k, v in sorted(by_size.items())},
    }
    with open(args.out.rstrip("/") + ".summary.json", "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
