"""The network bench: the catalog in real Chromium over emulated networks, today's answers (PNG only, text not
compressed) against the new ones (AVIF/WebP by Accept, compressed pages), direct and through `emojiart cluster --tls`
(nginx with TLS and HTTP/2), at device pixel ratio 1 and 2.

Run by `emojiart-bench --only network` (make bench ARGS="--only network"), which passes the release binary.
For each row: the app is warmed (the catalog loaded, the app's background encodes waited for, loaded again: every
thumbnail made in its best format), then the browser, with its cache
off, opens the catalog in a 1400 x 1000 window: the time until every thumbnail of the first screen has arrived
(the latest responseEnd among them, from the page's start; the median of three loads), then the bytes moved (every response's encoded length,
headers included) once scrolled to the end.

DevTools' network emulation adds its latency to each request and shapes throughput; it adds no TCP or TLS handshake
round trips, so a real network's first connections cost more than shown here, and HTTP/2's one connection gains more.
"""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request


from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BINARY = sys.argv[1]
# --cold-only: only the first requests of cold pieces (no browser), to measure that alone.
COLD_ONLY = "--cold-only" in sys.argv[2:]
NETWORKS = [("loopback", 0, 0), ("40 ms, 20 Mbit/s", 40, 20_000_000), ("100 ms, 5 Mbit/s", 100, 5_000_000)]
CHROMIUM_ACCEPT_NOTE = "Chromium's Accept names AVIF and WebP"
CHROMIUM_ACCEPT = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
WEBP_ONLY_ACCEPT = "image/webp,*/*"


def start(args, pattern):
    """Starts `emojiart ARGS` and returns (process, every line printed until PATTERN matched, the match)."""
    process = subprocess.Popen([BINARY] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=dict(os.environ, VIPS_WARNING="0"))
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        match = re.search(pattern, line)
        if match:
            # Read on, or a full pipe would stop the process at its next log line.
            threading.Thread(target=lambda: [lines.append(rest.rstrip("\n")) for rest in process.stdout], daemon=True).start()
            return process, lines, match
    raise RuntimeError("emojiart %s did not start: %s" % (" ".join(args), lines[-5:]))


def stop(process):
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def chromium(dpr, extra=()):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1000",
                     "--force-device-scale-factor=%d" % dpr, *extra]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(120)
    return driver


def load_catalog(driver, url):
    """Opens the catalog and waits until every thumbnail arrived, scrolling to each one not loaded yet."""
    driver.get(url)
    try:
        WebDriverWait(driver, 120).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#catalog .card")) > 0)
    except Exception:
        raise RuntimeError("no catalog at %s: %s %s" % (url, driver.title, re.sub(r"\s+", " ", driver.page_source)[-1500:]))
    WebDriverWait(driver, 300).until(lambda d: d.execute_script("""
        const waiting = Array.from(document.querySelectorAll('#catalog img')).find(i => !i.complete);
        if (!waiting) return true;
        waiting.scrollIntoView({block: 'center'});
        return false;"""))


def first_screen_time(driver):
    """Seconds from the page's start until the last first-screen thumbnail's response ended."""
    return driver.execute_script("""
        const shown = Array.from(document.querySelectorAll('#catalog img'))
            .filter(i => i.getBoundingClientRect().top < window.innerHeight).map(i => i.currentSrc);
        const ends = performance.getEntriesByType('resource').filter(e => shown.includes(e.name)).map(e => e.responseEnd);
        return ends.length ? Math.max(...ends) / 1000 : null;""")


def wait_until_no_background_encodes(app_urls):
    """Follows each app's /events until its counts say no variant is left to make in the background."""
    for app_url in app_urls:
        with urllib.request.urlopen(app_url + "/events", timeout=120) as stream:
            for line in stream:
                if line.startswith(b"data: ") and b'"backgroundEncodes":0' in line:
                    break


