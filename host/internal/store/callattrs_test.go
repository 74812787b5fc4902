package store

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/sdk"
)

// callCase is one provider call's attributes, drawn at random, in both
// forms: typed (a span with a Call, as a run makes it) and as the map a
// run made before (ChatSpanAttributesRoom plus what a run adds).
type callCase struct {
	typed, mapped Span
}

// randCall draws a call: every attribute present or not, texts with
// escapes and non-ASCII, numbers of every size, and sometimes attributes
// of the span's own beside the call's.
func randCall(rng *rand.Rand, seq uint64) callCase {
	maybe := func() bool { return rng.IntN(3) > 0 }
	text := func() string {
		if maybe() {
			return randString(rng)
		}
		return ""
	}
	system, block := text(), text()
	var req *sdk.ChatRequest
	if rng.IntN(8) > 0 {
		req = &sdk.ChatRequest{Model: text(), JSON: maybe()}
		if maybe() {
			f := []float64{0, 0.5, 1, 2, -0.1, 1e-9, 123456789.25, 1e21}[rng.IntN(8)]
			req.Temperature = &f
		}
		if maybe() {
			req.MaxTokens = rng.IntN(100000) - 10
		}
		for range rng.IntN(3) {
			req.Stop = append(req.Stop, randString(rng))
		}
	}
	var resp *sdk.ChatResponse
	if rng.IntN(4) > 0 {
		resp = &sdk.ChatResponse{Model: text(), ID: text(),
			Usage: sdk.Usage{InputTokens: rng.IntN(1 << 20), OutputTokens: rng.IntN(1 << 12)}}
		switch rng.IntN(3) {
		case 0:
			resp.FinishReason = []string{"stop", "length", "tool_calls", "end_turn"}[rng.IntN(4)]
		case 1:
			resp.FinishReason = text()
		}
	}
	hasServer, server, port := maybe(), text(), []int{0, 80, 443, 65535}[rng.IntN(4)]
	errorType, hash, recording := "", text(), ""
	if rng.IntN(4) == 0 {
		errorType = []string{"rate_limited", "_OTHER", "circuit_open"}[rng.IntN(3)]
	}
	if maybe() {
		recording = "r/" + randString(rng)
	}
	recorded, cost, latency := maybe(), []float64{0, 0.000125, 3, 1.5e-7}[rng.IntN(4)], int64(rng.IntN(100000))
	var cited []string
	for range rng.IntN(3) {
		cited = append(cited, randString(rng))
	}

	c := &CallAttributes{Block: block}
	c.SetChat(system, req, resp)
	a := ChatSpanAttributesRoom(system, req, resp, 0)
	if block != "" {
		a[AttrSextantProvider] = String(block)
	}
	if req != nil {
		c.OutputType = "text"
		if req.JSON {
			c.OutputType = "json"
		}
		a[AttrGenAIOutputType] = String(c.OutputType)
	}
	if hasServer {
		c.Server, c.Port, c.HasServer = server, port, true
		a[AttrServerAddress], a[AttrServerPort] = String(server), Int(int64(port))
	}
	if errorType != "" {
		c.ErrorType = errorType
		a[AttrErrorType] = String(errorType)
	}
	if hash != "" {
		c.RequestHash = hash
		a["sextant.request_hash"] = String(hash)
	}
	if recording != "" {
		c.Recording, c.Recorded, c.CostUSD, c.LatencyMS = recording, recorded, cost, latency
		a["sextant.recording"] = String(recording)
		a["sextant.recorded"] = Bool(recorded)
		a["sextant.cost_usd"] = Float(cost)
		a["sextant.latency_ms"] = Int(latency)
	}
	if len(cited) > 0 {
		c.Cited = cited
		a["sextant.playbook.cited"] = Strings(cited...)
	}
	var own Attributes
	if rng.IntN(4) == 0 {
		own = Attributes{}
		for _, k := range []string{"a", "sextant.score", "gen_ai.z", "zz", "error.kind", "sextant.recordz"}[:1+rng.IntN(6)] {
			own[k] = String(randString(rng))
			a[k] = own[k]
		}
	}
	sp := Span{Task: "task-1", Execution: "e1", Seq: seq, TraceID: TraceIDFor("task-1", "e1"), SpanID: SpanIDFor("task-1", "e1", seq),
		ParentSpanID: SpanIDFor("task-1", "e1", 1), Name: "chat", Kind: SpanClient,
		Start: t0.Add(time.Duration(seq) * time.Millisecond), End: t0.Add(time.Duration(seq)*time.Millisecond + 3), Status: SpanStatus{Code: CodeOK}}
	typed, mapped := sp, sp
	typed.Call, typed.Attributes = c, own
	mapped.Attributes = a
	return callCase{typed, mapped}
}

