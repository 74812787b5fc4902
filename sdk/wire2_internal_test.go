package sdk

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// roundTrips encodes v in api 1 (JSON) and in api 2 (MessagePack), decodes
// each into a fresh T, and returns both results: what a plugin (or the
// host) receives over either wire.
func roundTrips[T any](t *testing.T, v *T, enc func(*encoder, *T), dec func(*decoder, *T) error) (viaJSON, via2 *T, err1, err2 error) {
	t.Helper()
	viaJSON, via2 = new(T), new(T)
	b, err1 := json.Marshal(v)
	if err1 == nil {
		if err := json.Unmarshal(b, viaJSON); err != nil {
			t.Fatalf("json: %v", err)
		}
	}
	e := encoder{}
	enc(&e, v)
	if err2 = e.err; err2 == nil {
		d := decoder{b: e.b}
		if err := dec(&d, via2); err != nil {
			t.Fatalf("api 2 decode: %v\n% x", err, e.b)
		}
		if d.off != len(e.b) {
			t.Fatalf("api 2 decode stopped at %d of %d bytes", d.off, len(e.b))
		}
	}
	return viaJSON, via2, err1, err2
}

func sameValue[T any](t *testing.T, name string, a, b *T) {
	t.Helper()
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Fatalf("%s: api 1 and api 2 differ\n api 1 %s\n api 2 %s\n%#v\n%#v", name, ja, jb, a, b)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("%s: api 1 and api 2 marshal differently\n api 1 %s\n api 2 %s", name, ja, jb)
	}
}

type stamp struct {
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

// tricky holds generic values whose JSON round trip changes them: Go
// integers become floats, typed slices and maps become []any and
// map[string]any, structs and times go through their JSON form, invalid
// UTF-8 is replaced byte by byte, nil and empty stay apart.
func tricky() map[string]any {
	return map[string]any{
		"int": 500, "int8": int8(-7), "int64": int64(math.MaxInt64), "uint64": uint64(math.MaxUint64),
		"neg": -40000, "float32": float32(0.1), "float": 0.1, "negzero": math.Copysign(0, -1),
		"big": 1e300, "tiny": 5e-324, "str": "héllo \u2028 <b>&</b>", "badutf8": "a\xffb\xc3\x28c\xed\xa0\x80",
		"bool": true, "nil": nil, "strings": []string{"a", "b"}, "nilstrings": []string(nil),
		"empty": []any{}, "emptymap": map[string]any{}, "nilmap": map[string]any(nil),
		"nested": map[string]any{"a": []any{1, 2.5, "x", nil, map[string]any{"deep": []any{[]any{}}}}},
		"smap":   map[string]string{"k": "v"}, "fmap": map[string]float64{"p": 0.25},
		"maps": []map[string]any{{"a": 1}, nil}, "bytes": []byte("raw"), "time": time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC),
		"struct": stamp{At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))}, "ptr": &stamp{Note: "p"},
		"number": json.Number("12.50"), "raw": json.RawMessage(`{"z":[1,{"y":null}]}`), "ints": []int{1, 2},
		"named": Ruling("pass"), "long": strings.Repeat("λ", 40000), "keys\xff": "bad key",
	}
}

