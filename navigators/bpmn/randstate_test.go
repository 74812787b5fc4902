package bpmn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// The random-state robustness test: states a host could hand the
// navigator after a crash, a bad migration or a hostile store. Valid
// states come from walking every golden fixture with random decisions;
// each is then mutated (unknown nodes, duplicate or missing ids, scope
// cycles, absurd counters, wrong variable types, garbled JSON) and fed to
// Start, Next and Boundary. A hang shows as the test binary's timeout.

// randCall is one request to the navigator: a method and its request.
type randCall struct {
	method string // sdk.MethodStart, MethodNext or MethodBoundary
	start  *sdk.StartRequest
	next   *sdk.NextRequest
	bound  *sdk.BoundaryRequest
}

func (c randCall) state() *sdk.State {
	switch c.method {
	case sdk.MethodStart:
		return &c.start.State
	case sdk.MethodNext:
		return &c.next.State
	}
	return &c.bound.State
}

func (c randCall) params() any {
	switch c.method {
	case sdk.MethodStart:
		return c.start
	case sdk.MethodNext:
		return c.next
	}
	return c.bound
}

func (c randCall) do(nv sdk.Navigator) (*sdk.Decision, error) {
	ctx := context.Background()
	switch c.method {
	case sdk.MethodStart:
		return nv.Start(ctx, c.start)
	case sdk.MethodNext:
		return nv.Next(ctx, c.next)
	}
	return nv.Boundary(ctx, c.bound)
}

// clone deep-copies a call through JSON, as a wire transport would.
func (c randCall) clone() randCall {
	out := randCall{method: c.method}
	switch c.method {
	case sdk.MethodStart:
		out.start = roundTrip(c.start)
	case sdk.MethodNext:
		out.next = roundTrip(c.next)
	default:
		out.bound = roundTrip(c.bound)
	}
	return out
}

// randFixtures loads every fixture the golden cases use into one
// navigator, keyed by file.
func randFixtures(tb testing.TB) (*Navigator, map[string]*sdk.Routine) {
	tb.Helper()
	nv := New()
	rs := map[string]*sdk.Routine{}
	for _, gc := range goldenCases {
		if rs[gc.file] != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("testdata", "routines", gc.file))
		if err != nil {
			tb.Fatal(err)
		}
		r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: gc.file, Routine: data})
		if err != nil {
			tb.Fatalf("load %s: %v", gc.file, err)
		}
		rs[gc.file] = r
	}
	return nv, rs
}

// randWalk walks a golden case from its start with random decisions for at
// most steps calls and returns every valid call made on the way (each
// with the state it was made on) and the decision it got.
func randWalk(tb testing.TB, nv sdk.Navigator, r *sdk.Routine, gc goldenCase, rng *rand.Rand, steps int) ([]randCall, []*sdk.Decision) {
	tb.Helper()
	st := sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: gc.vars}}
	st = *roundTrip(&st)
	start := &sdk.StartRequest{State: st}
	if len(gc.triggers) > 0 && hasString(r.Starts, gc.triggers[0]) {
		start.Trigger = gc.triggers[0]
	} else if rng.IntN(4) == 0 && len(r.Starts) > 0 {
		start.Trigger = r.Starts[rng.IntN(len(r.Starts))]
	}
	var calls []randCall
	var decs []*sdk.Decision
	c := randCall{method: sdk.MethodStart, start: start}
	for range steps {
		st := c.state()
		d, err := c.do(nv)
		if err != nil {
			tb.Fatalf("%s: valid %s on %s: %v", gc.name, c.method, stateJSON(st), err)
		}
		calls = append(calls, c)
		decs = append(decs, d)
		if d.Fault != nil {
			break
		}
		next := *roundTrip(ptr(d.Apply(*st)))
		var ok bool
		if c, ok = randValidCall(next, d.Choice, gc, rng); !ok {
			break
		}
	}
	return calls, decs
}

func ptr[T any](v T) *T { return &v }

