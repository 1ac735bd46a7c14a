"""Anchor and inputs for the image service's benchmark (Benchmarks/ServiceBench.swift): pyvips[binary]
making the service's three thumbnails with the same libvips calls, in one process, 8 threads.

    python service.py prepare PHOTOS OUT_DIR
        the inputs, idempotent: the photos in PHOTOS (scripts/photos: scikit-image's) of at most
        0.3 MP (copied), 12 MP JPEGs made from four colour ones (4000x3000 or 3000x4000, quality
        90) and a 60 MP PNG of one colour
    python service.py cold MANIFEST THREADS [--column binary]
        MANIFEST: JSON [{"source": path, "operation": "fit"|"fill"|"width", "output": path}, ...];
        makes each, THREADS at a time, in the manifest's order; writes each output; prints JSON
        {"total_ms": n, "latencies_ms": [...], "bytes": [...], "engine": {...}}
    python service.py quality PAIRS
        PAIRS: JSON [[output, reference], ...]; prints JSON [{"mad": levels, "resized": bool}, ...]:
        the mean absolute difference of the two decoded images, per band and pixel, 0-255; an output
        of another size is resized to the reference's first (resized: true)

Run by the pyvips[binary] venv (.build-bench/vips-binary-venv): libvips from the pyvips-binary
wheel, the version scripts/libvips.pin names, which EmojiArt itself runs on.
"""
import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from imaging import checked_engine

# The colour photos made into 12 MP JPEGs.
LARGE = ["astronaut", "chelsea", "coffee", "rocket"]
MAX_PIXELS = 300_000
VIPS_MAX_COORD = 10_000_000


def prepare(photos, out_dir):
    import pyvips
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(photos)):
        stem, extension = os.path.splitext(name)
        if extension not in (".png", ".jpg"):
            continue
        image = pyvips.Image.new_from_file(os.path.join(photos, name))
        target = os.path.join(out_dir, name)
        if image.width * image.height <= MAX_PIXELS and not os.path.exists(target):
            shutil.copyfile(os.path.join(photos, name), target)
        large = os.path.join(out_dir, stem + "-12mp.jpg")
        if stem in LARGE and not os.path.exists(large):
            width, height = (4000, 3000) if image.width >= image.height else (3000, 4000)
            scaled = image.resize(width / image.width, vscale=height / image.height, kernel="lanczos3")
            scaled.jpegsave(large + ".part", Q=90, keep="none")
            os.replace(large + ".part", large)
    missing = [stem for stem in LARGE if not os.path.exists(os.path.join(out_dir, stem + "-12mp.jpg"))]
    if missing:
        sys.exit("service.py: no %s in %s (did scripts/photos change?)" % (", ".join(missing), photos))
    huge = os.path.join(out_dir, "flat-60mp.png")
    if not os.path.exists(huge):
        # 8000x7500 of one grey with a darker square: a few hundred kilobytes, 60 MP once decoded.
        image = (pyvips.Image.black(8000, 7500, bands=3) + 180).cast("uchar")
        image = image.draw_rect([40, 40, 40], 1000, 1000, 2000, 2000, fill=True)
        image.pngsave(huge + ".part", compression=9, keep="none")
        os.replace(huge + ".part", huge)


def thumbnail(data, operation):
    """What the service makes for operation (imgproxy's defaults: no enlarging, quality 80,
    metadata stripped), in the source's format."""
    import pyvips
    if operation == "fit":  # rs:fit:300:300
        image = pyvips.Image.thumbnail_buffer(data, 300, height=300, size="down")
    elif operation == "fill":  # rs:fill:200:200/g:sm
        image = pyvips.Image.thumbnail_buffer(data, 200, height=200, size="down", crop="attention")
    else:  # w:300/dpr:2
        image = pyvips.Image.thumbnail_buffer(data, 600, height=VIPS_MAX_COORD, size="down")
    if data[:3] == b"\xff\xd8\xff":
        return image.jpegsave_buffer(Q=80, keep="none")
    return image.pngsave_buffer(compression=6, keep="none")


def cold(manifest, threads, column):
    import pyvips
    engine = checked_engine(column)
    pyvips.cache_set_max(0)
    jobs = json.load(open(manifest))

    def one(job):
        began = time.perf_counter()
        with open(job["source"], "rb") as source:
            output = thumbnail(source.read(), job["operation"])
        with open(job["output"], "wb") as file:
            file.write(output)
        return (time.perf_counter() - began) * 1000, len(output)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = list(pool.map(one, jobs))
    total = (time.perf_counter() - start) * 1000
    print(json.dumps({"total_ms": total, "latencies_ms": [r[0] for r in results], "bytes": [r[1] for r in results],
                      "engine": engine}))


def as_srgb(image):
    if image.hasalpha():
        image = image.flatten(background=[255, 255, 255])
    if image.interpretation not in ("srgb", "rgb"):
        image = image.colourspace("srgb")
    return image.cast("uchar")


def quality(pairs):
    import pyvips
    results = []
    for output, reference in json.load(open(pairs)):
        ours = as_srgb(pyvips.Image.new_from_file(output, access="sequential"))
        theirs = as_srgb(pyvips.Image.new_from_file(reference, access="sequential"))
        resized = (ours.width, ours.height) != (theirs.width, theirs.height)
        if resized:
            ours = ours.resize(theirs.width / ours.width, vscale=theirs.height / ours.height)
            ours = ours.crop(0, 0, min(ours.width, theirs.width), min(ours.height, theirs.height))
            theirs = theirs.crop(0, 0, ours.width, ours.height)
        if ours.bands != theirs.bands:
            ours, theirs = ours.colourspace("srgb"), theirs.colourspace("srgb")
        results.append({"mad": (ours.cast("float") - theirs.cast("float")).abs().avg(), "resized": resized})
    print(json.dumps(results))


def main(argv):
    parser = argparse.ArgumentParser(description="Anchor and inputs for the image service's benchmark.")
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_command = commands.add_parser("prepare")
    prepare_command.add_argument("photos")
    prepare_command.add_argument("out_dir")
    cold_command = commands.add_parser("cold")
    cold_command.add_argument("manifest")
    cold_command.add_argument("threads", type=int)
    cold_command.add_argument("--column", choices=["binary", "debian"])
    quality_command = commands.add_parser("quality")
    quality_command.add_argument("pairs")
    arguments = parser.parse_args(argv)
    if arguments.command == "prepare":
        prepare(arguments.photos, arguments.out_dir)
    elif arguments.command == "cold":
        cold(arguments.manifest, arguments.threads, arguments.column)
    else:
        quality(arguments.pairs)


if __name__ == "__main__":
    main(sys.argv[1:])