func TestAPI2MatchesJSON(t *testing.T) {
	temp := 0.7
	state := State{
		Routine: "3f2a", Seq: 12, Data: map[string]any{"joins": map[string]any{"j1": []any{"t3", "t4"}}},
		Tokens: []Token{
			{ID: "t1", Node: "review", Status: Ready, Attempt: 2, DelayMS: 1500, Attrs: tricky()},
			{ID: "t2", Node: "wait", Status: Waiting, Scope: "t0", Triggers: []string{"timer1", "msg"}, Attrs: map[string]any{}},
			{ID: "t3", Status: Parked},
		},
		Env: Env{Input: map[string]any{"question": "why?"}, Vars: tricky(), Strategy: map[string]any{"parameters": map[string]any{"speed": 0.75}}},
	}
	t.Run("start", func(t *testing.T) {
		for _, v := range []*StartRequest{{}, {State: state, Trigger: "msgStart"}, {State: State{Tokens: []Token{}, Data: map[string]any{}}}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encStartRequest, (*decoder).decStartRequest)
			sameValue(t, "start", a, b)
		}
	})
	t.Run("next", func(t *testing.T) {
		for _, v := range []*NextRequest{{}, {State: state, Token: "t1", Outcome: Outcome{Status: Failed, Error: "E1", Output: tricky(), Flows: []string{"f1"}}},
			{Outcome: Outcome{Flows: []string{}, Output: map[string]any{}}}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encNextRequest, (*decoder).decNextRequest)
			sameValue(t, "next", a, b)
		}
	})
	t.Run("boundary", func(t *testing.T) {
		v := &BoundaryRequest{State: state, Token: "t2", Event: "timer1", Payload: tricky()}
		a, b, _, _ := roundTrips(t, v, (*encoder).encBoundaryRequest, (*decoder).decBoundaryRequest)
		sameValue(t, "boundary", a, b)
	})
	t.Run("decision", func(t *testing.T) {
		for _, v := range []*Decision{{}, {Remove: []string{"t1"}, Add: state.Tokens, Seq: 14, Data: map[string]any{}, Set: tricky(),
			Waiting: []string{"join"}, Choice: &Choice{Token: "t1", Node: "gw", Flows: []Flow{{ID: "f1", Target: "a"}}, Multi: true},
			Complete: true, Fault: &Fault{Node: "end", Code: "E", Message: "uncaught"}, Trace: []Event{{Enter, "a"}, {Exit, "a"}}},
			{Choice: &Choice{}, Fault: &Fault{}}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encDecision, (*decoder).decDecision)
			sameValue(t, "decision", a, b)
		}
	})
	t.Run("chat", func(t *testing.T) {
		zero := 0.0
		for _, v := range []*ChatRequest{{}, {Messages: []Message{}}, {Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "héllo\xff"}},
			Model: "gpt", Temperature: &temp, MaxTokens: 100, Stop: []string{"\n"}, JSON: true, Step: "classify",
			Config: map[string]any{"api_key_credential": "OPENAI_API_KEY", "retries": 3}, Vars: tricky()},
			{Temperature: &zero}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encChatRequest, (*decoder).decChatRequest)
			sameValue(t, "chat", a, b)
		}
		r := &ChatResponse{Text: "ok", Usage: Usage{InputTokens: 12, OutputTokens: 3}, FinishReason: "stop", Model: "gpt"}
		a, b, _, _ := roundTrips(t, r, (*encoder).encChatResponse, (*decoder).decChatResponse)
		sameValue(t, "chat response", a, b)
	})
	t.Run("check", func(t *testing.T) {
		v := &Comparison{Config: tricky(),
			Baseline:  StrategyRef{Name: "s", Version: "1.0.0", Hash: "h", Parameters: map[string]float64{"a": 0.5}, Document: tricky()},
			Candidate: StrategyRef{Name: "s", Version: "1.1.0", Parameters: map[string]float64{}},
			Diff: StrategyDiff{Parameters: []ParameterChange{{"a", 0.5, 0.6}}, Playbook: []PlaybookChange{{Op: "ADD", ID: "r-1", Content: "x"}},
				Constraints: []string{"c"}},
			Metrics: []Metric{{Name: "success_rate", Kind: "binary", Baseline: 0.5, Candidate: 0.75, Effect: 0.25, CILow: -0.1, CIHigh: 0.6,
				Confidence: 0.95, P: 0.03, N: 200, HigherIsBetter: true}},
			Tasks:    []TaskOutcome{{Task: "t", Baseline: TaskResult{Success: true, Reward: 1, Steps: 4}, Candidate: TaskResult{CostUSD: 0.002}}},
			Fidelity: 1}
		a, b, _, _ := roundTrips(t, v, (*encoder).encComparison, (*decoder).decComparison)
		sameValue(t, "comparison", a, b)
		r := &Verdict{Ruling: Fail, Reasons: []string{"regressed"}, Metrics: map[string]float64{"drop": -0.1}}
		ra, rb, _, _ := roundTrips(t, r, (*encoder).encVerdict, (*decoder).decVerdict)
		sameValue(t, "verdict", ra, rb)
	})
	t.Run("tools", func(t *testing.T) {
		yes, no := true, false
		args := json.RawMessage(` {"path": "a.txt", "n": 1.50, "deep": [null, {"é": "\u00e9"}]} `)
		specs := []ToolSpec{{Name: "read_file", Description: "reads a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
			Annotations: &ToolAnnotations{ReadOnly: &yes, Destructive: &no}}, {Name: "bare"}, {Name: "e", Annotations: &ToolAnnotations{}}}
		calls := []ToolCall{{ID: "call_1", Name: "read_file", Arguments: args}, {ID: "call_2", Name: "bare"}, {Name: "x", Arguments: json.RawMessage(`null`)}}
		for _, v := range []*ChatRequest{{Tools: specs, ToolChoice: "read_file", ParallelToolCalls: &no,
			Messages: []Message{{Role: "user", Content: "read a"}, {Role: "assistant", ToolCalls: calls},
				{Role: "tool", ToolCallID: "call_1", Content: "no such file", IsError: true}}}, {Tools: []ToolSpec{}, ParallelToolCalls: &yes}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encChatRequest, (*decoder).decChatRequest)
			sameValue(t, "chat with tools", a, b)
		}
		r := &ChatResponse{ToolCalls: calls, FinishReason: "tool_calls"}
		a, b, _, _ := roundTrips(t, r, (*encoder).encChatResponse, (*decoder).decChatResponse)
		sameValue(t, "chat response with tool calls", a, b)
		if got := string(b.ToolCalls[0].Arguments); got != `{"path":"a.txt","n":1.50,"deep":[null,{"é":"\u00e9"}]}` {
			t.Fatalf("arguments = %s, want the text as written, compacted", got)
		}
		for _, v := range []*ToolCallRequest{{}, {Name: "read_file", Arguments: args, Config: tricky()}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encToolCallRequest, (*decoder).decToolCallRequest)
			sameValue(t, "tool call", a, b)
		}
		for _, v := range []*ToolResult{{}, {Content: "3 lines", Structured: json.RawMessage(`{"lines":3}`), IsError: true}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encToolResult, (*decoder).decToolResult)
			sameValue(t, "tool result", a, b)
		}
		for _, v := range []*ToolList{{}, {Tools: specs}} {
			a, b, _, _ := roundTrips(t, v, (*encoder).encToolList, (*decoder).decToolList)
			sameValue(t, "tool list", a, b)
		}
		bad := &ToolCallRequest{Name: "x", Arguments: json.RawMessage(`{"a":`)}
		if _, _, err1, err2 := roundTrips(t, bad, (*encoder).encToolCallRequest, (*decoder).decToolCallRequest); err1 == nil || err2 == nil {
			t.Fatalf("arguments that are not JSON: json err %v, api 2 err %v; want both to refuse", err1, err2)
		}
	})
	t.Run("error", func(t *testing.T) {
		v := &Error{Code: CodeRateLimited, Message: "slow", RetryAfter: 20 * time.Second,
			Problems: []Problem{{File: "r.bpmn", Line: 3, Column: 7, Element: "gw", Message: "no way out"}}}
		a, b, _, _ := roundTrips(t, v, (*encoder).encError, (*decoder).decError)
		sameValue(t, "error", a, b)
	})
	t.Run("unsupported", func(t *testing.T) {
		for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			v := &ChatRequest{Vars: map[string]any{"x": f}}
			_, _, err1, err2 := roundTrips(t, v, (*encoder).encChatRequest, (*decoder).decChatRequest)
			if err1 == nil || err2 == nil {
				t.Fatalf("%v: json err %v, api 2 err %v; want both to refuse", f, err1, err2)
			}
			v = &ChatRequest{Temperature: &f}
			if _, _, err1, err2 = roundTrips(t, v, (*encoder).encChatRequest, (*decoder).decChatRequest); err1 == nil || err2 == nil {
				t.Fatalf("temperature %v: json err %v, api 2 err %v; want both to refuse", f, err1, err2)
			}
		}
	})
}

