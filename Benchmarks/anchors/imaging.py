"""Anchors for the thumbnail benchmark: Pillow and pyvips doing what `Imaging.thumbnail` does.

    python imaging.py prepare ART_PNG OUT_DIR   write the six inputs
    python imaging.py measure IN_DIR SECONDS PEERS [--column binary|debian]
        PEERS: a comma list of pillow and pyvips (those this interpreter has); prints JSON
        {"results": {class: {peer: ms_per_op}}, "versions": {peer: version}, "bytes": {class: {peer: n}},
         "engine": {"api_mode": bool, "version": "x.y.z", "library": path} (with pyvips)}
    python imaging.py variants IN_DIR ROUNDS [--column binary|debian]
        the catalog's variant set as the app makes it (see variants()); prints JSON
        {"cpu_ms": median CPU ms per set, "bytes": {"avif 1x": n, ...}, "engine": {...}}
    python imaging.py engine [--column binary|debian]
        only the engine's report (JSON), checked as measure checks it

Single-threaded: pyvips runs with VIPS_CONCURRENCY=1 (set by the caller), Pillow is single-threaded.
The bench runs this twice: in .build-bench/venv (Pillow, and pyvips built against Debian's libvips:
the column "debian") and in .build-bench/vips-binary-venv (pyvips[binary]: libvips from the
pyvips-binary wheel, the version scripts/libvips.pin names: the column "binary").

The check (--column): the libvips a column names is the one this process runs, read at run time
(the version pyvips reports and the file mapped into this process, from /proc/self/maps), not what
pip installed. A mismatch exits with status 3 and says why before anything is measured.
"""
import argparse
import io
import json
import os
import subprocess
import sys
import sysconfig
import time

PIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "libvips.pin")

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


def mapped_libvips(maps="/proc/self/maps"):
    """The libvips shared library mapped into this process (its real path), or None."""
    with open(maps) as lines:
        for line in lines:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libvips"):
                return os.path.realpath(fields[5].strip())
    return None


def engine_report():
    """What pyvips runs on in this process: its mode, libvips' version and the library file."""
    import pyvips
    return {
        "api_mode": bool(pyvips.API_mode),
        "version": "%d.%d.%d" % (pyvips.version(0), pyvips.version(1), pyvips.version(2)),
        "library": mapped_libvips(),
    }


class EngineMismatch(Exception):
    """The libvips this process runs is not the one its bench column names."""


