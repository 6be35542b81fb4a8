# Hivecrew build, test and run. `make help` lists the targets.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/hivecrew/hivecrew/core/version.Version=$(VERSION)
UNAME   := $(shell uname -s)
# Two packages at a time: most of a package's time is waiting (on sockets,
# X servers, sandboxes, timeouts it checks), not computing; the end-to-end
# packages each use their own data folders, sandboxes and X displays.
TESTFLAGS ?= -count=1 -p 2 -timeout 20m

# The guest agent is static (no cgo) for Linux sandboxes, whose root
# filesystems are their own; its macOS driver (ScreenCaptureKit, CGEvent,
# AXUIElement) needs cgo.
ifeq ($(UNAME),Darwin)
AGENT_CGO := 1
else
AGENT_CGO := 0
endif
# The identity `make build` signs the helper with on macOS: "-" is ad hoc.
# A self-signed code-signing certificate's name keeps the keychain from
# asking again after every rebuild (docs/macos.md, "The guest agent's grants").
SIGN_IDENTITY ?= -
# The guest agent's signing identifier. A guest's TCC grants (Screen
# Recording, Accessibility, Files and Folders) follow its designated
# requirement: with a certificate (SIGN_IDENTITY) that is this identifier
# and the certificate, and a rebuilt agent keeps them; signed ad hoc it is
# the binary's hash, and every rebuild must be granted again.
AGENT_ID := com.hivecrew.guestagent

.PHONY: build test run deps deps-runtime vet unit e2e browser check-darwin bench eval-selftest app clean help

## build: host binaries bin/hivecrew, bin/hivecrew-helper, bin/hivecrew-guestagent (default)
##        (on macOS the helper is signed ad hoc with entitlements.plist: VMs need it)
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/hivecrew ./app
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/hivecrew-helper ./xpchelper
	CGO_ENABLED=$(AGENT_CGO) $(GO) build -ldflags "$(LDFLAGS)" -o bin/hivecrew-guestagent ./guestagent
ifeq ($(UNAME),Darwin)
	codesign --force --sign "$(SIGN_IDENTITY)" --entitlements entitlements.plist bin/hivecrew-helper
	codesign --force --sign "$(SIGN_IDENTITY)" --identifier $(AGENT_ID) bin/hivecrew-guestagent
endif

## test: install what is missing, then vet, unit, end-to-end and browser tests, and check-darwin
test: deps vet unit e2e browser check-darwin

## deps: install the packages Hivecrew needs to build, run and test on this machine (idempotent)
deps:
	./scripts/deps

## deps-runtime: only what running it needs (make run)
deps-runtime:
	./scripts/deps --runtime

vet:
	$(GO) vet ./...

unit:
	$(GO) test $(TESTFLAGS) ./core/... ./app/... ./xpchelper/... ./guestagent/... ./scripts/...

# The end-to-end and browser tests run the binaries `make build` just made
# (HIVECREW_TEST_BIN) instead of each package and test file linking its own.
# E2E_ALONE are timed against the screen (a screenshot right after input
# must show it): they run after the others, one package at a time, with
# the machine to themselves.
E2E_ALONE := ./tests/guest ./tests/desktop
e2e: build
	HIVECREW_TEST_BIN=$(CURDIR)/bin $(GO) test $(TESTFLAGS) $$($(GO) list ./tests/... | grep -vxF "$$($(GO) list $(E2E_ALONE))")
	HIVECREW_TEST_BIN=$(CURDIR)/bin $(GO) test $(TESTFLAGS) -p 1 $(E2E_ALONE)

# Test files run BROWSER_JOBS at a time (each its own helper, browser and
# temporary folders): they mostly wait on pages, helpers and sandboxes. A
# Node without --test-concurrency (before 20.10) runs them as it does.
BROWSER_JOBS ?= 2
browser: build
	@if ls tests/browser/*.test.mjs >/dev/null 2>&1; then \
		jobs=; if node --test-concurrency=$(BROWSER_JOBS) -e 0 2>/dev/null; then jobs=--test-concurrency=$(BROWSER_JOBS); fi; \
		HIVECREW_TEST_BIN=$(CURDIR)/bin node --test $$jobs tests/browser/; \
	else echo "browser: no browser tests yet"; fi

## check-darwin: type-check and lint every package as built for darwin/arm64 (cgo), from source;
##        with HIVECREW_DARWIN_SDK also compile the cgo and Objective-C with clang and link the executables
check-darwin:
	$(GO) run ./scripts/checkdarwin ./...

## bench: measure against targets and baselines; prints a table, writes $$BENCH_OUT and $$BENCH_REPORT (BENCH_ONLY=soak: the 1,000-task soak)
bench: build
	$(GO) run ./tests/bench

## eval-selftest: every starter eval task's oracle passes and its null run fails, in real sandboxes (tests/eval/README.md)
eval-selftest: build
	HIVECREW_EVAL_ALL=1 $(GO) test -count=1 -timeout 15m -run 'TestStarterSuite' -v ./tests/eval/

## run: build and start the product on this OS (the helper in the foreground)
run: deps-runtime build
	./bin/hivecrew-helper serve --print-api-key

## app: the signed Hivecrew.app bundle (macOS only; refuses a macOS SDK older than macOS 15)
app:
ifeq ($(UNAME),Darwin)
	$(GO) run ./scripts/checkdarwin -sdk-check "$${SDKROOT:-$$(xcrun --sdk macosx --show-sdk-path)}"
	mkdir -p dist/bin
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 $(GO) build -ldflags "$(LDFLAGS)" -o dist/bin/hivecrew ./app
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 $(GO) build -ldflags "$(LDFLAGS)" -o dist/bin/hivecrew-helper ./xpchelper
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 $(GO) build -ldflags "$(LDFLAGS)" -o dist/bin/hivecrew-guestagent ./guestagent
	scripts/bundle-app --bin dist/bin --out dist --version $(VERSION)
	scripts/sign-app dist/Hivecrew.app
	scripts/make-dmg dist/Hivecrew.app dist/Hivecrew.dmg
	@if [ -n "$$NOTARY_PROFILE" ]; then scripts/notarize-app dist/Hivecrew.dmg; else echo "make app: not notarised (set IDENTITY and NOTARY_PROFILE to notarise)"; fi
else
	@echo "make app builds Hivecrew.app and needs a Mac (macOS 15+, Xcode command-line tools)." >&2; \
	 echo "On this $(UNAME) machine use 'make run' (the helper) and 'make check-darwin' (darwin type-check)." >&2; exit 2
endif

clean:
	rm -rf bin dist bench-results.json bench-report.html

help:
	@grep -E '^## ' Makefile | sed 's/^## /  /'
