package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestStepSpanAttributes: a step span names its node, step kind and
// token, whichever run of the runner made it: a step's token id differs
// from run to run here (a skipped step takes no token), and every run's
// spans read back from the store say exactly their own.
func TestStepSpanAttributes(t *testing.T) {
	dir := t.TempDir()
	for f, s := range map[string]string{
		"chain.toml": `name = "skips"
[[steps]]
id = "a"
[[steps]]
id = "b"
skip_if = "input.skip"
[[steps]]
id = "c"
`,
		"pipeline.toml": `name = "skips"
[routine]
navigator = "chain"
file = "chain.toml"
[steps.a]
kind = "expr"
set = { x = "1" }
[steps.b]
kind = "expr"
set = { y = "2" }
[steps.c]
kind = "expr"
set = { z = "3" }
`} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prep := prepare(t, filepath.Join(dir, "pipeline.toml"))
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := prep.Runner(run.Config{Store: st, Logger: quietLogger()})
	skipped := "step a a expr t1; step c c expr t2"
	all := "step a a expr t1; step b b expr t2; step c c expr t3"
	for i, skip := range []bool{true, false, true, false, false} {
		res, err := r.Start(ctx, run.Input{Input: map[string]any{"skip": skip}})
		if err != nil || res.Status != store.StatusCompleted {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		spans, err := st.Spans(ctx, res.Task, res.Execution)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sp := range spans {
			if !strings.HasPrefix(sp.Name, "step ") {
				continue
			}
			if len(sp.Attributes) != 3 {
				t.Errorf("run %d: %s: attributes %v", i, sp.Name, sp.Attributes)
			}
			got = append(got, fmt.Sprintf("%s %s %s %s", sp.Name, sp.Attributes["sextant.node"].Str(),
				sp.Attributes["sextant.step.kind"].Str(), sp.Attributes["sextant.token_id"].Str()))
		}
		want := all
		if skip {
			want = skipped
		}
		if g := strings.Join(got, "; "); g != want {
			t.Errorf("run %d (skip %v): step spans %q, want %q", i, skip, g, want)
		}
	}
}
