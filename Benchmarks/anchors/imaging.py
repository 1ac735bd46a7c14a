"""Anchors for the thumbnail benchmark: Pillow and pyvips doing what `Imaging.thumbnail` does.

    python imaging.py prepare ART_PNG OUT_DIR   write the six inputs
    python imaging.py measure IN_DIR SECONDS PEERS
        PEERS: a comma list of pillow and pyvips (those this interpreter has); prints JSON
        {"results": {class: {peer: ms_per_op}}, "versions": {peer: version}, "bytes": {class: {peer: n}}}

Single-threaded: pyvips runs with VIPS_CONCURRENCY=1 (set by the caller), Pillow is single-threaded.
The bench runs this twice: in .build-bench/venv (Pillow, and pyvips built against Debian's libvips)
and in .build-bench/vips-binary-venv (pyvips[binary]: libvips from the pyvips-binary wheel).
"""
import io
import json
import os
import sys
import time

CLASSES = ["art-rgba-png", "art-rgb-png", "art-jpeg", "1024-rgba-png", "1024-rgb-png", "1024-jpeg"]


def prepare(art_png, out_dir):
    from PIL import Image
    os.makedirs(out_dir, exist_ok=True)
    art = Image.open(art_png).convert("RGB")
    # A 1024x1024 photo-like image: the art scaled up, with a pattern so it does not compress to nothing.
    big = art.resize((1024, 1024), Image.BICUBIC)
    pixels = big.load()
    for y in range(0, 1024, 3):
        for x in range(0, 1024, 5):
            r, g, b = pixels[x, y]
            pixels[x, y] = ((r + x) % 256, (g + y) % 256, b)
    for name, image in [("art", art), ("1024", big)]:
        rgba = image.convert("RGBA")
        rgba.putalpha(Image.linear_gradient("L").resize(image.size))
        rgba.save(os.path.join(out_dir, name + "-rgba-png.png"), compress_level=6)
        image.save(os.path.join(out_dir, name + "-rgb-png.png"), compress_level=6)
        image.save(os.path.join(out_dir, name + "-jpeg.jpg"), quality=85)


def files(in_dir):
    names = sorted(os.listdir(in_dir))
    return {c: open(os.path.join(in_dir, next(n for n in names if n.startswith(c))), "rb").read() for c in CLASSES}


def pillow(data):
    from PIL import Image
    image = Image.open(io.BytesIO(data))
    image.draft("RGB", (200, 200))  # JPEG shrink-on-load, like libvips
    image.thumbnail((200, 200))
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=6)
    return out.getvalue()


def make_pyvips():
    import pyvips
    pyvips.cache_set_max(0)

    def run(data):
        return pyvips.Image.thumbnail_buffer(data, 200, height=200, size="down").pngsave_buffer(compression=6, strip=True)
    return run


def time_per_op(function, data, seconds):
    function(data)  # warm up
    runs = []
    for _ in range(5):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 5:
            function(data)
            count += 1
        runs.append((time.perf_counter() - start) * 1000 / count)
    runs.sort()
    return runs[len(runs) // 2]


def version(peer):
    if peer == "pillow":
        import PIL
        return PIL.__version__
    import pyvips
    return "%d.%d.%d" % (pyvips.version(0), pyvips.version(1), pyvips.version(2))


def measure(in_dir, seconds, names):
    inputs = files(in_dir)
    makers = {"pillow": lambda: pillow, "pyvips": make_pyvips}
    peers = {name: makers[name]() for name in names}
    results = {c: {name: time_per_op(f, inputs[c], seconds) for name, f in peers.items()} for c in CLASSES}
    sizes = {c: {name: len(f(inputs[c])) for name, f in peers.items()} for c in CLASSES}
    print(json.dumps({"results": results, "versions": {name: version(name) for name in names}, "bytes": sizes}))


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    else:
        measure(sys.argv[2], float(sys.argv[3]), sys.argv[4].split(","))
