package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"syntax", "name = \"x\"\n[[steps]]\nid = \"a\" b = 1\n", `chain.toml:3: steps: expected a top-level item to end with a newline, comment, or EOF, but got 'b' instead`},
		{"missing name and steps", "inputs = []\n", "chain.toml: missing required key \"name\"\nchain.toml: no steps: add a [[steps]] table for each step"},
		{"unknown keys and types", `name = "x"
input = ["q"]
[[steps]]
id = "a"
skip = "true"
outputs = "b"
[[steps]]
name = 3
`, `chain.toml:2: input: unknown key (did you mean "inputs"?)
chain.toml:5: steps.a.skip: unknown key
chain.toml:6: steps.a.outputs: want an array of strings, got string "b"
chain.toml:7: steps[1]: missing required key "id"
chain.toml:8: steps[1].name: want a string, got integer 3`},
		{"steps not tables", "name = \"x\"\nsteps = [1]\n", `chain.toml:2: steps: element 0: want a table, got integer 1`},
		{"duplicate ids", `name = "x"
[[steps]]
id = "a"
[[steps]]
id = "b"
[[steps.chain]]
id = "a"
`, `chain.toml:7: steps.b.chain[0].id: step id "a" is already used at line 2`},
		{"missing input", `name = "x"
inputs = ["question"]
[[steps]]
id = "draft"
inputs = ["question"]
outputs = ["draft"]
[[steps]]
id = "review"
inputs = [
  "drfat",
  "draft",
  "tone",
]
`, `chain.toml:10: steps.review.inputs: missing input "drfat": not an input of the chain or an output of an earlier step (did you mean "draft"?)
chain.toml:12: steps.review.inputs: missing input "tone": not an input of the chain or an output of an earlier step`},
		{"input from a later step", `name = "x"
[[steps]]
id = "a"
inputs = ["b_out"]
[[steps]]
id = "b"
outputs = ["b_out"]
`, `chain.toml:4: steps.a.inputs: missing input "b_out": not an input of the chain or an output of an earlier step`},
		{"output overwrites", `name = "x"
inputs = ["question"]
[[steps]]
id = "a"
outputs = ["question", "draft"]
[[steps]]
id = "b"
outputs = ["draft"]
`, `chain.toml:5: steps.a.outputs: output "question" overwrites an existing variable (an input of the chain)
chain.toml:8: steps.b.outputs: output "draft" overwrites an existing variable (the output of step "a")`},
		{"declared output not produced", `name = "x"
inputs = ["q"]
outputs = ["answer", "q", "drafts"]
[[steps]]
id = "a"
inputs = ["q"]
outputs = ["draft"]
`, `chain.toml:3: outputs: output "answer" is not produced by any step
chain.toml:3: outputs: output "drafts" is not produced by any step (did you mean "draft"?)`},
		{"sub-chain", `name = "x"
inputs = ["q", "secret"]
[[steps]]
id = "a"
inputs = ["q"]
outputs = ["draft"]
[[steps]]
id = "sub"
inputs = ["draft"]
outputs = ["final", "extra"]
[[steps.chain]]
id = "inner1"
inputs = ["draft", "secret"]
outputs = ["notes"]
[[steps.chain]]
id = "inner2"
inputs = ["notes"]
outputs = ["final", "draft"]
[[steps]]
id = "after"
inputs = ["final", "notes"]
`, `chain.toml:10: steps.sub.outputs: output "extra" is not produced by any step of sub-chain "sub"
chain.toml:13: steps.sub.chain.inner1.inputs: missing input "secret": not an input of sub-chain "sub" or an output of an earlier step
chain.toml:18: steps.sub.chain.inner2.outputs: output "draft" overwrites an existing variable (the output of step "a")
chain.toml:21: steps.after.inputs: missing input "notes": not an input of the chain or an output of an earlier step`},
		{"bad skip_if and empties", `name = "x"
[[steps]]
id = ""
skip_if = "vars.x +"
inputs = ["", "a", "a"]
[[steps]]
id = "s"
chain = []
`, `chain.toml:3: steps[0].id: must not be empty
chain.toml:4: steps[0].skip_if: expression "vars.x +": unexpected token EOF (1:8)
chain.toml:5: steps[0].inputs: element 0: empty name
chain.toml:5: steps[0].inputs: "a" listed twice
chain.toml:8: steps.s.chain: no steps`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "chain.toml", Routine: []byte(c.src)})
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

