#!/usr/bin/env python3
"""Reads what one request ran, from llvm-cov's JSON export of a profile written by PathTraceTests,
and prints it: the project's files and functions, the Mutex-guarded states taken (by the line
that takes each: a closure passed to `withLock`) and how often, memory lookups and plans.

Usage: scripts/trace-report.py ROOT NAME=EXPORT.json...   (run by scripts/trace)
"""
import collections
import json
import re
import subprocess
import sys

root = sys.argv[1].rstrip("/") + "/"
sources = root + "Sources/"
lines_of = {}


def line(path, number):
    if path not in lines_of:
        with open(path, encoding="utf-8") as file:
            lines_of[path] = file.read().split("\n")
    lines = lines_of[path]
    return lines[number - 1] if 0 < number <= len(lines) else ""


def demangle(names):
    out = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return out[:len(names)]


def report(name, path):
    with open(path) as file:
        export = json.load(file)
    functions = [f for f in export["data"][0]["functions"]
                 if f["count"] > 0 and f["filenames"] and f["filenames"][0].startswith(sources)]
    names = demangle([f["name"].split(":", 1)[-1] for f in functions])
    files = collections.Counter()
    modules = collections.Counter()
    locks = collections.Counter()
    memory_lookups = plans = 0
    for function, readable in zip(functions, names):
        file = function["filenames"][0][len(sources):]
        files[file] += 1
        start = function["regions"][0][0]
        text = line(function["filenames"][0], start)
        match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)(?:\??\.withLock|\.withLock)", text)
        if "closure" in readable and match:
            locks[f"{file}: {match.group(1)}"] += function["count"]
        if re.search(r"\bmemoryLookup\(_:countingHit:\)$", readable):
            memory_lookups += function["count"]
        if re.search(r"\bAppServices\.plan\(_:piece:version:\)$", readable):
            plans += function["count"]
    for file in files:
        modules[file.split("/")[0]] += 1
    print(f"## {name}\n")
    print(f"- files: {len(files)} ({', '.join(f'{m} {c}' for m, c in sorted(modules.items()))})")
    print(f"- functions and closures run: {len(functions)}, {sum(f['count'] for f in functions)} calls")
    print(f"- lock sites (Mutex-guarded states, by the line that takes them): {len(locks)}, taken {sum(locks.values())} times")
    print(f"- memory lookups (ImagePipeline.memoryLookup): {memory_lookups}")
    print(f"- plans (AppServices.plan): {plans}\n")
    print("| file | functions run |\n|---|---|")
    for file, count in sorted(files.items()):
        print(f"| {file} | {count} |")
    print("\n| lock site | takes |\n|---|---|")
    for site, count in sorted(locks.items()):
        print(f"| {site} | {count} |")
    print()


for argument in sys.argv[2:]:
    name, path = argument.split("=", 1)
    report(name, path)
