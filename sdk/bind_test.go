package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// stateEchoNav answers every call with the State it was given, encoded into
// its Trace, so a test sees exactly what the navigator saw. Like a real
// navigator it knows only the routines loaded into it.
type stateEchoNav struct{ loaded *sync.Map }

func newEcho() stateEchoNav { return stateEchoNav{loaded: &sync.Map{}} }

func (n stateEchoNav) Describe() sdk.Info {
	return sdk.Info{Name: "echo", Kind: sdk.KindNavigator, Version: "1.0.0", API: sdk.APIVersion}
}

func (n stateEchoNav) Load(_ context.Context, r *sdk.LoadRequest) (*sdk.Routine, error) {
	n.loaded.Store("h-"+r.Name, true)
	return &sdk.Routine{Hash: "h-" + r.Name}, nil
}

func (n stateEchoNav) seen(what string, st sdk.State, extra ...any) (*sdk.Decision, error) {
	if _, ok := n.loaded.Load(st.Routine); !ok {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "routine %s not loaded", st.Routine)
	}
	b, err := json.Marshal(append([]any{what, st}, extra...))
	if err != nil {
		return nil, err
	}
	return &sdk.Decision{Trace: []sdk.Event{{Type: "seen", Node: string(b)}}, Seq: st.Seq + 1}, nil
}

func (n stateEchoNav) Start(_ context.Context, r *sdk.StartRequest) (*sdk.Decision, error) {
	return n.seen("start", r.State, r.Trigger)
}

func (n stateEchoNav) Next(_ context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	return n.seen("next", r.State, r.Token, r.Outcome)
}

func (n stateEchoNav) Boundary(_ context.Context, r *sdk.BoundaryRequest) (*sdk.Decision, error) {
	return n.seen("boundary", r.State, r.Token, r.Event, r.Payload)
}

func (stateEchoNav) IO(context.Context, *sdk.IORequest) (*sdk.NodeIO, error) {
	return &sdk.NodeIO{}, nil
}

// counting is a RoundTripper over a Handler that counts calls and request
// bytes per method; swap replaces the handler (a plugin restart).
type counting struct {
	mu    sync.Mutex
	h     sdk.Handler
	calls map[string]int
	bytes map[string]int
}

func newCounting(h sdk.Handler) *counting {
	return &counting{h: h, calls: map[string]int{}, bytes: map[string]int{}}
}

func (c *counting) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	var env struct{ Method string }
	if json.Unmarshal(req, &env) != nil {
		// an api 2 (MessagePack) envelope holds its method name verbatim
		for _, m := range []string{sdk.MethodBoundStart, sdk.MethodBoundNext, sdk.MethodBoundBoundary, sdk.MethodStart, sdk.MethodNext, sdk.MethodBoundary} {
			if bytes.Contains(req, []byte(m)) {
				env.Method = m
				break
			}
		}
	}
	c.mu.Lock()
	c.calls[env.Method]++
	c.bytes[env.Method] += len(req)
	h := c.h
	c.mu.Unlock()
	return h.Handle(ctx, req), nil
}

func (c *counting) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.bytes = map[string]int{}, map[string]int{}
}

func (c *counting) count(m string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[m]
}

