package chain

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// walker drives one instance as the host does: it applies every Decision
// with Decision.Apply and completes the Ready token with the outcome the
// test chooses (by step id; unlisted steps succeed). A successful step
// writes its declared outputs into vars, as the host does. After useWire
// every call goes through the wire encoding (sdktest.Wire), with the
// routine loaded through it as the host loads it: the client then sends
// only the variables the routine reads (sdk.Routine.Reads).
type walker struct {
	tb    testing.TB
	src   string
	impl  *Navigator
	nav   sdk.Navigator
	hash  string
	st    sdk.State
	log   []string
	last  *sdk.Decision
	calls int
	plan  map[string]sdk.Outcome
}

func newWalker(tb testing.TB, src string, env sdk.Env, plan map[string]sdk.Outcome) *walker {
	tb.Helper()
	nav := New()
	r, err := nav.Load(context.Background(), &sdk.LoadRequest{Name: "chain.toml", Routine: []byte(src)})
	if err != nil {
		tb.Fatalf("load: %v", err)
	}
	return &walker{tb: tb, src: src, impl: nav, nav: nav, hash: r.Hash, st: sdk.State{Routine: r.Hash, Env: env}, plan: plan}
}

// useWire sends every later call through the wire encoding.
func (w *walker) useWire(on bool) {
	if on {
		w.over(sdktest.Wire(w.impl))
	}
}

// over sends every later call through c, which loads the routine first.
func (w *walker) over(c *sdk.Client) {
	w.tb.Helper()
	if _, err := c.Load(context.Background(), &sdk.LoadRequest{Name: "chain.toml", Routine: []byte(w.src)}); err != nil {
		w.tb.Fatalf("load over the wire: %v", err)
	}
	w.nav = c
}

func (w *walker) state() sdk.State { return w.st }

func (w *walker) apply(d *sdk.Decision, err error) {
	w.tb.Helper()
	if err != nil {
		w.tb.Fatalf("call %d: %v", w.calls, err)
	}
	w.calls++
	w.last = d
	for _, e := range d.Trace {
		w.log = append(w.log, string(e.Type)+":"+e.Node)
	}
	// A copy of d has none of its reserved room (see Decision.decision):
	// applying it is the general path, which the room must not change.
	plain := *d
	want := plain.Apply(w.st)
	w.st = d.Apply(w.st)
	if !reflect.DeepEqual(w.st, want) {
		w.tb.Fatalf("call %d: applied in the reserved room %+v, in fresh memory %+v", w.calls, w.st, want)
	}
	if d.Fault != nil {
		w.log = append(w.log, fmt.Sprintf("fault: %s [%s] %s", d.Fault.Node, d.Fault.Code, d.Fault.Message))
	}
	if d.Complete {
		w.log = append(w.log, "complete")
	}
}

// run walks to the end.
func (w *walker) run() {
	w.tb.Helper()
	w.apply(w.nav.Start(context.Background(), &sdk.StartRequest{State: w.state()}))
	for !w.last.Complete && w.last.Fault == nil {
		var ready []sdk.Token
		for _, t := range w.st.Tokens {
			if t.Status == sdk.Ready {
				ready = append(ready, t)
			}
		}
		if len(ready) != 1 {
			w.tb.Fatalf("want one Ready token, have %+v; log:\n%s", w.st.Tokens, strings.Join(w.log, "\n"))
		}
		if w.calls > 1000 {
			w.tb.Fatal("runaway walk")
		}
		tok := ready[0]
		out, ok := w.plan[tok.Node]
		if !ok {
			out = sdk.Outcome{Status: sdk.OK}
		}
		if out.Status == sdk.OK {
			io, err := w.nav.IO(context.Background(), &sdk.IORequest{Routine: w.hash, Node: tok.Node})
			if err != nil {
				w.tb.Fatal(err)
			}
			vars := map[string]any{}
			for k, v := range w.st.Env.Vars {
				vars[k] = v
			}
			for _, o := range io.Outputs {
				vars[o] = o + " by " + tok.Node
			}
			w.st.Env.Vars = vars
		}
		w.apply(w.nav.Next(context.Background(), &sdk.NextRequest{State: w.state(), Token: tok.ID, Outcome: out}))
	}
	if len(w.st.Tokens) > 0 && w.last.Complete {
		w.tb.Fatalf("complete with tokens left: %+v", w.st.Tokens)
	}
}

