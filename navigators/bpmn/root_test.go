package bpmn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// withRoot returns st as a navigator that keeps the main process's token
// in every state writes it: a scope token id at process proc first, named
// by the tokens that have no scope.
func withRoot(st sdk.State, id, proc string) sdk.State {
	out := st
	out.Tokens = []sdk.Token{{ID: id, Node: proc, Status: sdk.Scope}}
	for _, t := range st.Tokens {
		if t.Scope == "" {
			t.Scope = id
		}
		out.Tokens = append(out.Tokens, t)
	}
	return out
}

// rootState describes how st holds the main process's token: how many
// explicit ones it lists, and how many tokens at the top level of the
// process name none. It fails t when a token names a scope the state
// lacks (the host refuses such a decision), or when top-level tokens
// name no scope beside an explicit process token (which they would then
// belong to is a guess).
func rootState(t *testing.T, m *model, where string, st sdk.State) (roots, bare int) {
	t.Helper()
	ids := map[string]bool{}
	for _, tk := range st.Tokens {
		ids[tk.ID] = true
	}
	for _, tk := range st.Tokens {
		switch n := m.byID[tk.Node]; {
		case tk.Scope != "":
			if !ids[tk.Scope] {
				t.Fatalf("%s: token %s names scope %q, which the state lacks: %+v", where, tk.ID, tk.Scope, st.Tokens)
			}
		case n == m.main:
			roots++
		case n != nil && n.parent == m.main:
			bare++
		}
	}
	if roots > 0 && bare > 0 {
		t.Fatalf("%s: %d top-level token(s) without a scope beside %d process token(s): %+v", where, bare, roots, st.Tokens)
	}
	return roots, bare
}

// TestExplicitRootResumes runs every golden case twice: as the navigator
// answers, and with every state rewritten as a navigator that kept the
// main process's token in every state wrote it (an explicit root token,
// named by the top-level tokens), as a checkpoint written before the root
// became implicit is. Both runs must take the same steps and end alike.
// It also pins where the root is explicit: exactly when it holds
// something.
func TestExplicitRootResumes(t *testing.T) {
	explicit := map[string]bool{ // cases whose root holds something at some point
		"event-sub-non-interrupting": true, // triggers of its event sub-processes
		"event-sub-interrupting":     true,
		"signal-end-event-sub":       true,
		"compensation":               true, // the compensation records of the process
		"compensation-not-needed":    true,
	}
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			nv := New()
			data, err := os.ReadFile(filepath.Join("testdata", "routines", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: tc.file, Routine: data})
			if err != nil {
				t.Fatal(err)
			}
			m, err := nv.routine(r.Hash)
			if err != nil {
				t.Fatal(err)
			}
			run := func(old bool) (*driver, bool) {
				d := newDriver(nv, r)
				d.fail, d.st.Env.Vars = tc.fail, tc.vars
				for k, v := range tc.choose {
					d.choose[k] = v
				}
				sawRoot := false
				d.after = func(seq int64, st sdk.State) sdk.State {
					where := fmt.Sprintf("call %d (old %v)", d.calls, old)
					roots, bare := rootState(t, m, where, st)
					sawRoot = sawRoot || roots > 0
					if old && bare > 0 {
						// The root the call made was named first, after seq.
						st = withRoot(st, tokenID(seq+1), m.main.id)
						rootState(t, m, where+" rewritten", st)
					}
					return st
				}
				if err := d.run(tc.triggers); err != nil {
					t.Fatal(err)
				}
				return d, sawRoot
			}
			now, sawRoot := run(false)
			old, _ := run(true)
			if !reflect.DeepEqual(now.lines(), old.lines()) {
				t.Errorf("from explicit roots:\n%v\nwant\n%v", old.lines(), now.lines())
			}
			if !reflect.DeepEqual(now.st.Env.Vars, old.st.Env.Vars) {
				t.Errorf("vars from explicit roots %v, want %v", old.st.Env.Vars, now.st.Env.Vars)
			}
			if len(now.st.Tokens) == 0 != (len(old.st.Tokens) == 0) {
				t.Errorf("tokens from explicit roots %+v, want %+v", old.st.Tokens, now.st.Tokens)
			}
			if sawRoot != explicit[tc.name] {
				t.Errorf("an explicit process token: %v, want %v", sawRoot, explicit[tc.name])
			}
		})
	}
}

