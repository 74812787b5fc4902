package bpmn

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

func loadFixture(t *testing.T, nv *Navigator, file string) *sdk.Routine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "routines", file))
	if err != nil {
		t.Fatal(err)
	}
	r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: file, Routine: data})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func loadString(t *testing.T, nv sdk.Navigator, src string) *sdk.Routine {
	t.Helper()
	r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDescribeAndContract(t *testing.T) {
	info := New().Describe()
	if info.Name != "bpmn" || info.Kind != sdk.KindNavigator || info.API != sdk.APIVersion {
		t.Fatalf("describe: %+v", info)
	}
	sdktest.Check(t, New())
}

func TestRegistered(t *testing.T) {
	for _, p := range sdk.Registered() {
		if p.Describe().Name == "bpmn" {
			if _, ok := p.(sdk.Navigator); !ok {
				t.Fatal("registered bpmn plugin is not a navigator")
			}
			return
		}
	}
	t.Fatal("bpmn is not registered")
}

func TestRoutineSummary(t *testing.T) {
	nv := New()
	r := loadFixture(t, nv, "call.bpmn")
	if r.ID != "parent" || len(r.Hash) != 64 {
		t.Fatalf("routine: id %q hash %q", r.ID, r.Hash)
	}
	if want := []string{"start", "childStart"}; !reflect.DeepEqual(r.Starts, want) {
		t.Errorf("starts %v, want %v", r.Starts, want)
	}
	var steps []string
	for _, n := range r.Nodes {
		if n.Step {
			steps = append(steps, n.ID)
		}
	}
	if want := []string{"childWork"}; !reflect.DeepEqual(steps, want) {
		t.Errorf("step nodes %v, want %v", steps, want)
	}
	// Loading the same bytes again returns the cached routine.
	r2 := loadFixture(t, nv, "call.bpmn")
	if r2 != r {
		t.Error("second load did not come from the cache")
	}
}

// TestMainProcessNotCalled: the process a run starts is one no call
// activity calls, wherever the called one stands in the file (Camunda
// Modeler keeps a called process first when it was drawn first); a run
// that started the child would skip the parent without a word.
func TestMainProcessNotCalled(t *testing.T) {
	r := loadString(t, New(), doc(`<process id="child" isExecutable="true">
  <startEvent id="cs"/><sequenceFlow id="c0" sourceRef="cs" targetRef="ce"/><endEvent id="ce"/>
</process>
<process id="parent" isExecutable="true">
  <startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="call"/>
  <callActivity id="call" calledElement="child"/><sequenceFlow id="f1" sourceRef="call" targetRef="e"/><endEvent id="e"/>
</process>`))
	if r.ID != "parent" || r.Starts[0] != "s" {
		t.Fatalf("main process %q (starts %v), want parent", r.ID, r.Starts)
	}
}

func TestIO(t *testing.T) {
	nv := New()
	r := loadFixture(t, nv, "tasks.bpmn")
	io, err := nv.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "service"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (&sdk.NodeIO{Inputs: []string{"body"}, Outputs: []string{"label"}}); !reflect.DeepEqual(io, want) {
		t.Errorf("io %+v, want %+v", io, want)
	}
	r = loadFixture(t, nv, "multi.bpmn")
	io, _ = nv.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "each"})
	if want := []string{"results"}; !reflect.DeepEqual(io.Outputs, want) {
		t.Errorf("multi-instance outputs %v, want %v", io.Outputs, want)
	}
	_, err = nv.IO(context.Background(), &sdk.IORequest{Routine: r.Hash, Node: "nope"})
	if err == nil || err.Error() != `no node "nope" in routine `+r.Hash[:12] {
		t.Errorf("unknown node: %v", err)
	}
}

