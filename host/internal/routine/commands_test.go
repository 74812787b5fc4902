package routine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// testLoader is the commands' loader with the real builtin navigators
// and the real run engine's pipeline loader.
func testLoader(t *testing.T) Files {
	return Files{
		Registry: func(string) (*plugin.Registry, error) { return registry(t), nil },
		Logger:   slog.New(slog.DiscardHandler),
	}
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
	results, errs := Validate(ctx, Source{Files: []string{good, bad}}, testLoader(t), nil)
	if len(results) != 2 || !results[0].OK || results[0].Nodes != 5 || results[1].OK || len(results[1].Problems) == 0 {
		t.Fatalf("results: %+v", results)
	}
	if len(errs) != 1 || !errors.Is(errs[0], sdk.ErrInvalid) {
		t.Errorf("errs: %v, want the bad routine's", errs)
	}
	if p := results[1].Problems[0]; p.File != bad || p.Line == 0 || !strings.Contains(p.Message, "nowhere") {
		t.Errorf("problem not positioned: %+v", p)
	}

	results, errs = Validate(ctx, Source{Pipeline: filepath.Join(dir, "missing.toml")}, testLoader(t), nil)
	if len(results) != 1 || results[0].OK || len(errs) != 1 {
		t.Errorf("a missing pipeline: %+v, %v", results, errs)
	}
	// Need checks a pipeline before it is read, not a routine file
	errGone := errors.New("gone")
	l := testLoader(t)
	l.Need = func(what, path string) error { return fmt.Errorf("%s %s: %w", what, path, errGone) }
	if _, errs = Validate(ctx, Source{Pipeline: filepath.Join(dir, "missing.toml")}, l, nil); len(errs) != 1 || !errors.Is(errs[0], errGone) {
		t.Errorf("Need not asked about a pipeline: %v", errs)
	}
	if _, err := Simulate(ctx, Source{Pipeline: filepath.Join(dir, "missing.toml")}, l, run.SimOptions{}); !errors.Is(err, errGone) {
		t.Errorf("Need not asked before Prepare: %v", err)
	}
	if results, errs = Validate(ctx, Source{Files: []string{good}}, l, nil); len(errs) != 0 || !results[0].OK {
		t.Errorf("Need asked about a routine file: %v", errs)
	}
}

func TestSimulate(t *testing.T) {
	ctx := context.Background()
	path := write(t, t.TempDir(), "order.bpmn", strings.Replace(orderBPMN, "amout", "amount", 1))
	for _, tt := range []struct {
		amount int64
		want   string
	}{{500, "high"}, {5, "low"}} {
		res, err := Simulate(ctx, Source{Files: []string{path}}, testLoader(t), run.SimOptions{Vars: map[string]any{"amount": tt.amount}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != run.SimCompleted || !strings.Contains(res.Text(), "enter:"+tt.want+"\n") {
			t.Errorf("amount %d: got %s, want completed through %s", tt.amount, res.Text(), tt.want)
		}
	}
	// a strategy file's values replace opts.Strategy; one that does not
	// load is invalid input
	limited := strings.NewReplacer("amout &gt; 100", "amount &gt; strategy.parameters.limit", "amount &lt;= 100", "amount &lt;= strategy.parameters.limit").Replace(orderBPMN)
	limitedPath := write(t, t.TempDir(), "limited.bpmn", limited)
	strat := write(t, t.TempDir(), "s.toml", "[metadata]\nname = \"s\"\nversion = \"1.0.0\"\n\n[parameters]\nlimit = 0.6\n\n[evolution]\nmax_parameter_delta = 0.1\nbranch_type = \"production\"\n")
	res, err := Simulate(ctx, Source{Files: []string{limitedPath}, Strategy: strat}, testLoader(t), run.SimOptions{Vars: map[string]any{"amount": 0.5}, Strategy: map[string]any{"parameters": map[string]any{"limit": 0.1}}})
	if err != nil || !strings.Contains(res.Text(), "enter:low\n") {
		t.Errorf("amount 0.5 under the strategy file's limit 0.6 (not 0.1): got %v, %v; want completed through low", res, err)
	}
	if err := os.WriteFile(strat, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Simulate(ctx, Source{Files: []string{path}, Strategy: strat}, testLoader(t), run.SimOptions{}); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("an empty strategy file: got %v, want sdk.ErrInvalid", err)
	}
	if _, err := Simulate(ctx, Source{Files: []string{path}, Strategy: strat + ".gone"}, testLoader(t), run.SimOptions{}); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("a missing strategy file: got %v, want sdk.ErrInvalid", err)
	}
	if _, err := Simulate(ctx, Source{}, testLoader(t), run.SimOptions{}); err == nil {
		t.Error("simulated nothing")
	}
	if _, err := Simulate(ctx, Source{Files: []string{path + ".gone"}}, testLoader(t), run.SimOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing routine: got %v", err)
	}
}

func TestWriteResults(t *testing.T) {
	ok := Result{File: "a.bpmn", OK: true, Nodes: 3}
	warned := Result{File: "b.bpmn", OK: true, Nodes: 2, Unchecked: "step s writes anything",
		Warnings: []sdk.Problem{{File: "b.bpmn", Line: 4, Element: "f1", Message: "nothing writes amout"}}}
	bad := Result{File: "c.bpmn", Problems: []sdk.Problem{{File: "c.bpmn", Message: "broken"}}}
	var out, errw strings.Builder
	if !WriteResults(&out, &errw, []Result{ok, warned, bad}) {
		t.Error("warnings not reported")
	}
	if want := "a.bpmn: ok (3 nodes)\nb.bpmn: ok (2 nodes)\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	wantErr := "b.bpmn:4: f1: warning: nothing writes amout\nb.bpmn: names not checked against --input: step s writes anything\n"
	if errw.String() != wantErr {
		t.Errorf("stderr %q, want %q", errw.String(), wantErr)
	}
	if WriteResults(&out, &errw, []Result{ok}) {
		t.Error("warnings reported where there are none")
	}
	for _, tt := range []struct {
		results []Result
		strict  bool
		want    bool
	}{
		{[]Result{ok}, true, false},
		{[]Result{ok, warned}, false, false},
		{[]Result{ok, warned}, true, true},
		{[]Result{ok, bad}, false, true},
	} {
		if got := Failed(tt.results, tt.strict); got != tt.want {
			t.Errorf("Failed(%v, strict %v) = %v, want %v", tt.results, tt.strict, got, tt.want)
		}
	}
}