func dial(t *testing.T, rt sdk.RoundTripper) *sdk.NavigatorClient {
	t.Helper()
	c, err := sdk.NewNavigatorClient(context.Background(), "echo", rt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(context.Background(), &sdk.LoadRequest{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// whole is a client that sends whole requests (an old host), with the
// routine loaded.
func whole(t *testing.T, rt sdk.RoundTripper) *sdk.Client {
	t.Helper()
	c := sdk.NewClient("echo", rt, newEcho().Describe())
	if _, err := c.Load(context.Background(), &sdk.LoadRequest{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// script is a run as the host drives it: an instance's calls, its
// variables changing between them, then a second instance (new input).
func script(t *testing.T, nav sdk.Navigator, strategy map[string]any) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	keep := func(d *sdk.Decision, err error) *sdk.Decision {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Trace[0].Node)
		return d
	}
	for i, input := range []map[string]any{{"topic": "a", "n": 1}, {"topic": "b"}, {}} {
		st := sdk.State{Routine: "h-r", Env: sdk.Env{Input: input, Vars: map[string]any{}, Strategy: strategy}}
		if i < 2 { // the run's clock travels with each call; the last instance has none
			st.Env.Now = time.Date(2026, 11, 23, 10, i, 0, 5, time.FixedZone("", 3600))
		}
		d := keep(nav.Start(ctx, &sdk.StartRequest{State: st}))
		st = d.Apply(st)
		if i < 2 {
			st.Env.Now = st.Env.Now.Add(time.Minute)
		}
		st.Tokens = []sdk.Token{{ID: "t1", Node: "n1", Status: sdk.Ready, Attrs: map[string]any{"loopCounter": 2}}}
		st.Env.Vars = map[string]any{"classify": map[string]any{"action": "reply", "confidence": 0.9}, "x": 1}
		d = keep(nav.Next(ctx, &sdk.NextRequest{State: st, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK, Output: map[string]any{"y": "z"}}}))
		st = d.Apply(st)
		st.Env.Vars = map[string]any{"classify": map[string]any{"action": "archive", "confidence": 0.9}, "y": []any{"p", 2.5}}
		d = keep(nav.Boundary(ctx, &sdk.BoundaryRequest{State: st, Token: "t1", Event: "timer", Payload: map[string]any{"k": "v"}}))
		st = d.Apply(st)
		st.Env.Vars = map[string]any{}
		keep(nav.Next(ctx, &sdk.NextRequest{State: st, Token: "t1", Outcome: sdk.Outcome{Status: sdk.Failed, Error: "E1"}}))
	}
	return out
}

var strategyEnv = map[string]any{"parameters": map[string]any{"autonomy_level": 0.7}, "playbook": []any{map[string]any{"id": "b-1", "content": strings.Repeat("long bullet ", 40)}}}

// TestBindSameAsFull: a navigator called through the bind-once methods
// sees, call for call, the State a whole request gives it, byte for byte;
// and the bound calls carry neither the strategy nor unchanged variables.
//
// Over sdk.ServeGuest too: a wasm guest updates its bindings in place and
// reuses one instance's variables map for the next, which must then see
// none of the last one's.
func TestBindSameAsFull(t *testing.T) {
	for name, serve := range map[string]func(sdk.Plugin) sdk.Handler{"serve": sdk.Serve, "guest": sdk.ServeGuest} {
		t.Run(name, func(t *testing.T) { bindSameAsFull(t, serve) })
	}
}

func bindSameAsFull(t *testing.T, serve func(sdk.Plugin) sdk.Handler) {
	fullRT := newCounting(sdk.Serve(newEcho()))
	full := whole(t, fullRT) // an old host: whole requests
	fullRT.reset()
	boundRT := newCounting(serve(newEcho()))
	bound := dial(t, boundRT)
	if !bound.Describe().Bind {
		t.Fatal("Serve does not advertise bind for a navigator")
	}
	boundRT.reset()
	want := script(t, full, strategyEnv)
	got := script(t, bound, strategyEnv)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("call %d: bound navigator saw\n %s\nwhole request gave\n %s", i, got[i], want[i])
		}
	}
	if n := fullRT.count(sdk.MethodBind) + fullRT.count(sdk.MethodBoundNext); n != 0 {
		t.Fatalf("client without Bind used the bind-once methods %d times", n)
	}
	if n := boundRT.count(sdk.MethodBind); n != 1 {
		t.Fatalf("bound %d times, want once for one routine and strategy", n)
	}
	if n := boundRT.count(sdk.MethodNext) + boundRT.count(sdk.MethodStart) + boundRT.count(sdk.MethodBoundary); n != 0 {
		t.Fatalf("binding client sent %d whole requests", n)
	}
	fb, bb := 0, 0
	for _, n := range fullRT.bytes {
		fb += n
	}
	for m, n := range boundRT.bytes {
		if m != sdk.MethodBind {
			bb += n
		}
	}
	t.Logf("request bytes over %d calls: whole %d, bound %d (+%d for the one bind)", len(want), fb, bb, boundRT.bytes[sdk.MethodBind])
	if bb*2 > fb {
		t.Fatalf("bound calls carried %d bytes, whole requests %d: want less than half", bb, fb)
	}
}

// TestBindRecovers: a plugin that restarted (bindings gone), another
// client moving the shared Env on, and a plugin that advertises Bind but
// does not answer it all end in the right answer.
func TestBindRecovers(t *testing.T) {
	fullRT := newCounting(sdk.Serve(newEcho()))
	fullNav := whole(t, fullRT)
	want := script(t, fullNav, strategyEnv)

	t.Run("restart", func(t *testing.T) {
		rt := newCounting(sdk.Serve(newEcho()))
		nav := dial(t, rt)
		script(t, nav, strategyEnv)
		rt.h = sdk.Serve(newEcho()) // the plugin restarted: it holds no binding
		rt.reset()
		if got := script(t, nav, strategyEnv); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("after a restart the navigator saw other states:\n%s", strings.Join(got, "\n"))
		}
		if rt.count(sdk.MethodBind) != 1 || rt.count(sdk.MethodLoad) != 1 {
			t.Fatalf("after a restart: %d loads and %d binds, want the routine loaded and bound again once (calls %v)", rt.count(sdk.MethodLoad), rt.count(sdk.MethodBind), rt.calls)
		}
	})
	t.Run("shared instance", func(t *testing.T) {
		// Two clients on one plugin instance, interleaved call by call:
		// each moves the binding's Env on under the other.
		rt := newCounting(sdk.Serve(newEcho()))
		a, b := dial(t, rt), dial(t, rt)
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			for j, nav := range []sdk.Navigator{a, b} {
				st := sdk.State{Routine: "h-r", Env: sdk.Env{Input: map[string]any{"who": j}, Vars: map[string]any{"i": i}, Strategy: strategyEnv}}
				d, err := nav.Next(ctx, &sdk.NextRequest{State: st, Token: "t"})
				if err != nil {
					t.Fatal(err)
				}
				fd, _ := fullNav.Next(ctx, &sdk.NextRequest{State: st, Token: "t"})
				if d.Trace[0] != fd.Trace[0] {
					t.Fatalf("client %d call %d saw %s, want %s", j, i, d.Trace[0].Node, fd.Trace[0].Node)
				}
			}
		}
	})
	t.Run("advertised but unanswered", func(t *testing.T) {
		rt := newCounting(liar{sdk.Serve(newEcho())})
		nav := dial(t, rt)
		if got := script(t, nav, strategyEnv); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatal("a plugin that does not answer bind saw other states")
		}
		if rt.count(sdk.MethodBind) != 1 || rt.count(sdk.MethodNext) == 0 {
			t.Fatalf("want one refused bind then whole requests, got %v", rt.calls)
		}
	})
}