def measure(url, dpr, network, apps, extra=()):
    _, latency, throughput = network
    driver = chromium(dpr, extra)
    try:
        # Warm: every variant this browser asks for is made (the first load gets PNGs at once and has the AVIFs made
        # in the background), and an edge in front holds each.
        load_catalog(driver, url)
        wait_until_no_background_encodes(apps)
        load_catalog(driver, url)
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        if latency:
            driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": False, "latency": latency, "downloadThroughput": throughput / 8, "uploadThroughput": throughput / 8})
        # The first screen three times (the median: one load on loopback takes a tenth of a second, and this machine
        # is shared), then the bytes of the last load, scrolled to the end.
        firsts = []
        for _ in range(3):
            driver.get_log("performance")
            driver.get("about:blank")
            WebDriverWait(driver, 120).until(lambda d: d.execute_script("return document.readyState") == "complete")
            driver.get(url)
            WebDriverWait(driver, 120).until(lambda d: d.execute_script(
                "return Array.from(document.querySelectorAll('#catalog img'))"
                ".filter(i => i.getBoundingClientRect().top < window.innerHeight).every(i => i.complete)"))
            firsts.append(first_screen_time(driver))
        first = median(firsts)
        load_catalog(driver, url)
        moved = 0
        protocols = set()
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.loadingFinished":
                moved += message["params"].get("encodedDataLength", 0)
            elif message.get("method") == "Network.responseReceived":
                protocols.add(message["params"]["response"].get("protocol", "?"))
        protocols.discard("?")
        return first, moved, "/".join(sorted(protocols))
    finally:
        driver.quit()


class Client:
    """One keep-alive HTTP/1.1 connection to the app, as a browser keeps one."""

    def __init__(self, url):
        parsed = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)

    def get(self, path, accept=None):
        self.connection.request("GET", path, headers={"Accept": accept} if accept else {})
        response = self.connection.getresponse()
        body = response.read()
        return response.status, response.getheader("Content-Type"), body

    def idle(self):
        """Whether the app runs and queues no processing and no disk write (its background encodes done)."""
        _, _, body = self.get("/stats")
        stats = json.loads(body)
        scheduling = stats["scheduling"]
        return stats.get("backgroundEncodes", 0) == 0 and all(
            scheduling[stage]["running"] == 0 and scheduling[stage]["queued"] == 0 for stage in ("processing", "diskWrites", "downloads"))


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


# The first visit as the issue that asked for the warm-up measured it (a fresh app at `ready`, PNG stand-ins, loopback).
FIRST_VISIT_BEFORE = {1: 354_000, 2: 812_000}
FIRST_VISIT_NETWORK = NETWORKS[2]


def wait_until_ready(client):
    while json.loads(client.get("/health")[2])["phase"] != "ready":
        time.sleep(0.02)


def wait_for_warm_up(client):
    """The warm-up's progress once it ended."""
    while True:
        warm_up = json.loads(client.get("/stats")[2])["warmUp"]
        if warm_up["state"] not in ("idle", "running"):
            return warm_up
        time.sleep(0.05)


def visit_once(url, dpr, network, extra=()):
    """A first visit: a new browser, its cache off, on `network`: (first screen, bytes moved scrolled to the end)."""
    _, latency, throughput = network
    driver = chromium(dpr, extra)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        if latency:
            driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": False, "latency": latency, "downloadThroughput": throughput / 8, "uploadThroughput": throughput / 8})
        driver.get(url)
        WebDriverWait(driver, 120).until(lambda d: d.execute_script(
            "return Array.from(document.querySelectorAll('#catalog img'))"
            ".filter(i => i.getBoundingClientRect().top < window.innerHeight).every(i => i.complete)"))
        first = first_screen_time(driver)
        WebDriverWait(driver, 300).until(lambda d: d.execute_script("""
            const waiting = Array.from(document.querySelectorAll('#catalog img')).find(i => !i.complete);
            if (!waiting) return true;
            waiting.scrollIntoView({block: 'center'});
            return false;"""))
        moved = sum(json.loads(entry["message"])["message"]["params"].get("encodedDataLength", 0)
                    for entry in driver.get_log("performance")
                    if json.loads(entry["message"])["message"].get("method") == "Network.loadingFinished")
        return first, moved
    finally:
        driver.quit()


def first_visit_direct(gallery_url, data, dpr, after_warm_up):
    """A new app (a cache of its own) visited once at `ready`, or once its warm-up ended: (first screen, bytes,
    the warm-up's seconds)."""
    app, _, match = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", tempfile.mkdtemp(dir=data),
                           "--http-cache", "immutable"], r"EmojiArt: open (http://\S+)")
    try:
        client = Client(match.group(1))
        wait_until_ready(client)
        warm_up = wait_for_warm_up(client) if after_warm_up else None
        first, moved = visit_once(match.group(1), dpr, FIRST_VISIT_NETWORK)
        return first, moved, (wait_for_warm_up(client) if warm_up is None else warm_up)["seconds"]
    finally:
        stop(app)