// TestCallAttributesEncodeAsMap: a span whose call's attributes are
// fields is written byte for byte as the same span with them in its map
// (the store's form, in a burst and alone, encoding/json's and OTLP's),
// and reads the same through every accessor.
func TestCallAttributesEncodeAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 31))
	burst := getSpanEncoder()
	defer burst.put()
	burst.deriveFor("task-1", "e1")
	for i := range 3000 {
		c := randCall(rng, uint64(i+2))
		typed, mapped := &c.typed, &c.mapped
		if err := checkSpan(typed); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}

		want, err := appendSpanBody(nil, mapped)
		must(t, err)
		got, err := appendSpanBody(nil, typed)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: stored as\n%s\nwant\n%s", i, got, want)
		}
		// In a burst, spans of both forms one after the other go through
		// the encoder's same-keys path.
		ref := getSpanEncoder()
		ref.deriveFor("task-1", "e1")
		want, err = ref.appendSpanBody(nil, mapped)
		must(t, err)
		wantCall, wantOK := ref.call, ref.callOK
		ref.put()
		sp := typed
		if i%3 == 0 {
			sp = mapped
		}
		if got, err = burst.appendSpanBody(nil, sp); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d in a burst: stored as\n%s\nwant\n%s", i, got, want)
		}
		if burst.callOK != wantOK || wantOK && burst.call != wantCall {
			t.Fatalf("case %d in a burst: call %v %v, want %v %v", i, burst.call, burst.callOK, wantCall, wantOK)
		}
		u, ok := callUsage(typed)
		if wu, wok := callUsage(mapped); u != wu || ok != wok {
			t.Fatalf("case %d: usage %v %v, want %v %v", i, u, ok, wu, wok)
		}

		want, err = json.Marshal(mapped)
		must(t, err)
		got, err = json.Marshal(typed)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: JSON\n%s\nwant\n%s", i, got, want)
		}
		for _, legacy := range []bool{false, true} {
			want, err = json.Marshal(toOTLP(mapped, legacy))
			must(t, err)
			got, err = json.Marshal(toOTLP(typed, legacy))
			must(t, err)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d: OTLP\n%s\nwant\n%s", i, got, want)
			}
		}

		if all := typed.AllAttributes(); !reflect.DeepEqual(all, mapped.Attributes) {
			t.Fatalf("case %d: all attributes %v, want %v", i, all, mapped.Attributes)
		}
		if all := Attributes(maps.Collect(typed.Attrs())); !reflect.DeepEqual(all, mapped.Attributes) {
			t.Fatalf("case %d: attributes ranged %v, want %v", i, all, mapped.Attributes)
		}
		for _, k := range append(Keys(mapped.Attributes), "sextant.absent", AttrGenAIInputMessages, AttrErrorType, AttrCited, AttrRecorded) {
			v, ok := typed.LookupAttr(k)
			w, wok := mapped.Attributes[k]
			if ok != wok || !reflect.DeepEqual(v, w) || !reflect.DeepEqual(typed.Attr(k), w) {
				t.Fatalf("case %d: attribute %q is %v %v, want %v %v", i, k, v, ok, w, wok)
			}
		}
		var keys []string
		for k := range typed.Call.each {
			keys = append(keys, k)
		}
		for j := 1; j < len(keys); j++ {
			if keys[j-1] >= keys[j] {
				t.Fatalf("case %d: the call's attributes are not in key order: %q", i, keys)
			}
		}
	}
}

