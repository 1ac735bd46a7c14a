#!/usr/bin/env python3
"""What one request of the app runs and how it synchronizes, beside a recorded baseline
(`make trace`; run by scripts/trace).

Usage:
  scripts/trace-report.py [--check] [--record] [--commit HASH] --root ROOT --baseline BASELINE.json \\
      [--budgets BUDGETS.json] --hooks HOOKS.json idle=IDLE.json cold=COLD.json hit=HIT.json disk=DISK.json

Each EXPORT.json is `llvm-cov export` of a profile PathTraceTests wrote around one window: no
request ("idle"), one cold `GET /thumbs/7` with memory and disk empty ("cold"), the same URL again
from memory ("hit"), and once more with memory emptied, from the disk ("disk"). The profile is zeroed on the client's thread right before it connects and
written right after the server closed the connection, with the test's own tasks waiting outside:
the counts are that request's alone, set-up and client excluded. Whatever runs on its own in
that time (a timer, work the set-up left running) is counted too: the idle window shows how much
(it should be nothing).

The measures, per request:

regions    llvm-cov code regions of Sources/ (first-party code) that ran at least once, each
           counted once, by module (Sources/<Module>/) and in all; beside it the sum of their
           execution counts. A region is a stretch of code that runs as a whole (a function body
           up to its first branch, one arm of an `if`, a closure): a count of code run, not of
           lines or time. The build is a debug build (-Onone): no code is inlined away.
locks      executions of the closures passed to `withLock` / `withLockIfAvailable` (and NIO's
           `withLockedValue`) in Sources/ (or, for an argument that is not a closure literal, of
           the statement that calls it), by the type that holds the Mutex: the property the call
           is made on is looked up among the `Mutex` (or `NIOLock`, `NIOLockedValueBox`)
           properties declared in Sources/, in the calling type first. A call on no
           property (a type's own `withLock`, such as the trust store's file lock) is listed
           under that type. Locks taken inside dependencies (NIO, Hummingbird, the Swift
           runtime) are not seen.
hops       calls of `swift_task_switch` in the process during the window, counted by
           scripts/trace-hooks.c (preloaded): every hop to an executor that compiled code runs,
           the app's and its dependencies', whether the runtime then switches or finds the task
           where it must run and goes on. Calls made inside the Concurrency library itself
           (AsyncStream, task groups) bind to it directly and are not counted. A debug build runs
           hops an optimized one may drop. Beside it: jobs enqueued on the global executor, and
           Mutex takes that found the mutex held (contended), as informative figures.
atomics    executions of read-modify-writes on `Synchronization.Atomic` properties declared in
           Sources/ (`add`, `subtract`, `wrappingAdd`, `compareExchange`, `exchange`,
           `bitwiseOr`, ...: loads and stores are not read-modify-writes), by site and by the
           type holding the atomic; each counted once where it is done (inside
           `LiveCounter.increment`, say). The calls of such counter types' methods are listed by
           caller as a breakdown, not added again.
synchronization  locks + hops + atomics.
allocations  heap allocations in the process during the window (malloc, calloc, realloc and the
           aligned ones), counted by scripts/trace-hooks.c: the app's and its dependencies'
           (SwiftNIO, Hummingbird, the runtime), as SwiftNIO's allocation-counter tests count them.

Budgets (BUDGETS.json, scripts/trace-budgets.json): per request, an upper figure for each of
regions, synchronization and allocations. A measure more than 5% over its budget fails --check:
growth per request is caught before it lands, and a commit that means it raises the budget in
that file and says why in its message. A budget is not a target: it only stops growth.

The baseline (BASELINE.json, measured on the tree it names) is shown beside each figure, for
comparison. With --check the script exits 1 when a budget is exceeded (or cannot be judged: the
hooks were not loaded). With --record it writes the figures measured as the new baseline,
keeping the file's burst figures.

Limits: coverage counts code, not time; a site's count comes from the innermost region around it
(a statement that runs once with two conditions before the call is counted as often as the
statement); source text is read with regular expressions, so a Mutex or Atomic reached through a
local variable, a typealias or a function that takes the lock for its caller is not attributed
by name (its closure still counts, under "?").
"""
import argparse
import bisect
import collections
import json
import os
import re
import subprocess
import sys

