package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// capture is a store that keeps a copy of every checkpoint's state and
// its spans' names and attributes, in order.
type capture struct {
	*store.Store
	log []string
}

func (c *capture) Checkpoint(ctx context.Context, cp *store.Checkpoint, spans ...store.Span) error {
	c.log = append(c.log, fmt.Sprintf("checkpoint %d %s", cp.Step, cp.State))
	for _, sp := range spans {
		c.log = append(c.log, fmt.Sprintf("  span %d %s %v", sp.Seq, sp.Name, sp.Attributes))
	}
	return c.Store.Checkpoint(ctx, cp, spans...)
}

// TestVarsInPlace: a run that writes step outputs into its own vars map
// (assignOutput, varsMine) checkpoints, in order, exactly what one that
// copies vars at every output checkpoints, and ends with the same vars:
// sequential chains, LLM steps with text and JSON outputs, expressions
// whose value is the vars map itself or holds it, BPMN parallel and
// exclusive flows.
func TestVarsInPlace(t *testing.T) {
	aliasing := t.TempDir()
	for f, s := range map[string]string{
		"chain.toml": "name = \"alias\"\n" + strings.Repeat("[[steps]]\nid = \"%s\"\n", 6),
		"pipeline.toml": `name = "alias"
[routine]
navigator = "chain"
file = "chain.toml"
[steps.a]
kind = "expr"
set = { x = "1", y = "'two'" }
[steps.b]
kind = "expr"
set = { all = "vars" }
[steps.c]
kind = "expr"
set = { n = "len(vars)" }
[steps.d]
kind = "expr"
set = { nested = "{'v': vars, 'n': 3}" }
[steps.e]
kind = "expr"
set = { z = "x + 1" }
[steps.f]
kind = "expr"
set = { list = "[x, y, z]", k = "keys(vars)" }
`} {
		if f == "chain.toml" {
			s = fmt.Sprintf(s, "a", "b", "c", "d", "e", "f")
		}
		if err := os.WriteFile(filepath.Join(aliasing, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths := map[string]string{"chain10": "testdata/chain10/pipeline.toml", "aliasing": filepath.Join(aliasing, "pipeline.toml")}
	for _, name := range []string{"linear10", "exclusive", "parallel4"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "navigators", "bpmn", "testdata", "bench", name+".bpmn"))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeBPMNPipeline(t, dir, name, string(data))
		paths["bpmn-"+name] = filepath.Join(dir, "pipeline.toml")
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			prep := prepare(t, path)
			inputs := []map[string]any{{"topic": "a", "amount": 50}, {"topic": "b", "amount": 500}, {"topic": "c", "amount": 5000}}
			for i, in := range inputs {
				var got [2][]string
				var outs [2]string
				for k, copyVars := range []bool{true, false} {
					st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(quietLogger()))
					if err != nil {
						t.Fatal(err)
					}
					c := &capture{Store: st}
					at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
					r := prep.Runner(run.Config{Store: st, Journal: c, Logger: quietLogger(), Clock: func() time.Time { return at }})
					if copyVars {
						run.CopyVars(r)
					}
					res, err := r.Start(context.Background(), run.Input{ID: fmt.Sprintf("task%d", i), Input: in})
					st.Close()
					if err != nil {
						t.Fatal(err)
					}
					got[k], outs[k] = c.log, fmt.Sprintf("%s %d %v", res.Status, res.Steps, res.Output)
				}
				if len(got[0]) < 3 {
					t.Fatalf("input %v: %d checkpoints", in, len(got[0]))
				}
				if name == "bpmn-parallel4" {
					// Parallel branches land in any order: only the end is
					// the same from run to run.
					got[0], got[1] = got[0][len(got[0])-2:], got[1][len(got[1])-2:]
				}
				if len(got[0]) != len(got[1]) {
					t.Fatalf("input %v: copying vars logs %d lines, writing in place %d", in, len(got[0]), len(got[1]))
				}
				for l := range got[0] {
					if got[0][l] != got[1][l] {
						t.Fatalf("input %v: line %d differs: copying vars\n%s\nwriting in place\n%s", in, l, got[0][l], got[1][l])
					}
				}
				if outs[0] != outs[1] {
					t.Errorf("input %v: copying vars ends %s, writing in place %s", in, outs[0], outs[1])
				}
			}
		})
	}
}