// Keys lists a's keys.
func Keys(a Attributes) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	return out
}

// TestCallAttributesStored: spans with typed call attributes, checkpointed
// into a real store, read back as the spans with the same attributes in
// their maps do, and summarize the same.
func TestCallAttributesStored(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 9))
	var typed, mapped []Span
	for i := range 40 {
		c := randCall(rng, uint64(i+1))
		c.typed.Execution, c.mapped.Execution = "typed", "mapped"
		c.typed.TraceID, c.typed.SpanID, c.typed.ParentSpanID = "", "", ""
		c.mapped.TraceID, c.mapped.SpanID, c.mapped.ParentSpanID = "", "", ""
		typed, mapped = append(typed, c.typed), append(mapped, c.mapped)
	}
	s := openTest(t)
	must(t, s.CreateTask(ctx, &Task{ID: "task-1", Pipeline: "p", Input: json.RawMessage(`{}`)}))
	for _, ex := range []string{"typed", "mapped"} {
		must(t, s.CreateExecution(ctx, &Execution{Task: "task-1", ID: ex, Mode: "live"}))
	}
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "task-1", Execution: "typed", Step: 1, State: []byte(`{}`)}, typed...))
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "task-1", Execution: "mapped", Step: 1, State: []byte(`{}`)}, mapped...))
	got, err := s.Spans(ctx, "task-1", "typed")
	must(t, err)
	want, err := s.Spans(ctx, "task-1", "mapped")
	must(t, err)
	if len(got) != len(want) || len(got) != 40 {
		t.Fatalf("%d spans read, want %d and 40", len(got), len(want))
	}
	for i := range got {
		if got[i].Call != nil || !reflect.DeepEqual(got[i].Attributes, want[i].Attributes) {
			t.Fatalf("span %d reads as %v, want %v", i, got[i].Attributes, want[i].Attributes)
		}
	}
	var calls [][]CallUsage // mapped's, then typed's
	must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error {
		for _, es := range ts.Executions {
			calls = append(calls, es.Calls)
		}
		return nil
	}))
	if len(calls) != 2 || len(calls[0]) == 0 || !reflect.DeepEqual(calls[0], calls[1]) {
		t.Fatalf("usage %+v, want two executions' alike", calls)
	}
}

// TestCallAttributesChecked: a call's attribute that cannot be stored, or
// that its span's map holds too, is refused as the map's would be.
func TestCallAttributesChecked(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := randCall(rng, 2)
	c.typed.Call.HasTemperature, c.typed.Call.Temperature = true, math.NaN()
	if err := checkSpan(&c.typed); err == nil || !strings.Contains(err.Error(), AttrGenAIRequestTemperature) {
		t.Errorf("NaN temperature: %v", err)
	}
	c = randCall(rng, 3)
	c.typed.Attributes = Attributes{AttrGenAIOperationName: String("chat")}
	if err := checkSpan(&c.typed); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("an attribute in both: %v", err)
	}
}

