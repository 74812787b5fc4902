# sextant — build, test and benchmark.
#
#   make            build bin/sextant and every first-party plugin (native + wasm)
#   make test       run every test (what CI runs)
#   make bench      run the DESIGN.md §9 benchmarks, then make peer
#   make peer       the BPMN navigator beside lib-bpmn-engine (ratio of CPU time)
#   make lint       gofmt + go vet + staticcheck
#   make tidy       go mod tidy for both modules (sdk/ and the host)
#   make get MOD=path@version   add or change a requirement of the host module
#   make wat        rebuild the committed .wasm test plugins from their .wat sources (needs wabt)

GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/sextant-dev/sextant/host/cli.version=$(VERSION)
# Every first-party plugin is a package with a plugin/main.go.
PLUGIN_MAINS := $(sort $(dir $(wildcard navigators/*/plugin/main.go plugins/*/plugin/main.go)))
PLUGIN_NAMES := $(foreach d,$(PLUGIN_MAINS),$(notdir $(patsubst %/plugin/,%,$(d))))
BENCH     ?= BenchmarkPluginCall|BenchmarkPluginLoad|BenchmarkNavigate|BenchmarkRun|BenchmarkReplay|BenchmarkStore|BenchmarkStrategyValidate|BenchmarkServe
BENCHTIME ?= 1s
# BenchmarkTemporal pairs sextant with a baseline on a dev server by wall
# time, which lands near one of two rates per sub-benchmark on a shared
# machine: 1 s runs pair them by chance, 10 s runs do not.
TEMPORAL_BENCHTIME ?= 10s
PEER_COUNT ?= 3
PEER_OPS ?= 7
STATICCHECK ?= v0.8.2
# The repository holds two modules, the host (.) and the plugin SDK (sdk/),
# joined by go.work. In workspace mode ./... stops at sdk/go.mod, so every
# command that means "all the code" names both.
PKGS      := ./... ./sdk/...
SDK_MOD   := github.com/sextant-dev/sextant/sdk

.PHONY: all build plugins test bench peer lint tidy get wat demo clean

all: build plugins

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/sextant ./cmd/sextant

plugins:
	@mkdir -p $(BIN)
	@set -e; for d in $(PLUGIN_MAINS); do \
		n=$$(basename $$(dirname $$d)); \
		echo "plugin $$n: $(BIN)/$$n $(BIN)/$$n.wasm"; \
		$(GO) build -o $(BIN)/$$n ./$$d; \
		GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(BIN)/$$n.wasm ./$$d; \
	done

# -timeout bounds each test binary, not the whole run: generous enough for
# the slowest package (host/cli builds plugins and runs the crash test) on a
# busy 2-core machine, short enough that a hang still ends the job.
TEST_TIMEOUT ?= 30m
RACE_TIMEOUT ?= 30m

test:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	@# The peer harness checks that both engines run the same tasks.
	cd $(PEER) && GOWORK=off $(GO) test -count=1 .
	@# The concurrent parts again under the race detector: the run engine,
	@# replay, store, evolution, and CLI scripts that run parallel branches.
	$(GO) test -race -count=1 -timeout $(RACE_TIMEOUT) ./host/internal/run ./host/internal/replay ./host/internal/store ./host/internal/evolve ./host/internal/report ./host/internal/plugin/process
	$(GO) test -race -count=1 -timeout $(RACE_TIMEOUT) -run 'TestScripts/(examples|run_lifecycle|replay_gate)' ./host/cli

# -p 1: one package's benchmarks at a time. go test otherwise runs a
# package per core side by side, and on a 2-core machine a wasm replay then
# shares the CPU with another package's benchmarks (its figures halve).
bench:
	$(GO) test -p 1 -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem $(PKGS) | grep -E '^(Benchmark|ok|FAIL|---)' 
	$(GO) test -run '^$$' -bench BenchmarkTemporal -benchtime $(TEMPORAL_BENCHTIME) -benchmem ./host/internal/temporal | grep -E '^(Benchmark|ok|FAIL|---)'
	@$(MAKE) --no-print-directory peer

