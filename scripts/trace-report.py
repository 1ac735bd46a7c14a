#!/usr/bin/env python3
"""Reads what one request ran, from llvm-cov's JSON export of a profile written by PathTraceTests,
and prints it: the project's files and functions, the Mutex-guarded states taken (by the line
that takes each: a closure passed to `withLock`) and how often, memory lookups and plans.

Usage: scripts/trace-report.py [--check] ROOT NAME=EXPORT.json...   (run by scripts/trace)

After each request's counts it prints the targets of the core's third edition (issue 27) for
that request, each met or not; with --check it exits 1 when one is not met.
"""
import collections
import json
import re
import subprocess
import sys

arguments = sys.argv[1:]
check = arguments[:1] == ["--check"]
if check:
    arguments = arguments[1:]
root = arguments[0].rstrip("/") + "/"
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


# Per request, by the first word of its name: (what, the measure's name, the most it may be). The
# cold request may look in memory once per key (the thumbnail's and its original's) and plan once;
# the memory hit once each.
TARGETS = {
    "cold": [("files of Sources/ run", "files", 20), ("Mutex-guarded states", "states", 6),
             ("memory lookups", "memory_lookups", 2), ("plans", "plans", 1)],
    "memory": [("memory lookups", "memory_lookups", 1), ("plans", "plans", 1)],
}


def report(name, path, targets):
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
    # A state is a Mutex: the lines that take it share the type that holds it (the file's name up
    # to any `+`) and its name (the pipeline's `bookkeeping`, taken in `ImagePipeline.swift` and
    # `ImagePipeline+Scheduling.swift`, is one state; two types' `state`s are two).
    def holder(site):
        file, name = site.rsplit(": ", 1)
        return (file.rsplit("/", 1)[-1].split("+")[0].removesuffix(".swift"), name)
    states = {holder(site) for site in locks}
    print(f"- lock sites (by the line that takes them): {len(locks)}, taken {sum(locks.values())} times; "
          f"Mutex-guarded states: {len(states)}")
    print(f"- memory lookups (ImagePipeline.memoryLookup): {memory_lookups}")
    print(f"- plans (AppServices.plan): {plans}\n")
    print("| file | functions run |\n|---|---|")
    for file, count in sorted(files.items()):
        print(f"| {file} | {count} |")
    print("\n| lock site | takes |\n|---|---|")
    for site, count in sorted(locks.items()):
        print(f"| {site} | {count} |")
    print()
    measures = {"files": len(files), "states": len(states), "memory_lookups": memory_lookups, "plans": plans}
    unmet = []
    if targets:
        print("| target | measured | at most | met |\n|---|---|---|---|")
        for what, key, most in targets:
            met = measures[key] <= most
            print(f"| {what} | {measures[key]} | {most} | {'yes' if met else 'NO'} |")
            if not met:
                unmet.append(f"{name}: {what} {measures[key]} > {most}")
        print()
    return unmet


unmet = []
for argument in arguments[1:]:
    name, path = argument.split("=", 1)
    unmet += report(name, path, TARGETS.get(name.split()[0]))
if unmet:
    print("targets not met: " + "; ".join(unmet), file=sys.stderr)
    if check:
        sys.exit(1)