// instance is one state of a routine given as a process body, driven by
// hand: step applies each decision and checks the process tokens.
type instance struct {
	t  *testing.T
	nv *Navigator
	m  *model
	st sdk.State
}

func newInstance(t *testing.T, process string) *instance {
	t.Helper()
	nv := New()
	r := loadString(t, nv, doc(`<process id="p">`+process+`</process>
<message id="m" name="m"/>`))
	m, err := nv.routine(r.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return &instance{t: t, nv: nv, m: m, st: sdk.State{Routine: r.Hash}}
}

// step applies d and returns how many process tokens the state lists and
// how many top-level tokens name none.
func (in *instance) step(what string, d *sdk.Decision, err error) (roots, bare int) {
	in.t.Helper()
	if err != nil {
		in.t.Fatalf("%s: %v", what, err)
	}
	in.st = d.Apply(in.st)
	return rootState(in.t, in.m, what, in.st)
}

// id returns the id of the token at node.
func (in *instance) id(node string) string {
	in.t.Helper()
	for _, tk := range in.st.Tokens {
		if tk.Node == node {
			return tk.ID
		}
	}
	in.t.Fatalf("no token at %s: %+v", node, in.st.Tokens)
	return ""
}

// TestTwoInstances starts a second instance of the process while the first
// waits: both process tokens are then explicit, the first instance's
// waiting token is written again naming its own, and each instance
// finishes on its own.
func TestTwoInstances(t *testing.T) {
	ctx := context.Background()
	in := newInstance(t, `
  <startEvent id="s"/>
  <startEvent id="byMessage"><messageEventDefinition messageRef="m"/></startEvent>
  <sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
  <sequenceFlow id="f2" sourceRef="byMessage" targetRef="wait"/>
  <receiveTask id="wait" messageRef="m"/>
  <sequenceFlow id="f3" sourceRef="wait" targetRef="end"/>
  <endEvent id="end"/>`)
	d, err := in.nv.Start(ctx, &sdk.StartRequest{State: in.st})
	if roots, bare := in.step("start", d, err); roots != 0 || bare != 1 {
		t.Fatalf("one instance: %d process token(s), %d bare, want 0 and 1: %+v", roots, bare, in.st.Tokens)
	}
	first := in.id("wait")
	d, err = in.nv.Start(ctx, &sdk.StartRequest{State: in.st, Trigger: "byMessage"})
	if roots, _ := in.step("second start", d, err); roots != 2 {
		t.Fatalf("two instances: %d process token(s), want 2: %+v", roots, in.st.Tokens)
	}
	scopes := map[string]bool{}
	for _, tk := range in.st.Tokens {
		if tk.Node == "wait" {
			scopes[tk.Scope] = true
		}
	}
	if len(scopes) != 2 {
		t.Fatalf("the waiting tokens share a scope: %+v", in.st.Tokens)
	}
	// Each instance ends on its own: the first, then the second.
	for i, want := range []bool{false, true} {
		tok := first
		if i == 1 {
			tok = in.id("wait")
		}
		d, err = in.nv.Boundary(ctx, &sdk.BoundaryRequest{State: in.st, Token: tok, Event: "wait"})
		in.step(fmt.Sprintf("message %d", i), d, err)
		if d.Complete != want {
			t.Fatalf("message %d: complete %v, want %v: %+v", i, d.Complete, want, in.st.Tokens)
		}
	}
	if len(in.st.Tokens) != 0 {
		t.Fatalf("tokens left: %+v", in.st.Tokens)
	}
}

// TestImplicitRootWrittenOnce checks that a process whose token holds
// nothing keeps it out of every state, and that a process token the state
// lists stays listed until the instance ends (its tokens name it).
func TestImplicitRootWrittenOnce(t *testing.T) {
	ctx := context.Background()
	nv := New()
	r := loadFixture(t, nv, "exclusive-choice.bpmn")
	d, err := nv.Start(ctx, &sdk.StartRequest{State: sdk.State{Routine: r.Hash}})
	if err != nil {
		t.Fatal(err)
	}
	st := d.Apply(sdk.State{Routine: r.Hash})
	if len(st.Tokens) != 1 || st.Tokens[0].Scope != "" || st.Tokens[0].Node != "decide" {
		t.Fatalf("after start %+v, want the gateway's token alone", st.Tokens)
	}
	old := withRoot(st, "t1", r.ID)
	for _, s := range []sdk.State{st, old} {
		dn, err := nv.Next(ctx, &sdk.NextRequest{State: s, Token: d.Choice.Token, Outcome: sdk.Outcome{Flows: []string{"toA"}}})
		if err != nil {
			t.Fatal(err)
		}
		next := dn.Apply(s)
		m, _ := nv.routine(r.Hash)
		before, _ := rootState(t, m, "before", s)
		after, bare := rootState(t, m, "after", next)
		if after != before || bare+after != 1 || next.Tokens[len(next.Tokens)-1].Node != "a" {
			t.Errorf("from %+v: %+v (the process token is kept as it was)", s.Tokens, next.Tokens)
		}
	}
}

// TestRootGainsRecords completes a compensable task while a parallel
// branch waits: the process token, implicit until then, takes the
// compensation record and becomes explicit, and the waiting token, which
// the state holds without a scope, is written again naming it.
func TestRootGainsRecords(t *testing.T) {
	ctx := context.Background()
	in := newInstance(t, `
  <startEvent id="s"/>
  <sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
  <parallelGateway id="fork"/>
  <sequenceFlow id="f1" sourceRef="fork" targetRef="wait"/>
  <sequenceFlow id="f2" sourceRef="fork" targetRef="flight"/>
  <receiveTask id="wait" messageRef="m"/>
  <serviceTask id="flight"/>
  <boundaryEvent id="undoFlight" attachedToRef="flight"><compensateEventDefinition/></boundaryEvent>
  <serviceTask id="cancelFlight" isForCompensation="true"/>
  <association id="a1" sourceRef="undoFlight" targetRef="cancelFlight"/>
  <sequenceFlow id="f3" sourceRef="wait" targetRef="join"/>
  <sequenceFlow id="f4" sourceRef="flight" targetRef="join"/>
  <parallelGateway id="join"/>
  <sequenceFlow id="f5" sourceRef="join" targetRef="end"/>
  <endEvent id="end"/>`)
	d, err := in.nv.Start(ctx, &sdk.StartRequest{State: in.st})
	if roots, bare := in.step("start", d, err); roots != 0 || bare != 2 {
		t.Fatalf("after start: %d process token(s), %d bare, want 0 and 2: %+v", roots, bare, in.st.Tokens)
	}
	d, err = in.nv.Next(ctx, &sdk.NextRequest{State: in.st, Token: in.id("flight"), Outcome: sdk.Outcome{Status: sdk.OK}})
	if roots, _ := in.step("flight done", d, err); roots != 1 {
		t.Fatalf("after the compensable task: %d process token(s), want 1: %+v", roots, in.st.Tokens)
	}
	for _, tk := range in.st.Tokens {
		if tk.Node == "p" && tk.Attrs[attrComp] == nil {
			t.Fatalf("the process token has no compensation record: %+v", in.st.Tokens)
		}
	}
	d, err = in.nv.Boundary(ctx, &sdk.BoundaryRequest{State: in.st, Token: in.id("wait"), Event: "wait"})
	in.step("message", d, err)
	if !d.Complete || len(in.st.Tokens) != 0 {
		t.Fatalf("complete %v, tokens %+v", d.Complete, in.st.Tokens)
	}
}