const answerChain = `name = "answer"
inputs = ["question"]
outputs = ["answer"]

[[steps]]
id = "draft"
name = "Draft an answer"
inputs = ["question"]
outputs = ["draft"]

[[steps]]
id = "polish"
inputs = ["draft"]
outputs = ["answer"]
skip_if = "strategy.fast"
[[steps.chain]]
id = "critique"
inputs = ["draft"]
outputs = ["critique"]
[[steps.chain]]
id = "rewrite"
inputs = ["draft", "critique"]
outputs = ["answer"]
skip_if = "input.keep_draft"

[[steps]]
id = "send"
inputs = ["question"]
`

func TestLoadSummary(t *testing.T) {
	n := New()
	r, err := n.Load(context.Background(), &sdk.LoadRequest{Name: "a.toml", Routine: []byte(answerChain)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, node := range r.Nodes {
		got = append(got, node.ID+"/"+node.Kind+"/"+strings.Join(node.Outputs, ","))
		if node.Step == (node.Kind == "chain") {
			t.Errorf("%s: Step = %v", node.ID, node.Step)
		}
	}
	if r.ID != "answer" || strings.Join(got, " ") != "draft/step/draft polish/chain/answer critique/step/critique rewrite/step/answer send/step/" {
		t.Errorf("summary %s: %s", r.ID, got)
	}
	if r.Nodes[0].Line != 5 || r.Nodes[0].Name != "Draft an answer" || r.Nodes[2].Line != 16 {
		t.Errorf("lines: %+v", r.Nodes)
	}
	io, err := n.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "rewrite"})
	if err != nil || strings.Join(io.Inputs, ",") != "draft,critique" || strings.Join(io.Outputs, ",") != "answer" {
		t.Errorf("IO: %+v %v", io, err)
	}
	if _, err := n.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "x"}); err == nil || err.Error() != `chain "answer": no step "x"` {
		t.Errorf("IO unknown: %v", err)
	}
	// A sub-chain without declared outputs has its last step's.
	r2, err := n.Load(context.Background(), &sdk.LoadRequest{Routine: []byte(`name = "d"
[[steps]]
id = "sub"
[[steps.chain]]
id = "a"
outputs = ["x"]
[[steps.chain]]
id = "b"
outputs = ["y"]
[[steps]]
id = "c"
inputs = ["y"]
`)})
	if err != nil {
		t.Fatal(err)
	}
	io, _ = n.IO(context.Background(), &sdk.IORequest{Routine: r2.Hash, Node: "sub"})
	if strings.Join(io.Outputs, ",") != "y" {
		t.Errorf("sub outputs: %v", io.Outputs)
	}
}

func TestDescribeAndRegister(t *testing.T) {
	sdktest.Check(t, New())
	info := New().Describe()
	if err := sdk.CheckInfo(info); err != nil || info.Name != "chain" || info.Kind != sdk.KindNavigator {
		t.Fatalf("info %+v: %v", info, err)
	}
	found := false
	for _, p := range sdk.Registered() {
		if p.Describe().Name == "chain" {
			found = true
		}
	}
	if !found {
		t.Error("chain is not registered")
	}
}

