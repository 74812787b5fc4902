package sdk

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
)

// sawNav answers with a Decision that carries back what it received.
type sawNav struct{}

func (sawNav) Describe() Info {
	return Info{Name: "saw", Kind: KindNavigator, Version: "1.0.0", API: APIVersion, Bind: true}
}
func (sawNav) Load(context.Context, *LoadRequest) (*Routine, error) { return &Routine{}, nil }
func (sawNav) IO(context.Context, *IORequest) (*NodeIO, error)      { return &NodeIO{}, nil }
func (sawNav) Start(_ context.Context, r *StartRequest) (*Decision, error) {
	return &Decision{Add: r.State.Tokens, Seq: r.State.Seq, Data: r.State.Env.Input, Set: r.State.Env.Vars,
		Waiting: []string{r.Trigger}}, nil
}
func (sawNav) Next(_ context.Context, r *NextRequest) (*Decision, error) {
	return &Decision{Remove: []string{r.Token}, Add: r.State.Tokens, Seq: r.State.Seq, Set: r.Outcome.Output,
		Data:    map[string]any{"data": r.State.Data, "vars": r.State.Env.Vars, "input": r.State.Env.Input},
		Waiting: append(r.Outcome.Flows, r.Outcome.Error), Trace: []Event{{Type: EventType(r.Outcome.Status), Node: r.State.Routine}}}, nil
}
func (sawNav) Boundary(_ context.Context, r *BoundaryRequest) (*Decision, error) {
	return &Decision{Remove: []string{r.Token, r.Event}, Set: r.Payload, Add: r.State.Tokens}, nil
}

// keptRT answers as the wasm guest does: every call decoded with the same
// scratch, its navigator requests reused, a binding's vars updated in
// place.
type keptRT struct {
	h *handler
	s scratch
}

func (k *keptRT) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	if len(req) > 0 && isMap2(req[0]) {
		return bytes.Clone(k.h.handle2(ctx, req, &k.s)), nil
	}
	return k.h.Handle(ctx, req), nil
}

// TestKeptScratchAgrees: a plugin that decodes every call into the same
// request structs and updates a binding's vars in place (the wasm guest)
// answers a sequence of calls, each leaving fields the next one lacks and
// changing the vars, exactly as one that decodes each into fresh structs
// and replaces the vars.
func TestKeptScratchAgrees(t *testing.T) {
	ctx := context.Background()
	kept := &keptRT{h: Serve(sawNav{}).(*handler), s: scratch{nav: &navReqs{}, in: &interner{}}}
	kept.h.binds.inPlace = true
	fresh := Serve(sawNav{})
	info, err := DescribeOver(ctx, "saw", kept)
	if err != nil {
		t.Fatal(err)
	}
	var clients [2]*Client
	for i, rt := range []RoundTripper{kept, loopRT{fresh}} {
		clients[i] = NewClient("saw", rt, info)
	}
	strategy := map[string]any{"k": "v"}
	full := State{Routine: "r1", Seq: 9, Data: map[string]any{"d": 1.0},
		Tokens: []Token{{ID: "t1", Node: "a", Status: Ready, Attrs: map[string]any{"x": "y"}}, {ID: "t2", Node: "b", Status: Waiting, Triggers: []string{"e"}}},
		Env:    Env{Input: map[string]any{"in": "put"}, Vars: map[string]any{"v": 1.0}, Strategy: strategy}}
	bare := State{Routine: "r1", Env: Env{Strategy: strategy}}
	more := full
	more.Env.Vars = map[string]any{"v": 2.0, "w": "three", "x": map[string]any{"y": []any{"z"}}}
	fewer := full
	fewer.Env.Vars = map[string]any{"w": "three"}
	// other's one token has none of the fields full's first had: a kept
	// tokens array must not show them again.
	other := more
	other.Tokens = []Token{{ID: "t9", Node: "z", Status: Ready}}
	calls := []func(c *Client) (*Decision, error){
		func(c *Client) (*Decision, error) { return c.Start(ctx, &StartRequest{State: full, Trigger: "go"}) },
		func(c *Client) (*Decision, error) { return c.Start(ctx, &StartRequest{State: bare}) },
		func(c *Client) (*Decision, error) {
			return c.Next(ctx, &NextRequest{State: full, Token: "t1", Outcome: Outcome{Status: Failed, Error: "boom", Output: map[string]any{"o": true}, Flows: []string{"f"}}})
		},
		func(c *Client) (*Decision, error) {
			return c.Next(ctx, &NextRequest{State: more, Token: "t1", Outcome: Outcome{Status: OK}})
		},
		func(c *Client) (*Decision, error) {
			return c.Next(ctx, &NextRequest{State: fewer, Token: "t1", Outcome: Outcome{Status: Skipped}})
		},
		func(c *Client) (*Decision, error) {
			return c.Next(ctx, &NextRequest{State: more, Token: "t1", Outcome: Outcome{Status: OK}})
		},
		func(c *Client) (*Decision, error) {
			return c.Next(ctx, &NextRequest{State: other, Token: "t9", Outcome: Outcome{Status: OK}})
		},
		func(c *Client) (*Decision, error) {
			return c.Next(ctx, &NextRequest{State: bare, Token: "t2", Outcome: Outcome{Status: OK}})
		},
		func(c *Client) (*Decision, error) {
			return c.Boundary(ctx, &BoundaryRequest{State: full, Token: "t2", Event: "e", Payload: map[string]any{"p": "q"}})
		},
		func(c *Client) (*Decision, error) {
			return c.Boundary(ctx, &BoundaryRequest{State: bare, Token: "t3", Event: "f"})
		},
	}
	for _, bind := range []bool{true, false} {
		for i, call := range calls {
			var got [2]*Decision
			for k, c := range clients {
				c.info.Bind = bind
				d, err := call(c)
				if err != nil {
					t.Fatalf("bind %v, call %d: %v", bind, i, err)
				}
				got[k] = d
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("bind %v, call %d: kept scratch answered %+v, fresh %+v", bind, i, got[0], got[1])
			}
		}
	}
}