// TestCallErrors checks the exact text of every error a call can return.
func TestCallErrors(t *testing.T) {
	ctx := context.Background()
	nv := New()
	r := loadFixture(t, nv, "exclusive-choice.bpmn")
	st := sdk.State{Routine: r.Hash}
	d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
	if err != nil {
		t.Fatal(err)
	}
	st = d.Apply(st)
	if d.Choice == nil || d.Choice.Node != "decide" || len(d.Choice.Flows) != 2 || d.Choice.Multi {
		t.Fatalf("choice %+v", d.Choice)
	}
	choice := d.Choice.Token
	starts := loadFixture(t, nv, "starts.bpmn")
	noNone := loadString(t, nv, doc(`<process id="p"><startEvent id="m"><messageEventDefinition/></startEvent></process>`))
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"unknown routine", func() error {
			_, err := nv.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: "0123456789abcdef"}})
			return err
		}, `bpmn: routine "0123456789ab" is not loaded (call Load with its document first)`},
		{"start at a non-start", func() error {
			_, err := nv.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: starts.Hash}, Trigger: "merge"})
			return err
		}, `exclusiveGateway "merge" does not start the routine (start events: plain, byMessage, byTimer, bySignal)`},
		{"start at nothing", func() error {
			_, err := nv.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: starts.Hash}, Trigger: "ghost"})
			return err
		}, `no element "ghost" in the routine`},
		{"no none start event", func() error {
			_, err := nv.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: noNone.Hash}})
			return err
		}, `process "p" has no none start event; start it with a trigger: m`},
		{"unknown token", func() error {
			_, err := nv.Next(ctx, &sdk.NextRequest{State: st, Token: "t99"})
			return err
		}, `no token "t99" in the state`},
		{"no flow chosen", func() error {
			_, err := nv.Next(ctx, &sdk.NextRequest{State: st, Token: choice})
			return err
		}, `exclusiveGateway "decide": choose one of its outgoing flows: toA, toB`},
		{"two flows at an exclusive gateway", func() error {
			_, err := nv.Next(ctx, &sdk.NextRequest{State: st, Token: choice, Outcome: sdk.Outcome{Flows: []string{"toA", "toB"}}})
			return err
		}, `exclusiveGateway "decide": an exclusive gateway takes exactly one flow, got toA, toB`},
		{"unknown flow", func() error {
			_, err := nv.Next(ctx, &sdk.NextRequest{State: st, Token: choice, Outcome: sdk.Outcome{Flows: []string{"fa"}}})
			return err
		}, `exclusiveGateway "decide" has no outgoing flow "fa" (it has toA, toB)`},
		{"next on a scope", func() error {
			// the state as a navigator that kept the process's token wrote it
			old := withRoot(st, "t1", "choice")
			_, err := nv.Next(ctx, &sdk.NextRequest{State: old, Token: old.Tokens[0].ID})
			return err
		}, `token t1 at process "choice" is scope: Next completes ready tokens and answers choices`},
		{"boundary not awaited", func() error {
			_, err := nv.Boundary(ctx, &sdk.BoundaryRequest{State: st, Token: choice, Event: "a"})
			return err
		}, `token t2 at exclusiveGateway "decide" does not wait for "a" (it waits for: )`},
		{"token at unknown node", func() error {
			bad := sdk.State{Routine: r.Hash, Tokens: []sdk.Token{{ID: "t1", Node: "elsewhere", Status: sdk.Ready}}}
			_, err := nv.Next(ctx, &sdk.NextRequest{State: bad, Token: "t1"})
			return err
		}, `token t1: node "elsewhere" is not in routine ` + r.Hash[:12]},
		{"token in unknown scope", func() error {
			bad := sdk.State{Routine: r.Hash, Tokens: []sdk.Token{{ID: "t1", Node: "a", Status: sdk.Ready, Scope: "t0"}}}
			_, err := nv.Next(ctx, &sdk.NextRequest{State: bad, Token: "t1"})
			return err
		}, `token t1: scope "t0" is not a token of this state`},
		{"scopes in a cycle", func() error {
			// Walking up these scopes (raising the error) would never end.
			bad := sdk.State{Routine: r.Hash, Tokens: []sdk.Token{
				{ID: "t1", Node: "choice", Status: sdk.Scope, Scope: "t3"},
				{ID: "t2", Node: "a", Status: sdk.Ready, Scope: "t1"},
				{ID: "t3", Node: "choice", Status: sdk.Scope, Scope: "t1"},
			}}
			_, err := nv.Next(ctx, &sdk.NextRequest{State: bad, Token: "t2", Outcome: sdk.Outcome{Status: sdk.Failed, Error: "E1"}})
			return err
		}, `token t1: its scopes form a cycle`},
		{"token its own scope", func() error {
			bad := sdk.State{Routine: r.Hash, Tokens: []sdk.Token{{ID: "t1", Node: "a", Status: sdk.Ready, Scope: "t1"}}}
			_, err := nv.Next(ctx, &sdk.NextRequest{State: bad, Token: "t1", Outcome: sdk.Outcome{Status: sdk.Failed, Error: "E1"}})
			return err
		}, `token t1: its scopes form a cycle`},
		{"unknown status", func() error {
			d, _ := nv.Next(ctx, &sdk.NextRequest{State: st, Token: choice, Outcome: sdk.Outcome{Flows: []string{"toA"}}})
			s2 := d.Apply(st)
			_, err := nv.Next(ctx, &sdk.NextRequest{State: s2, Token: s2.Tokens[len(s2.Tokens)-1].ID, Outcome: sdk.Outcome{Status: "maybe"}})
			return err
		}, `token t3: unknown outcome status "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
			if e := sdk.AsError(err); e.Code != sdk.CodeInvalid {
				t.Errorf("code %s, want invalid", e.Code)
			}
		})
	}
}

// walk starts r and completes ready tokens in the order pick gives.
func walk(t *testing.T, nv sdk.Navigator, r *sdk.Routine, vars map[string]any, pick func([]sdk.Token) int, out func(sdk.Token) sdk.Outcome) (sdk.State, []*sdk.Decision) {
	t.Helper()
	return walkEnv(t, nv, r, sdk.Env{Vars: vars}, pick, out)
}

// walkEnv is walk from the environment env (variables and start input).
func walkEnv(t *testing.T, nv sdk.Navigator, r *sdk.Routine, env sdk.Env, pick func([]sdk.Token) int, out func(sdk.Token) sdk.Outcome) (sdk.State, []*sdk.Decision) {
	t.Helper()
	ctx := context.Background()
	st := sdk.State{Routine: r.Hash, Env: env}
	d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
	if err != nil {
		t.Fatal(err)
	}
	ds := []*sdk.Decision{d}
	st = d.Apply(st)
	for i := 0; i < 100 && d.Fault == nil; i++ {
		var ready []sdk.Token
		for _, tk := range st.Tokens {
			if tk.Status == sdk.Ready {
				ready = append(ready, tk)
			}
		}
		if len(ready) == 0 {
			break
		}
		tk := ready[pick(ready)]
		o := sdk.Outcome{Status: sdk.OK}
		if out != nil {
			o = out(tk)
		}
		d, err = nv.Next(ctx, &sdk.NextRequest{State: st, Token: tk.ID, Outcome: o})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
		st = d.Apply(st)
	}
	return st, ds
}

// TestMultiInstanceOrder completes parallel instances last first: the
// output collection still follows the input order.
func TestMultiInstanceOrder(t *testing.T) {
	nv := New()
	src := doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="each"/>
  <serviceTask id="each"><multiInstanceLoopCharacteristics><extensionElements>
    <zeebe:loopCharacteristics inputCollection="=items" inputElement="item" outputCollection="out"/>
  </extensionElements></multiInstanceLoopCharacteristics></serviceTask>
  <sequenceFlow id="f1" sourceRef="each" targetRef="e"/>
  <endEvent id="e"/>
</process>`)
	r := loadString(t, nv, src)
	var counters []any
	st, _ := walk(t, nv, r, map[string]any{"items": []any{"a", "b", "c"}},
		func(ready []sdk.Token) int { return len(ready) - 1 },
		func(tk sdk.Token) sdk.Outcome {
			counters = append(counters, tk.Attrs["loopCounter"])
			return sdk.Outcome{Status: sdk.OK, Output: map[string]any{"item": tk.Attrs["item"]}}
		})
	want := []any{map[string]any{"item": "a"}, map[string]any{"item": "b"}, map[string]any{"item": "c"}}
	if got := st.Env.Vars["out"]; !reflect.DeepEqual(got, want) {
		t.Errorf("out = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(counters, []any{3, 2, 1}) {
		t.Errorf("loop counters in completion order %v, want [3 2 1]", counters)
	}
}