// randValidCall picks a valid next call on st: the choice's answer, a
// ready token's completion (ok, skipped or failed with a code) or a
// trigger of a waiting token.
func randValidCall(st sdk.State, ch *sdk.Choice, gc goldenCase, rng *rand.Rand) (randCall, bool) {
	if ch != nil {
		var flows []string
		if want, ok := gc.choose[ch.Node]; ok && rng.IntN(2) == 0 {
			flows = want
		} else if ch.Multi {
			for _, f := range ch.Flows {
				if rng.IntN(2) == 0 {
					flows = append(flows, f.ID)
				}
			}
		}
		if len(flows) == 0 {
			flows = []string{ch.Flows[rng.IntN(len(ch.Flows))].ID}
		}
		return randCall{method: sdk.MethodNext, next: &sdk.NextRequest{State: st, Token: ch.Token, Outcome: sdk.Outcome{Status: sdk.OK, Flows: flows}}}, true
	}
	var moves []randCall
	for _, tk := range st.Tokens {
		if tk.Status == sdk.Ready {
			out := sdk.Outcome{Status: sdk.OK}
			switch k := rng.IntN(10); {
			case gc.fail[tk.Node] != "":
				out = sdk.Outcome{Status: sdk.Failed, Error: gc.fail[tk.Node]}
			case k == 0:
				out = sdk.Outcome{Status: sdk.Failed, Error: []string{"", "E1", "E2", "DECLINED"}[rng.IntN(4)]}
			case k == 1:
				out = sdk.Outcome{Status: sdk.Skipped}
			case k == 2:
				out.Output = map[string]any{"r": "x", "n": 3}
			}
			moves = append(moves, randCall{method: sdk.MethodNext, next: &sdk.NextRequest{State: st, Token: tk.ID, Outcome: out}})
		}
		for _, tr := range tk.Triggers {
			moves = append(moves, randCall{method: sdk.MethodBoundary, bound: &sdk.BoundaryRequest{State: st, Token: tk.ID, Event: tr}})
		}
	}
	if len(moves) == 0 {
		return randCall{}, false
	}
	return moves[rng.IntN(len(moves))], true
}

func stateJSON(st *sdk.State) string {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Sprintf("%+v", *st)
	}
	return string(b)
}

// randValue is a variable or attribute value of a random, often wrong,
// type. nan allows values JSON cannot carry.
func randValue(rng *rand.Rand, nan bool) any {
	vals := []any{nil, "", "lots", -1, 0, 1e308, -1e308, float64(math.MaxInt64), float64(math.MinInt64),
		true, []any{}, []any{nil, "a", 1.5}, map[string]any{}, map[string]any{"x": []any{map[string]any{}}},
		"body", "instance", "t1", strings.Repeat("x", 4096), 2.5, 1 << 40}
	if nan {
		vals = append(vals, math.NaN(), math.Inf(1), math.Inf(-1))
	}
	return vals[rng.IntN(len(vals))]
}

// randAttrKeys are the keys of the navigator's token bookkeeping.
var randAttrKeys = []string{attrComp, attrCompFor, attrCompWait, attrFlow, attrChoice, attrMI, attrInterrupted,
	attrMsgWait, attrTimers, attrCorrelation, attrLoopCounter, attrMIItems, attrMICount, attrMINext, attrMIOut, attrMIDone, attrHeaders}

