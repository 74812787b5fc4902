package run_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/sdk"
)

// oneStep writes a one-step chain pipeline whose step asks the provider
// block given, and returns the pipeline's path.
func oneStep(t *testing.T, provider, limits string) string {
	t.Helper()
	dir := t.TempDir()
	strat, err := os.ReadFile("testdata/chain10/strategy.toml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"strategy.toml": string(strat),
		"chain.toml":    "name = \"one\"\ninputs = [\"topic\"]\n[[steps]]\nid = \"ask\"\ninputs = [\"topic\"]\noutputs = [\"answer\"]\n",
		"pipeline.toml": `name = "one"
[routine]
navigator = "chain"
file = "chain.toml"
[strategy]
file = "strategy.toml"
[providers.default]
` + provider + `
[steps.ask]
kind = "llm"
prompt = "Tell me about {{ .input.topic }}"
[limits]
` + limits,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "pipeline.toml")
}

// TestProviderUsageImpossible runs a step against a real OpenAI-compatible
// server that answers impossible usage: the run fails naming the provider,
// nothing is accounted (the budgets stay on) and nothing is recorded.
func TestProviderUsageImpossible(t *testing.T) {
	for _, tt := range []struct {
		name, usage, want string
	}{
		{"negative prompt tokens", `{"prompt_tokens": -5000000, "completion_tokens": 42}`,
			`step "ask": provider "default": impossible usage: input_tokens -5000000 (want 0..1000000000 per call)`},
		{"negative completion tokens", `{"prompt_tokens": 10, "completion_tokens": -1}`,
			`step "ask": provider "default": impossible usage: output_tokens -1 (want 0..1000000000 per call)`},
		{"absurd prompt tokens", `{"prompt_tokens": 5000000000, "completion_tokens": 1}`,
			`step "ask": provider "default": impossible usage: input_tokens 5000000000 (want 0..1000000000 per call)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"model":"gpt-4o","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":%s}`, tt.usage)
			}))
			defer srv.Close()
			path := oneStep(t, fmt.Sprintf("use = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = %q\n", srv.URL),
				"max_tokens = 100\nmax_cost_usd = 0.001\n")
			prep := prepare(t, path)
			ctx := context.Background()
			st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			res, err := prep.Runner(run.Config{Store: st}).Start(ctx, run.Input{ID: "t1", Input: map[string]any{"topic": "owls"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != store.StatusFailed || res.Error != tt.want {
				t.Errorf("got %s %q\nwant failed %q", res.Status, res.Error, tt.want)
			}
			if res.Tokens != 0 || res.CostUSD != 0 {
				t.Errorf("accounted %d tokens, $%v; want nothing", res.Tokens, res.CostUSD)
			}
			tree, err := st.Tree(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			if len(tree.Recordings) != 0 {
				t.Errorf("the impossible answer was recorded: %v", tree.Recordings)
			}
		})
	}
}

// TestCheckUsage covers what a provider cannot report.
func TestCheckUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		u    sdk.Usage
		cost float64
		want string
	}{
		{"ok", sdk.Usage{InputTokens: 10, OutputTokens: 5}, 0.01, ""},
		{"zero", sdk.Usage{}, 0, ""},
		{"at the cap", sdk.Usage{InputTokens: run.MaxCallTokens}, 0, ""},
		{"negative input", sdk.Usage{InputTokens: -1}, 0, `provider "p": impossible usage: input_tokens -1 (want 0..1000000000 per call)`},
		{"over the cap", sdk.Usage{OutputTokens: run.MaxCallTokens + 1}, 0, `provider "p": impossible usage: output_tokens 1000000001 (want 0..1000000000 per call)`},
		{"NaN cost", sdk.Usage{}, math.NaN(), `provider "p": impossible usage: cost NaN (want a finite amount >= 0)`},
		{"negative cost", sdk.Usage{}, -4.5, `provider "p": impossible usage: cost -4.5 (want a finite amount >= 0)`},
		{"infinite cost", sdk.Usage{}, math.Inf(1), `provider "p": impossible usage: cost +Inf (want a finite amount >= 0)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run.CheckUsage("p", tt.u, tt.cost)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, run.ErrUsage) {
					t.Errorf("not ErrUsage: %v", err)
				}
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