def first_visit_edge(data, dpr, after_warm_up):
    """A new `emojiart cluster --tls` (two instances, nginx's cache empty) visited once, likewise."""
    cluster, lines, _ = start(["cluster", "--port", "0", "--instances", "2", "--tls"], r"cluster: nginx pid")
    try:
        match = next(found for found in (re.search(r"cluster: open (https://\S+) .*spki-list=([A-Za-z0-9+/=]+)", line)
                                         for line in lines) if found)
        clients = [Client(found.group(1)) for found in (re.search(r"cluster: instance \d+: (http://\S+)", line) for line in lines) if found]
        for client in clients:
            wait_until_ready(client)
        warm_ups = [wait_for_warm_up(client) for client in clients] if after_warm_up else None
        first, moved = visit_once(match.group(1), dpr, FIRST_VISIT_NETWORK, ("--ignore-certificate-errors-spki-list=" + match.group(2),))
        warm_ups = warm_ups or [wait_for_warm_up(client) for client in clients]
        return first, moved, max(w["seconds"] for w in warm_ups)
    finally:
        stop(cluster)


def first_visit_section(gallery_url, data, warm):
    print("\n### A first visit (%s)\n" % FIRST_VISIT_NETWORK[0])
    print("| DPR | answers | visited | first screen | vs the warm page | bytes, scrolled | vs the warm page | vs the first visit before | warm-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dpr in [1, 2]:
        for name, warm_name, visit, rounds in [("new, direct", "new, direct", first_visit_direct, 3),
                                               ("new, edge (TLS, HTTP/2)", "new, edge (TLS, HTTP/2)", None, 1)]:
            for after in (False, True):
                samples = []
                for _ in range(rounds):
                    samples.append(visit(gallery_url, data, dpr, after) if visit else first_visit_edge(data, dpr, after))
                first = median([f for f, _, _ in samples])
                moved = median([m for _, m, _ in samples])
                seconds = max(w or 0 for _, _, w in samples)
                warm_first, warm_moved = warm[(dpr, warm_name, FIRST_VISIT_NETWORK[0])]
                print("| %d | %s | %s | %.2f s | %.2fx | %d KB | %.2fx | %.2fx | ends %.1f s after ready |" % (
                    dpr, name, "after the warm-up" if after else "at ready", first, first / warm_first, moved // 1000,
                    moved / warm_moved, moved / FIRST_VISIT_BEFORE[dpr], seconds), flush=True)
    print("\nEach a new app (a cache of its own) or cluster, visited once by a new browser, cache off, at `ready` or once the "
          "warm-up ended (its /stats); direct rows the median of three apps. \"The warm page\": the same answers' row above "
          "(%s). \"The first visit before\": %d KB at DPR 1, %d KB at DPR 2 (a fresh app at ready, PNG stand-ins, before the "
          "warm-up)." % (FIRST_VISIT_NETWORK[0], FIRST_VISIT_BEFORE[1] // 1000, FIRST_VISIT_BEFORE[2] // 1000))


def cold_first_requests(gallery_url, data, args, accept, alone):
    """Milliseconds of the first request of each catalog piece's thumbnail in a new app (its original downloaded,
    verified, the thumbnail made): one after another, or each alone (the app idle before it, every background
    encode done). Returns (median, the answers' types)."""
    # No warm-up: a cold piece is what a request that comes before it gets.
    app, _, match = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", tempfile.mkdtemp(dir=data),
                           "--http-cache", "immutable", "--warm-up-budget", "0", *args], r"EmojiArt: open (http://\S+)")
    try:
        client = Client(match.group(1))
        wait_until_ready(client)
        status, _, page = client.get("/")
        paths = list(dict.fromkeys(re.findall(r'<img src="(/thumbs/\d+\?v=[^"]+)"', page.decode())))
        if status != 200 or not paths:
            raise RuntimeError("no catalog from the app: %d" % status)
        times, types = [], set()
        # The page has the details images prefetched in the background: done before the first request, in both modes.
        while not client.idle():
            time.sleep(0.02)
        for path in paths:
            if alone:
                while not client.idle():
                    time.sleep(0.02)
            began = time.perf_counter()
            status, content_type, _ = client.get(path, accept)
            times.append((time.perf_counter() - began) * 1000)
            if status != 200:
                raise RuntimeError("%s answered %d" % (path, status))
            types.add(content_type)
        return median(times), len(paths), "/".join(sorted(types))
    finally:
        stop(app)


def cold_section(gallery_url, data):
    print("\n### The first request of a cold piece\n")
    print("| requests | client | answers | first answer | median | vs today |")
    print("|---|---|---|---|---|---|")
    # The gallery draws each piece on its first request: drawn once here, so no row pays for it.
    gallery = Client(gallery_url)
    for number in range(1, 200):
        if gallery.get("/gallery/image?%d" % number)[0] == 404:
            break
    rows = [("today (PNG)", ["--formats", "png", "--no-compression"], CHROMIUM_ACCEPT, "Chromium"),
            ("new", [], CHROMIUM_ACCEPT, "Chromium"),
            ("new", [], WEBP_ONLY_ACCEPT, "WebP, no AVIF"),
            ("new", [], "*/*", "curl (*/*)")]
    for alone in (False, True):
        # Five rounds, the rows interleaved, so a slow minute of this shared machine falls on every row alike.
        measured = {}
        for _ in range(5):
            for row in rows:
                milliseconds, count, types = cold_first_requests(gallery_url, data, row[1], row[2], alone)
                measured.setdefault(rows.index(row), []).append((milliseconds, count, types))
        today = median([m for m, _, _ in measured[0]])
        for index, (name, _, _, client_name) in enumerate(rows):
            milliseconds = median([m for m, _, _ in measured[index]])
            count, types = measured[index][0][1], "/".join(sorted({t for _, _, t in measured[index]}))
            print("| %s | %s | %s | %s | %.1f ms | %.2fx |" % (
                "each alone" if alone else "%d in a row" % count, client_name, name, types, milliseconds, milliseconds / today),
                flush=True)
    print("\nA new app per row; its catalog page loaded (the feed verified), then each piece's first /thumbs/N request on "
          "one keep-alive connection, timed by the client, once the app was idle (the details images the page has prefetched made); the median of five rounds' medians. \"Each alone\": the app idle before each (its /stats show no background encode, and no "
          "processing, download or disk write running or queued).")


def main():
    data = tempfile.mkdtemp(prefix="emojiart-network-bench-")
    os.environ["XDG_DATA_HOME"] = data
    processes = []
    try:
        gallery, _, match = start(["gallery", "--port", "0"], r"serving (http://\S+)/gallery/images")
        processes.append(gallery)
        gallery_url = match.group(1)
        if COLD_ONLY:
            cold_section(gallery_url, data)
            return
        setups = []
        for name, extra in [("today (PNG, text as is)", ["--formats", "png", "--no-compression", "--warm-up-budget", "0"]), ("new, direct", [])]:
            app, _, match = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", tempfile.mkdtemp(dir=data),
                                   "--http-cache", "immutable", *extra], r"EmojiArt: open (http://\S+)")
            processes.append(app)
            # The app prints its URL with the path "/": "//events" is no spelling of "/events" (404).
            url = match.group(1).rstrip("/")
            setups.append((name, url, [url], ()))
        # The line after the edge's address and the instances' is nginx's.
        cluster, lines, _ = start(["cluster", "--port", "0", "--instances", "2", "--tls"], r"cluster: nginx pid")
        processes.append(cluster)
        match = next(found for found in (re.search(r"cluster: open (https://\S+) .*spki-list=([A-Za-z0-9+/=]+)", line)
                                         for line in lines) if found)
        instances = [found.group(1).rstrip("/") for found in (re.search(r"cluster: instance \d+: (http://\S+)", line) for line in lines) if found]
        setups.append(("new, edge (TLS, HTTP/2)", match.group(1), instances,
                       ("--ignore-certificate-errors-spki-list=" + match.group(2),)))

        print("| DPR | answers | network | first screen | bytes, scrolled | protocol |")
        print("|---|---|---|---|---|---|")
        anchors = {}
        warm = {}
        for dpr in [1, 2]:
            for name, url, apps, extra in setups:
                for network in NETWORKS:
                    first, moved, protocol = measure(url, dpr, network, apps, extra)
                    warm[(dpr, name, network[0])] = (first, moved)
                    anchor = anchors.setdefault((dpr, network[0]), (first, moved))
                    ratio = "" if anchor == (first, moved) else " (%.2fx, %.2fx)" % (first / anchor[0], moved / anchor[1])
                    print("| %d | %s | %s | %.2f s | %d KB%s | %s |" % (dpr, name, network[0], first, moved // 1000, ratio, protocol),
                          flush=True)
        print("\nRatios against today's answers in the same run and row (first screen, bytes). " + CHROMIUM_ACCEPT_NOTE + ".")
        first_visit_section(gallery_url, data, warm)
        cold_section(gallery_url, data)
    finally:
        for process in reversed(processes):
            stop(process)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
