# EmojiArt for Linux. Every target installs missing system packages first (scripts/bootstrap).
SWIFT ?= swift
export VIPS_WARNING ?= 0
# VIPS=system builds and tests on Debian's libvips (libvips-dev, 8.14) instead of the pinned 8.18
# build (scripts/libvips.pin), in a build folder of its own: `make test VIPS=system`.
export VIPS ?=
BUILD := $(if $(filter system,$(VIPS)),.build-vips-system,.build)
# The App trait (Package.swift): the app, the gallery, the command line, the bench and the tests, and
# the packages only they use. Off by default, so that a library user of ImageCache does not fetch
# them; every build here turns it on (scripts/ too).
SWIFT_FLAGS := --traits App $(if $(filter system,$(VIPS)),--scratch-path $(BUILD))
LIBVIPS_VERSION := $(shell sed -n 's/^LIBVIPS_VERSION=//p' scripts/libvips.pin)

.PHONY: all run test test-swift test-browser bench bench-peers fuzz docs trace build release bootstrap install clean

all: build

bootstrap:
	@scripts/bootstrap

build: bootstrap
	$(SWIFT) build $(SWIFT_FLAGS)

release: bootstrap
	$(SWIFT) build $(SWIFT_FLAGS) -c release --product emojiart

## make run: build in release mode, start the gallery and the web app on 127.0.0.1, print the URL.
run: release
	$(BUILD)/release/emojiart $(ARGS)

## make install PREFIX=/usr/local: the release binary as PREFIX/bin/emojiart (what deploy/systemd runs).
## It finds libvips where scripts/bootstrap installed it (/usr/local/lib/emojiart, known to the
## dynamic loader through /etc/ld.so.conf.d), never in this clone.
PREFIX ?= /usr/local
install: release
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 $(BUILD)/release/emojiart "$(DESTDIR)$(PREFIX)/bin/emojiart"

## make test: every test: Swift Testing suites, the real-browser test of the web UI, then the bench
## anchors' own checks (Tests/Anchors) and the image service's live test (Tests/ImageServiceLive: URLs from
## PyPI's imgproxy builder, real photographs from scripts/photos), in the browser test's Python environment.
test: bootstrap
	$(SWIFT) build $(SWIFT_FLAGS) --build-tests
	$(SWIFT) test $(SWIFT_FLAGS) --skip-build
	EMOJIART_BINARY=$(BUILD)/debug/emojiart scripts/browser-test
	scripts/photos
	EMOJIART_BINARY=$(BUILD)/debug/emojiart .build-venv/bin/pytest -q -p no:cacheprovider Tests/Anchors Tests/ImageServiceLive

## make docs: the DocC documentation of ImageCache, Imaging and ImageService as static sites in .build-docs/;
## fails on any DocC warning, on any public symbol without a doc comment, and on a guide's code block
## that differs from the snippet file beside it (scripts/check-snippets).
docs: bootstrap
	scripts/check-snippets Sources/ImageCache/ImageCache.docc
	rm -rf .build-docs
	$(SWIFT) package $(SWIFT_FLAGS) --allow-writing-to-directory .build-docs generate-documentation \
	  --target ImageCache --target Imaging --target ImageService --output-path .build-docs --warnings-as-errors --transform-for-static-hosting
	BUILD=$(BUILD) scripts/doc-coverage ImageCache Imaging ImageService
	@echo "open: python3 -m http.server -d .build-docs/ImageCache.doccarchive 8000, then http://127.0.0.1:8000/documentation/imagecache/"

PIP := --quiet --disable-pip-version-check --no-cache-dir
# $(PEER_ENGINE) VENV COLUMN: that venv's pyvips runs the libvips COLUMN names (prints the report).
PEER_ENGINE = sh -c 'test -x "$$0/bin/python" && "$$0/bin/python" Benchmarks/anchors/imaging.py engine --column "$$1"'

