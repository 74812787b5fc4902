package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// echoNav answers every navigator call with a Decision that carries back
// what it received, so that a test sees the request as the plugin decoded it.
type echoNav struct{ fail error }

func (echoNav) Describe() sdk.Info {
	return sdk.Info{Name: "echo-nav", Kind: sdk.KindNavigator, Version: "1.0.0", API: sdk.APIVersion}
}
func (echoNav) Load(context.Context, *sdk.LoadRequest) (*sdk.Routine, error) {
	return &sdk.Routine{}, nil
}
func (echoNav) IO(context.Context, *sdk.IORequest) (*sdk.NodeIO, error) { return &sdk.NodeIO{}, nil }
func (n echoNav) Start(_ context.Context, r *sdk.StartRequest) (*sdk.Decision, error) {
	if n.fail != nil {
		return nil, n.fail
	}
	return &sdk.Decision{Add: r.State.Tokens, Seq: r.State.Seq + 1, Data: r.State.Env.Vars, Set: r.State.Env.Input}, nil
}
func (n echoNav) Next(_ context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	if n.fail != nil {
		return nil, n.fail
	}
	return &sdk.Decision{Remove: []string{r.Token}, Add: r.State.Tokens, Data: r.State.Env.Vars, Set: r.Outcome.Output,
		Waiting: r.Outcome.Flows, Trace: []sdk.Event{{Type: sdk.Exit, Node: string(r.Outcome.Status)}}}, nil
}
func (n echoNav) Boundary(_ context.Context, r *sdk.BoundaryRequest) (*sdk.Decision, error) {
	if n.fail != nil {
		return nil, n.fail
	}
	return &sdk.Decision{Set: r.Payload, Choice: &sdk.Choice{Token: r.Token, Node: r.Event, Flows: []sdk.Flow{}}}, nil
}