// liar advertises Bind but answers the bind-once methods as an old plugin.
type liar struct{ h sdk.Handler }

func (l liar) Handle(ctx context.Context, req []byte) []byte {
	s := string(req)
	if strings.Contains(s, `"method":"navigator.bind"`) || strings.Contains(s, `"method":"navigator.bound.`) {
		b, _ := json.Marshal(sdk.Response{Error: sdk.Errorf(sdk.CodeUnknownMethod, "does not answer")})
		return b
	}
	return l.h.Handle(ctx, req)
}

// TestBoundErrors: a bound call the plugin cannot place is a clear error,
// never a guess.
func TestBoundErrors(t *testing.T) {
	h := sdk.Serve(newEcho())
	call := func(method string, params any) error {
		req, _ := sdk.EncodeRequest(method, params)
		var d sdk.Decision
		return sdk.DecodeResponse(h.Handle(context.Background(), req), &d)
	}
	err := call(sdk.MethodBoundNext, sdk.BoundNextRequest{State: sdk.BoundState{Binding: "nope", Version: 1}})
	if !errors.Is(err, sdk.ErrUnbound) || !strings.Contains(err.Error(), "binding nope is not held") {
		t.Fatalf("unknown binding: %v", err)
	}
	if err := call(sdk.MethodBind, sdk.BindRequest{Binding: "b", Routine: "h-r"}); err != nil {
		t.Fatal(err)
	}
	err = call(sdk.MethodBoundNext, sdk.BoundNextRequest{State: sdk.BoundState{Binding: "b", Base: 7, Version: 8}})
	if !errors.Is(err, sdk.ErrUnbound) || !strings.Contains(err.Error(), "holds env version 0, the call changes version 7") {
		t.Fatalf("stale base: %v", err)
	}
	err = call(sdk.MethodBoundStart, sdk.BoundStartRequest{State: sdk.BoundState{Binding: "b"}})
	if !errors.Is(err, sdk.ErrBadRequest) {
		t.Fatalf("version 0: %v", err)
	}
	if err := call(sdk.MethodBind, sdk.BindRequest{Binding: "b"}); !errors.Is(err, sdk.ErrBadRequest) {
		t.Fatalf("bind without a routine: %v", err)
	}
}