## make bench: benchmarks with their anchors (Pillow, pyvips, nginx, thumbor, a Mutex dictionary) side by side.
bench: bench-peers
	@# thumbor with its opencv extra: the detectors its smart crop runs (the service section's fill).
	@test -x .build-bench/thumbor-venv/bin/thumbor && .build-bench/thumbor-venv/bin/python -c "import cv2" 2>/dev/null || \
	  { python3 -m venv .build-bench/thumbor-venv && .build-bench/thumbor-venv/bin/pip install --quiet --disable-pip-version-check "thumbor[opencv]==7.8.*"; }
	@# The service section's photos (scikit-image's, and 12 MP JPEGs made from them with pyvips[binary]).
	@scripts/bench-photos
	@test -x .build-venv/bin/python && .build-venv/bin/python -c "import selenium" 2>/dev/null || \
	  { python3 -m venv .build-venv && .build-venv/bin/pip install --quiet --disable-pip-version-check "selenium>=4.20,<5" "pytest>=8,<10"; }
	$(SWIFT) build $(SWIFT_FLAGS) -c release --product emojiart-bench
	$(SWIFT) build $(SWIFT_FLAGS) -c release --product emojiart
	$(BUILD)/release/emojiart-bench $(ARGS)

## make bench-peers: the Python peers of the imaging bench, installed and checked (part of make bench).
bench-peers:
	@scripts/bootstrap bench
	@# The imaging peers, each checked at run time on the libvips its column names (imaging.py engine
	@# --column: pyvips' version and the library file mapped into the process), before and after installing.
	@# pip runs with --no-cache-dir: both pyvips' own wheel (built here in API mode against libvips-dev)
	@# and pyvips-binary's ship a top-level _libvips, and a cached API-mode wheel installed in the
	@# pyvips[binary] venv made that column run Debian's libvips without a word.
	@# Column "debian": Pillow, and pyvips built against Debian's libvips.
	@.build-bench/venv/bin/python -c "import PIL" 2>/dev/null && $(PEER_ENGINE) .build-bench/venv debian >/dev/null 2>&1 || \
	  { rm -rf .build-bench/venv && python3 -m venv .build-bench/venv && .build-bench/venv/bin/pip install $(PIP) "pillow>=10" "pyvips>=2.2"; }
	@$(PEER_ENGINE) .build-bench/venv debian
	@# Column "binary", pyvips[binary]: pyvips on the same pyvips-binary build as ours (what `pip install
	@# "pyvips[binary]"` gives a Python user); PKG_CONFIG_LIBDIR points nowhere so pip cannot build it
	@# against libvips-dev.
	@$(PEER_ENGINE) .build-bench/vips-binary-venv binary >/dev/null 2>&1 || \
	  { rm -rf .build-bench/vips-binary-venv && python3 -m venv .build-bench/vips-binary-venv && \
	    PKG_CONFIG_LIBDIR=/nonexistent .build-bench/vips-binary-venv/bin/pip install $(PIP) \
	    "pyvips[binary]>=3" "pyvips-binary==$(LIBVIPS_VERSION)"; }
	@$(PEER_ENGINE) .build-bench/vips-binary-venv binary

## make trace: what one cold thumbnail request, one memory hit and one disk hit of the app run, how
## they synchronize and what they allocate (code regions of Sources/ by module; locks by the type
## holding the Mutex, actor hops, atomic read-modify-writes; heap allocations), counted in a build
## with code coverage (.build-trace/), beside the baseline in scripts/trace-baseline.json and against
## the budgets in scripts/trace-budgets.json. `make trace ARGS=--check` (CI) exits 1 when a figure is
## more than 5% over its budget; ARGS=--burst counts contended locks under the 1,000-variant burst.
trace: bootstrap
	scripts/trace $(ARGS)

## make fuzz: under libFuzzer for SECONDS each (default 60): the disk entry decoder and the uses of what it
## decodes; the parsers of header fields and request targets.
fuzz: bootstrap
	scripts/fuzz $(SECONDS)

clean:
	rm -rf .build .build-vips-system .build-bench .build-venv .build-fuzz .build-docs .build-trace
