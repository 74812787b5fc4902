# sextant — build, test and benchmark.
#
#   make            build bin/sextant and every first-party plugin (native + wasm)
#   make test       run every test (what CI runs)
#   make bench      run the DESIGN.md §9 benchmarks
#   make lint       gofmt + go vet + staticcheck
#   make wat        rebuild the committed .wasm test plugins from their .wat sources (needs wabt)

GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/sextant-dev/sextant/host/cli.version=$(VERSION)
# Every first-party plugin is a package with a plugin/main.go.
PLUGIN_MAINS := $(sort $(dir $(wildcard navigators/*/plugin/main.go plugins/*/plugin/main.go)))
PLUGIN_NAMES := $(foreach d,$(PLUGIN_MAINS),$(notdir $(patsubst %/plugin/,%,$(d))))
BENCH     ?= BenchmarkPluginCall|BenchmarkPluginLoad|BenchmarkNavigate|BenchmarkRun|BenchmarkReplay|BenchmarkStore|BenchmarkStrategyValidate|BenchmarkServe|BenchmarkTemporal
BENCHTIME ?= 1s
STATICCHECK ?= v0.8.2

.PHONY: all build plugins test bench lint wat demo clean

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
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	@# The concurrent parts again under the race detector: the run engine,
	@# replay, store, evolution, and CLI scripts that run parallel branches.
	$(GO) test -race -count=1 -timeout $(RACE_TIMEOUT) ./host/internal/run ./host/internal/replay ./host/internal/store ./host/internal/evolve ./host/internal/report ./host/internal/plugin/process
	$(GO) test -race -count=1 -timeout $(RACE_TIMEOUT) -run 'TestScripts/(examples|run_lifecycle|replay_gate)' ./host/cli

# -p 1: one package's benchmarks at a time. go test otherwise runs a
# package per core side by side, and on a 2-core machine a wasm replay then
# shares the CPU with another package's benchmarks (its figures halve).
bench:
	$(GO) test -p 1 -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem ./... | grep -E '^(Benchmark|ok|FAIL|---)' 

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) ./...
	@# go install module@version refuses a module with a replace directive.
	@if grep -nE '^[[:space:]]*replace([[:space:]]|\()' go.mod; then echo "go.mod: no replace directives (go install refuses them)"; exit 1; fi

wat:
	@set -e; for f in $$(find testdata/plugins -name '*.wat'); do \
		echo "wat2wasm $$f"; wat2wasm $$f -o $${f%.wat}.wasm; \
	done

# The main job on embedded defaults: the three examples, offline, no API key.
demo: build
	$(BIN)/sextant run pipelines/email-triage/pipeline.toml --input pipelines/email-triage/inputs/newsletter.json
	$(BIN)/sextant run pipelines/research-report/pipeline.toml --input pipelines/research-report/inputs/question.json
	$(BIN)/sextant run pipelines/answer-and-learn/pipeline.toml --input pipelines/answer-and-learn/inputs/shipping.json
	$(BIN)/sextant runs --store pipelines/email-triage/.sextant --limit 5

clean:
	rm -rf $(BIN)