func TestTaskFailure(t *testing.T) {
	nv := New()
	src := doc(`<process id="p">
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="call"/>
  <serviceTask id="call"/>
  <boundaryEvent id="rateLimited" attachedToRef="call"><errorEventDefinition errorRef="e429"/></boundaryEvent>
  <sequenceFlow id="f1" sourceRef="call" targetRef="ok"/>
  <sequenceFlow id="f2" sourceRef="rateLimited" targetRef="later"/>
  <endEvent id="ok"/>
  <endEvent id="later"/>
</process>
<error id="e429" errorCode="RATE_LIMITED"/>`)
	r := loadString(t, nv, src)
	tests := []struct {
		name    string
		outcome sdk.Outcome
		trace   []sdk.Event
		fault   string
	}{
		{"caught by code", sdk.Outcome{Status: sdk.Failed, Error: "RATE_LIMITED"},
			[]sdk.Event{{Type: sdk.Exit, Node: "call"}, {Type: sdk.Exit, Node: "rateLimited"}, {Type: sdk.Enter, Node: "later"}, {Type: sdk.Exit, Node: "later"}}, ""},
		{"uncaught code", sdk.Outcome{Status: sdk.Failed, Error: "OTHER"}, nil, `serviceTask "call": error "OTHER" was not caught`},
		{"plain failure", sdk.Outcome{Status: sdk.Failed}, nil, `serviceTask "call": failed`},
		{"skipped", sdk.Outcome{Status: sdk.Skipped},
			[]sdk.Event{{Type: sdk.Exit, Node: "call"}, {Type: sdk.Enter, Node: "ok"}, {Type: sdk.Exit, Node: "ok"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := walk(t, nv, r, nil, func([]sdk.Token) int { return 0 }, func(sdk.Token) sdk.Outcome { return tt.outcome })
			d := ds[len(ds)-1]
			if tt.fault != "" {
				if d.Fault == nil || d.Fault.Message != tt.fault || d.Fault.Node != "call" {
					t.Fatalf("fault %+v, want %q", d.Fault, tt.fault)
				}
				if len(d.Remove) != 1 || d.Complete { // the task's token: the process's is implicit
					t.Errorf("a fault removes every token and does not complete: %+v", d)
				}
				return
			}
			if !reflect.DeepEqual(d.Trace, tt.trace) || !d.Complete {
				t.Errorf("trace %v complete %v, want %v", d.Trace, d.Complete, tt.trace)
			}
		})
	}
}

func TestBoundaryPayload(t *testing.T) {
	ctx := context.Background()
	nv := New()
	r := loadFixture(t, nv, "inclusive-reach.bpmn")
	st := sdk.State{Routine: r.Hash}
	d, _ := nv.Start(ctx, &sdk.StartRequest{State: st})
	st = d.Apply(st)
	if d.Choice == nil || !d.Choice.Multi {
		t.Fatalf("want a multi choice, got %+v", d.Choice)
	}
	d, _ = nv.Next(ctx, &sdk.NextRequest{State: st, Token: d.Choice.Token, Outcome: sdk.Outcome{Flows: []string{"toWait"}}})
	st = d.Apply(st)
	var wait string
	for _, tk := range st.Tokens {
		if tk.Node == "wait" {
			wait = tk.ID
		}
	}
	d, err := nv.Boundary(ctx, &sdk.BoundaryRequest{State: st, Token: wait, Event: "wait", Payload: map[string]any{"answer": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Set["answer"] != "yes" || !d.Complete {
		t.Errorf("decision %+v", d)
	}
}

// TestDeterministic makes the same requests twice, on two navigators, and
// compares the encoded decisions byte for byte.
func TestDeterministic(t *testing.T) {
	run := func() []byte {
		nv := New()
		var all []*sdk.Decision
		for _, f := range []string{"parallel.bpmn", "event-sub.bpmn", "multi-seq.bpmn", "signal-end.bpmn"} {
			r := loadFixture(t, nv, f)
			_, ds := walk(t, nv, r, map[string]any{"n": 2}, func([]sdk.Token) int { return 0 }, nil)
			all = append(all, ds...)
		}
		b, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := run(), run(); string(a) != string(b) {
		t.Fatal("decisions differ between runs")
	}
}

// TestWire runs every golden case through the wire encoding (sdktest.Wire),
// with the host's copy of the state sent through JSON as well: traces must
// not change.
func TestWire(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			want := runGolden(t, tc)
			wireMode = true
			defer func() { wireMode = false }()
			if got := runGolden(t, tc); got != want {
				t.Errorf("through JSON:\n%s\nin memory:\n%s", got, want)
			}
		})
	}
}