type loopRT struct{ h Handler }

func (l loopRT) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	return l.h.Handle(ctx, req), nil
}

// echoChat answers a chat with the last message's content.
type echoChat struct{}

func (echoChat) Describe() Info {
	return Info{Name: "echo", Kind: KindProvider, Version: "1.0.0", API: APIVersion}
}
func (echoChat) Chat(_ context.Context, r *ChatRequest) (*ChatResponse, error) {
	return &ChatResponse{Text: r.Messages[len(r.Messages)-1].Content, Model: r.Model}, nil
}

// appendRT answers as the wasm transport does, appending each answer to
// the caller's buffer, and then scribbles over the request it was given,
// which the client must no longer need.
type appendRT struct {
	h       Handler
	appends int
}

func (a *appendRT) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	defer clear(req)
	return a.h.Handle(ctx, req), nil
}

func (a *appendRT) RoundTripAppend(ctx context.Context, req, dst []byte) ([]byte, error) {
	defer clear(req)
	a.appends++
	return append(dst, a.h.Handle(ctx, req)...), nil
}

// TestPooledBuffers: a client that encodes each request into a pooled
// buffer and decodes each answer out of another returns results that
// stay intact across later calls.
func TestPooledBuffers(t *testing.T) {
	ctx := context.Background()
	rt := &appendRT{h: Serve(echoChat{})}
	info, err := DescribeOver(ctx, "echo", rt)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient("echo", rt, info)
	var got []*ChatResponse
	for i := range 20 {
		text := string(bytes.Repeat([]byte{'a' + byte(i)}, 100*i+1))
		r, err := c.Chat(ctx, &ChatRequest{Model: "m" + text[:1], Messages: []Message{{Role: "user", Content: text}}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	for i, r := range got {
		text := string(bytes.Repeat([]byte{'a' + byte(i)}, 100*i+1))
		if r.Text != text || r.Model != "m"+text[:1] {
			t.Fatalf("answer %d became %q (%q)", i, r.Text[:min(len(r.Text), 10)], r.Model)
		}
	}
	if rt.appends != 20 {
		t.Fatalf("%d calls through RoundTripAppend, want 20", rt.appends)
	}
}

// envelopeError is what dispatch2 reported for a malformed envelope when
// it skipped the params before decoding them: the reference the single
// walk must keep to ("" when the envelope itself is well-formed).
func envelopeError(request []byte) string {
	d := &decoder{b: request}
	n, null, err := d.mapHeader()
	if err == nil && null {
		err = d.errorf("want a map, got nil")
	}
	if err != nil {
		return Errorf(CodeBadRequest, "malformed request: %v", err).Error()
	}
	api := int64(-1)
	for range n {
		key, err := d.key()
		if err != nil {
			return Errorf(CodeBadRequest, "malformed request: %v", err).Error()
		}
		switch string(key) {
		case "api":
			api, err = d.int64()
		case "method":
			_, err = d.method()
		default:
			err = d.skip()
		}
		if err != nil {
			return Errorf(CodeBadRequest, "malformed request: %v", err).Error()
		}
	}
	if d.off != len(request) {
		return Errorf(CodeBadRequest, "malformed request: %v", d.errorf("%d bytes after the envelope", len(request)-d.off)).Error()
	}
	if api != APIBinary {
		return Errorf(CodeBadRequest, "api version %d in a MessagePack envelope, plugin speaks %d there", api, APIBinary).Error()
	}
	return ""
}

// TestParamsWalkedOnce: dispatch2 decodes a last params field without
// skipping it first, yet every truncation, corruption or extension of a
// request reports the envelope's error exactly as when it skipped first.
func TestParamsWalkedOnce(t *testing.T) {
	ctx := context.Background()
	h := Serve(sawNav{}).(*handler)
	if _, err := h.binds.bind(ctx, &BindRequest{Binding: "b", Routine: "r"}); err != nil {
		t.Fatal(err)
	}
	valid, err := encodeRequest2(MethodBoundNext, &BoundNextRequest{State: BoundState{Binding: "b", Version: 1,
		Set: map[string]any{"v": []any{1.0, "x"}}, Tokens: []Token{{ID: "t1", Node: "a", Status: Ready, Triggers: []string{"e"}}}},
		Token: "t1", Outcome: Outcome{Status: OK, Output: map[string]any{"o": map[string]any{"p": nil}}}}, (*encoder).encBoundNextRequest)
	if err != nil {
		t.Fatal(err)
	}
	var cases [][]byte
	for i := range valid {
		cases = append(cases, valid[:i])
		for _, c := range []byte{0x00, 0xc0, 0xc1, 0xdd, 0xff, valid[i] ^ 0x10} {
			b := bytes.Clone(valid)
			b[i] = c
			cases = append(cases, b)
		}
	}
	cases = append(cases, valid, append(bytes.Clone(valid), 0xc0), append(bytes.Clone(valid), 0x81, 0xa1))
	checked := 0
	for _, req := range cases {
		s := &scratch{nav: &navReqs{}, in: &interner{}}
		got := h.handle2(ctx, req, s)
		want := envelopeError(req)
		if want == "" {
			continue
		}
		checked++
		var e Error
		d := decoder{b: got}
		if n, _, _ := d.mapHeader(); n != 1 {
			t.Fatalf("% x: answer % x", req, got)
		}
		if k, _ := d.key(); string(k) != "error" {
			t.Fatalf("% x: answered %q where the envelope is malformed (%s)", req, k, want)
		}
		if err := d.decError(&e); err != nil {
			t.Fatal(err)
		}
		if e.Error() != want {
			t.Errorf("% x:\n got %s\nwant %s", req, e.Error(), want)
		}
	}
	if checked < len(valid) {
		t.Fatalf("only %d malformed envelopes checked", checked)
	}
}

// TestBoundDecodeErrorKeepsVars: a bound call that fails to decode after
// its set (the kept scratch takes set as a list for the binding) changes
// nothing: the binding keeps its variables and its version.
func TestBoundDecodeErrorKeepsVars(t *testing.T) {
	ctx := context.Background()
	for _, kept := range []bool{true, false} {
		k := &keptRT{h: Serve(sawNav{}).(*handler)}
		if kept {
			k.s = scratch{nav: &navReqs{}, in: &interner{}}
			k.h.binds.inPlace = true
		}
		call := func(method string, bs BoundState, want string) *Decision {
			t.Helper()
			data, err := encodeRequest2(method, &BoundNextRequest{State: bs, Token: "t1", Outcome: Outcome{Status: OK}}, (*encoder).encBoundNextRequest)
			if err != nil {
				t.Fatal(err)
			}
			if want != "" { // a bin where the token's id is
				i := bytes.Index(data, []byte("\xa4XXXX"))
				copy(data[i:], "\xc4\x03XXX")
			}
			var d Decision
			resp, _ := k.RoundTrip(ctx, data)
			err = decodeResponse2(resp, &d, (*decoder).decDecision)
			if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Fatalf("kept %v: %s answered %+v, %v (want %q)", kept, method, d, err, want)
			}
			return &d
		}
		if _, err := k.h.binds.bind(ctx, &BindRequest{Binding: "b", Routine: "r"}); err != nil {
			t.Fatal(err)
		}
		call(MethodBoundNext, BoundState{Binding: "b", Version: 1, Set: map[string]any{"v": 1.0, "w": "x"}}, "")
		call(MethodBoundNext, BoundState{Binding: "b", Base: 1, Version: 2, Set: map[string]any{"v": 2.0, "new": true},
			Unset: []string{"w"}, Tokens: []Token{{ID: "XXXX", Node: "a", Status: Ready}}}, "tokens[0].id")
		d := call(MethodBoundNext, BoundState{Binding: "b", Base: 1, Version: 3}, "")
		if want := map[string]any{"v": 1.0, "w": "x"}; !reflect.DeepEqual(d.Data["vars"], want) {
			t.Fatalf("kept %v: vars after a failed call %v, want %v", kept, d.Data["vars"], want)
		}
	}
}