def pinned():
    """scripts/libvips.pin's KEY=value lines."""
    with open(PIN) as lines:
        return dict(line.strip().split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def column_libvips(column):
    """(version, library path) of the libvips a column names.

    binary: the pinned version, from the pyvips-binary wheel's folder in this interpreter's
    site-packages; debian: Debian's libvips42 package, as dpkg knows it."""
    if column == "binary":
        pin = pinned()
        wheel = os.path.join(sysconfig.get_paths()["purelib"], "pyvips_binary.libs", pin["LIBVIPS_LIBRARY"])
        return pin["LIBVIPS_VERSION"], os.path.realpath(wheel)
    package = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libvips42"], capture_output=True, text=True)
    files = subprocess.run(["dpkg-query", "-L", "libvips42"], capture_output=True, text=True)
    library = next((f for f in files.stdout.split() if "/libvips.so.42." in f), "Debian's libvips.so.42")
    return package.stdout.split("-")[0] or "Debian's", os.path.realpath(library)


def check_engine(report, column, expected):
    """Raises EngineMismatch, in words, unless report runs the expected (version, library)."""
    version, library = expected
    if report["version"] == version and report["library"] == library:
        return
    raise EngineMismatch(
        "the %s column's pyvips (%s) runs libvips %s from %s, not libvips %s from %s as the column says "
        "(a pyvips built for another libvips, perhaps taken from pip's cache): remove %s and run make "
        "bench again" % (column, sys.prefix, report["version"], report["library"] or "no library file",
                         version, library, sys.prefix))


def checked_engine(column):
    """engine_report(), checked against column's libvips when one is named; exits 3 on a mismatch."""
    report = engine_report()
    if column is not None:
        try:
            check_engine(report, column, column_libvips(column))
        except EngineMismatch as mismatch:
            print("imaging.py: " + str(mismatch), file=sys.stderr)
            sys.exit(3)
    return report


def measure(in_dir, seconds, names, column):
    engine = checked_engine(column) if "pyvips" in names else None
    inputs = files(in_dir)
    makers = {"pillow": lambda: pillow, "pyvips": make_pyvips}
    peers = {name: makers[name]() for name in names}
    results = {c: {name: time_per_op(f, inputs[c], seconds) for name, f in peers.items()} for c in CLASSES}
    sizes = {c: {name: len(f(inputs[c])) for name, f in peers.items()} for c in CLASSES}
    print(json.dumps({"results": results, "versions": {name: version(name) for name in names}, "bytes": sizes,
                      "engine": engine}))


def variants(in_dir, rounds, column):
    """The catalog's variant set as the app makes it, with pyvips: each original (the gallery's
    PNGs) decoded once and kept in memory; a thumbnail at 2x (400 px) and at 1x (200 px) made from
    it, each encoded as AVIF, WebP (no sharp YUV at 2x) and PNG (no filter, level 6: drawn art
    without alpha)."""
    import pyvips
    engine = checked_engine(column)
    pyvips.cache_set_max(0)
    originals = [open(os.path.join(in_dir, name), "rb").read() for name in sorted(os.listdir(in_dir))]

    def encode(image, name, density):
        if name == "avif":
            return image.heifsave_buffer(Q=60, effort=2, compression="av1", bitdepth=8, subsample_mode="off", strip=True)
        if name == "webp":
            return image.webpsave_buffer(Q=97, smart_subsample=density == 1, strip=True)
        return image.pngsave_buffer(compression=6, filter="none", strip=True)

    def one_set():
        sizes = {}
        for data in originals:
            decoded = pyvips.Image.new_from_buffer(data, "", fail_on="truncated").copy_memory()
            for density in [2, 1]:
                image = decoded.thumbnail_image(200 * density, height=200 * density, size="down").copy_memory()
                for name in ["avif", "webp", "png"]:
                    key = f"{name} {density}x"
                    sizes[key] = sizes.get(key, 0) + len(encode(image, name, density))
        return sizes

    sizes = one_set()
    runs = []
    for _ in range(rounds):
        start = time.process_time()
        one_set()
        runs.append((time.process_time() - start) * 1000)
    print(json.dumps({"cpu_ms": sorted(runs)[len(runs) // 2], "bytes": sizes, "engine": engine}))


def main(argv):
    parser = argparse.ArgumentParser(description="Anchors for the thumbnail benchmark.")
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_command = commands.add_parser("prepare")
    prepare_command.add_argument("art_png")
    prepare_command.add_argument("out_dir")
    variants_command = commands.add_parser("variants")
    variants_command.add_argument("in_dir")
    variants_command.add_argument("rounds", type=int)
    variants_command.add_argument("--column", choices=["binary", "debian"])
    for name in ["measure", "engine"]:
        command = commands.add_parser(name)
        if name == "measure":
            command.add_argument("in_dir")
            command.add_argument("seconds", type=float)
            command.add_argument("peers")
        command.add_argument("--column", choices=["binary", "debian"],
                             help="check that pyvips runs the libvips this bench column names")
    arguments = parser.parse_args(argv)
    if arguments.command == "prepare":
        prepare(arguments.art_png, arguments.out_dir)
    elif arguments.command == "variants":
        variants(arguments.in_dir, arguments.rounds, arguments.column)
    elif arguments.command == "engine":
        print(json.dumps(checked_engine(arguments.column)))
    else:
        measure(arguments.in_dir, arguments.seconds, arguments.peers.split(","), arguments.column)


if __name__ == "__main__":
    main(sys.argv[1:])
