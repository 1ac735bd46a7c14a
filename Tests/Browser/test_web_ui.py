"""The EmojiArt web UI in a real headless Chromium, against real gallery and app processes."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, os.environ.get("EMOJIART_BINARY", ".build/debug/emojiart"))
ARTIFACTS = os.path.join(ROOT, ".build-browser")


def start(args, pattern):
    """Starts `emojiart ARGS` and waits for the line announcing its URL."""
    process = subprocess.Popen([BINARY, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "VIPS_WARNING": "0"})
    deadline = time.time() + 120
    seen = []
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return process, match.group(1)
    process.kill()
    raise RuntimeError("emojiart %s never announced its URL:\n%s" % (" ".join(args), "".join(seen)))


def stop(process):
    """Ctrl-C, as a person would; the process must exit cleanly and soon."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("emojiart did not stop within 20 s of SIGINT")


@pytest.fixture(scope="module")
def app_url():
    cache = tempfile.mkdtemp(prefix="emojiart-browser-")
    # Latency makes verification take a moment, so the live progress bar can be watched.
    gallery, gallery_url = start(["gallery", "--port", "0", "--latency", "150"], r"serving (http://\S+)/gallery/images")
    app, url = start(["app", "--port", "0", "--gallery", gallery_url, "--cache-dir", cache, "--concurrency", "4"],
                     r"EmojiArt: open (http://\S+)")
    yield url
    assert stop(app) == 0
    assert stop(gallery) == 0
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def counter(driver, name):
    return int(driver.find_element(By.ID, name).text)


def wait_for_catalog(driver):
    """Waits for the 87 cards and for every thumbnail to finish loading (or fail)."""
    WebDriverWait(driver, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#catalog .card")) == 87)
    WebDriverWait(driver, 60).until(lambda d: d.execute_script(
        "return Array.from(document.querySelectorAll('#catalog img')).every(i => i.complete)"))


def loaded_thumbnails(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#catalog img')).filter(i => i.complete && i.naturalWidth > 0).length")


def test_progress_then_catalog_then_details_then_caches(app_url, browser):
    browser.get(app_url)

    # 1. The loading page's progress bar moves live and reaches 100 %.
    seen = []
    deadline = time.time() + 120
    while time.time() < deadline:
        state = browser.execute_script(
            "const p = document.getElementById('progress');"
            "return p ? [p.value, p.max] : (document.getElementById('catalog') ? 'catalog' : null);")
        if state == "catalog":
            break
        if state:
            seen.append(tuple(state))
        time.sleep(0.03)
    assert seen, "the loading page never showed a progress bar"
    assert any(0 < value < maximum for value, maximum in seen), "the bar never moved between 0 and done: %s" % seen[:10]
    values = [value for value, _ in seen]
    assert values == sorted(values), "the bar went backwards"
    assert seen[-1][0] == seen[-1][1] == 87, "the bar ended at %s, not 87 of 87" % (seen[-1],)

    # 2. The catalog: 87 cards, 78 thumbnails really loaded, 9 placeholders.
    wait_for_catalog(browser)
    assert loaded_thumbnails(browser) == 78
    assert len(browser.find_elements(By.CSS_SELECTOR, "#catalog .card [data-placeholder]")) == 9
    assert "78 verified" in browser.find_element(By.ID, "summary").text
    assert re.match(r"^\$[\d,]+\.\d\d$", browser.find_element(By.CSS_SELECTOR, ".card .price").text)
    os.makedirs(ARTIFACTS, exist_ok=True)
    browser.save_screenshot(os.path.join(ARTIFACTS, "list.png"))

    # 3. A details page opens with the larger image.
    card = browser.find_element(By.CSS_SELECTOR, "#catalog .card[data-status='verified']")
    name = card.find_element(By.CSS_SELECTOR, ".name").text
    card.click()
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(
        "const i = document.getElementById('large'); return i && i.complete && i.naturalWidth > 0"))
    assert browser.find_element(By.ID, "name").text == name
    assert browser.execute_script("return document.getElementById('large').naturalHeight") == 600
    browser.save_screenshot(os.path.join(ARTIFACTS, "details.png"))
    browser.get(app_url)
    wait_for_catalog(browser)

    # 4. Clear memory cache, then reload: thumbnails come from disk.
    disk_before = counter(browser, "disk-hits")
    browser.find_element(By.ID, "clear-memory").click()
    wait_for_catalog(browser)
    browser.refresh()
    wait_for_catalog(browser)
    WebDriverWait(browser, 30).until(lambda d: counter(d, "disk-hits") >= disk_before + 26)
    assert loaded_thumbnails(browser) == 78

    # 5. Clear disk cache (and memory, which would otherwise answer), then reload: the gallery is asked again.
    origin_before = counter(browser, "origin-fetches")
    browser.find_element(By.ID, "clear-disk").click()
    wait_for_catalog(browser)
    browser.find_element(By.ID, "clear-memory").click()
    wait_for_catalog(browser)
    browser.refresh()
    wait_for_catalog(browser)
    WebDriverWait(browser, 30).until(lambda d: counter(d, "origin-fetches") >= origin_before + 26)
    assert loaded_thumbnails(browser) == 78
