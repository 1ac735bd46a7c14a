#!/usr/bin/env python3
"""Writes imgproxy-urls.json: signed URLs made by the PyPI package `imgproxy` (1.0.0), an
imgproxy URL builder this project did not write, for ImageServiceTests to decode and verify.

    python3 -m venv /tmp/imgproxy-venv && /tmp/imgproxy-venv/bin/pip install imgproxy==1.0.0
    /tmp/imgproxy-venv/bin/python Tests/ImageServiceTests/Fixtures/make-imgproxy-urls.py

Each case keeps what the builder was given, so the test checks the decoded plan against it.
"""
import json
import os

from imgproxy import ImgProxy, __version__

KEY = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
SALT = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
HOST = "https://img.example.com"

SOURCES = [
    "https://example.com/images/curiosity.jpg",
    "http://example.com/a.png?x=1&y=2#top",
    "https://example.com/ünïcode/emoji-🎨.png",
    "local:///art/7.png",
    "s3://bucket/path with spaces/key@2x.webp",
]

# (builder fields, extra "advanced" options)
COMBINATIONS = [
    (dict(), []),
    (dict(resizing_type="fill", width=300, height=400, gravity="sm", extension="png"), []),
    (dict(resizing_type="fit", width=100, height=0, enlarge=True), ["q:80"]),
    (dict(resizing_type="auto", width=0, height=250, gravity="no:10:20", extension="webp"), ["dpr:2"]),
    (dict(resizing_type="fill", width=64, height=64, gravity="fp:0.5:0.25", extension="jpg"), ["quality:55", "format:avif"]),
    (dict(width=1920, height=1080, gravity="soea"), ["bg:255:0:0", "bl:2", "sh:0.5", "rot:90", "ar:1", "sm:1"]),
    (dict(width=10, height=10, extension="gif"), ["cb:v2", "exp:4102444800", "fn:cat"]),
    (dict(resizing_type="fit", width=500, height=500), ["c:100:200:nowe", "ex:1:so:5:5"]),
]


def main():
    cases = []
    for index, source in enumerate(SOURCES):
        for fields, advanced in COMBINATIONS:
            builder = ImgProxy(source, proxy_host=HOST, key=KEY, salt=SALT, advanced=advanced, **fields)
            cases.append(dict(
                url=str(builder),
                source=source,
                resizing_type=builder.resizing_type,
                width=builder.width,
                height=builder.height,
                gravity=builder.gravity,
                enlarge=builder.enlarge,
                extension=builder.extension,
                advanced=list(advanced),
            ))
    out = dict(
        generator=f"PyPI imgproxy {__version__} (make-imgproxy-urls.py)",
        key=KEY,
        salt=SALT,
        host=HOST,
        cases=cases,
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "imgproxy-urls.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(out, file, indent=2, ensure_ascii=False)
        file.write("\n")


if __name__ == "__main__":
    main()