# The BPMN navigator and lib-bpmn-engine v0.2.4 on the same three processes,
# in alternating blocks in one benchmark; lib/sextant-cpu is the ratio of
# their CPU time per instance. A module of its own under testdata, so that
# lib-bpmn-engine stays out of sextant's module graph.
PEER := navigators/bpmn/testdata/peer
peer:
	cd $(PEER) && GOWORK=off $(GO) test -run '^$$' -bench Peer -benchtime $(PEER_OPS)x -count $(PEER_COUNT) . | grep -E '^(Benchmark|ok|FAIL|---)'

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd $(PEER) && GOWORK=off $(GO) vet .
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) $(PKGS)
	@# go install module@version refuses a module with a replace directive.
	@if grep -nE '^[[:space:]]*replace([[:space:]]|\()' go.mod sdk/go.mod; then echo "go.mod: no replace directives (go install refuses them)"; exit 1; fi
	@# go.work points the sdk version go.mod requires at ./sdk; the two must agree.
	@req=$$(grep -oE '$(SDK_MOD) v[^ ]+' go.mod | head -1 | cut -d' ' -f2); \
	 if ! grep -qE "^replace $(SDK_MOD) $$req => \./sdk$$" go.work; then echo "go.work: want 'replace $(SDK_MOD) $$req => ./sdk' (the version go.mod requires)"; exit 1; fi

	@# The sdk builds alone, as plugin authors get it: GOWORK=off, its own go.mod
	@# and go.sum complete, and no import of the host (which go.work would hide).
	cd sdk && GOWORK=off GOFLAGS=-mod=readonly $(GO) list -deps -test ./... >/dev/null

# go mod tidy and go get ignore go.work (golang/go#50750), and the host's
# go.mod requires an sdk version the module proxy may not have yet. So the
# host module is tidied (and changed by make get) through a temporary copy of
# go.mod that replaces the sdk with ./sdk; the copy, minus that replace,
# becomes go.mod. go.sum keeps the sdk's own checksum lines for the required
# version (a release adds them).
MODTMP = .modtmp
define with_sdk_replace
	@cp go.mod $(MODTMP).mod && cp go.sum $(MODTMP).sum
	@GOWORK=off $(GO) mod edit -replace=$(SDK_MOD)=./sdk $(MODTMP).mod
	GOWORK=off $(GO) $(1) -modfile=$(MODTMP).mod $(2) || { rm -f $(MODTMP).mod $(MODTMP).sum; exit 1; }
	@GOWORK=off $(GO) mod edit -dropreplace=$(SDK_MOD) $(MODTMP).mod
	@req=$$(grep -oE '$(SDK_MOD) v[^ ]+' $(MODTMP).mod | head -1 | cut -d' ' -f2); \
	 grep -E "^$(SDK_MOD) $$req[ /]" go.sum >> $(MODTMP).sum || true
	@mv $(MODTMP).mod go.mod && mv $(MODTMP).sum go.sum
endef

tidy:
	cd sdk && GOWORK=off $(GO) mod tidy
	$(call with_sdk_replace,mod tidy,)

get:
	@test -n "$(MOD)" || { echo "usage: make get MOD=module@version (sdk requirements: cd sdk && GOWORK=off go get ...)"; exit 2; }
	$(call with_sdk_replace,get,$(MOD))

wat:
	@set -e; for f in $$(find testdata/plugins -name '*.wat'); do \
		echo "wat2wasm $$f"; wat2wasm $$f -o $${f%.wat}.wasm; \
	done

# The main job on embedded defaults: the examples, offline, no API key.
demo: build
	$(BIN)/sextant run pipelines/email-triage/pipeline.toml --input pipelines/email-triage/inputs/newsletter.json
	$(BIN)/sextant run pipelines/research-report/pipeline.toml --input pipelines/research-report/inputs/question.json
	$(BIN)/sextant run pipelines/answer-and-learn/pipeline.toml --input pipelines/answer-and-learn/inputs/shipping.json
	$(BIN)/sextant run pipelines/support-agent/pipeline.toml --input pipelines/support-agent/inputs/lost.json
	$(BIN)/sextant runs --store pipelines/email-triage/.sextant --limit 5

clean:
	rm -rf $(BIN)