// TestAPI2DecodeErrors: a malformed api 2 message is an error that says
// where (byte offset, field path) and what, never a panic or a huge
// allocation.
func TestAPI2DecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "at byte 0: message truncated (0 bytes)"},
		{"not a map", "\x93\x01\x02\x03", "at byte 0: want a map, got an array"},
		{"truncated key", "\x81\xa5sta", "at byte 2: message truncated (5 bytes)"},
		{"wrong type", "\x81\xa5token\x05", "at byte 7: token: want a string, got an integer"},
		{"deep path", "\x81\xa5state\x81\xa6tokens\x91\x81\xa7attempt\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00",
			"at byte 25: state.tokens[0].attempt: want an integer, got the float 1.5"},
		{"attrs key", "\x81\xa5state\x81\xa6tokens\x91\x81\xa5attrs\x81\xa1k\xc1",
			`at byte 26: state.tokens[0].attrs["k"]: want a JSON value (nil, bool, number, string, array, map), got the unused byte 0xc1`},
		{"huge array", "\x81\xa5state\x81\xa6tokens\xdd\xff\xff\xff\xff", "at byte 15: state.tokens: length 4294967295 is more than the 0 bytes left"},
		{"huge string", "\x81\xa5token\xdb\x7f\xff\xff\xff", "at byte 7: token: length 2147483647 is more than the 0 bytes left"},
		{"fixarray too long", "\x81\xa5state\x81\xa6tokens\x9f", "at byte 15: state.tokens: length 15 is more than the 0 bytes left"},
		{"overflow", "\x81\xa5state\x81\xa3seq\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "at byte 12: state.seq: integer 18446744073709551615 overflows int64"},
		{"ext", "\x81\xa3zzz\xd4\x01\x02", "at byte 5: zzz: unexpected an extension (0xd4)"},
		{"nan", "\x81\xa7outcome\x81\xa6output\x81\xa1x\xcb\x7f\xf8\x00\x00\x00\x00\x00\x01", `at byte 20: outcome.output["x"]: unsupported value: NaN`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v NextRequest
			d := decoder{b: []byte(tc.in)}
			err := d.decNextRequest(&v)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant  %s", err, tc.want)
			}
		})
	}
	t.Run("depth", func(t *testing.T) {
		b := append([]byte("\x81\xa7payload\x81\xa1k"), []byte(strings.Repeat("\x91", 20000))...)
		b = append(b, 0xc0)
		var v BoundaryRequest
		d := decoder{b: b}
		if err := d.decBoundaryRequest(&v); err == nil || !strings.Contains(err.Error(), "exceeded max depth 10000") {
			t.Fatalf("err = %v", err)
		}
	})
}