func TestSkipIf(t *testing.T) {
	for _, c := range []struct {
		name string
		env  sdk.Env
		want string
	}{
		{"none skipped", sdk.Env{Input: map[string]any{"question": "q", "keep_draft": false}, Strategy: map[string]any{"fast": false}},
			"enter:draft exit:draft enter:polish enter:critique exit:critique enter:rewrite exit:rewrite exit:polish enter:send exit:send complete"},
		{"inner step skipped", sdk.Env{Input: map[string]any{"question": "q", "keep_draft": true}, Strategy: map[string]any{"fast": false}},
			"enter:draft exit:draft enter:polish enter:critique exit:critique exit:polish enter:send exit:send complete"},
		{"sub-chain skipped", sdk.Env{Input: map[string]any{"question": "q"}, Strategy: map[string]any{"fast": true}},
			"enter:draft exit:draft enter:send exit:send complete"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWalker(t, answerChain, c.env, nil)
			w.run()
			if got := strings.Join(w.log, " "); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	t.Run("all skipped", func(t *testing.T) {
		src := "name = \"x\"\n[[steps]]\nid = \"a\"\nskip_if = \"true\"\n[[steps]]\nid = \"s\"\n[[steps.chain]]\nid = \"b\"\nskip_if = \"true\"\n"
		w := newWalker(t, src, sdk.Env{}, nil)
		w.run()
		if got := strings.Join(w.log, " "); got != "enter:s exit:s complete" || w.calls != 1 || len(w.st.Tokens) != 0 || len(w.last.Add) != 0 || len(w.last.Remove) != 0 {
			t.Errorf("got %s, decision %+v", got, w.last)
		}
	})
	t.Run("runtime error", func(t *testing.T) {
		src := "name = \"x\"\n[[steps]]\nid = \"a\"\nskip_if = \"vars.n > 1\"\n"
		w := newWalker(t, src, sdk.Env{}, nil)
		w.run()
		if f := w.last.Fault; f == nil || f.Node != "a" || f.Message != `step "a": skip_if: invalid operation: <nil> > int (1:8)` {
			t.Errorf("fault: %+v", f)
		}
	})
}

// TestNesting checks the scope tokens of nested sub-chains.
func TestNesting(t *testing.T) {
	src := `name = "nest"
[[steps]]
id = "outer"
[[steps.chain]]
id = "middle"
[[steps.chain.chain]]
id = "leaf1"
[[steps.chain.chain]]
id = "leaf2"
[[steps.chain]]
id = "last"
`
	w := newWalker(t, src, sdk.Env{}, nil)
	w.apply(w.nav.Start(context.Background(), &sdk.StartRequest{State: w.st}))
	toks := w.st.Tokens
	if len(toks) != 3 ||
		!reflect.DeepEqual(toks[0], sdk.Token{ID: "t1", Node: "outer", Status: sdk.Scope}) ||
		!reflect.DeepEqual(toks[1], sdk.Token{ID: "t2", Node: "middle", Status: sdk.Scope, Scope: "t1"}) ||
		!reflect.DeepEqual(toks[2], sdk.Token{ID: "t3", Node: "leaf1", Status: sdk.Ready, Scope: "t2"}) {
		t.Fatalf("tokens: %+v", toks)
	}
	w.apply(w.nav.Next(context.Background(), &sdk.NextRequest{State: w.st, Token: "t3", Outcome: sdk.Outcome{Status: sdk.OK}}))
	w.apply(w.nav.Next(context.Background(), &sdk.NextRequest{State: w.st, Token: "t4", Outcome: sdk.Outcome{Status: sdk.Skipped}}))
	// leaving leaf2 leaves middle too, and enters last inside outer.
	if toks := w.st.Tokens; len(toks) != 2 || !reflect.DeepEqual(toks[1], sdk.Token{ID: "t5", Node: "last", Status: sdk.Ready, Scope: "t1"}) {
		t.Fatalf("tokens: %+v", toks)
	}
	w.apply(w.nav.Next(context.Background(), &sdk.NextRequest{State: w.st, Token: "t5", Outcome: sdk.Outcome{Status: sdk.OK}}))
	want := "enter:outer enter:middle enter:leaf1 exit:leaf1 enter:leaf2 exit:leaf2 exit:middle enter:last exit:last exit:outer complete"
	if got := strings.Join(w.log, " "); got != want || len(w.st.Tokens) != 0 {
		t.Errorf("got  %s\nwant %s\ntokens %+v", got, want, w.st.Tokens)
	}
}

func TestFailure(t *testing.T) {
	w := newWalker(t, answerChain, sdk.Env{Input: map[string]any{"question": "q"}, Strategy: map[string]any{"fast": false}},
		map[string]sdk.Outcome{"critique": {Status: sdk.Failed, Error: "model refused"}})
	w.run()
	if f := w.last.Fault; f == nil || *f != (sdk.Fault{Node: "critique", Code: "step_failed", Message: `step "critique" failed: model refused`}) {
		t.Errorf("fault: %+v", f)
	}
}

func TestStartAndNextErrors(t *testing.T) {
	ctx := context.Background()
	w := newWalker(t, answerChain, sdk.Env{}, nil)
	if _, err := w.nav.Start(ctx, &sdk.StartRequest{State: w.st}); err == nil || !errors.Is(err, sdk.ErrInvalid) ||
		err.Error() != `chain "answer": missing input "question" (in neither input nor vars)` {
		t.Errorf("start: %v", err)
	}
	w.st.Env.Vars = map[string]any{"question": "from vars"}
	w.apply(w.nav.Start(ctx, &sdk.StartRequest{State: w.st}))
	for _, c := range []struct{ token, status, want string }{
		{"t9", "ok", `chain "answer": no token "t9"`},
		{"t1", "meh", `chain "answer": step "draft": unknown outcome status "meh"`},
	} {
		if _, err := w.nav.Next(ctx, &sdk.NextRequest{State: w.st, Token: c.token, Outcome: sdk.Outcome{Status: sdk.Status(c.status)}}); err == nil || err.Error() != c.want {
			t.Errorf("next %s: %v, want %s", c.token, err, c.want)
		}
	}
	scope := sdk.State{Routine: w.hash, Tokens: []sdk.Token{{ID: "t1", Node: "polish", Status: sdk.Scope}}}
	if _, err := w.nav.Next(ctx, &sdk.NextRequest{State: scope, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}}); err == nil || err.Error() != `chain "answer": token "t1" (scope at "polish") is not at a step` {
		t.Errorf("next scope: %v", err)
	}
	if _, err := w.nav.Boundary(ctx, &sdk.BoundaryRequest{State: w.st, Token: "t1", Event: "e"}); err == nil || err.Error() != `chain "answer": event "e": chain steps have no boundary events` {
		t.Errorf("boundary: %v", err)
	}
	if _, err := w.nav.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: "nope"}}); err == nil || err.Error() != `chain: routine "nope" is not loaded` {
		t.Errorf("unknown routine: %v", err)
	}
}

