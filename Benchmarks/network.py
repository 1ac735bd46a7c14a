"""The network bench: the catalog in real Chromium over emulated networks, today's answers (PNG only, text not
compressed) against the new ones (AVIF/WebP by Accept, compressed pages), direct and through `emojiart cluster --tls`
(nginx with TLS and HTTP/2), at device pixel ratio 1 and 2.

Run by `emojiart-bench --only network` (make bench ARGS="--only network"), which passes the release binary.
For each row: the app is warmed (the catalog loaded twice, every thumbnail made), then the browser, with its cache
off, opens the catalog in a 1400 x 1000 window: the time until every thumbnail of the first screen has arrived
(the latest responseEnd among them, from the page's start), then the bytes moved (every response's encoded length,
headers included) once scrolled to the end.

DevTools' network emulation adds its latency to each request and shapes throughput; it adds no TCP or TLS handshake
round trips, so a real network's first connections cost more than shown here, and HTTP/2's one connection gains more.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading


from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BINARY = sys.argv[1]
NETWORKS = [("loopback", 0, 0), ("40 ms, 20 Mbit/s", 40, 20_000_000), ("100 ms, 5 Mbit/s", 100, 5_000_000)]
CHROMIUM_ACCEPT_NOTE = "Chromium's Accept names AVIF and WebP"


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


def measure(url, dpr, network, extra=()):
    _, latency, throughput = network
    driver = chromium(dpr, extra)
    try:
        # Warm: every variant this browser asks for is made (an AVIF in the background after the first load).
        for _ in range(2):
            load_catalog(driver, url)
        load_catalog(driver, url)
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        if latency:
            driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": False, "latency": latency, "downloadThroughput": throughput / 8, "uploadThroughput": throughput / 8})
        driver.get_log("performance")
        driver.get("about:blank")
        WebDriverWait(driver, 120).until(lambda d: d.execute_script("return document.readyState") == "complete")
        driver.get(url)
        WebDriverWait(driver, 120).until(lambda d: d.execute_script(
            "return Array.from(document.querySelectorAll('#catalog img'))"
            ".filter(i => i.getBoundingClientRect().top < window.innerHeight).every(i => i.complete)"))
        first = first_screen_time(driver)
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


def main():
    data = tempfile.mkdtemp(prefix="emojiart-network-bench-")
    os.environ["XDG_DATA_HOME"] = data
    processes = []
    try:
        gallery, _, match = start(["gallery", "--port", "0"], r"serving (http://\S+)/gallery/images")
        processes.append(gallery)
        gallery_url = match.group(1)
        setups = []
        for name, extra in [("today (PNG, text as is)", ["--formats", "png", "--no-compression"]), ("new, direct", [])]:
            app, _, match = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", tempfile.mkdtemp(dir=data),
                                   "--http-cache", "immutable", *extra], r"EmojiArt: open (http://\S+)")
            processes.append(app)
            setups.append((name, match.group(1), ()))
        cluster, lines, match = start(["cluster", "--port", "0", "--instances", "2", "--tls"],
                                      r"cluster: open (https://\S+) .*spki-list=([A-Za-z0-9+/=]+)")
        processes.append(cluster)
        setups.append(("new, edge (TLS, HTTP/2)", match.group(1), ("--ignore-certificate-errors-spki-list=" + match.group(2),)))

        print("| DPR | answers | network | first screen | bytes, scrolled | protocol |")
        print("|---|---|---|---|---|---|")
        anchors = {}
        for dpr in [1, 2]:
            for name, url, extra in setups:
                for network in NETWORKS:
                    first, moved, protocol = measure(url, dpr, network, extra)
                    anchor = anchors.setdefault((dpr, network[0]), (first, moved))
                    ratio = "" if anchor == (first, moved) else " (%.2fx, %.2fx)" % (first / anchor[0], moved / anchor[1])
                    print("| %d | %s | %s | %.2f s | %d KB%s | %s |" % (dpr, name, network[0], first, moved // 1000, ratio, protocol),
                          flush=True)
        print("\nRatios against today's answers in the same run and row (first screen, bytes). " + CHROMIUM_ACCEPT_NOTE + ".")
    finally:
        for process in reversed(processes):
            stop(process)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