// mutate changes st in one to three random ways, among them ways a
// valid state never has. nan allows values JSON cannot carry.
func mutate(st *sdk.State, nodes []string, rng *rand.Rand, nan bool) {
	tokID := func() string {
		if len(st.Tokens) == 0 || rng.IntN(5) == 0 {
			return []string{"", "nope", "t0", "t999999", "t-1"}[rng.IntN(5)]
		}
		return st.Tokens[rng.IntN(len(st.Tokens))].ID
	}
	node := func() string {
		if rng.IntN(3) == 0 {
			return []string{"", "nope", "<x>", "definitions"}[rng.IntN(4)]
		}
		return nodes[rng.IntN(len(nodes))]
	}
	anyTok := func() *sdk.Token {
		if len(st.Tokens) == 0 {
			st.Tokens = append(st.Tokens, sdk.Token{ID: "t1", Node: node(), Status: sdk.Ready})
		}
		return &st.Tokens[rng.IntN(len(st.Tokens))]
	}
	for range 1 + rng.IntN(3) {
		switch rng.IntN(20) {
		case 0:
			anyTok().Node = node()
		case 1: // duplicate id
			anyTok().ID = tokID()
		case 2:
			anyTok().ID = ""
		case 3:
			anyTok().Scope = tokID()
		case 4: // self-scope
			t := anyTok()
			t.Scope = t.ID
		case 5: // a scope cycle through two to four tokens
			for len(st.Tokens) < 4 {
				st.Tokens = append(st.Tokens, sdk.Token{ID: fmt.Sprintf("c%d", len(st.Tokens)), Node: node(), Status: sdk.Scope})
			}
			k := 2 + rng.IntN(3)
			idx := rng.Perm(len(st.Tokens))[:k]
			for i, j := range idx {
				st.Tokens[j].Scope = st.Tokens[idx[(i+1)%k]].ID
			}
		case 6:
			t := anyTok()
			t.Attempt = []int{-1, math.MaxInt, math.MinInt, 1 << 30}[rng.IntN(4)]
			t.DelayMS = []int64{-1, math.MaxInt64, math.MinInt64}[rng.IntN(3)]
		case 7:
			st.Seq = []int64{-1, math.MaxInt64, math.MinInt64, 0}[rng.IntN(4)]
		case 8:
			anyTok().Status = []sdk.TokenStatus{"", "zzz", sdk.Ready, sdk.Waiting, sdk.Scope}[rng.IntN(5)]
		case 9:
			t := anyTok()
			t.Triggers = append(t.Triggers, node(), t.Node)
		case 10, 11: // bookkeeping of the wrong type
			t := anyTok()
			if t.Attrs == nil {
				t.Attrs = map[string]any{}
			}
			t.Attrs[randAttrKeys[rng.IntN(len(randAttrKeys))]] = randValue(rng, nan)
		case 12, 13: // variables of the wrong type
			if st.Env.Vars == nil {
				st.Env.Vars = map[string]any{}
			}
			keys := []string{"amount", "x", "y", "code", "items", "n", "orders", "minutes", "due", "ok", "r", "q"}
			st.Env.Vars[keys[rng.IntN(len(keys))]] = randValue(rng, nan)
		case 14:
			if st.Data == nil {
				st.Data = map[string]any{}
			}
			st.Data[randAttrKeys[rng.IntN(len(randAttrKeys))]] = randValue(rng, nan)
		case 15: // drop a token (its kids lose their scope)
			if len(st.Tokens) > 0 {
				i := rng.IntN(len(st.Tokens))
				st.Tokens = append(st.Tokens[:i], st.Tokens[i+1:]...)
			}
		case 16: // the same token twice
			st.Tokens = append(st.Tokens, *anyTok())
		case 17: // many tokens
			t := *anyTok()
			for i := range 200 {
				t.ID = fmt.Sprintf("m%d", i)
				st.Tokens = append(st.Tokens, t)
			}
		case 18:
			st.Routine = []string{"", "nope", st.Routine[:min(8, len(st.Routine))]}[rng.IntN(3)]
		case 19: // a ready token at a node that is not an activity
			t := anyTok()
			t.Node, t.Status = node(), sdk.Ready
		}
	}
}

// mutateCall mutates the call's state and, sometimes, its request.
func mutateCall(c randCall, nodes []string, rng *rand.Rand, nan bool) randCall {
	c = c.clone()
	st := c.state()
	mutate(st, nodes, rng, nan)
	if rng.IntN(4) == 0 {
		var id string
		if len(st.Tokens) > 0 {
			id = st.Tokens[rng.IntN(len(st.Tokens))].ID
		}
		ev := nodes[rng.IntN(len(nodes))]
		switch c.method {
		case sdk.MethodStart:
			c.start.Trigger = ev
		case sdk.MethodNext:
			c.next.Token = id
			c.next.Outcome = sdk.Outcome{
				Status: []sdk.Status{sdk.OK, sdk.Failed, sdk.Skipped, "", "weird"}[rng.IntN(5)],
				Error:  []string{"", "E1", "nope"}[rng.IntN(3)],
				Flows:  [][]string{nil, {"nope"}, {ev}, {ev, ev}}[rng.IntN(4)],
			}
		default:
			c.bound.Token, c.bound.Event = id, ev
			if rng.IntN(2) == 0 {
				c.bound.Payload = map[string]any{"x": randValue(rng, nan)}
			}
		}
	}
	return c
}

