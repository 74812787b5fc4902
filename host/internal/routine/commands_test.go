package routine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// testLoader loads with the real builtin navigators and the real run
// engine's pipeline loader.
type testLoader struct{ t *testing.T }

func (l testLoader) Pipeline(ctx context.Context, path string) (*run.Loaded, error) {
	return run.Load(ctx, path, registry(l.t), slog.New(slog.DiscardHandler))
}

func (l testLoader) Prepare(ctx context.Context, path string) (*run.Prepared, error) {
	return run.Prepare(ctx, path, registry(l.t), slog.New(slog.DiscardHandler))
}

func (l testLoader) Routine(ctx context.Context, path, navigator string, decisions []string) (*Loaded, error) {
	return Load(ctx, registry(l.t), path, navigator, decisions)
}

func TestSourceUsage(t *testing.T) {
	tests := []struct {
		src  Source
		want string
	}{
		{Source{Files: []string{"a"}}, ""},
		{Source{Pipeline: "p"}, ""},
		{Source{}, "validate: name FILEs or --pipeline FILE"},
		{Source{Pipeline: "p", Files: []string{"a"}}, "validate: give FILEs or --pipeline, not both"},
		{Source{Pipeline: "p", Navigator: "bpmn"}, "validate: --navigator and --decisions come from the pipeline with --pipeline"},
		{Source{Pipeline: "p", Decisions: []string{"d.dmn"}}, "validate: --navigator and --decisions come from the pipeline with --pipeline"},
	}
	for _, tt := range tests {
		err := tt.src.Usage("validate", "FILEs")
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("%+v: got %q, want %q", tt.src, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("%+v: got no error, want %q", tt.src, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := write(t, dir, "order.bpmn", orderBPMN)
	bad := write(t, dir, "bad.bpmn", strings.Replace(orderBPMN, `targetRef="gw"`, `targetRef="nowhere"`, 1))
	results, errs := Validate(ctx, Source{Files: []string{good, bad}}, testLoader{t}, nil)
	if len(results) != 2 || !results[0].OK || results[0].Nodes != 5 || results[1].OK || len(results[1].Problems) == 0 {
		t.Fatalf("results: %+v", results)
	}
	if len(errs) != 1 || !errors.Is(errs[0], sdk.ErrInvalid) {
		t.Errorf("errs: %v, want the bad routine's", errs)
	}
	if p := results[1].Problems[0]; p.File != bad || p.Line == 0 || !strings.Contains(p.Message, "nowhere") {
		t.Errorf("problem not positioned: %+v", p)
	}

	results, errs = Validate(ctx, Source{Pipeline: filepath.Join(dir, "missing.toml")}, testLoader{t}, nil)
	if len(results) != 1 || results[0].OK || len(errs) != 1 {
		t.Errorf("a missing pipeline: %+v, %v", results, errs)
	}
}

func TestSimulate(t *testing.T) {
	ctx := context.Background()
	path := write(t, t.TempDir(), "order.bpmn", strings.Replace(orderBPMN, "amout", "amount", 1))
	for _, tt := range []struct {
		amount int64
		want   string
	}{{500, "high"}, {5, "low"}} {
		res, err := Simulate(ctx, Source{Files: []string{path}}, testLoader{t}, run.SimOptions{Vars: map[string]any{"amount": tt.amount}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != run.SimCompleted || !strings.Contains(res.Text(), "enter:"+tt.want+"\n") {
			t.Errorf("amount %d: got %s, want completed through %s", tt.amount, res.Text(), tt.want)
		}
	}
	if _, err := Simulate(ctx, Source{}, testLoader{t}, run.SimOptions{}); err == nil {
		t.Error("simulated nothing")
	}
	if _, err := Simulate(ctx, Source{Files: []string{path + ".gone"}}, testLoader{t}, run.SimOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing routine: got %v", err)
	}
}
