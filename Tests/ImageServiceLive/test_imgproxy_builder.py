"""The image service as an imgproxy user meets it: URLs made by an imgproxy URL builder this project
did not write (`imgproxy` on PyPI), real photographs (scikit-image's, scripts/photos) served by a
real origin on 127.0.0.1, `emojiart images serve` as a person starts it, and the answers read by
Pillow, not by our own code.
"""
import functools
import http.server
import io
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from imgproxy import ImgProxy
from PIL import Image

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("EMOJIART_BINARY", os.path.join(ROOT, ".build", "debug", "emojiart"))
PHOTOS = os.path.join(ROOT, ".build-photos")
KEY = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
SALT = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"


@pytest.fixture(scope="module")
def origin():
    """The photographs over HTTP on 127.0.0.1, as any web server sends files."""
    if not os.path.isfile(os.path.join(PHOTOS, "chelsea.png")):
        pytest.fail("no photographs in .build-photos: run scripts/photos (make test does)")
    handler = functools.partial(QuietHandler, directory=PHOTOS)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def service(origin, tmp_path_factory):
    """`emojiart images serve` on a free port, the origin allowed by name (loopback too)."""
    key_file = tmp_path_factory.mktemp("key") / "imgproxy.env"
    key_file.write_text("IMGPROXY_KEY=%s\nIMGPROXY_SALT=%s\n" % (KEY, SALT))
    os.chmod(key_file, 0o600)
    process = subprocess.Popen(
        [BINARY, "images", "serve", "--port", "0", "--key-file", str(key_file), "--allowed-source", origin + "/",
         "--allow-loopback-sources", "--cache-dir", str(tmp_path_factory.mktemp("cache"))],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ, VIPS_WARNING="0"),
    )
    base = None
    lines = []
    for line in process.stdout:
        lines.append(line)
        match = re.search(r"image service: open (http://127\.0\.0\.1:\d+)/", line)
        if match:
            base = match.group(1)
            break
    if base is None:
        process.kill()
        pytest.fail("the service did not start: %r" % lines)
    yield base
    process.terminate()
    process.wait(timeout=30)


def get(url, accept=None):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


# (photo, builder fields, advanced options, expected size, expected format)
CASES = [
    ("chelsea.png", dict(resizing_type="fit", width=300, height=300), [], (300, 200), "PNG"),
    ("coffee.png", dict(resizing_type="fill", width=200, height=200, gravity="sm"), [], (200, 200), "PNG"),
    ("rocket.jpg", dict(resizing_type="fit", width=300, height=0), ["dpr:2"], (600, 400), "JPEG"),
    ("astronaut.png", dict(resizing_type="fill", width=128, height=96, extension="jpg"), ["q:70"], (128, 96), "JPEG"),
    ("hubble_deep_field.jpg", dict(resizing_type="fit", width=100, height=100, extension="webp"), [], (100, 87), "WEBP"),
    ("camera.png", dict(resizing_type="auto", width=64, height=64, enlarge=True), ["bl:1"], (64, 64), "PNG"),
    ("motorcycle_left.png", dict(resizing_type="fit", width=2000, height=2000), [], (741, 500), "PNG"),
]


@pytest.mark.parametrize("photo,fields,advanced,size,form", CASES, ids=[case[0] for case in CASES])
def test_a_url_the_builder_made_gets_the_photo_processed(service, origin, photo, fields, advanced, size, form):
    url = str(ImgProxy(origin + "/" + photo, proxy_host=service, key=KEY, salt=SALT, advanced=advanced, **fields))
    status, headers, body = get(url)
    assert status == 200, body[:300]
    image = Image.open(io.BytesIO(body))
    assert image.format == form
    assert image.size == size
    assert headers["Cache-Control"].startswith("public, max-age=")
    assert headers["ETag"].startswith('"')


def test_webp_by_accept_and_the_same_answer_the_second_time(service, origin):
    url = str(ImgProxy(origin + "/chelsea.png", proxy_host=service, key=KEY, salt=SALT, resizing_type="fit", width=120, height=120))
    status, headers, body = get(url, accept="image/webp,*/*")
    assert status == 200 and headers["Content-Type"] == "image/webp" and headers["Vary"] == "Accept"
    assert Image.open(io.BytesIO(body)).format == "WEBP"
    again = get(url, accept="image/webp,*/*")
    assert again[0] == 200 and again[2] == body and again[1]["ETag"] == headers["ETag"]


def test_a_url_signed_with_another_key_is_refused(service, origin):
    url = str(ImgProxy(origin + "/chelsea.png", proxy_host=service, key="00" * 32, salt=SALT, width=50, height=50))
    status, headers, body = get(url)
    assert status == 403
    assert headers["Content-Type"].startswith("text/plain") and b"sign" in body


def test_a_source_not_allowed_is_refused(service):
    url = str(ImgProxy("http://169.254.169.254/latest/meta-data/", proxy_host=service, key=KEY, salt=SALT, width=50, height=50))
    status, _, body = get(url)
    assert status in (403, 404), body
    assert b"meta-data" not in body or b"allowed" in body
