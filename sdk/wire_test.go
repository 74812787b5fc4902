package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

type gate struct {
	name string
	fn   func(*sdk.Comparison) (*sdk.Verdict, error)
}

func (g gate) Describe() sdk.Info {
	return sdk.Info{Name: g.name, Kind: sdk.KindGate, Version: "1.0.0", API: sdk.APIVersion}
}

func (g gate) Check(_ context.Context, c *sdk.Comparison) (*sdk.Verdict, error) { return g.fn(c) }

func TestWireRoundTrip(t *testing.T) {
	g := gate{name: "t", fn: func(c *sdk.Comparison) (*sdk.Verdict, error) {
		return &sdk.Verdict{Ruling: sdk.Review, Reasons: []string{c.Baseline.Version + "→" + c.Candidate.Version},
			Metrics: map[string]float64{"fidelity": c.Fidelity}}, nil
	}}
	sdktest.Check(t, g)
	v, err := sdktest.Wire(g).Check(context.Background(), &sdk.Comparison{
		Baseline: sdk.StrategyRef{Version: "1.0.0"}, Candidate: sdk.StrategyRef{Version: "1.1.0"}, Fidelity: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if v.Ruling != sdk.Review || v.Reasons[0] != "1.0.0→1.1.0" || v.Metrics["fidelity"] != 0.5 {
		t.Fatalf("got %+v", v)
	}
}

func TestWireErrors(t *testing.T) {
	tests := []struct {
		name    string
		fn      func(*sdk.Comparison) (*sdk.Verdict, error)
		want    string
		is      error
		retry   time.Duration
		problem int
	}{
		{"plain error becomes internal", func(*sdk.Comparison) (*sdk.Verdict, error) { return nil, errors.New("boom") },
			`plugin "t": boom`, sdk.ErrInternal, 0, 0},
		{"typed error keeps its code", func(*sdk.Comparison) (*sdk.Verdict, error) {
			return nil, &sdk.Error{Code: sdk.CodeRateLimited, Message: "slow down", RetryAfter: 20 * time.Second}
		}, `plugin "t": slow down (retry-after 20s)`, sdk.ErrRateLimited, 20 * time.Second, 0},
		{"wrapped typed error keeps its code", func(*sdk.Comparison) (*sdk.Verdict, error) {
			return nil, errors.Join(errors.New("context"), sdk.Errorf(sdk.CodeAuth, "bad key"))
		}, `plugin "t": bad key`, sdk.ErrAuth, 0, 0},
		{"validation problems survive", func(*sdk.Comparison) (*sdk.Verdict, error) {
			return nil, sdk.Invalid(sdk.Problem{File: "r.bpmn", Line: 3, Element: "gw", Message: "no way out"},
				sdk.Problem{File: "r.bpmn", Line: 9, Message: "second"})
		}, "r.bpmn:3: gw: no way out\nr.bpmn:9: second", sdk.ErrInvalid, 0, 2},
		{"panic is recovered and named", func(*sdk.Comparison) (*sdk.Verdict, error) { panic("kaboom") },
			`plugin "t": panicked: kaboom`, sdk.ErrInternal, 0, 0},
		{"nil result", func(*sdk.Comparison) (*sdk.Verdict, error) { return nil, nil },
			`plugin "t": gate.check returned neither a result nor an error`, sdk.ErrInternal, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sdktest.Wire(gate{name: "t", fn: tc.fn}).Check(context.Background(), &sdk.Comparison{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tc.is)
			}
			var e *sdk.Error
			if !errors.As(err, &e) || e.RetryAfter != tc.retry || len(e.Problems) != tc.problem {
				t.Fatalf("got %#v", e)
			}
		})
	}
}

func TestHandleMalformed(t *testing.T) {
	h := sdk.Serve(gate{name: "t"})
	tests := []struct{ req, want string }{
		{`{not json`, "malformed request"},
		{`{"api":2,"method":"describe"}`, "api version 2, plugin speaks 1"},
		{`{"api":1,"method":"gate.check","params":{"fidelity":"high"}}`, "gate.check: malformed params"},
		{`{"api":1,"method":"provider.chat"}`, `gate plugin "t" does not answer "provider.chat"`},
	}
	for _, tc := range tests {
		var out any
		err := sdk.DecodeResponse(h.Handle(context.Background(), []byte(tc.req)), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.req, err, tc.want)
		}
	}
}

