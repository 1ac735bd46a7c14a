"""The EmojiArt web UI in a real headless Chromium, against real gallery and app processes."""
import http.server
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, os.environ.get("EMOJIART_BINARY", ".build/debug/emojiart"))
ARTIFACTS = os.path.join(ROOT, ".build-browser")
# The gallery's signing key and the app's trusted keys live here, never in the user's data directory.
DATA_HOME = tempfile.mkdtemp(prefix="emojiart-browser-data-")


def start(args, pattern):
    """Starts `emojiart ARGS` and waits for the line announcing its URL.

    Its output is read until it exits, by a thread of its own, so a full pipe never blocks it, and kept for messages.
    """
    process = subprocess.Popen([BINARY, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "VIPS_WARNING": "0", "XDG_DATA_HOME": DATA_HOME})
    process.output = []
    announced = queue.Queue()

    def read():
        for line in process.stdout:
            process.output.append(line)
            match = re.search(pattern, line)
            if match:
                announced.put(match.group(1))
        announced.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        url = announced.get(timeout=120)
    except queue.Empty:
        url = None
    if url is None:
        process.kill()
        raise RuntimeError("emojiart %s never announced its URL:\n%s" % (" ".join(args), "".join(process.output)))
    return process, url


def stop(process):
    """Ctrl-C, as a person would; the process must exit cleanly and soon."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        stacks = thread_stacks(process.pid)
        process.kill()
        raise AssertionError("emojiart did not stop within 20 s of SIGINT; its last lines:\n%s\nits threads:\n%s"
                             % ("".join(process.output[-30:]), stacks))


def thread_stacks(pid):
    """Every thread's backtrace of a hung process, through gdb when it is installed: what a hang report needs."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "(gdb is not installed)"
    try:
        result = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt 25"],
                                capture_output=True, text=True, timeout=120)
        return result.stdout[-20000:]
    except subprocess.TimeoutExpired:
        return "(gdb did not finish)"


@pytest.fixture(scope="module")
def browser():
    """Started first, so that Chromium's first start (slow on a new machine) is over before the app exists."""
    driver = chromium()
    yield driver
    driver.quit()


def chromium(*extra, size=(1280, 1000)):
    """Headless Chromium, `size` (1280 x 1000 by default), with `extra` arguments (such as a device scale factor)."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=%d,%d" % size, *extra]:
        options.add_argument(argument)
    # The console's messages, read by csp_violations (the pages' policy allows no inline script or style), and the
    # network's, read by image_responses.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    return driver


def image_responses(driver):
    """{url: MIME type} of the image answers the browser received since the last call (reading drains the log)."""
    types = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.responseReceived":
            response = message["params"]["response"]
            if "/thumbs/" in response["url"] or "/large/" in response["url"]:
                types[response["url"]] = response["mimeType"]
    return types


def csp_violations(driver):
    """The Content-Security-Policy violations the console reported since the last call (reading drains the log)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if "Content Security Policy" in entry["message"] or "Content-Security-Policy" in entry["message"]]


class Gallery:
    """A gallery started with --hold-images: no image leaves it until the test says so."""

    def __init__(self, url):
        self.url = url

    def control(self, path):
        request = urllib.request.Request(self.url + "/gallery/test/" + path, method="POST" if path != "gate" else "GET")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def release(self, count):
        return self.control("release?count=%d" % count)

    def open(self):
        return self.control("open")


@pytest.fixture(scope="module")
def servers(browser):
    cache = tempfile.mkdtemp(prefix="emojiart-browser-")
    gallery, gallery_url = start(["gallery", "--port", "0", "--hold-images"], r"serving (http://\S+)/gallery/images")
    try:
        app, url = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", cache, "--concurrency", "4"],
                         r"EmojiArt: open (http://\S+)")
    except BaseException:
        gallery.kill()
        raise
    # The app prints its URL with the path "/": the tests add paths that start with "/", and "//events"
    # is no spelling of "/events" (404).
    yield url.rstrip("/"), Gallery(gallery_url)
    stop_both(app, gallery, cache, DATA_HOME)


def stop_both(app, gallery, *directories):
    """Stops the app and the gallery, each whatever happens to the other (a failed run leaves no process behind),
    then removes `directories`."""
    try:
        assert stop(app) == 0
    finally:
        try:
            assert stop(gallery) == 0
        finally:
            for directory in directories:
                shutil.rmtree(directory, ignore_errors=True)


