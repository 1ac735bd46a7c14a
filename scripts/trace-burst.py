#!/usr/bin/env python3
"""Lock contention in the app under the 1,000-variant burst of `make bench` (BurstBench): a
gallery of 500 pieces, an app on a new cache directory, verified and with /thumbs/1 in memory,
then every piece's /thumbs/N and /large/N, 64 requests at a time (the 50 missing pieces answer
404). Run by `scripts/trace --burst`, on a release build.

Usage: scripts/trace-burst.py [--record] [--runs N] --baseline BASELINE.json --hooks trace-hooks.so EMOJIART

The app runs with scripts/trace-hooks.c preloaded, its counts in a file this script reads before
and after the burst:

contended Mutex takes  `Synchronization.Mutex` takes that found the mutex held (its slow path:
                       it spins, then sleeps in the kernel). Every Mutex of the process, the
                       app's and its dependencies'; an uncontended take is not seen. Not
                       attributed to a type or a site.
hops, enqueues         swift_task_switch calls and jobs enqueued on the global executor.

An idle window of the app (3 s, before the burst) shows what runs without requests; its counts,
scaled to the burst's length, are subtracted. A measurement, not a pass/fail test: contention
depends on timing, so it varies from run to run (seen here: 276 and 382 in two runs of one tree)
and between machines far more than the per-request counts of `scripts/trace`. So the burst runs
--runs times (3), each against a new app, and the run of median contention is reported, with every
run's figures beside it. With --record it writes them into the baseline's "burst" entry.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

PIECES = 500
CONCURRENCY = 64
IDLE_SECONDS = 3.0
RUNS = 3
MAGIC = 0x3145434152544145  # "EATRACE1", scripts/trace-hooks.c
FIELDS = ("task_switches", "global_enqueues", "contended_locks")


def start(command, log, pattern, environment, within=120):
    """Starts `command` with its output in `log`; returns it and the first group of `pattern`
    once the output shows it."""
    output = open(log, "w")
    process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=environment)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with open(log, errors="replace") as file:
            match = re.search(pattern, file.read())
        if match:
            return process, match.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    with open(log, errors="replace") as file:
        sys.exit(f"trace --burst: {command[1]} did not announce itself:\n{file.read()[-2000:]}")


def get(base, path, connection=None):
    host, port = base.removeprefix("http://").split(":")
    connection = connection or http.client.HTTPConnection(host, int(port), timeout=120)
    connection.request("GET", path, headers={"Host": f"{host}:{port}"})
    response = connection.getresponse()
    body = response.read()
    return response.status, body, connection


def counts(path):
    with open(path, "rb") as file:
        magic, *values = struct.unpack("<8Q", file.read(64))
    if magic != MAGIC:
        sys.exit(f"trace --burst: {path} holds no counts of scripts/trace-hooks.c: were they preloaded?")
    return dict(zip(FIELDS, values))


def burst(base):
    """Every piece's thumbnail and details image, CONCURRENCY at a time: seconds and failures."""
    paths = [p for n in range(PIECES) for p in (f"/thumbs/{n}", f"/large/{n}")]
    local = threading.local()

    def one(path):
        try:
            status, _, local.connection = get(base, path, getattr(local, "connection", None))
        except (OSError, http.client.HTTPException):
            local.connection = None
            return 1
        return 0 if status in (200, 404) else 1

    start_time = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
        failures = sum(pool.map(one, paths))
    return time.monotonic() - start_time, failures


def one_run(emojiart, hooks, gallery_url, environment, work):
    """A new app on a new cache directory, ready and warm, then an idle window and the burst:
    the figures of the burst, its idle counts scaled to its length, and the difference."""
    counted = dict(environment, LD_PRELOAD=os.path.abspath(hooks), EMOJIART_TRACE_COUNTS=work + "/counts")
    app, base = start(
        [emojiart, "app", "--port", "0", "--gallery", gallery_url, "--cache-dir", work + "/cache"],
        work + "/app.log", r"open (http://[^/\s]+)", counted)
    try:
        deadline = time.monotonic() + 120
        while b"ready" not in get(base, "/health")[1]:
            if time.monotonic() > deadline:
                sys.exit("trace --burst: the app was not ready within 120 s")
            time.sleep(0.1)
        if get(base, "/thumbs/1")[0] != 200:
            sys.exit("trace --burst: /thumbs/1 did not answer 200")
        before_idle = counts(work + "/counts")
        time.sleep(IDLE_SECONDS)  # the idle window: what runs without requests
        before = counts(work + "/counts")
        seconds, failures = burst(base)
        after = counts(work + "/counts")
    finally:
        stop(app)
    figures = {"seconds": round(seconds, 2), "failures": failures}
    for field in FIELDS:
        idle = (before[field] - before_idle[field]) * seconds / IDLE_SECONDS
        figures[field] = after[field] - before[field]
        figures[field + "_idle"] = round(idle)
        figures[field + "_less_idle"] = max(0, round(figures[field] - idle))
    return figures


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--commit", default="")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--hooks", required=True)
    parser.add_argument("emojiart")
    arguments = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="emojiart-trace-burst-") as work:
        environment = dict(os.environ, VIPS_WARNING="0", LOG_LEVEL="warning", XDG_DATA_HOME=work + "/data")
        gallery, gallery_url = start(
            [arguments.emojiart, "gallery", "--port", "0", "--pieces", str(PIECES)], work + "/gallery.log",
            r"serving (http://[^/\s]+)", environment)
        try:
            for run in range(arguments.runs):
                os.makedirs(f"{work}/run{run}")
                runs.append(one_run(arguments.emojiart, arguments.hooks, gallery_url, environment, f"{work}/run{run}"))
        finally:
            stop(gallery)
    # The run with the median contention stands for all; every run's figure is listed beside it.
    figures = dict(sorted(runs, key=lambda r: r["contended_locks_less_idle"])[len(runs) // 2])
    figures["runs"] = {field: [r[field + "_less_idle"] for r in runs] for field in FIELDS}

    baseline = {}
    if os.path.exists(arguments.baseline):
        with open(arguments.baseline) as file:
            baseline = json.load(file)
    then = baseline.get("burst", {})
    print(f"# make trace --burst: the app under the 1,000-variant burst (this tree {arguments.commit}; "
          f"baseline {then.get('commit', 'none')})\n")
    print(f"{2 * PIECES} requests, {CONCURRENCY} at a time, {len(runs)} runs (a new app each); the run of median "
          f"contention: {figures['seconds']} s, {figures['failures']} failed (baseline {then.get('seconds', '?')} s). "
          f"Counts of the burst; of an idle window of the app scaled to the burst's length; the difference; the "
          f"difference in every run.\n")
    print("| measure | burst | idle, scaled | burst less idle | every run | baseline, less idle |\n|---|---|---|---|---|---|")
    for field, what in zip(FIELDS, ("swift_task_switch calls", "global enqueues", "contended Mutex takes")):
        print(f"| {what} | {figures[field]} | {figures[field + '_idle']} | {figures[field + '_less_idle']} | "
              f"{', '.join(map(str, figures['runs'][field]))} | {then.get(field + '_less_idle', '')} |")
    print()
    if arguments.record:
        baseline["burst"] = dict(figures, commit=arguments.commit)
        with open(arguments.baseline, "w") as file:
            json.dump(baseline, file, indent=2, sort_keys=True)
            file.write("\n")
        print(f"recorded as the baseline's burst: {arguments.baseline}")


if __name__ == "__main__":
    main()