// FuzzAPI2Decode: no input makes the api 2 decoders panic, and what they
// accept re-encodes to a message that decodes to the same value (as json
// sees it).
func FuzzAPI2Decode(f *testing.F) {
	e := encoder{}
	e.encNextRequest(&NextRequest{State: State{Routine: "r", Tokens: []Token{{ID: "t1", Node: "a", Status: Ready, Attrs: map[string]any{"i": 1.0}}},
		Env: Env{Vars: map[string]any{"a": []any{"x", true, nil}}}}, Token: "t1", Outcome: Outcome{Status: OK}})
	f.Add(e.b)
	e = encoder{}
	e.encChatRequest(&ChatRequest{Messages: []Message{{Role: "user", Content: "hi"}}, Vars: map[string]any{"n": 2.5}})
	f.Add(e.b)
	f.Add([]byte("\x81\xa5state\x81\xa6tokens\xdd\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, try := range []func([]byte) (any, []byte, error){
			decodeAgain((*decoder).decNextRequest, (*encoder).encNextRequest),
			decodeAgain((*decoder).decChatRequest, (*encoder).encChatRequest),
			decodeAgain((*decoder).decDecision, (*encoder).encDecision),
			decodeAgain((*decoder).decComparison, (*encoder).encComparison),
		} {
			v, again, err := try(b)
			if err != nil {
				continue
			}
			v2, _, err := try(again)
			if err != nil {
				t.Fatalf("re-encoded value does not decode: %v", err)
			}
			// Empty and nil differ only where json would drop both
			// (omitempty), so compare what json makes of them.
			j1, err1 := json.Marshal(v)
			j2, err2 := json.Marshal(v2)
			if err1 != nil || err2 != nil || string(j1) != string(j2) {
				t.Fatalf("round trip changed the value:\n%s %v\n%s %v", j1, err1, j2, err2)
			}
		}
	})
}