def counter(driver, name):
    return int(driver.find_element(By.ID, name).text)


def wait_for_catalog(driver):
    """Waits for the 87 cards and for every thumbnail to finish loading (or fail). Thumbnails below the first
    screen load lazily, when scrolled near: the page is scrolled to its end, as a person looking at it all does."""
    WebDriverWait(driver, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#catalog .card")) == 87)
    # Each look brings the first thumbnail not loaded yet into view.
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("""
        const waiting = Array.from(document.querySelectorAll('#catalog img')).find(i => !i.complete);
        if (!waiting) return true;
        waiting.scrollIntoView({block: 'center'});
        return false;"""))
    driver.execute_script("window.scrollTo(0, 0)")


def press(driver, button_id):
    """Presses a toolbar button (a form that posts, then redirects back) and waits for the new page's catalog."""
    button = driver.find_element(By.ID, button_id)
    button.click()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(button))
    wait_for_catalog(driver)


def shown_thumbnails(driver):
    """[URL, natural width, natural height] of every catalog thumbnail that loaded."""
    return driver.execute_script("""
        return Array.from(document.querySelectorAll('#catalog img')).filter(i => i.naturalWidth > 0)
            .map(i => [i.currentSrc, i.naturalWidth, i.naturalHeight]);""")


def loaded_thumbnails(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#catalog img')).filter(i => i.complete && i.naturalWidth > 0).length")


# Records every count the loading page shows, in the page itself, so no update is missed
# between two looks; kept in sessionStorage because the page reloads into the catalog when done.
RECORD_PROGRESS = """
const bar = document.getElementById('progress');
const record = () => {
  const seen = JSON.parse(sessionStorage.getItem('seen') || '[]');
  seen.push([bar.value, bar.max]);
  sessionStorage.setItem('seen', JSON.stringify(seen));
};
new MutationObserver(record).observe(document.getElementById('completed'), {childList: true, characterData: true, subtree: true});
record();
"""


def shown(driver):
    """The loading page's bar as [value, max], or None once the page is not the loading page."""
    return driver.execute_script("const p = document.getElementById('progress'); return p ? [p.value, p.max] : null;")


def test_progress_then_catalog_then_details_then_caches(servers, browser):
    app_url, gallery = servers
    browser.get(app_url)

    # 1. The loading page's progress bar moves live and reaches 100 %. The gallery holds every image, so the bar
    #    starts at 0 of 87 whatever the machine's speed, and moves only as the test lets images out.
    WebDriverWait(browser, 60).until(lambda d: shown(d) == [0, 87])
    browser.execute_script(RECORD_PROGRESS)
    assert gallery.control("gate")["passed"] == 0
    gallery.release(2)
    WebDriverWait(browser, 60).until(lambda d: (shown(d) or [0])[0] > 0)
    first = shown(browser)[0]
    assert 0 < first < 87, "2 of 29 images let out, yet the bar shows %s of 87" % first
    gallery.release(10)
    WebDriverWait(browser, 60).until(lambda d: (shown(d) or [0])[0] > first)
    second = shown(browser)[0]
    assert first < second < 87, "12 of 29 images let out, yet the bar shows %s of 87" % second
    gallery.open()
    WebDriverWait(browser, 120).until(lambda d: d.find_elements(By.ID, "catalog"))
    seen = browser.execute_script("return JSON.parse(sessionStorage.getItem('seen') || '[]')")
    values = [value for value, _ in seen]
    assert values[0] == 0 and all(maximum == 87 for _, maximum in seen), seen[:10]
    assert any(0 < value < 87 for value in values), "the bar never moved between 0 and done: %s" % values
    assert values == sorted(values), "the bar went backwards: %s" % values
    assert values[-1] == 87, "the bar ended at %s, not 87 of 87" % values[-1]

    # 2. The catalog: 87 cards, 78 thumbnails really loaded, 9 placeholders; those below the first screen only
    #    once scrolled near.
    WebDriverWait(browser, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#catalog .card")) == 87)
    WebDriverWait(browser, 60).until(lambda d: d.execute_script(
        "return Array.from(document.querySelectorAll('#catalog img:not([loading=lazy])')).every(i => i.complete)"))
    assert loaded_thumbnails(browser) < 78, "the last rows wait until scrolled to"
    wait_for_catalog(browser)
    assert loaded_thumbnails(browser) == 78
    assert len(browser.find_elements(By.CSS_SELECTOR, "#catalog .card [data-placeholder]")) == 9
    assert "78 verified" in browser.find_element(By.ID, "summary").text
    assert re.match(r"^\$[\d,]+\.\d\d$", browser.find_element(By.CSS_SELECTOR, ".card .price").text)
    os.makedirs(ARTIFACTS, exist_ok=True)
    browser.save_screenshot(os.path.join(ARTIFACTS, "list.png"))
    assert csp_violations(browser) == [], "the loading page and the catalog ran under their policy"

    # The page came compressed (several times smaller on the wire than unpacked; the stylesheet is
    # a 304 by now, and its size is not shown); the thumbnails as they are.
    sizes = browser.execute_script("""
        const page = performance.getEntriesByType('navigation')[0];
        const images = performance.getEntriesByType('resource').filter(e => e.name.includes('/thumbs/') && e.decodedBodySize > 0);
        return [page.encodedBodySize, page.decodedBodySize, images.length, images.every(e => e.encodedBodySize === e.decodedBodySize)];""")
    page_wire, page_size, images, images_plain = sizes
    assert 0 < page_wire * 4 < page_size, "the page: %s bytes on the wire for %s" % (page_wire, page_size)
    assert images > 0 and images_plain, "thumbnails are sent as they are"

    # A thumbnail that fails to load gives way to the placeholder (the served script's doing, not an inline handler).
    browser.execute_script("""
        const box = document.querySelector('#catalog .thumb');
        box.innerHTML = '<img src="/thumbs/9999" alt="gone" data-fallback="parent">';
        box.id = 'broken';""")
    WebDriverWait(browser, 30).until(lambda d: not d.find_elements(By.ID, "broken"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#catalog .card [data-placeholder]")) == 10

    # 3. A details page opens with the larger image.
    card = browser.find_element(By.CSS_SELECTOR, "#catalog .card[data-status='verified']")
    name = card.find_element(By.CSS_SELECTOR, ".name").text
    card.click()
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(
        "const i = document.getElementById('large'); return i && i.complete && i.naturalWidth > 0"))
    assert browser.find_element(By.ID, "name").text == name
    assert browser.execute_script("return document.getElementById('large').naturalHeight") == 600
    browser.save_screenshot(os.path.join(ARTIFACTS, "details.png"))
    assert csp_violations(browser) == []
    browser.get(app_url)
    wait_for_catalog(browser)

    # 4. Clear memory cache, then reload: thumbnails come from disk. The background encoder is done first: still at
    #    work, it would fill memory again after the clear (a busy machine showed it), and the reload would not read disk.
    wait_until_no_background_encodes(app_url)
    disk_before = counter(browser, "disk-hits")
    press(browser, "clear-memory")
    browser.refresh()
    wait_for_catalog(browser)
    WebDriverWait(browser, 30).until(lambda d: counter(d, "disk-hits") >= disk_before + 26)
    assert loaded_thumbnails(browser) == 78

    # 5. Clear disk cache (and memory, which would otherwise answer), then reload: the gallery is asked again.
    origin_before = counter(browser, "origin-fetches")
    press(browser, "clear-disk")
    press(browser, "clear-memory")
    browser.refresh()
    wait_for_catalog(browser)
    WebDriverWait(browser, 30).until(lambda d: counter(d, "origin-fetches") >= origin_before + 26)
    assert loaded_thumbnails(browser) == 78
    assert csp_violations(browser) == [], "the clear buttons and the live counters ran under the policy"


class AttackerPage(http.server.BaseHTTPRequestHandler):
    """A page of another site: it posts a hidden form to the app as soon as it loads."""
    target = None

    def do_GET(self):
        body = ("<!DOCTYPE html><html><body><form id='f' method='post' action='%s/cache/clear-disk'></form>"
                "<script>document.getElementById('f').submit();</script></body></html>" % AttackerPage.target).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def app_json(app_url, path):
    with urllib.request.urlopen(app_url + path, timeout=30) as response:
        return response.read().decode()


def test_a_page_of_another_site_cannot_clear_the_caches(servers, browser):
    """localhost is another site than 127.0.0.1: its page's form reaches the app, which refuses it."""
    app_url, gallery = servers
    gallery.open()
    browser.get(app_url)
    wait_for_catalog(browser)
    before = json.loads(app_json(app_url, "/stats"))
    assert before["diskEntries"] > 0
    csp_violations(browser)

    AttackerPage.target = app_url.rstrip("/")
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AttackerPage)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        browser.get("http://localhost:%d/" % attacker.server_address[1])
        WebDriverWait(browser, 30).until(lambda d: d.current_url.startswith(AttackerPage.target + "/cache/clear-disk"))
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "message"))
    finally:
        attacker.shutdown()
        attacker.server_close()
    assert "this request came from another site" in browser.page_source
    # The disk cache is untouched (prefetches of the details images may still add to it, never take away) and the
    # refusal is counted.
    after = json.loads(app_json(app_url, "/stats"))
    assert after["diskEntries"] >= before["diskEntries"], (before, after)
    assert 'emojiart_refused_requests_total{reason="cross_site"} 1' in app_json(app_url, "/metrics")
    assert csp_violations(browser) == [], "the refusal page runs under the policy too"
    browser.save_screenshot(os.path.join(ARTIFACTS, "refused.png"))

    # The app's own button still clears it.
    browser.get(app_url)
    wait_for_catalog(browser)
    press(browser, "clear-disk")
    assert json.loads(app_json(app_url, "/stats"))["diskEntries"] < before["diskEntries"]