// TestAPI2Negotiated: a plugin served by this SDK lists api 2 in its
// Describe answer; a plugin's own Describe does not.
func TestAPI2Negotiated(t *testing.T) {
	info, err := sdk.DescribeOver(context.Background(), "echo-nav", loop(echoNav{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{sdk.APIVersion, sdk.APIBinary}; !reflect.DeepEqual(info.APIs, want) || info.API != 1 {
		t.Fatalf("api %d, apis %v; want 1, %v", info.API, info.APIs, want)
	}
	if (echoNav{}).Describe().APIs != nil {
		t.Fatal("Describe itself lists apis")
	}
}

type loopRT struct {
	h     sdk.Handler
	first []byte // the first byte of every request seen
}

func (l *loopRT) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	l.first = append(l.first, req[0])
	return l.h.Handle(ctx, req), nil
}

func loop(p sdk.Plugin) *loopRT { return &loopRT{h: sdk.Serve(p)} }

// TestAPI1AndAPI2Agree: the same calls over api 1 and api 2 give the host
// the same results and the same errors, and api 2 is what travels when
// the plugin lists it.
func TestAPI1AndAPI2Agree(t *testing.T) {
	ctx := context.Background()
	vars := map[string]any{"amount": 500, "urls": []string{"a", "b"}, "when": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		"nested": map[string]any{"x": []any{1, "two", nil, true}}, "bad": "\xff", "empty": map[string]any{}}
	st := sdk.State{Routine: "h", Seq: 3, Tokens: []sdk.Token{{ID: "t1", Node: "a", Status: sdk.Ready, Attrs: map[string]any{"loopCounter": 2}}},
		Env: sdk.Env{Input: map[string]any{"q": "why?"}, Vars: vars}}
	calls := func(n sdk.Navigator) []any {
		var out []any
		d, err := n.Start(ctx, &sdk.StartRequest{State: st})
		out = append(out, d, errText(err))
		d, err = n.Next(ctx, &sdk.NextRequest{State: st, Token: "t1", Outcome: sdk.Outcome{Status: sdk.Failed, Output: vars, Flows: []string{"f"}}})
		out = append(out, d, errText(err))
		d, err = n.Boundary(ctx, &sdk.BoundaryRequest{State: st, Token: "t1", Event: "ev", Payload: vars})
		out = append(out, d, errText(err))
		return out
	}
	for _, nav := range []echoNav{{}, {fail: &sdk.Error{Code: sdk.CodeRateLimited, Message: "slow", RetryAfter: time.Second}},
		{fail: sdk.Invalid(sdk.Problem{File: "r.bpmn", Line: 3, Element: "gw", Message: "no way out"})}, {fail: errors.New("boom")}} {
		rt := loop(nav)
		info, err := sdk.DescribeOver(ctx, "echo-nav", rt)
		if err != nil {
			t.Fatal(err)
		}
		info.Bind = false // whole requests: the bound ones are compared in TestNavigatorParity
		two := sdk.NewClient("echo-nav", rt, info)
		rt.first = nil
		got2 := calls(two)
		if string(rt.first) != "\x83\x83\x83" {
			t.Fatalf("api 2 client sent envelopes starting % x, want MessagePack maps", rt.first)
		}
		info.APIs = nil
		one, err := sdk.NewKindClient("echo-nav", rt, info, sdk.KindNavigator)
		if err != nil {
			t.Fatal(err)
		}
		rt.first = nil
		got1 := calls(one.(sdk.Navigator))
		if string(rt.first) != "{{{" {
			t.Fatalf("api 1 client sent % x", rt.first)
		}
		if !reflect.DeepEqual(got1, got2) {
			a, _ := json.Marshal(got1)
			b, _ := json.Marshal(got2)
			t.Fatalf("api 1 and api 2 differ\n api 1 %s\n api 2 %s", a, b)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var e *sdk.Error
	if errors.As(err, &e) {
		return err.Error() + " code=" + string(e.Code) + " retry=" + e.RetryAfter.String()
	}
	return err.Error()
}

// TestAPI2Faults: what a broken plugin or host sends in api 2 is answered
// or reported as an error that names the plugin and the byte, never a
// panic.
func TestAPI2Faults(t *testing.T) {
	ctx := context.Background()
	h := sdk.Serve(echoNav{})
	for _, tc := range []struct{ name, req, want string }{
		{"garbage", "\x8f\xc1", "malformed request: at byte 0: length 15 is more than the 1 bytes left"},
		{"wrong api", "\x83\xa3api\x01\xa6method\xaenavigator.next\xa6params\x80", "api version 1 in a MessagePack envelope, plugin speaks 2 there"},
		{"load is api 1 only", "\x83\xa3api\x02\xa6method\xaenavigator.load\xa6params\x80", `navigator plugin "echo-nav" does not answer "navigator.load" in api 2 (send it as api 1 JSON)`},
		{"bad params", "\x83\xa3api\x02\xa6method\xaenavigator.next\xa6params\x81\xa5token\x01", "navigator.next: malformed params: at byte 42: params.token: want a string, got an integer"},
		{"trailing", "\x82\xa3api\x02\xa6method\xaenavigator.next\x00", "malformed request: at byte 28: 1 bytes after the envelope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(ctx, []byte(tc.req))
			_, err := sdk.NewClient("echo-nav", fixed(resp), sdk.Info{Kind: sdk.KindNavigator, APIs: []int{1, 2}}).Next(ctx, &sdk.NextRequest{})
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant suffix %s", err, tc.want)
			}
		})
	}
	// A plugin that answers garbage: the host says so, naming the plugin.
	for _, tc := range []struct{ name, resp, want string }{
		{"empty", "", `plugin "echo-nav": navigator.next: malformed response (): at byte 0: message truncated (0 bytes)`},
		{"json", `{"result":{}}`, `plugin "echo-nav": navigator.next: malformed response (7b 22 72 65 73 75 6c 74 22 3a 7b 7d 7d): at byte 0: want a map, got an integer`},
		{"truncated", "\x81\xa6result\x81\xa3seq", `plugin "echo-nav": navigator.next: malformed result (81 a6 72 65 73 75 6c 74 81 a3 73 65 71): at byte 13: result.seq: message truncated (13 bytes)`},
		{"wrong key", "\x81\xa3res\x80", `plugin "echo-nav": navigator.next: malformed response (81 a3 72 65 73 80): at byte 2: want result or error, got "res"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sdk.NewClient("echo-nav", fixed(tc.resp), sdk.Info{Kind: sdk.KindNavigator, APIs: []int{1, 2}}).Next(ctx, &sdk.NextRequest{})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant  %s", err, tc.want)
			}
		})
	}
}

type fixed string

func (f fixed) RoundTrip(context.Context, []byte) ([]byte, error) { return []byte(f), nil }

// TestWireAPI1 keeps sdktest's api 1 path honest: a gate answers the same
// over both.
func TestWireAPI1(t *testing.T) {
	g := gate{name: "t", fn: func(c *sdk.Comparison) (*sdk.Verdict, error) {
		return &sdk.Verdict{Ruling: sdk.Pass, Metrics: map[string]float64{"f": c.Fidelity}}, nil
	}}
	c := &sdk.Comparison{Fidelity: 0.25, Config: map[string]any{"n": 1}}
	a, err1 := sdktest.Wire(g).Check(context.Background(), c)
	b, err2 := sdktest.WireAPI1(g).Check(context.Background(), c)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("api 2 %+v %v, api 1 %+v %v", a, err1, b, err2)
	}
}