CODE_REGION = 0
RMW_OPERATIONS = (
    "add", "subtract", "wrappingAdd", "wrappingSubtract", "compareExchange", "weakCompareExchange",
    "exchange", "bitwiseAnd", "bitwiseOr", "bitwiseXor", "logicalAnd", "logicalOr", "logicalXor", "min", "max",
)
# How far over its budget a measure may go before --check fails (noise: a timer's run, a read
# split in two by the kernel).
BUDGET_TOLERANCE = 1.05
BUDGETED = ("regions", "synchronization", "allocations")
REQUESTS = ("cold", "hit", "disk")


# MARK: - Source text


RAW_STRING = re.compile(r'#+"')
HASHES = re.compile(r"#*")


def code_only(text):
    """`text` with comments and string literals blanked (newlines and columns kept)."""
    out = list(text)
    i, n = 0, len(text)

    def blank(start, end):
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif text[i] == '"' or (text[i] == "#" and RAW_STRING.match(text, i)):
            hashes = len(HASHES.match(text, i).group())
            start = i + hashes
            quote = '"""' if text.startswith('"""', start) else '"'
            closing = quote + "#" * hashes
            j = start + len(quote)
            # A one-line string ends with its line at the latest: a quote inside an
            # interpolation ("\(a["b"])") then costs the rest of that line, not of the file.
            while j < n and not text.startswith(closing, j) and (len(quote) == 3 or text[j] != "\n"):
                j += 2 if text[j] == "\\" and not hashes else 1
            j = min(n, j + (len(closing) if text.startswith(closing, j) else 0))
            blank(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


class SourceFile:
    """One Swift file of Sources/: its lines, its code (comments and strings blanked) and the
    types and functions whose braces enclose each position."""

    TYPE_OR_FUNC = re.compile(r"\b(class|struct|enum|actor|extension|protocol)\s+([A-Z][\w.]*)|\bfunc\s+([\w]+)")

    def __init__(self, path, relative):
        self.path = path
        self.relative = relative  # "ImageCache/Pipeline/ImagePipeline.swift"
        self.module = relative.split("/")[0]
        with open(path, encoding="utf-8") as file:
            self.text = file.read()
        self.lines = self.text.split("\n")
        self.code = code_only(self.text)
        self.line_starts = [0]
        for line in self.lines:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        self.scopes = self._scopes()  # (start, end, kind, name), kind "type" or "func"

    def offset(self, line, column):
        return self.line_starts[line - 1] + column - 1

    def position(self, offset):
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def _scopes(self):
        declarations = {m.start(): m for m in self.TYPE_OR_FUNC.finditer(self.code)}
        scopes, stack, pending = [], [], None
        for offset, char in enumerate(self.code):
            if offset in declarations:
                m = declarations[offset]
                pending = ("type", m.group(2)) if m.group(2) else ("func", m.group(3))
            if char == "{":
                stack.append((offset, pending))
                pending = None
            elif char == "}" and stack:
                start, declared = stack.pop()
                if declared:
                    scopes.append((start, offset, declared[0], declared[1]))
        return scopes

    def enclosing(self, line, column, kind):
        """The names of the `kind` scopes around a position, outermost first."""
        offset = self.offset(line, column)
        around = sorted((s for s in self.scopes if s[2] == kind and s[0] < offset < s[1]), key=lambda s: s[0])
        return [s[3] for s in around]

    def type_at(self, line, column):
        return ".".join(self.enclosing(line, column, "type")) or "(top level)"


class Sources:
    """Every Swift file of Sources/, with the Mutex and Atomic properties and the counter types
    declared in them."""

    def __init__(self, root):
        self.root = root
        self.files = {}
        for directory, _, names in os.walk(os.path.join(root, "Sources")):
            for name in sorted(names):
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    self.files[path] = SourceFile(path, os.path.relpath(path, os.path.join(root, "Sources")))
        self.mutexes = self._properties(r"(?:Synchronization\.)?Mutex|(?:NIOConcurrencyHelpers\.)?NIOLock(?:edValueBox)?")
        self.atomics = self._properties(r"(?:Synchronization\.)?Atomic")

    def _properties(self, kind):
        """Properties declared of a type `kind` matches: name -> [(holding type, file)]."""
        pattern = re.compile(rf"\b(?:let|var)\s+(\w+)\s*(?::\s*(?:{kind})\b|=\s*(?:{kind})\s*[<(])")
        found = collections.defaultdict(list)
        for source in self.files.values():
            for m in pattern.finditer(source.code):
                line, column = source.position(m.start())
                found[m.group(1)].append((source.type_at(line, column), source))
        return found

    def holder(self, name, source, line, column, declared):
        """The type that holds the property `name` used at a position: the calling type if it
        declares one, else the only type of the module (or of Sources/) that does; "?" else."""
        candidates = declared.get(name, [])
        if not candidates:
            return None
        calling = source.type_at(line, column)
        for type_name, _ in candidates:
            if type_name == calling or calling.startswith(type_name + "."):
                return type_name
        for scope in ([c for c in candidates if c[1].module == source.module], candidates):
            types = sorted({c[0] for c in scope})
            if len(types) == 1:
                return types[0]
        return "? (" + " or ".join(sorted({c[0] for c in candidates})) + ")"


# MARK: - Coverage


class Coverage:
    """One llvm-cov export: the code regions of Sources/ with their counts."""

    def __init__(self, path, sources):
        with open(path) as file:
            export = json.load(file)
        prefix = os.path.join(sources.root, "Sources") + "/"
        regions = {}  # (path, ls, cs, le, ce) -> count
        self.function_starts = {}  # (path, line, column) -> count of the function starting there
        for function in export["data"][0]["functions"]:
            filenames = function["filenames"]
            if not filenames or not filenames[0].startswith(prefix):
                continue
            first = True
            for ls, cs, le, ce, count, file_id, _, kind in function["regions"]:
                if kind != CODE_REGION or not filenames[file_id].startswith(prefix):
                    continue
                key = (filenames[file_id], ls, cs, le, ce)
                regions[key] = regions.get(key, 0) + count
                if first:
                    self.function_starts[(filenames[file_id], ls, cs)] = function["count"]
                    first = False
        self.by_file = collections.defaultdict(list)
        for (path, ls, cs, le, ce), count in regions.items():
            self.by_file[path].append(((ls, cs), (le, ce), count))
        self.run = {key: count for key, count in regions.items() if count > 0}

    def count_at(self, path, line, column):
        """The count of the innermost code region around a position (0 if none)."""
        best = None
        for start, end, count in self.by_file.get(path, ()):
            if start <= (line, column) <= end and (best is None or start >= best[0] and end <= best[1]):
                best = (start, end, count)
        return best[2] if best else 0

    def regions(self, sources):
        modules = collections.Counter()
        executions = collections.Counter()
        files = collections.Counter()
        for (path, *_), count in self.run.items():
            source = sources.files.get(path)
            module = source.module if source else os.path.relpath(path, os.path.join(sources.root, "Sources")).split("/")[0]
            modules[module] += 1
            executions[module] += count
            files[source.relative if source else path] += 1
        return {
            "total": sum(modules.values()), "executions": sum(executions.values()),
            "modules": dict(sorted(modules.items())), "module_executions": dict(sorted(executions.items())),
            "files": dict(sorted(files.items())),
        }


# MARK: - Synchronization in the source, counted


LOCK_CALL = re.compile(r"(?:\b(\w+)\s*\??\s*\.\s*|(?<![.\w]))(withLock|withLockIfAvailable|withLockedValue)\b\s*(\(\s*)?(\{)?")
RMW_CALL = re.compile(r"\b(\w+)\s*\??\s*\.\s*(" + "|".join(RMW_OPERATIONS) + r")\s*\(")


def lock_sites(sources, coverage):
    """Each `withLock` call in Sources/ with its holder type and how often it ran."""
    sites = []
    for source in sources.files.values():
        for m in LOCK_CALL.finditer(source.code):
            receiver = m.group(1)
            line, column = source.position(m.start())
            if receiver is None and re.search(r"\bfunc\s*$", source.code[:m.start()].rsplit("\n", 1)[-1]):
                continue  # the declaration of a type's own withLock
            if receiver:
                holder = sources.holder(receiver, source, line, column, sources.mutexes)
                holder = holder or "?"  # not a Mutex property declared in Sources/
            else:
                holder, receiver = source.type_at(line, column) + " (its own withLock)", ""
            count = None
            if m.group(4):  # a closure literal: its own execution count
                brace_line, brace_column = source.position(m.start(4))
                count = coverage.function_starts.get((source.path, brace_line, brace_column))
            if count is None:
                count = coverage.count_at(source.path, line, column)
            sites.append({"site": f"{source.relative}:{line}", "holder": holder, "property": receiver, "count": count})
    return sites


def atomic_sites(sources, coverage):
    """Each read-modify-write on an Atomic property in Sources/, with its holder and count, and
    the counter methods (the functions that do one) by type."""
    sites, methods = [], collections.defaultdict(set)
    for source in sources.files.values():
        for m in RMW_CALL.finditer(source.code):
            receiver, operation = m.group(1), m.group(2)
            line, column = source.position(m.start())
            holder = sources.holder(receiver, source, line, column, sources.atomics)
            if holder is None:
                continue  # `headers.add(...)`: not an Atomic
            functions = source.enclosing(line, column, "func")
            if functions and holder == source.type_at(line, column):
                methods[holder].add(functions[-1])
            sites.append({
                "site": f"{source.relative}:{line}", "holder": holder, "property": receiver, "operation": operation,
                "function": functions[-1] if functions else "", "count": coverage.count_at(source.path, line, column),
            })
    return sites, methods


def counter_calls(sources, coverage, methods):
    """Calls of the counter types' methods (``LiveCounter.increment``, say) by caller: on a
    property declared of that type anywhere, or a name bound to one in the same file."""
    calls = []
    for type_name, names in methods.items():
        short = re.escape(type_name.rsplit(".", 1)[-1])
        stored = re.compile(rf"\b(?:let|var)\s+(\w+)\s*(?::\s*\[?\s*{short}\s*\]?(?![\w.])|=\s*{short}\s*\()")
        bound = re.compile(rf"\b(\w+)\s*:\s*(?:inout\s+)?\[?\s*{short}\s*\]?(?![\w.])")
        properties = {m.group(1) for s in sources.files.values() for m in stored.finditer(s.code)}
        call = re.compile(r"\b(\w+)\s*\??\s*\.\s*(" + "|".join(map(re.escape, sorted(names))) + r")\s*\(")
        for source in sources.files.values():
            local = {m.group(1) for m in bound.finditer(source.code)}
            for m in re.finditer(r"\bfor\s+(\w+)\s+in\s+(\w+)", source.code):
                if m.group(2) in local | properties:
                    local.add(m.group(1))
            for m in call.finditer(source.code):
                line, column = source.position(m.start())
                if m.group(1) in ("self", "Self") or source.type_at(line, column) == type_name:
                    continue
                if m.group(1) in properties | local:
                    calls.append({
                        "site": f"{source.relative}:{line}", "call": f"{type_name}.{m.group(2)}",
                        "receiver": m.group(1), "count": coverage.count_at(source.path, line, column),
                    })
    return calls


# MARK: - One request


def measure(name, export, sources, hooks):
    coverage = Coverage(export, sources)
    locks = [s for s in lock_sites(sources, coverage) if s["count"]]
    atomics, methods = atomic_sites(sources, coverage)
    atomics = [s for s in atomics if s["count"]]
    calls = [c for c in counter_calls(sources, coverage, methods) if c["count"]]
    lock_types = collections.Counter()
    for site in locks:
        lock_types[site["holder"]] += site["count"]
    atomic_sites_by_name = collections.Counter()
    for site in atomics:
        atomic_sites_by_name[f"{site['holder']}.{site['property']}.{site['operation']} ({site['site']})"] += site["count"]
    window = hooks.get(name)
    figures = {
        "regions": coverage.regions(sources),
        "locks": {"total": sum(lock_types.values()), "types": dict(sorted(lock_types.items()))},
        "hops": window["task_switches"] if window else None,
        "global_enqueues": window["global_enqueues"] if window else None,
        "contended_locks": window["contended_locks"] if window else None,
        "allocations": window.get("allocations") if window else None,
        "atomics": {"total": sum(atomic_sites_by_name.values()), "sites": dict(sorted(atomic_sites_by_name.items()))},
    }
    figures["synchronization"] = (
        figures["locks"]["total"] + figures["hops"] + figures["atomics"]["total"] if window else None
    )
    details = {"locks": locks, "atomics": atomics, "calls": calls, "coverage": coverage}
    return figures, details


def demangled_functions(coverage_path, sources):
    """The functions of Sources/ that ran, demangled (what the idle window lists)."""
    with open(coverage_path) as file:
        export = json.load(file)
    prefix = os.path.join(sources.root, "Sources") + "/"
    ran = [f for f in export["data"][0]["functions"] if f["count"] > 0 and f["filenames"] and f["filenames"][0].startswith(prefix)]
    names = [f["name"].split(":", 1)[-1] for f in ran]
    if not names:
        return []
    out = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [f"{n} ({f['count']})" for n, f in zip(out, ran)]


# MARK: - The report


def beside(now, then):
    if now is None:
        return "not measured"
    if then is None:
        return f"{now}"
    ratio = f", {now / then:.2f}x" if then else ""
    return f"{now} (baseline {then}{ratio})"


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print()


def report_request(title, figures, details, base):
    base = base or {}
    regions = figures["regions"]
    base_regions = base.get("regions", {})
    print(f"## {title}\n")
    print(f"- code regions run (Sources/): {beside(regions['total'], base_regions.get('total'))}; "
          f"their executions: {beside(regions['executions'], base_regions.get('executions'))}")
    print(f"- synchronization (locks + hops + atomic RMWs): {beside(figures['synchronization'], base.get('synchronization'))}")
    print(f"  - locks taken: {beside(figures['locks']['total'], base.get('locks', {}).get('total'))}")
    print(f"  - actor hops (swift_task_switch calls): {beside(figures['hops'], base.get('hops'))}")
    print(f"  - atomic read-modify-writes: {beside(figures['atomics']['total'], base.get('atomics', {}).get('total'))}")
    print(f"- heap allocations: {beside(figures['allocations'], base.get('allocations'))}")
    print(f"- also: jobs enqueued on the global executor {beside(figures['global_enqueues'], base.get('global_enqueues'))}; "
          f"contended Mutex takes {beside(figures['contended_locks'], base.get('contended_locks'))}\n")
    modules = sorted(set(regions["modules"]) | set(base_regions.get("modules", {})))
    table(["module", "regions run", "executions", "baseline regions"],
          [[m, regions["modules"].get(m, 0), regions["module_executions"].get(m, 0), base_regions.get("modules", {}).get(m, "")]
           for m in modules])
    types = sorted(set(figures["locks"]["types"]) | set(base.get("locks", {}).get("types", {})))
    table(["locks by type holding the Mutex", "takes", "baseline"],
          [[t, figures["locks"]["types"].get(t, 0), base.get("locks", {}).get("types", {}).get(t, "")] for t in types])
    table(["lock site", "Mutex", "takes"],
          [[s["site"], f"{s['holder']}.{s['property']}" if s["property"] else s["holder"], s["count"]] for s in details["locks"]])
    sites = sorted(set(figures["atomics"]["sites"]) | set(base.get("atomics", {}).get("sites", {})))
    table(["atomic read-modify-write (type.property.operation, site)", "count", "baseline"],
          [[s, figures["atomics"]["sites"].get(s, 0), base.get("atomics", {}).get("sites", {}).get(s, "")] for s in sites])
    if details["calls"]:
        table(["counter call (a breakdown of the above)", "caller", "count"],
              [[c["call"], f"{c['site']} ({c['receiver']})", c["count"]] for c in details["calls"]])
    table(["file", "regions run"], sorted(regions["files"].items()))


def figure(figures, name):
    """A budgeted measure of one request's figures: the total for regions."""
    value = figures.get(name)
    return value["total"] if isinstance(value, dict) else value


def targets(measured, budgets):
    """(what, measured, limit, met) for each budget; met is None when it cannot be judged."""
    rows = []
    for request in REQUESTS:
        for name in BUDGETED:
            budget = (budgets.get(request) or {}).get(name)
            now = figure(measured[request], name)
            what = f"{request}: {name}"
            if budget is None:
                rows.append((what, now, "no budget", None))
                continue
            limit = budget * BUDGET_TOLERANCE
            rows.append((what, now, f"{limit:g} (budget {budget} + 5%)", None if now is None else now <= limit))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--root", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--hooks", required=True)
    parser.add_argument("--budgets", default=None)
    parser.add_argument("--commit", default="")
    parser.add_argument("exports", nargs="+", help="NAME=EXPORT.json for idle, cold, hit and disk")
    arguments = parser.parse_args()
    sources = Sources(os.path.abspath(arguments.root))
    exports = dict(e.split("=", 1) for e in arguments.exports)
    with open(arguments.hooks) as file:
        hooks = json.load(file)
    baseline = {}
    if os.path.exists(arguments.baseline):
        with open(arguments.baseline) as file:
            baseline = json.load(file)
    base = baseline.get("requests", {})

    print(f"# make trace: what one request runs (this tree {arguments.commit or '?'}; baseline {baseline.get('commit', 'none')})\n")
    print("Counts of each request alone: zeroed as its client connects, read once the server has closed the connection;")
    print("the set-up and the client are outside the window (scripts/trace-report.py says what each measure means).\n")
    if not hooks:
        print("**The hooks (scripts/trace-hooks.c) were not loaded: hops are not measured.**\n")

    idle, _ = measure("idle", exports["idle"], sources, hooks)
    print("## idle window (0.2 s, no request)\n")
    print(f"- code regions run: {idle['regions']['total']}; hops {idle['hops']}; enqueues {idle['global_enqueues']}; "
          f"locks {idle['locks']['total']}; atomics {idle['atomics']['total']}")
    if idle["regions"]["total"]:
        print("- **something ran with no request: the request windows may hold some of it too.** Functions:")
        for function in demangled_functions(exports["idle"], sources):
            print(f"  - {function}")
    else:
        print("- nothing of Sources/ ran: the request windows hold their requests only")
    print()

    measured = {}
    titles = {
        "cold": "cold thumbnail (GET /thumbs/7, memory and disk empty, lane on)",
        "hit": "memory hit (the same URL again)",
        "disk": "disk hit (the same URL, memory emptied)",
    }
    for name in REQUESTS:
        figures, details = measure(name, exports[name], sources, hooks)
        measured[name] = figures
        report_request(titles[name], figures, details, base.get(name))

    burst = baseline.get("burst")
    if burst:
        print(f"Contention under the 1,000-variant burst is measured apart (`scripts/trace --burst`): the baseline's "
              f"{burst['contended_locks_less_idle']} contended Mutex takes (runs: "
              f"{', '.join(map(str, burst['runs']['contended_locks']))}).\n")
    budgets = {}
    if arguments.budgets and os.path.exists(arguments.budgets):
        with open(arguments.budgets) as file:
            budgets = json.load(file)
    print(f"## Budgets ({arguments.budgets or 'none'})\n")
    rows = targets(measured, budgets)
    table(["budget", "measured", "at most", "met"],
          [[w, "not measured" if n is None else n, limit, {True: "yes", False: "NO", None: "cannot judge"}[met]] for w, n, limit, met in rows])
    if arguments.record:
        for figures in measured.values():
            figures["regions"].pop("files", None)
        baseline.update({"commit": arguments.commit, "requests": measured})
        with open(arguments.baseline, "w") as file:
            json.dump(baseline, file, indent=2, sort_keys=True)
            file.write("\n")
        print(f"recorded as the baseline: {arguments.baseline}")
    unmet = [f"{w}: {n} > {limit}" if met is False else f"{w}: cannot judge" for w, n, limit, met in rows if met is not True]
    if unmet:
        print("over budget (raise scripts/trace-budgets.json in a commit that says why, or make the path cheaper): "
              + "; ".join(unmet), file=sys.stderr)
        if arguments.check:
            sys.exit(1)


if __name__ == "__main__":
    main()