def wait_until_no_background_encodes(app_url, seconds=120):
    """Follows the app's /events until its counts say no variant is left to make in the background (the stream starts
    with the counts now, and a stand-in is sent after its better format is listed). The encoder reads what it makes
    from without counting a hit and puts it in memory. Fails after `seconds` in all: the stream's heartbeat (a comment
    every 15 s) would keep a per-read time-out from ever firing."""
    deadline = time.monotonic() + seconds
    with urllib.request.urlopen(app_url + "/events", timeout=30) as stream:
        for line in stream:
            if line.startswith(b"data: ") and b'"backgroundEncodes":0' in line:
                return
            if time.monotonic() > deadline:
                break
    raise AssertionError("variants were still left to make in the background after %s s" % seconds)


def test_on_a_2x_screen_every_thumbnail_is_sharp_and_compact(servers):
    """At device pixel ratio 2 the browser takes each thumbnail's 2x variant (a 400 px box). Naming AVIF and WebP in
    its Accept, it gets the PNG at once on the first view of a variant not made yet (never slower than a PNG-only app),
    while the AVIF is made in the background, and the AVIF from then on."""
    app_url, gallery = servers
    gallery.open()
    driver = chromium("--force-device-scale-factor=2")
    try:
        for view, expected in [("first", {"image/png", "image/avif", "image/webp"}), ("next", {"image/avif"})]:
            driver.get(app_url)
            wait_for_catalog(driver)
            shown = shown_thumbnails(driver)
            assert len(shown) == 78
            for url, width, height in shown:
                # A 2x image's natural size is given in CSS pixels: half its pixels on each side.
                assert "/thumbs/2x/" in url and height * 2 == 400 and 200 < width * 2 <= 224, (view, url, width, height)
            types = image_responses(driver)
            urls = {url for url, _, _ in shown}  # 26 pieces, each shown 3 times
            received = {url: types[url] for url in urls if url in types}
            assert len(urls) == 26 and len(received) == 26, "%s view: every thumbnail's answer was seen: %s of %s" % (
                view, len(received), len(urls))
            assert set(received.values()) <= expected, (view, set(received.values()))
            if view == "first":
                # Nothing was made at 2x before: the first answers are the PNG stand-ins.
                assert "image/png" in received.values(), set(received.values())
                wait_until_no_background_encodes(app_url)
        driver.save_screenshot(os.path.join(ARTIFACTS, "list-2x.png"))
    finally:
        driver.quit()