// checkAnswer fails t unless the answer is a decision or an invalid-input
// error that says what is wrong.
func checkAnswer(t *testing.T, what string, c randCall, d *sdk.Decision, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, sdk.ErrInvalid) || err.Error() == "" || strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%s: %s on %s: want an invalid-state error naming the problem, got %v", what, c.method, stateJSON(c.state()), err)
		}
		return
	}
	if d == nil {
		t.Fatalf("%s: %s: neither a decision nor an error", what, c.method)
	}
	if d.Fault != nil && strings.Contains(d.Fault.Message, "internal error") {
		t.Fatalf("%s: %s on %s: %s", what, c.method, stateJSON(c.state()), d.Fault.Message)
	}
	d.Apply(*c.state())
}

// garble returns b damaged in one of several ways.
func garble(b []byte, rng *rand.Rand) []byte {
	b = bytes.Clone(b)
	switch rng.IntN(7) {
	case 0:
		return b[:rng.IntN(len(b)+1)]
	case 1:
		b[rng.IntN(len(b))] = `"{}[],:0-e\x`[rng.IntN(12)]
		return b
	case 2:
		return bytes.Replace(b, []byte(`"tokens":[`), []byte(`"tokens":{`), 1)
	case 3:
		return bytes.ReplaceAll(b, []byte(`"attempt":`), []byte(`"attempt":1e999,"x":`))
	case 4:
		return bytes.Replace(b, []byte(`"seq":`), []byte(`"seq":"many","y":`), 1)
	case 5:
		return bytes.Replace(b, []byte(`"vars":{`), []byte(`"vars":{"amount":{"$":[1,[2,{}]]},`), 1)
	}
	return bytes.Replace(b, []byte(`"id":"`), []byte(`"id":1,"z":"`), 1)
}

// wireCall sends params, encoded or not, to h as the method; the answer
// must be a decision, an invalid-state error or a malformed-request one.
func wireCall(t testing.TB, h sdk.Handler, method string, params []byte) {
	t.Helper()
	env := fmt.Appendf(nil, `{"api":%d,"method":%q,"params":`, sdk.APIVersion, method)
	env = append(append(env, params...), '}')
	var d sdk.Decision
	err := sdk.DecodeResponse(h.Handle(context.Background(), env), &d)
	if err == nil || errors.Is(err, sdk.ErrBadRequest) {
		return
	}
	if !errors.Is(err, sdk.ErrInvalid) || strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "panicked") {
		t.Fatalf("%s %s: want a decision or an invalid-state error, got %v", method, params, err)
	}
}

// TestRandomStates walks every golden case with fixed seeds, checks that
// each valid call answers the same directly, over the wire and again
// after the mutated calls, and feeds mutated and garbled copies of each
// state to the navigator.
func TestRandomStates(t *testing.T) {
	defer func(v bool) { debugPanics = v }(debugPanics)
	debugPanics = true // a panic fails the test with its stack
	nv, rs := randFixtures(t)
	wire := sdktest.Wire(nv)
	h := sdk.Serve(nv)
	cases := 0
	for gi, gc := range goldenCases {
		r := rs[gc.file]
		nodes := nv.nodeIDs(r.Hash)
		for seed := range uint64(8) {
			rng := rand.New(rand.NewPCG(seed, uint64(gi)))
			calls, decs := randWalk(t, nv, r, gc, rng, 5+rng.IntN(20))
			for i, c := range calls {
				want := *roundTrip(ptr(decs[i].Apply(*c.state())))
				// The same valid call over the wire gives the same state.
				wd, err := c.clone().do(wire)
				if err != nil {
					t.Fatalf("%s seed %d: valid %s over the wire: %v", gc.name, seed, c.method, err)
				}
				if got := *roundTrip(ptr(wd.Apply(*c.clone().state()))); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s seed %d: %s over the wire:\n got %s\nwant %s", gc.name, seed, c.method, stateJSON(&got), stateJSON(&want))
				}
				for range 4 {
					m := mutateCall(c, nodes, rng, rng.IntN(8) == 0)
					d, err := m.do(nv)
					checkAnswer(t, gc.name, m, d, err)
					cases++
				}
				p, err := json.Marshal(c.params())
				if err != nil {
					t.Fatal(err)
				}
				wireCall(t, h, c.method, garble(p, rng))
				cases++
				// Nothing the bad calls did is left in the pooled runs.
				d, err := c.clone().do(nv)
				if err != nil {
					t.Fatalf("%s seed %d: valid %s after bad ones: %v", gc.name, seed, c.method, err)
				}
				if got := *roundTrip(ptr(d.Apply(*c.clone().state()))); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s seed %d: %s after bad calls:\n got %s\nwant %s", gc.name, seed, c.method, stateJSON(&got), stateJSON(&want))
				}
			}
		}
	}
	if cases < 2000 {
		t.Fatalf("only %d cases", cases)
	}
	t.Logf("%d bad calls", cases)
}