// summary renders the walk for golden files.
func (w *walker) summary() string {
	var b strings.Builder
	for _, l := range w.log {
		b.WriteString(l + "\n")
	}
	if len(w.st.Env.Vars) > 0 {
		b.WriteString("--- vars\n")
		keys := make([]string, 0, len(w.st.Env.Vars))
		for k := range w.st.Env.Vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(w.st.Env.Vars[k])
			fmt.Fprintf(&b, "%s = %s\n", k, v)
		}
	}
	return b.String()
}

// TestApplyInReservedRoom: applying a top-level step's Decision builds the
// new state in the walk's own memory, allocating nothing beyond Next's.
// (walker.apply checks, at every call of every walk, that the state built
// there equals the one Apply builds without the room.)
func TestApplyInReservedRoom(t *testing.T) {
	w := newWalker(t, "name = \"three\"\n[[steps]]\nid = \"a\"\n[[steps]]\nid = \"b\"\n[[steps]]\nid = \"c\"\n", sdk.Env{}, nil)
	w.apply(w.nav.Start(context.Background(), &sdk.StartRequest{State: w.state()}))
	req := &sdk.NextRequest{State: w.state(), Token: w.st.Tokens[0].ID, Outcome: sdk.Outcome{Status: sdk.OK}}
	next := func() *sdk.Decision {
		d, err := w.nav.Next(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var st sdk.State
	alone := testing.AllocsPerRun(100, func() { next() })
	applied := testing.AllocsPerRun(100, func() { st = next().Apply(req.State) })
	if applied != alone {
		t.Errorf("Next and Apply allocate %v times, Next alone %v", applied, alone)
	}
	if len(st.Tokens) != 1 || st.Tokens[0].Node != "b" {
		t.Errorf("applied state: %+v", st.Tokens)
	}
}

// TestWalksTakenOnce: walks come from blocks that every call shares, each
// walk handed out once, also to calls racing one another, and what the
// host holds of a walk after the call (its Decision) holds no request.
func TestWalksTakenOnce(t *testing.T) {
	const goroutines, each = 8, 500
	got := make([][]*walk, goroutines)
	var wg sync.WaitGroup
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				got[g] = append(got[g], takeWalk())
			}
		}()
	}
	wg.Wait()
	seen := map[*walk]bool{}
	for _, ws := range got {
		for _, w := range ws {
			if seen[w] || w.st != nil || w.d != nil {
				t.Fatalf("walk %p handed out twice or not new", w)
			}
			seen[w] = true
		}
	}

	w := newWalker(t, "name = \"three\"\n[[steps]]\nid = \"a\"\n[[steps]]\nid = \"b\"\n[[steps]]\nid = \"c\"\n", sdk.Env{}, nil)
	w.apply(w.nav.Start(context.Background(), &sdk.StartRequest{State: w.state()}))
	req := &sdk.NextRequest{State: w.state(), Token: w.st.Tokens[0].ID, Outcome: sdk.Outcome{Status: sdk.OK}}
	for b := walks.Load(); b == nil || b.next.Load() >= walksPerBlock-1; b = walks.Load() {
		takeWalk() // into a block with room for the next call's walk
	}
	b := walks.Load()
	taken := &b.walks[b.next.Load()]
	d, err := w.nav.Next(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if d != &taken.dec || taken.st != nil || taken.env != nil {
		t.Errorf("the call's walk holds its request: decision in it %v, state %p, env %v", d == &taken.dec, taken.st, taken.env)
	}
	// Under one allocation per call: AllocsPerRun rounds down.
	if n := testing.AllocsPerRun(100, func() { _, _ = w.nav.Next(context.Background(), req) }); n != 0 {
		t.Errorf("Next allocates %v times per call", n)
	}
}
