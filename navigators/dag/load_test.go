package dag

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"syntax", "name = \"x\"\nretries = = 2\n[tasks.a]\n", `dag.toml:2: retries: expected value but found '=' instead`},
		{"missing name and tasks", "description = \"x\"\n", "dag.toml: missing required key \"name\"\ndag.toml: no tasks: add a [tasks.ID] table for each task"},
		{"empty tasks", "name = \"x\"\n[tasks]\n", "dag.toml:2: tasks: no tasks: add a [tasks.ID] table for each task"},
		{"unknown keys", `name = "x"
nmae = "y"
[tasks.a]
depnds_on = []
trigger = "all_done"
`, `dag.toml:2: nmae: unknown key (did you mean "name"?)
dag.toml:4: tasks.a.depnds_on: unknown key (did you mean "depends_on"?)
dag.toml:5: tasks.a.trigger: unknown key`},
		{"wrong types", `name = 3
[tasks.a]
depends_on = "b"
retries = "two"
setup = 1
retry_delay = "soon"
inputs = ["x", 2]
[tasks.b]
when = true
`, `dag.toml:1: name: want a string, got integer 3
dag.toml:3: tasks.a.depends_on: want an array of strings, got string "b"
dag.toml:4: tasks.a.retries: want an integer, got string "two"
dag.toml:5: tasks.a.setup: want a boolean, got integer 1
dag.toml:6: tasks.a.retry_delay: want a duration such as "1s" or "500ms", got "soon"
dag.toml:7: tasks.a.inputs: element 1: want a string, got integer 2
dag.toml:9: tasks.b.when: want a string, got boolean true`},
		{"task not a table", "name = \"x\"\n[tasks]\na = 1\n", `dag.toml:3: tasks.a: want a table, got integer 1`},
		{"unknown depends_on", `name = "x"
[tasks.fetch]
[tasks.parse]
depends_on = [
  "fetch",
  "fecth",
  "nothing",
  "fetch",
]
`, `dag.toml:6: tasks.parse.depends_on: unknown task "fecth" (did you mean "fetch"?)
dag.toml:7: tasks.parse.depends_on: unknown task "nothing"
dag.toml:8: tasks.parse.depends_on: task "fetch" listed twice`},
		{"bad values", `name = ""
[tasks.a]
trigger_rule = "all_sucess"
retries = -1
max_retry_delay = "-1s"
outputs = ["x", "x", ""]
`, `dag.toml:1: name: must not be empty
dag.toml:3: tasks.a.trigger_rule: unknown trigger rule "all_sucess" (did you mean "all_success"?)
dag.toml:4: tasks.a.retries: want 0 to 1000, got -1
dag.toml:5: tasks.a.max_retry_delay: want a duration that is not negative, got "-1s"
dag.toml:6: tasks.a.outputs: "x" listed twice
dag.toml:6: tasks.a.outputs: element 2: empty name`},
		{"bad expressions", `name = "x"
[tasks.a]
when = "varz.ok"
[tasks.b]
when = "1 + 1"
for_each = "vars.urls +"
`, `dag.toml:3: tasks.a.when: expression "varz.ok": unknown name varz (1:1)
dag.toml:5: tasks.b.when: expression "1 + 1": expected bool, but got int
dag.toml:6: tasks.b.for_each: expression "vars.urls +": unexpected token EOF (1:11)`},
		{"cycle", `name = "x"
[tasks.a]
depends_on = ["c"]

[tasks.b]
depends_on = ["a"]

[tasks.start]

[tasks.c]
depends_on = ["b", "start"]
`, `dag.toml:11: tasks.c: cycle c → a → b → c`},
		{"two cycles and a self loop", `name = "x"
[tasks.a]
depends_on = ["b"]
[tasks.b]
depends_on = ["a"]
[tasks.self]
depends_on = ["self", "nobody"]
retries = "x"
`, `dag.toml:5: tasks.b: cycle b → a → b
dag.toml:7: tasks.self.depends_on: unknown task "nobody"
dag.toml:7: tasks.self: cycle self → self
dag.toml:8: tasks.self.retries: want an integer, got string "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "dag.toml", Routine: []byte(c.src)})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Errorf("error is not sdk.ErrInvalid: %#v", err)
			}
			if got := err.Error(); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestLoadSummary(t *testing.T) {
	src := `name = "research"
[tasks.plan]
name = "Plan the search"
outputs = ["urls"]
[tasks.fetch]
depends_on = ["plan"]
inputs = ["urls"]
`
	n := New()
	r, err := n.Load(context.Background(), &sdk.LoadRequest{Name: "r.toml", Routine: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "research" || len(r.Hash) != 64 || len(r.Nodes) != 2 {
		t.Fatalf("summary: %+v", r)
	}
	want := sdk.Node{ID: "plan", Name: "Plan the search", Kind: "task", Line: 2, Step: true, Outputs: []string{"urls"}}
	if got := r.Nodes[0]; got.ID != want.ID || got.Name != want.Name || got.Kind != want.Kind || got.Line != want.Line || !got.Step || strings.Join(got.Outputs, ",") != "urls" {
		t.Errorf("node: %+v", got)
	}
	io, err := n.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "fetch"})
	if err != nil || strings.Join(io.Inputs, ",") != "urls" || len(io.Outputs) != 0 {
		t.Errorf("IO: %+v, %v", io, err)
	}
	if _, err := n.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "nope"}); err == nil || err.Error() != `dag "research": no task "nope"` {
		t.Errorf("IO unknown node: %v", err)
	}
	if _, err := n.Start(context.Background(), &sdk.StartRequest{State: sdk.State{Routine: "abc"}}); err == nil || err.Error() != `dag: routine "abc" is not loaded` {
		t.Errorf("Start unknown routine: %v", err)
	}
	// The cache returns the same routine for the same bytes.
	r2, _ := n.Load(context.Background(), &sdk.LoadRequest{Name: "other.toml", Routine: []byte(src)})
	if r2.Hash != r.Hash {
		t.Errorf("cache: hash %s, want %s", r2.Hash, r.Hash)
	}
}

func TestDescribeAndRegister(t *testing.T) {
	sdktest.Check(t, New())
	info := New().Describe()
	if err := sdk.CheckInfo(info); err != nil || info.Name != "dag" || info.Kind != sdk.KindNavigator {
		t.Fatalf("info %+v: %v", info, err)
	}
	found := false
	for _, p := range sdk.Registered() {
		if p.Describe().Name == "dag" {
			found = true
		}
	}
	if !found {
		t.Error("dag is not registered")
	}
}

func TestRetriesBackoff(t *testing.T) {
	src := `name = "retry"
[tasks.flaky]
retries = 4
retry_delay = "1s"
max_retry_delay = "5s"
[tasks.after]
depends_on = ["flaky"]
`
	for _, c := range []struct {
		name  string
		plan  []sdk.Status
		want  string
		final string
	}{
		{"succeeds on the third attempt", []sdk.Status{sdk.Failed, sdk.Failed, sdk.OK},
			"1000 2000", "success"},
		{"retries exhausted", []sdk.Status{sdk.Failed, sdk.Failed, sdk.Failed, sdk.Failed, sdk.Failed},
			"1000 2000 4000 5000", "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWalker(t, src, sdk.Env{}, script(map[string][]sdk.Status{"flaky": c.plan}))
			w.start()
			var delays []string
			id := w.ready()[0].ID
			for w.states()["flaky"] == "running" {
				tok := w.ready()[0]
				if tok.ID != id || tok.Node != "flaky" {
					t.Fatalf("retried token: %+v", tok)
				}
				w.complete(tok.ID, w.outcome(tok))
				if len(w.last.Add) == 1 && w.last.Add[0].ID == id {
					got := w.last.Add[0]
					if got.Status != sdk.Ready || got.Attempt != len(delays)+1 || len(w.last.Trace) != 0 || w.last.Data != nil {
						t.Errorf("retry decision: %+v", w.last)
					}
					delays = append(delays, strings.TrimSuffix(strings.TrimPrefix(strings.Split(w.log[len(w.log)-1], "delay=")[1], ""), "ms"))
				}
			}
			if got := strings.Join(delays, " "); got != c.want {
				t.Errorf("delays %s, want %s", got, c.want)
			}
			if got := w.states()["flaky"]; got != c.final {
				t.Errorf("final %s, want %s", got, c.final)
			}
		})
	}
	// Without retries a failure is final at once.
	w := newWalker(t, "name = \"x\"\n[tasks.a]\n", sdk.Env{}, script(map[string][]sdk.Status{"a": {sdk.Failed}}))
	w.run()
	if w.last.Fault == nil || w.last.Fault.Message != `task "a" failed` || w.last.Fault.Code != "task_failed" {
		t.Errorf("fault: %+v", w.last.Fault)
	}
}

func TestBackoffOverflow(t *testing.T) {
	tk := &task{delay: 1 << 62, maxDelay: 1<<63 - 1}
	if d := backoff(tk, 10); d <= 0 {
		t.Errorf("backoff overflowed: %d", d)
	}
}

func TestForEach(t *testing.T) {
	src := `name = "fan"
[tasks.fetch]
for_each = "vars.urls"
[tasks.count]
for_each = "input.pages"
outputs = ["size"]
[tasks.join]
depends_on = ["fetch", "count"]
trigger_rule = "all_done"
when = "vars.size != nil"
`
	t.Run("order", func(t *testing.T) {
		env := sdk.Env{Vars: map[string]any{"urls": []any{"a", "b", "c"}}, Input: map[string]any{"pages": []any{10.0, 20.0}}}
		// Complete the instances in reverse order: the outputs stay in input order.
		w := newWalker(t, src, env, nil)
		w.start()
		tokens := w.ready()
		if len(tokens) != 5 {
			t.Fatalf("ready: %+v", tokens)
		}
		for k := len(tokens) - 1; k >= 0; k-- {
			tok := tokens[k]
			out := sdk.Outcome{Status: sdk.OK, Output: map[string]any{"echo": tok.Attrs[attrItem], "size": tok.Attrs[attrItem]}}
			if tok.Node == "fetch" && tok.Attrs[attrItem] == "b" {
				out = sdk.Outcome{Status: sdk.Failed}
			}
			w.complete(tok.ID, out)
		}
		st := w.states()
		if st["fetch"] != "failed" || st["count"] != "success" || st["join"] != "running" {
			t.Errorf("states: %v", st)
		}
		fetch := w.st.Env.Vars["fetch"].([]any)
		if len(fetch) != 3 || fetch[0].(map[string]any)["echo"] != "a" || fetch[1] != nil || fetch[2].(map[string]any)["echo"] != "c" {
			t.Errorf("vars.fetch = %v", fetch)
		}
		if size := w.st.Env.Vars["size"].([]any); len(size) != 2 || size[0] != 10.0 || size[1] != 20.0 {
			t.Errorf("vars.size = %v", size)
		}
		if _, found := w.st.Env.Vars["count"]; found {
			t.Error("a task with declared outputs also set its own id")
		}
	})
	t.Run("empty", func(t *testing.T) {
		env := sdk.Env{Vars: map[string]any{"urls": []any{}}, Input: map[string]any{"pages": []any{1.0}}}
		w := newWalker(t, src, env, ok)
		w.run()
		if st := w.states(); st["fetch"] != "skipped" || st["count"] != "success" || st["join"] != "success" {
			t.Errorf("states: %v", st)
		}
		if !w.last.Complete {
			t.Errorf("not complete: %+v", w.last)
		}
	})
	t.Run("too many", func(t *testing.T) {
		w := newWalker(t, src, sdk.Env{Vars: map[string]any{"urls": make([]any, 1025)}}, ok)
		w.start()
		if f := w.last.Fault; f == nil || f.Message != `task "fetch": for_each: 1025 items, more than the limit of 1024` {
			t.Errorf("fault: %+v", f)
		}
	})
	t.Run("not a list", func(t *testing.T) {
		w := newWalker(t, src, sdk.Env{Vars: map[string]any{"urls": "x"}}, ok)
		w.start()
		if f := w.last.Fault; f == nil || f.Message != `task "fetch": for_each: want a list, got string` {
			t.Errorf("fault: %+v", f)
		}
	})
	t.Run("counts each instance", func(t *testing.T) {
		// one_success downstream of a fan-out fires at the first
		// successful instance, as with Airflow's mapped task instances.
		src := `name = "fan"
[tasks.fetch]
for_each = "vars.urls"
[tasks.first]
depends_on = ["fetch"]
trigger_rule = "one_success"
`
		w := newWalker(t, src, sdk.Env{Vars: map[string]any{"urls": []any{1, 2, 3}}}, ok)
		w.start()
		w.complete(w.ready()[1].ID, sdk.Outcome{Status: sdk.OK})
		if st := w.states(); st["first"] != "running" || st["fetch"] != "running" {
			t.Errorf("states: %v", st)
		}
		if _, found := w.st.Env.Vars["fetch"]; found {
			t.Error("outputs assigned before every instance finished")
		}
	})
}

func TestNextErrors(t *testing.T) {
	w := newWalker(t, "name = \"x\"\n[tasks.a]\n[tasks.b]\nfor_each = \"vars.l\"\n", sdk.Env{Vars: map[string]any{"l": []any{1}}}, ok)
	w.start()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		req  sdk.NextRequest
		want string
	}{
		{"unknown token", sdk.NextRequest{State: w.st, Token: "t99", Outcome: sdk.Outcome{Status: sdk.OK}}, `dag "x": no token "t99"`},
		{"bad status", sdk.NextRequest{State: w.st, Token: "t1", Outcome: sdk.Outcome{Status: "meh"}}, `dag "x": task "a": unknown outcome status "meh"`},
		{"corrupt data", sdk.NextRequest{State: sdk.State{Routine: w.hash, Tokens: w.st.Tokens, Data: map[string]any{"tasks": map[string]any{"zz": "running"}}}, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}}, `dag "x": corrupt state data: unknown task "zz"`},
		{"not running", sdk.NextRequest{State: sdk.State{Routine: w.hash, Tokens: w.st.Tokens}, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}}, `dag "x": task "a" is none, not running`},
		{"instance without index", sdk.NextRequest{State: sdk.State{Routine: w.hash, Tokens: []sdk.Token{{ID: "t2", Node: "b"}}, Data: w.st.Data}, Token: "t2", Outcome: sdk.Outcome{Status: sdk.OK}}, `dag "x": token "t2" of for_each task "b" has no valid "index" attribute`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.nav.Next(ctx, &c.req)
			if err == nil || err.Error() != c.want || !errors.Is(err, sdk.ErrBadRequest) {
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
	if _, err := w.nav.Boundary(ctx, &sdk.BoundaryRequest{State: w.st, Token: "t1", Event: "timer"}); err == nil || err.Error() != `dag "x": event "timer": DAG tasks have no boundary events` {
		t.Errorf("boundary: %v", err)
	}
	if _, err := w.nav.Start(ctx, &sdk.StartRequest{State: w.st, Trigger: "msg"}); err == nil || err.Error() != `dag "x": no start event "msg" (a DAG has none)` {
		t.Errorf("start trigger: %v", err)
	}
}

// TestDeterministic: the same request gives the same Decision, byte for byte.
func TestDeterministic(t *testing.T) {
	src := `name = "p"
[tasks.a]
[tasks.b]
[tasks.c]
depends_on = ["a", "b"]
for_each = "vars.l"
`
	env := sdk.Env{Vars: map[string]any{"l": []any{1, 2, 3, 4}}}
	var first string
	for n := 0; n < 20; n++ {
		w := newWalker(t, src, env, ok)
		w.useWire(true)
		w.run()
		if n == 0 {
			first = w.summary()
		} else if got := w.summary(); got != first {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", n, got, first)
		}
	}
}

// TestReads: a DAG reads the variables its when and for_each expressions
// name (sdk.Routine.Reads); the golden walks run over a wire client that
// sends only those.
func TestReads(t *testing.T) {
	for _, c := range []struct {
		file string
		want []string
	}{
		{"research.toml", []string{"page", "urls"}},
		{"branch.toml", []string{}},
	} {
		src, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		r, err := New().Load(context.Background(), &sdk.LoadRequest{Routine: src})
		if err != nil {
			t.Fatal(err)
		}
		if r.Reads == nil || !reflect.DeepEqual(r.Reads.Vars, c.want) {
			t.Errorf("%s: Reads %+v, want %q", c.file, r.Reads, c.want)
		}
	}
	src := "name = \"d\"\n[tasks.a]\n[tasks.b]\ndepends_on = [\"a\"]\nwhen = \"vars[input.k] > 1\"\n"
	r, err := New().Load(context.Background(), &sdk.LoadRequest{Routine: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Reads != nil {
		t.Errorf("a variable chosen by input: Reads %q, want nil (every variable)", r.Reads.Vars)
	}
}