// BenchmarkNavigatorCall is one navigator.next of a 10-step run, host and
// plugin side in one process (sdk.Serve over a loopback): whole requests
// against the bind-once methods. The plugin side's share is what a wasm
// guest runs, several times slower.
func BenchmarkNavigatorCall(b *testing.B) {
	for _, bind := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "bound"}[bind]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			h := sdk.Serve(stepNav{newEcho()})
			info := newEcho().Describe()
			info.Bind = bind
			nav := sdk.NewClient("echo", navLoop{h}, info)
			nav.Load(ctx, &sdk.LoadRequest{Name: "r"})
			vars := map[string]any{}
			for i := range 8 {
				vars[fmt.Sprint("s", i)] = map[string]any{"answer": strings.Repeat("x", 40), "n": i}
			}
			st := sdk.State{Routine: "h-r", Seq: 9, Tokens: []sdk.Token{{ID: "t9", Node: "s9", Status: sdk.Ready}},
				Env: sdk.Env{Input: map[string]any{"topic": "ducks"}, Vars: vars, Strategy: strategyEnv}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				v := make(map[string]any, len(vars)+1)
				for k, x := range vars {
					v[k] = x
				}
				v["s9"] = i
				st.Env.Vars = v
				if _, err := nav.Next(ctx, &sdk.NextRequest{State: st, Token: "t9", Outcome: sdk.Outcome{Status: sdk.OK}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stepNav answers Next as a chain does: the token moves one step on.
type stepNav struct{ stateEchoNav }

func (stepNav) Next(_ context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	return &sdk.Decision{Remove: []string{r.Token}, Add: []sdk.Token{{ID: "t10", Node: "s10", Status: sdk.Ready}}, Seq: r.State.Seq + 1,
		Trace: []sdk.Event{{Type: sdk.Exit, Node: "s9"}, {Type: sdk.Enter, Node: "s10"}}}, nil
}

type navLoop struct{ h sdk.Handler }

func (l navLoop) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	return l.h.Handle(ctx, req), nil
}

// lastRequest is a RoundTripper over a Handler that keeps the last request.
type lastRequest struct {
	h    sdk.Handler
	last []byte
}

func (l *lastRequest) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	l.last = append(l.last[:0], req...)
	return l.h.Handle(ctx, req), nil
}

// TestBindScalarDelta: scalar variables (and maps of scalars) are
// compared as values, not as their JSON: an unchanged one is not sent
// again, a changed one is (a key added with a nil value too), and one
// that changed type but not its JSON (int 2, then float64 2) is sent
// again rather than missed; the navigator sees the whole Env every time.
func TestBindScalarDelta(t *testing.T) {
	ctx := context.Background()
	rt := &lastRequest{h: sdk.Serve(newEcho())}
	nav := dial(t, rt)
	full := whole(t, newCounting(sdk.Serve(newEcho())))
	st := sdk.State{Routine: "h-r", Tokens: []sdk.Token{{ID: "t1", Node: "n1", Status: sdk.Ready}},
		Env: sdk.Env{Input: map[string]any{"topic": "a"}, Strategy: strategyEnv}}
	steps := []struct {
		vars     map[string]any
		sent     []string // values that must be in the request
		not      []string // values that must not
		wantSeen string
	}{
		{map[string]any{"keep": "kept-value", "n": 2, "m": map[string]any{"k": "map-value"}}, []string{"kept-value", "map-value"}, nil, ""},
		{map[string]any{"keep": "kept-value", "n": 3, "m": map[string]any{"k": "map-value"}}, nil, []string{"kept-value", "map-value"}, ""},
		{map[string]any{"keep": "kept-value", "n": 3.0, "m": map[string]any{"k": "map-value"}}, nil, []string{"kept-value", "map-value"}, ""},
		{map[string]any{"keep": "changed-value", "n": 3.0, "m": map[string]any{"k": "map-value"}}, []string{"changed-value"}, []string{"map-value"}, ""},
		{map[string]any{"keep": "changed-value", "n": 3.0, "m": map[string]any{"k": "new-map-value"}}, []string{"new-map-value"}, []string{"changed-value"}, ""},
		{map[string]any{"keep": "changed-value", "n": 3.0, "m": map[string]any{"k": "new-map-value", "j": nil}}, []string{"new-map-value"}, []string{"changed-value"}, ""},
		{map[string]any{"keep": "changed-value", "n": 3.0, "m": map[string]any{"k": []any{"nested-value"}}}, []string{"nested-value"}, []string{"changed-value"}, ""},
		{map[string]any{"keep": "changed-value", "n": 3.0, "m": map[string]any{"k": []any{"nested-value"}}}, nil, []string{"changed-value", "nested-value"}, ""},
	}
	for i, s := range steps {
		st.Env.Vars = s.vars
		req := &sdk.NextRequest{State: st, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}}
		got, err := nav.Next(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := full.Next(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got.Trace[0].Node != want.Trace[0].Node {
			t.Fatalf("call %d: bound navigator saw\n %s\nwhole request gave\n %s", i, got.Trace[0].Node, want.Trace[0].Node)
		}
		for _, v := range s.sent {
			if !bytes.Contains(rt.last, []byte(v)) {
				t.Fatalf("call %d: %q changed but was not sent: %q", i, v, rt.last)
			}
		}
		for _, v := range s.not {
			if bytes.Contains(rt.last, []byte(v)) {
				t.Fatalf("call %d: %q unchanged but sent again: %q", i, v, rt.last)
			}
		}
	}
}

// TestBindConcurrentShared: clients on one plugin instance (a process
// plugin's connections) calling with the same binding at once each see
// their own whole Env: the vars map a call is given is shared with the
// binding, never modified (run with -race).
func TestBindConcurrentShared(t *testing.T) {
	h := sdk.Serve(newEcho())
	full := whole(t, newCounting(sdk.Serve(newEcho())))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	navs := make([]*sdk.NavigatorClient, 4)
	for c := range navs {
		navs[c] = dial(t, newCounting(h))
	}
	for c, nav := range navs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			vars := map[string]any{}
			for i := range 50 {
				next := make(map[string]any, len(vars)+1)
				for k, v := range vars {
					next[k] = v
				}
				next[fmt.Sprint("v", i%7)] = fmt.Sprint(c, "-", i)
				vars = next
				st := sdk.State{Routine: "h-r", Tokens: []sdk.Token{{ID: "t1", Node: "n1", Status: sdk.Ready}},
					Env: sdk.Env{Input: map[string]any{"client": c}, Vars: vars, Strategy: strategyEnv}}
				req := &sdk.NextRequest{State: st, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}}
				got, err := nav.Next(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				want, err := full.Next(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if got.Trace[0].Node != want.Trace[0].Node {
					errs <- fmt.Errorf("client %d call %d: saw\n %s\nwant\n %s", c, i, got.Trace[0].Node, want.Trace[0].Node)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// readsEcho is stateEchoNav whose routines declare the variables they
// read (sdk.Routine.Reads); reads nil declares none.
type readsEcho struct {
	stateEchoNav
	reads *[]string
}

func (n readsEcho) Load(ctx context.Context, r *sdk.LoadRequest) (*sdk.Routine, error) {
	out, err := n.stateEchoNav.Load(ctx, r)
	if err == nil && *n.reads != nil {
		out.Reads = &sdk.Reads{Vars: *n.reads}
	}
	return out, err
}

// TestBindReads: a binding client sends a navigator only the variables
// its routine reads: it sees exactly those (a removed one goes, an
// unread one that changes costs nothing), and when a reload declares
// otherwise (a replaced plugin) it is sent what it now reads.
func TestBindReads(t *testing.T) {
	for name, serve := range map[string]func(sdk.Plugin) sdk.Handler{"serve": sdk.Serve, "guest": sdk.ServeGuest} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			reads := []string{"x", "z", "x"}
			rt := &lastRequest{h: serve(readsEcho{newEcho(), &reads})}
			nav := dial(t, rt)
			full := whole(t, newCounting(sdk.Serve(newEcho())))
			steps := []struct {
				vars map[string]any
				seen map[string]any // what a whole request with only these gives
				not  string         // a value the request must not carry
			}{
				{map[string]any{"x": 1, "y": "y-one"}, map[string]any{"x": 1}, "y-one"},
				{map[string]any{"x": 1, "y": "y-two"}, map[string]any{"x": 1}, "y-two"},
				{map[string]any{"y": "y-two"}, nil, "y-two"},
				{map[string]any{"x": 2, "y": "y-three", "z": "z-value"}, map[string]any{"x": 2, "z": "z-value"}, "y-three"},
				{map[string]any{"x": 2, "y": "y-four", "z": "z-value"}, map[string]any{"x": 2, "z": "z-value"}, "y-four"},
				{nil, nil, ""}, // the plugin now declares nothing: it reads all
				{map[string]any{"x": 2, "y": "y-five", "z": "z-value"}, map[string]any{"x": 2, "y": "y-five", "z": "z-value"}, ""},
			}
			st := sdk.State{Routine: "h-r", Tokens: []sdk.Token{{ID: "t1", Node: "n1", Status: sdk.Ready}},
				Env: sdk.Env{Input: map[string]any{"topic": "a"}, Strategy: strategyEnv}}
			for i, s := range steps {
				if s.vars == nil {
					reads = nil
					if _, err := nav.Load(ctx, &sdk.LoadRequest{Name: "r"}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				st.Env.Vars = s.vars
				got, err := nav.Next(ctx, &sdk.NextRequest{State: st, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}})
				if err != nil {
					t.Fatal(err)
				}
				ws := st
				ws.Env.Vars = s.seen
				want, err := full.Next(ctx, &sdk.NextRequest{State: ws, Token: "t1", Outcome: sdk.Outcome{Status: sdk.OK}})
				if err != nil {
					t.Fatal(err)
				}
				if got.Trace[0].Node != want.Trace[0].Node {
					t.Fatalf("call %d: navigator saw\n %s\nwant\n %s", i, got.Trace[0].Node, want.Trace[0].Node)
				}
				if s.not != "" && bytes.Contains(rt.last, []byte(s.not)) {
					t.Fatalf("call %d: %q is not read but was sent: %q", i, s.not, rt.last)
				}
			}
		})
	}
}