// TestSpanMarshalJSON: a span marshals, without reflection, to the bytes
// encoding/json writes for it with its times in UTC and its Call's
// attributes in its map — task and execution with escapes, times in any
// zone, links, status, ids that are not hex (encoding/json's own path).
func TestSpanMarshalJSON(t *testing.T) {
	type plain Span
	rng := rand.New(rand.NewPCG(41, 43))
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.Local}
	for i := range 3000 {
		c := randCall(rng, uint64(2+i))
		sp := c.typed
		if rng.IntN(2) == 0 {
			sp = c.mapped
		}
		sp.Task, sp.Execution, sp.Seq = randString(rng), randString(rng), rng.Uint64()
		sp.Start, sp.End = randTime(rng).In(zones[rng.IntN(3)]), randTime(rng).In(zones[rng.IntN(3)])
		switch rng.IntN(4) {
		case 0:
			sp.Links = []Link{{TraceID: sp.TraceID, SpanID: sp.SpanID, Attributes: Attributes{"k": String(randString(rng))}}}
		case 1:
			sp.Status, sp.Kind, sp.ParentSpanID = SpanStatus{}, "", ""
		case 2:
			sp.TraceID = `"` + randString(rng) // encoding/json's path
		}
		got, err := json.Marshal(sp)
		must(t, err)
		ref := plain(sp)
		ref.Attributes, ref.Call = sp.AllAttributes(), nil
		ref.Start, ref.End = sp.Start.UTC(), sp.End.UTC()
		if sp.TraceID != "" && sp.TraceID[0] == '"' {
			ref.Start, ref.End = sp.Start, sp.End
		}
		want, err := json.Marshal(ref)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("span marshals as\n%s\nencoding/json writes\n%s", got, want)
		}
		var back Span
		must(t, json.Unmarshal(got, &back))
		if back.Seq != sp.Seq || back.Task != sp.Task && utf8.ValidString(sp.Task) || !back.Start.Equal(sp.Start) {
			t.Fatalf("span %+v reads back as %+v", sp, back)
		}
	}
}

// TestSpanMarshalJSONYears: a span whose times' UTC year is not of four
// digits marshals as encoding/json marshals it, in its own zone (a time
// near year 0 or 10000 in another zone), or not at all — never as a
// year no decoder reads.
func TestSpanMarshalJSONYears(t *testing.T) {
	type plain Span
	for _, tm := range []time.Time{
		time.Date(9999, 12, 31, 23, 30, 0, 0, time.FixedZone("west", -3600)), // 10000 in UTC
		time.Date(0, 1, 1, 0, 30, 0, 0, time.FixedZone("east", 3600)),        // -1 in UTC
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		sp := Span{Task: "t", Execution: "e", Seq: 1, TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("cd", 8),
			Name: "n", Start: tm, End: tm}
		_, refErr := json.Marshal(plain(sp))
		got, err := json.Marshal(sp)
		if refErr != nil {
			if err == nil {
				t.Errorf("%v: marshals as %s, encoding/json refuses it: %v", tm, got, refErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tm, err)
			continue
		}
		var back Span
		if err := json.Unmarshal(got, &back); err != nil || !back.Start.Equal(tm) || !back.End.Equal(tm) {
			t.Errorf("%v: %s reads back as %v, %v", tm, got, back.Start, err)
		}
	}
}

// TestSpanMarshalJSONSharedKey: a span whose map holds an attribute of
// its Call (which the store refuses, but a run state may hold) marshals
// as encoding/json marshals AllAttributes, the key once with the Call's
// value, whatever the pooled encoder wrote before.
func TestSpanMarshalJSONSharedKey(t *testing.T) {
	type plain Span
	at := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	base := Span{Task: "t", Execution: "e", Seq: 1, TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("cd", 8),
		Name: "chat", Start: at, End: at}
	before := base
	before.Attributes = Attributes{AttrGenAIOperationName: String("chat"), "other": Int(1)}
	sp := base
	sp.Call = &CallAttributes{}
	sp.Attributes = Attributes{AttrGenAIOperationName: String("mine")}
	ref := plain(sp)
	ref.Attributes, ref.Call = sp.AllAttributes(), nil
	want, err := json.Marshal(ref)
	must(t, err)
	for range 3 {
		_, err := json.Marshal(before) // the keys an encoder remembers
		must(t, err)
		got, err := json.Marshal(sp)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("span marshals as\n%s\nencoding/json writes\n%s", got, want)
		}
	}
}
