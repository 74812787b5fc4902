package sdk

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
)

// skipCases are encoded maps (and a few values that are no map), valid
// and not, for comparing skipMap with anyMap.
func skipCases(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	enc := func(v any) []byte {
		e := encoder{}
		e.any(v)
		if e.err != nil {
			t.Fatalf("encode %v: %v", v, e.err)
		}
		return e.b
	}
	out = append(out, enc(tricky()), enc(map[string]any{}), enc(map[string]any(nil)),
		enc(map[string]any{"a": []any{1.0, "x", nil, true, map[string]any{"b": -0.5}}}))
	deep := any("leaf")
	for range maxDepth + 2 {
		deep = map[string]any{"d": deep}
	}
	out = append(out, enc(deep))
	out = append(out,
		[]byte{0x81, 0xa1, 'k', 0xc4, 0x01, 'x'},                    // bin: skip would pass it, any does not
		[]byte{0x81, 0x01, 0x02},                                    // an integer key
		[]byte{0x81, 0xa1, 'k', 0xc1},                               // never used
		[]byte{0x81, 0xa1, 'k', 0xd4, 0x01, 0x02},                   // fixext
		[]byte{0x82, 0xa1, 'k', 0x01},                               // truncated
		[]byte{0x81, 0xa1, 'k', 0x91, 0xc4, 0x00},                   // bin in an array
		[]byte{0x81, 0xa2, 'k', 0xff, 0x92, 0x01, 0xc1},             // bad element under an invalid-UTF-8 key
		[]byte{0x81, 0xa1, 'k', 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0}, // NaN
		[]byte{0x92, 0x01, 0x02},                                    // an array, not a map
		[]byte{0xa1, 'x'},                                           // a string
		[]byte{0xc0},                                                // nil
		[]byte{},                                                    // nothing
	)
	f := enc(map[string]any{"n": math.MaxFloat64, "s": strings.Repeat("é", 100)})
	out = append(out, f, f[:len(f)-3])
	return out
}

// TestSkipMapAgrees: passing over a map (a Navigator that never reads
// Outcome.Output) accepts exactly what decoding it accepts, with the same
// error and to the same offset.
func TestSkipMapAgrees(t *testing.T) {
	for i, b := range skipCases(t) {
		d1 := decoder{b: b}
		_, err1 := d1.anyMap()
		d2 := decoder{b: b, noOutput: true}
		m, err2 := d2.skippableMap()
		if m != nil {
			t.Errorf("case %d: skipped map built %v", i, m)
		}
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Errorf("case %d (% x): decode says %v, skip says %v", i, b, err1, err2)
			continue
		}
		if err1 == nil && (d1.off != d2.off || d1.depth != d2.depth) {
			t.Errorf("case %d: decode stopped at %d (depth %d), skip at %d (depth %d)", i, d1.off, d1.depth, d2.off, d2.depth)
		}
	}
}

// blindNav is sawNav that never reads Outcome.Output (OutputBlind), and
// notes the output it was given.
type blindNav struct {
	sawNav
	blind bool
	got   *map[string]any
}

func (b blindNav) OutputBlind() bool { return b.blind }

func (b blindNav) Next(ctx context.Context, r *NextRequest) (*Decision, error) {
	*b.got = r.Outcome.Output
	r.Outcome.Output = nil // the answer must not depend on it
	return b.sawNav.Next(ctx, r)
}

// TestOutputBlind: an OutputBlind Navigator is handed no output over api
// 2, answers as when it is given the output, and a malformed output is
// refused all the same; one that answers false still gets it.
func TestOutputBlind(t *testing.T) {
	ctx := context.Background()
	out := map[string]any{"text": "hello", "n": 2.0}
	req := &NextRequest{State: State{Routine: "r", Tokens: []Token{{ID: "t1", Node: "a", Status: Ready}}}, Token: "t1",
		Outcome: Outcome{Status: OK, Output: out}}
	var answers [2]Decision
	for i, blind := range []bool{false, true} {
		var got map[string]any
		h := Serve(blindNav{blind: blind, got: &got})
		for _, s := range []*scratch{{}, {nav: &navReqs{}, in: &interner{}}} {
			data, err := encodeRequest2(MethodNext, req, (*encoder).encNextRequest)
			if err != nil {
				t.Fatal(err)
			}
			got = nil
			a := h.(*handler).handle2(ctx, data, s)
			if blind != (got == nil) {
				t.Fatalf("blind %v: Next got output %v", blind, got)
			}
			if err := decodeResponse2(a, &answers[i], (*decoder).decDecision); err != nil {
				t.Fatal(err)
			}
			if i == 1 && !reflect.DeepEqual(answers[0], answers[1]) { // maps encode in no fixed order: compare decoded
				t.Fatalf("answers differ: %+v, %+v", answers[0], answers[1])
			}
			// A bin inside the output: decoding refuses it, so must skipping.
			bad := append([]byte(nil), data...)
			k := strings.Index(string(bad), "\xa5hello")
			if k < 0 {
				t.Fatalf("no output in % x", data)
			}
			copy(bad[k:], "\xc4\x04hell") // as long as the string it replaces
			if e := string(h.(*handler).handle2(ctx, bad, s)); !strings.Contains(e, `outcome.output["text"]: want a JSON value`) {
				t.Fatalf("blind %v: a bad output answered %q", blind, e)
			}
		}
	}
}

// recRT records the requests it passes to its handler.
type recRT struct {
	h    Handler
	reqs [][]byte
}

func (r *recRT) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	r.reqs = append(r.reqs, append([]byte(nil), req...))
	return r.h.Handle(ctx, req), nil
}

// TestOutputBlindOmitted: an OutputBlind Navigator says so in its Describe
// answer, and a client then sends no output (bound or whole, api 1 or 2)
// without touching the caller's request; for one that is not, it does.
func TestOutputBlindOmitted(t *testing.T) {
	ctx := context.Background()
	for _, blind := range []bool{false, true} {
		var got map[string]any
		rt := &recRT{h: Serve(blindNav{blind: blind, got: &got})}
		info, err := DescribeOver(ctx, "saw", rt)
		if err != nil {
			t.Fatal(err)
		}
		if info.OutputBlind != blind {
			t.Fatalf("blind %v: Describe says OutputBlind %v", blind, info.OutputBlind)
		}
		for _, c := range []struct{ bind, api2 bool }{{true, true}, {false, true}, {true, false}, {false, false}} {
			cl := NewClient("saw", rt, info)
			cl.info.Bind, cl.api2 = c.bind, c.api2
			out := map[string]any{"text": "marker-output"}
			req := &NextRequest{State: State{Routine: "r", Tokens: []Token{{ID: "t1", Node: "a", Status: Ready}}}, Token: "t1",
				Outcome: Outcome{Status: OK, Output: out}}
			rt.reqs = nil
			if _, err := cl.Next(ctx, req); err != nil {
				t.Fatal(err)
			}
			sent := bytes.Contains(rt.reqs[len(rt.reqs)-1], []byte("marker-output"))
			if sent == blind || req.Outcome.Output["text"] != "marker-output" {
				t.Fatalf("blind %v, %+v: output sent %v, request's output now %v", blind, c, sent, req.Outcome.Output)
			}
			if blind != (got == nil) {
				t.Fatalf("blind %v, %+v: Next got output %v", blind, c, got)
			}
		}
	}
}
