package run_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// fakeClock is a run clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// slowModel is a model that takes a while by the run's clock.
type slowModel struct {
	clock *fakeClock
	takes time.Duration
}

func (m slowModel) Describe() sdk.Info {
	return sdk.Info{Name: "slow", Kind: sdk.KindProvider, Version: "0.0.1", API: sdk.APIVersion}
}

func (m slowModel) Chat(context.Context, *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	m.clock.Advance(m.takes)
	return &sdk.ChatResponse{Text: "done", Usage: sdk.Usage{InputTokens: 1, OutputTokens: 1}}, nil
}

// twoSteps writes a two-step chain pipeline (an LLM step, then an
// expression) with the [limits] given, and returns its path.
func twoSteps(t *testing.T, limits string) string {
	t.Helper()
	dir := t.TempDir()
	strat, err := os.ReadFile("testdata/chain10/strategy.toml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"strategy.toml": string(strat),
		"chain.toml": `name = "two"
[[steps]]
id = "ask"
[[steps]]
id = "after"
`,
		"responses.toml": "[default]\nreply = \"ok\"\n",
		"pipeline.toml": `name = "two"
[routine]
navigator = "chain"
file = "chain.toml"
[strategy]
file = "strategy.toml"
[providers.default]
use = "script"
rules = "responses.toml"
[steps.ask]
kind = "llm"
prompt = "go"
[steps.after]
kind = "expr"
set = { x = "1" }
` + limits,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "pipeline.toml")
}

// TestTimeoutDefault: a pipeline without limits.timeout gets the declared
// 10 minutes, and a run whose clock passes them stops with a limit error
// (no real waiting: the model "takes" 11 minutes of the run's clock).
func TestTimeoutDefault(t *testing.T) {
	for _, tt := range []struct {
		name, limits string
		takes        time.Duration
		want         store.Status
		wantErr      string
	}{
		{"default passed", "", 11 * time.Minute, store.StatusFailed, "limit exceeded: timeout 10m0s"},
		{"default kept", "", 9 * time.Minute, store.StatusCompleted, ""},
		{"written", "[limits]\ntimeout = \"30m\"\n", 11 * time.Minute, store.StatusCompleted, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prep := prepare(t, twoSteps(t, tt.limits))
			if tt.limits == "" {
				if got := prep.Pipeline.Limits.Timeout.Std(); got != 10*time.Minute {
					t.Fatalf("effective limits.timeout = %v, want 10m", got)
				}
			}
			ctx := context.Background()
			st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			clock := &fakeClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
			r := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: prep.Navigator, Routine: prep.Routine,
				Strategy: prep.Strategy, Prices: prep.Prices, Store: st, Clock: clock.Now,
				Providers: run.NewProviders(nil, &run.Provider{Name: "default", Plugin: slowModel{clock: clock, takes: tt.takes}})})
			res, err := r.Start(ctx, run.Input{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.want || res.Error != tt.wantErr {
				t.Errorf("got %s %q, want %s %q", res.Status, res.Error, tt.want, tt.wantErr)
			}
		})
	}
}

// tickingClock moves on by tick every time it is read.
type tickingClock struct {
	mu   sync.Mutex
	now  time.Time
	tick time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.tick)
	return c.now
}

// TestTimeoutAnyMoment: whenever between two reads of the run's clock the
// timeout passes — before a step starts, after it was started and before
// it ran, while it runs, after it finished — the run ends completed or
// failed with the timeout, never hangs and never errs otherwise.
func TestTimeoutAnyMoment(t *testing.T) {
	prep := prepare(t, twoSteps(t, "[limits]\ntimeout = \"1h\"\n"))
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	timedOut := 0
	for tick := time.Minute; tick <= 61*time.Minute; tick += time.Minute {
		clock := &tickingClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), tick: tick}
		r := prep.Runner(run.Config{Store: st, Clock: clock.Now})
		res, err := r.Start(ctx, run.Input{})
		if err != nil {
			t.Fatalf("tick %v: %v", tick, err)
		}
		switch {
		case res.Status == store.StatusCompleted:
		case res.Status == store.StatusFailed && res.Error == "limit exceeded: timeout 1h0m0s":
			timedOut++
		default:
			t.Fatalf("tick %v: %s %q", tick, res.Status, res.Error)
		}
	}
	if timedOut == 0 {
		t.Fatal("no run timed out")
	}
}