func decodeAgain[T any](dec func(*decoder, *T) error, enc func(*encoder, *T)) func([]byte) (any, []byte, error) {
	return func(b []byte) (any, []byte, error) {
		v := new(T)
		d := decoder{b: b}
		if err := dec(&d, v); err != nil {
			return nil, nil, err
		}
		e := encoder{}
		enc(&e, v)
		return v, e.b, e.err
	}
}

// TestBinary: byte slices travel as MessagePack bin, nil as nil, and a
// reader takes bin back as the same bytes (LoadRequest-like fields).
func TestBinary(t *testing.T) {
	for _, b := range [][]byte{nil, {}, []byte("routine"), make([]byte, 300), make([]byte, 70000)} {
		e := encoder{}
		e.bin(b)
		d := decoder{b: e.b}
		got, err := d.bin()
		if err != nil || d.off != len(e.b) || (b == nil) != (got == nil) || string(got) != string(b) {
			t.Fatalf("%d bytes: got %d bytes, err %v", len(b), len(got), err)
		}
	}
}

// FuzzAPI2JSONValues: any JSON document, decoded into an any as api 1
// hands it over, crosses api 2 unchanged.
func FuzzAPI2JSONValues(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true,{"b":{}}]}`, `[]`, `"\ud800"`, `-0`, `1e308`, `123456789012345678901234567890`,
		`{"a":1,"a":2}`, `[[[[[]]]]]`, `"\u00e9\u2028"`, `{"":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		e := encoder{}
		e.any(v)
		if e.err != nil {
			t.Fatalf("encode %s: %v", b, e.err)
		}
		d := decoder{b: e.b}
		got, err := d.any()
		if err != nil || d.off != len(e.b) {
			t.Fatalf("decode %s: %v (at %d of %d)", b, err, d.off, len(e.b))
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("%s: api 2 gives %#v, json %#v", b, got, v)
		}
	})
}

// TestEnumDecodesWithoutAllocating: a named string type's constant (an
// event's type, a token's status) decodes to the constant itself, with no
// allocation; any other value still decodes, as a copy.
func TestEnumDecodesWithoutAllocating(t *testing.T) {
	for _, c := range []struct {
		typ    EventType
		allocs float64
	}{{Enter, 0}, {Exit, 0}, {"exited-early", 1}, {"\xffbad", 1}} {
		e := encoder{}
		e.encEvent(&Event{Type: c.typ})
		var got Event
		allocs := testing.AllocsPerRun(20, func() {
			d := decoder{b: e.b}
			if err := d.decEvent(&got); err != nil {
				t.Fatal(err)
			}
		})
		want := c.typ
		if want == "\xffbad" {
			want = "\uFFFDbad"
		}
		if got.Type != want {
			t.Errorf("decoded type %q, want %q", got.Type, want)
		}
		if allocs != c.allocs {
			t.Errorf("type %q: %v allocations, want %v", c.typ, allocs, c.allocs)
		}
	}
	e := encoder{}
	e.encToken(&Token{ID: "t1", Status: Waiting})
	var tok Token
	if err := (&decoder{b: e.b}).decToken(&tok); err != nil || tok.Status != Waiting || tok.ID != "t1" {
		t.Fatalf("token %+v, %v", tok, err)
	}
}