// nodeIDs lists the element ids of a loaded routine, sorted (map order
// would make the seeds' cases differ from run to run).
func (nv *Navigator) nodeIDs(hash string) []string {
	m, err := nv.routine(hash)
	if err != nil {
		return []string{"nope"}
	}
	return slices.Sorted(maps.Keys(m.byID))
}

var fuzzStateNav = sync.OnceValues(func() (*Navigator, error) {
	nv := New()
	for _, gc := range goldenCases {
		data, err := os.ReadFile(filepath.Join("testdata", "routines", gc.file))
		if err != nil {
			return nil, err
		}
		if _, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: gc.file, Routine: data}); err != nil {
			return nil, err
		}
	}
	return nv, nil
})

// FuzzState feeds arbitrary request params to Start, Next and Boundary of
// a navigator holding every golden fixture, directly and over the wire.
// Its seeds are the valid calls of short random walks of the golden cases
// and mutated copies of them.
func FuzzState(f *testing.F) {
	nv, rs := randFixtures(f)
	for gi, gc := range goldenCases {
		rng := rand.New(rand.NewPCG(99, uint64(gi)))
		calls, _ := randWalk(f, nv, rs[gc.file], gc, rng, 4)
		for _, c := range calls {
			for _, m := range []randCall{c, mutateCall(c, nv.nodeIDs(rs[gc.file].Hash), rng, false)} {
				p, err := json.Marshal(m.params())
				if err != nil {
					f.Fatal(err)
				}
				f.Add(m.method, p)
			}
		}
	}
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		nv, err := fuzzStateNav()
		if err != nil {
			t.Fatal(err)
		}
		c := randCall{method: method}
		switch method {
		case sdk.MethodStart:
			c.start = new(sdk.StartRequest)
			err = json.Unmarshal(params, c.start)
		case sdk.MethodNext:
			c.next = new(sdk.NextRequest)
			err = json.Unmarshal(params, c.next)
		case sdk.MethodBoundary:
			c.bound = new(sdk.BoundaryRequest)
			err = json.Unmarshal(params, c.bound)
		default:
			return
		}
		if err == nil {
			d, err := c.do(nv)
			checkAnswer(t, "fuzz", c, d, err)
		}
		wireCall(t, sdk.Serve(nv), method, params)
	})
}

// TestBadTokenStates pins what TestRandomStates found: a token without a
// resting status was accepted (or ended the call as a fault blaming the
// engine), and multi-instance bookkeeping on a plain activity was accepted
// (completing such an instance panicked).
func TestBadTokenStates(t *testing.T) {
	nv, rs := randFixtures(t)
	r := rs["tasks.bpmn"]
	ready := sdk.Token{ID: "t3", Node: "service", Status: sdk.Ready, Scope: "t1"}
	for _, tt := range []struct {
		name string
		toks []sdk.Token // besides the process's scope token t1
		want string
	}{
		// Next completes t3, a sound token; t4 beside it is the bad one.
		{"moving token", []sdk.Token{ready, {ID: "t4", Node: "tasks", Scope: "t1"}}, `token t4: unknown status ""`},
		{"made-up status", []sdk.Token{ready, {ID: "t4", Node: "service", Status: "zzz", Scope: "t1"}}, `token t4: unknown status "zzz"`},
		{"instance of a plain task", []sdk.Token{{ID: "t3", Node: "service", Status: sdk.Ready, Scope: "t1", Attrs: map[string]any{attrMI: "instance"}}}, `token t3: serviceTask "service" is not a multi-instance activity`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := sdk.State{Routine: r.Hash, Seq: 4, Tokens: append([]sdk.Token{{ID: "t1", Node: "tasks", Status: sdk.Scope}}, tt.toks...)}
			_, err := nv.Next(context.Background(), &sdk.NextRequest{State: st, Token: "t3", Outcome: sdk.Outcome{Status: sdk.OK}})
			if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an invalid-state error with %q", err, tt.want)
			}
		})
	}
}