func TestDecodeResponseMalformed(t *testing.T) {
	var out sdk.Verdict
	for _, in := range []string{``, `{}`, `[1]`, `{"result":"x"}`} {
		if err := sdk.DecodeResponse([]byte(in), &out); err == nil {
			t.Errorf("DecodeResponse(%q) = nil, want an error", in)
		}
	}
}

func TestRegisterRefuses(t *testing.T) {
	tests := []struct {
		name string
		p    sdk.Plugin
		want string
	}{
		{"bad name", gate{name: "Bad Name"}, `invalid plugin name "Bad Name"`},
		{"wrong interface", notAGate{}, `plugin "liar": describes itself as a gate but does not implement sdk.Gate`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Fatalf("panic = %v, want %q", r, tc.want)
				}
			}()
			sdk.Register(tc.p)
		})
	}
	// A name of its own each time the test runs (-count): the registry
	// is the process's.
	name := fmt.Sprintf("dup-test-%d", dupTests.Add(1))
	sdk.Register(gate{name: name})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), fmt.Sprintf("plugin %q registered twice", name)) {
			t.Fatalf("panic = %v", r)
		}
	}()
	sdk.Register(gate{name: name})
}

var dupTests atomic.Int64

type notAGate struct{}

func (notAGate) Describe() sdk.Info {
	return sdk.Info{Name: "liar", Kind: sdk.KindGate, Version: "1.0.0", API: sdk.APIVersion}
}

func TestDecisionApply(t *testing.T) {
	s := sdk.State{Routine: "h", Seq: 2, Tokens: []sdk.Token{{ID: "t1", Node: "a"}, {ID: "t2", Node: "b"}},
		Env: sdk.Env{Vars: map[string]any{"x": 1.0}}}
	d := &sdk.Decision{Remove: []string{"t1"}, Add: []sdk.Token{{ID: "t2", Node: "c"}, {ID: "t3", Node: "d"}},
		Seq: 3, Set: map[string]any{"y": 2.0}, Data: map[string]any{"k": "v"}}
	got := d.Apply(s)
	if len(got.Tokens) != 2 || got.Tokens[0].Node != "c" || got.Tokens[1].ID != "t3" {
		t.Fatalf("tokens = %+v", got.Tokens)
	}
	if got.Seq != 3 || got.Env.Vars["x"] != 1.0 || got.Env.Vars["y"] != 2.0 || got.Data["k"] != "v" {
		t.Fatalf("state = %+v", got)
	}
	if _, ok := s.Env.Vars["y"]; ok || s.Tokens[1].Node != "b" {
		t.Fatalf("Apply changed its input: %+v", s)
	}
}

// A plugin must answer envelopes in any key order and spacing (other
// languages' hosts and tests write them), not just the exact shape
// EncodeRequest writes and the fast path slices.
func TestHandleAnyKeyOrder(t *testing.T) {
	h := sdk.Serve(gate{name: "t", fn: func(c *sdk.Comparison) (*sdk.Verdict, error) {
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{c.Candidate.Version}}, nil
	}})
	fast, err := sdk.EncodeRequest(sdk.MethodCheck, &sdk.Comparison{Candidate: sdk.StrategyRef{Version: "2.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	want := string(h.Handle(context.Background(), fast))
	for _, req := range []string{
		`{"method":"gate.check","params":{"candidate":{"name":"","version":"2.0.0","hash":""}},"api":1}`,
		`{ "api": 1, "method": "gate.check", "params": {"candidate": {"version": "2.0.0"}} }`,
		`{"api":1,"method":"gate\u002echeck","params":{"candidate":{"version":"2.0.0"}}}`,
	} {
		if got := string(h.Handle(context.Background(), []byte(req))); got != want {
			t.Errorf("%s:\n got  %s\n want %s", req, got, want)
		}
	}
	var v sdk.Verdict
	if err := sdk.DecodeResponse([]byte(` {"result": {"ruling": "pass"}} `), &v); err != nil || v.Ruling != sdk.Pass {
		t.Fatalf("spaced response: %v %+v", err, v)
	}
}
