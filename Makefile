# EmojiArt for Linux. Every target installs missing system packages first (scripts/bootstrap).
SWIFT ?= swift
export VIPS_WARNING ?= 0

.PHONY: all run test test-swift test-browser bench fuzz docs build release bootstrap clean

all: build

bootstrap:
	@scripts/bootstrap

build: bootstrap
	$(SWIFT) build

release: bootstrap
	$(SWIFT) build -c release --product emojiart

## make run: build in release mode, start the gallery and the web app on 127.0.0.1, print the URL.
run: release
	.build/release/emojiart $(ARGS)

## make test: every test: Swift Testing suites, then the real-browser test of the web UI.
test: bootstrap
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	scripts/browser-test

## make docs: the DocC documentation of ImageCache and Imaging as static sites in .build-docs/;
## fails on any DocC warning and on any public symbol without a doc comment.
docs: bootstrap
	rm -rf .build-docs
	$(SWIFT) package --allow-writing-to-directory .build-docs generate-documentation \
	  --target ImageCache --target Imaging --output-path .build-docs --warnings-as-errors --transform-for-static-hosting
	scripts/doc-coverage ImageCache Imaging
	@echo "open: python3 -m http.server -d .build-docs/ImageCache.doccarchive 8000, then http://127.0.0.1:8000/documentation/imagecache/"

## make bench: benchmarks with their anchors (Pillow, pyvips, nginx, a Mutex dictionary) side by side.
bench:
	@scripts/bootstrap bench
	@test -x .build-bench/venv/bin/python && .build-bench/venv/bin/python -c "import PIL, pyvips" 2>/dev/null || \
	  { python3 -m venv .build-bench/venv && .build-bench/venv/bin/pip install --quiet --disable-pip-version-check "pillow>=10" "pyvips>=2.2"; }
	@test -x .build-bench/thumbor-venv/bin/thumbor || \
	  { python3 -m venv .build-bench/thumbor-venv && .build-bench/thumbor-venv/bin/pip install --quiet --disable-pip-version-check "thumbor==7.8.*"; }
	$(SWIFT) build -c release --product emojiart-bench
	$(SWIFT) build -c release --product emojiart
	.build/release/emojiart-bench $(ARGS)

## make fuzz: the disk entry decoder, and the uses of what it decodes, under libFuzzer for SECONDS (default 60).
fuzz: bootstrap
	scripts/fuzz $(SECONDS)

clean:
	rm -rf .build .build-bench .build-venv .build-fuzz