// TestGolden walks the routines under testdata and compares trace and vars
// with testdata/golden/NAME.trace, in memory and over JSON.
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name, file string
		env        sdk.Env
		plan       map[string]sdk.Outcome
	}{
		{"support-full", "support.toml", sdk.Env{Input: map[string]any{"ticket": "t", "customer": "c"}, Strategy: map[string]any{"auto_reply": false}}, nil},
		{"support-auto", "support.toml", sdk.Env{Input: map[string]any{"ticket": "t", "customer": "c"}, Strategy: map[string]any{"auto_reply": true}}, nil},
		{"support-fail", "support.toml", sdk.Env{Input: map[string]any{"ticket": "t", "customer": "c"}, Strategy: map[string]any{"auto_reply": false}},
			map[string]sdk.Outcome{"tone": {Status: sdk.Failed}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var got [2]string
			for k, wire := range []bool{false, true} {
				w := newWalker(t, string(src), c.env, c.plan)
				w.useWire(wire)
				w.run()
				got[k] = w.summary()
			}
			if got[0] != got[1] {
				t.Fatalf("in memory and over JSON differ:\n%s\n---\n%s", got[0], got[1])
			}
			golden := filepath.Join("testdata", "golden", c.name+".trace")
			if *update {
				if err := os.WriteFile(golden, []byte(got[0]), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got[0] != string(want) {
				t.Errorf("%s differs:\n%s\nwant:\n%s", golden, got[0], want)
			}
		})
	}
}

// TestOutputBlind: the chain navigator says it never reads
// Outcome.Output (sdk.OutputBlind), so over a wire it is handed none; its
// answers must then be those it gives with the output, at every step of
// walks that skip steps by vars, fail and nest.
func TestOutputBlind(t *testing.T) {
	if !New().OutputBlind() {
		t.Fatal("the chain navigator no longer says it is OutputBlind: drop this test or the claim")
	}
	skipByVars := "name = \"v\"\n[[steps]]\nid = \"a\"\noutputs = [\"n\"]\n[[steps]]\nid = \"b\"\nskip_if = \"vars.n == 'n by a'\"\n[[steps]]\nid = \"c\"\n"
	for _, c := range []struct {
		src  string
		env  sdk.Env
		plan map[string]sdk.Outcome
	}{
		{answerChain, sdk.Env{Input: map[string]any{"question": "q"}, Strategy: map[string]any{"fast": false}}, nil},
		{answerChain, sdk.Env{Input: map[string]any{"question": "q", "keep_draft": true}, Strategy: map[string]any{"fast": false}},
			map[string]sdk.Outcome{"critique": {Status: sdk.Failed, Error: "no", Output: map[string]any{"why": "x"}}}},
		{skipByVars, sdk.Env{}, nil},
	} {
		w := newWalker(t, c.src, c.env, c.plan)
		w.nav = blindCheck{t: t, Navigator: w.impl}
		w.run()
		if w.calls < 2 {
			t.Fatalf("walked %d calls", w.calls)
		}
	}
}

// blindCheck calls Next with the outcome's output and without it, and
// fails the test when the answers differ.
type blindCheck struct {
	t *testing.T
	*Navigator
}

func (b blindCheck) Next(ctx context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	with := *r
	if with.Outcome.Output == nil {
		with.Outcome.Output = map[string]any{"text": "an answer", "vars": map[string]any{"n": 1.0}}
	}
	d1, err1 := b.Navigator.Next(ctx, &with)
	without := *r
	without.Outcome.Output = nil
	d2, err2 := b.Navigator.Next(ctx, &without)
	// Compared on the wire: each Decision reserves room of its own for Apply.
	j1, _ := json.Marshal(d1)
	j2, _ := json.Marshal(d2)
	if !bytes.Equal(j1, j2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
		b.t.Fatalf("Next answers by the output: with %+v %v, without %+v %v", d1, err1, d2, err2)
	}
	return d2, err2
}

// TestReads: a chain reads the inputs Start looks for and what its
// skip_if expressions name (sdk.Routine.Reads), and over a wire, where the
// client then sends only those variables, every walk goes as in memory:
// skipped by vars, by input, by the strategy, failing, nested.
func TestReads(t *testing.T) {
	skipByVars := "name = \"v\"\ninputs = [\"q\"]\n[[steps]]\nid = \"a\"\noutputs = [\"n\", \"m\"]\n" +
		"[[steps]]\nid = \"b\"\nskip_if = \"vars.n == 'n by a'\"\n[[steps]]\nid = \"c\"\nskip_if = \"vars?.m != 'm by a'\"\noutputs = [\"o\"]\n[[steps]]\nid = \"d\"\n"
	dynamic := "name = \"dyn\"\n[[steps]]\nid = \"a\"\noutputs = [\"n\"]\n[[steps]]\nid = \"b\"\nskip_if = \"vars[input.which] == 'n by a'\"\n[[steps]]\nid = \"c\"\n"
	for _, c := range []struct {
		name, src string
		reads     []string // nil: every variable
		env       sdk.Env
		plan      map[string]sdk.Outcome
	}{
		{"answer", answerChain, []string{"question"}, sdk.Env{Input: map[string]any{"question": "q", "keep_draft": true}, Strategy: map[string]any{"fast": false}}, nil},
		{"answer-fails", answerChain, []string{"question"}, sdk.Env{Input: map[string]any{"question": "q"}, Strategy: map[string]any{"fast": false}},
			map[string]sdk.Outcome{"critique": {Status: sdk.Failed, Error: "no"}}},
		{"by-vars", skipByVars, []string{"m", "n", "q"}, sdk.Env{Input: map[string]any{"q": 1}}, nil},
		{"by-vars-unread", skipByVars, []string{"m", "n", "q"}, sdk.Env{Input: map[string]any{"q": 1}, Vars: map[string]any{"noise": 1, "o": "x"}}, nil},
		{"dynamic", dynamic, nil, sdk.Env{Input: map[string]any{"which": "n"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := New().Load(context.Background(), &sdk.LoadRequest{Routine: []byte(c.src)})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.reads == nil && r.Reads != nil:
				t.Fatalf("Reads %q, want nil (every variable)", r.Reads.Vars)
			case c.reads != nil && (r.Reads == nil || !reflect.DeepEqual(r.Reads.Vars, c.reads)):
				t.Fatalf("Reads %+v, want %q", r.Reads, c.reads)
			}
			var got []string
			for _, over := range []func(sdk.Plugin) *sdk.Client{nil, sdktest.Wire, sdktest.Guest, sdktest.WireAPI1} {
				w := newWalker(t, c.src, c.env, c.plan)
				if over != nil {
					w.over(over(w.impl))
				}
				w.run()
				got = append(got, w.summary())
			}
			for k := 1; k < len(got); k++ {
				if got[k] != got[0] {
					t.Fatalf("transport %d walks otherwise than memory:\n%s\n---\n%s", k, got[k], got[0])
				}
			}
		})
	}
}

// TestTokenID: the table of small token ids agrees with building them,
// across its end and for numbers it does not hold.
func TestTokenID(t *testing.T) {
	for _, seq := range []int64{-1, 0, 1, 9, 10, 99, 126, 127, 128, 1000, math.MaxInt64} {
		if got, want := tokenID(seq), "t"+strconv.FormatInt(seq, 10); got != want {
			t.Errorf("tokenID(%d) = %q, want %q", seq, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = tokenID(42) }); n != 0 {
		t.Errorf("tokenID(42) allocates %v times", n)
	}
}