def wait_for_warm_up(app_url, seconds=60):
    """Follows the app's /events until its counts say the warm-up ended (a 60 s deadline in all, not a clock): the
    stream starts with the counts now. Returns the warm-up's progress."""
    deadline = time.monotonic() + seconds
    with urllib.request.urlopen(app_url + "/events", timeout=30) as stream:
        for line in stream:
            if line.startswith(b"data: "):
                warm_up = json.loads(line[6:]).get("warmUp", {})
                if warm_up.get("state") in ("done", "stopped", "cancelled"):
                    return warm_up
            if time.monotonic() > deadline:
                break
    raise AssertionError("the warm-up had not ended %s s after the app started" % seconds)


@pytest.fixture(scope="module")
def warmed(browser):
    """A fresh gallery and app (a cache of its own, nothing held), after the app's warm-up ended."""
    cache = tempfile.mkdtemp(prefix="emojiart-browser-warm-")
    gallery, gallery_url = start(["gallery", "--port", "0"], r"serving (http://\S+)/gallery/images")
    try:
        app, url = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", cache], r"EmojiArt: open (http://\S+)")
    except BaseException:
        gallery.kill()
        raise
    app_url = url.rstrip("/")
    try:
        warm_up = wait_for_warm_up(app_url)
        yield app_url, warm_up
    finally:
        stop_both(app, gallery, cache)


PHONE = (400, 850)


@pytest.mark.parametrize("size,scale", [((1400, 1000), 1), ((1400, 1000), 2), (PHONE, 1), (PHONE, 2), (PHONE, 3)])
def test_a_first_visit_after_the_warm_up_gets_avif_at_its_density(warmed, size, scale):
    """A first visit (a new browser, nothing cached) after the warm-up's end gets every thumbnail in AVIF at once, at
    its density (the 2x variants at DPR 2 and 3: there is no 3x variant), answered from the app's memory; on a phone
    the page fits the window, two cards a row, the counters on one line and the clear buttons within reach."""
    app_url, warm_up = warmed
    assert warm_up["state"] == "done" and warm_up["made"] == warm_up["total"] > 0, warm_up
    before = json.loads(app_json(app_url, "/stats"))
    if size == PHONE:
        # A phone, as DevTools emulates one: headless Chromium's windows are at least 500 px wide.
        driver = chromium()
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": scale, "mobile": True})
    else:
        driver = chromium("--force-device-scale-factor=%d" % scale, size=size)
    try:
        driver.get(app_url)
        wait_for_catalog(driver)
        shown = shown_thumbnails(driver)
        assert len(shown) == 78
        for url, width, height in shown:
            if scale == 1:
                assert "/thumbs/2x/" not in url and height == 200, (url, width, height)
            else:
                # A 2x image's natural size is given in CSS pixels: half its pixels on each side.
                assert "/thumbs/2x/" in url and height * 2 == 400, (url, width, height)
        types = image_responses(driver)
        urls = {url for url, _, _ in shown}
        received = {url: types[url] for url in urls if url in types}
        assert len(urls) == 26 and len(received) == 26, (len(received), len(urls))
        assert set(received.values()) == {"image/avif"}, "the first load: %s" % set(received.values())
        after = json.loads(app_json(app_url, "/stats"))
        assert after["memoryHits"] >= before["memoryHits"] + 26, "answered from memory: %s then %s" % (
            before["memoryHits"], after["memoryHits"])
        assert after["backgroundEncodes"] == 0, "no stand-in, so nothing to make in the background"
        if size == PHONE:
            layout = driver.execute_script("""
                const cards = Array.from(document.querySelectorAll('#catalog .card')).slice(0, 3).map(c => c.getBoundingClientRect());
                const counters = Array.from(document.querySelectorAll('.counters > span')).map(s => s.getBoundingClientRect().top);
                const buttons = ['clear-memory', 'clear-disk'].map(id => document.getElementById(id).getBoundingClientRect());
                return {
                    pageWidth: document.documentElement.scrollWidth, window: window.innerWidth,
                    row: [cards[0].top === cards[1].top, cards[2].top > cards[0].top],
                    artFill: Array.from(document.querySelectorAll('#catalog .thumb')).slice(0, 4).map(box => {
                        const [outer, art] = [box.getBoundingClientRect(), box.querySelector('img').getBoundingClientRect()];
                        return Math.max(art.width / outer.width, art.height / outer.height);
                    }),
                    counterLines: new Set(counters.map(Math.round)).size,
                    buttons: buttons.map(b => b.left >= 0 && b.right <= window.innerWidth && b.height > 0),
                };""")
            assert layout["window"] == PHONE[0], layout
            assert layout["pageWidth"] <= layout["window"], "no horizontal scroll: %s" % layout
            assert layout["row"] == [True, True], "two cards a row: %s" % layout
            assert all(fill > 0.8 for fill in layout["artFill"]), "the art fills its box: %s" % layout
            assert layout["counterLines"] == 1, "the counters on one line: %s" % layout
            assert layout["buttons"] == [True, True], "the clear buttons within reach: %s" % layout
            driver.save_screenshot(os.path.join(ARTIFACTS, "phone-%dx.png" % scale))
        assert csp_violations(driver) == []
    finally:
        driver.quit()
