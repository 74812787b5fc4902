package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/sextant-dev/sextant/sdk"
)

// canonicalJSON is the canonical request as ChatKey wrote it before
// appendChatRequest: encoding/json without Config and Vars.
func canonicalJSON(req *sdk.ChatRequest) ([]byte, error) {
	r := *req
	r.Config, r.Vars = nil, nil
	return json.Marshal(&r)
}

// oddText picks strings that exercise every escape encoding/json makes.
func oddText(rng *rand.Rand) string {
	parts := []string{"", "hi", "<b>", "&amp;", `"q"`, `\`, "\b", "\f", "\n\r\t", "\x01\x1f", "é", "\u2028", "\u2029",
		"\xff", "\xe2\x80", "😀", "{\"k\":1}", " ", "/", "\x7f"}
	var b strings.Builder
	for range rng.IntN(4) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

func oddRaw(rng *rand.Rand) json.RawMessage {
	raws := []string{`{"a":1}`, `{"k":[1,"x"]}`, ` {"a" : 1} `, `{"t":"<b>"}`, "{\"t\":\"\u2028\"}", `[1,2`, ``, `null`, `"s"`,
		`{"e":"\u003c"}`, `{"n":1e400}`, `{"u":"\ud83d"}`}
	if rng.IntN(8) == 0 {
		return nil
	}
	return json.RawMessage(raws[rng.IntN(len(raws))])
}

func oddFloat(rng *rand.Rand) *float64 {
	fs := []float64{0, 0.7, 1, -2.5, 1e-7, 1e21, 1e20, 123456789.125, 5e-324, math.MaxFloat64, math.Copysign(0, -1), 1e-6, 3e-10}
	if rng.IntN(5) == 0 {
		return nil
	}
	f := fs[rng.IntN(len(fs))]
	return &f
}

func oddCalls(rng *rand.Rand) []sdk.ToolCall {
	var cs []sdk.ToolCall
	for range rng.IntN(3) {
		cs = append(cs, sdk.ToolCall{ID: oddText(rng), Name: oddText(rng), Arguments: oddRaw(rng)})
	}
	return cs
}

func oddBool(rng *rand.Rand) *bool {
	if rng.IntN(3) == 0 {
		return nil
	}
	b := rng.IntN(2) == 0
	return &b
}

func oddRequest(rng *rand.Rand) *sdk.ChatRequest {
	req := &sdk.ChatRequest{Model: oddText(rng), Temperature: oddFloat(rng), MaxTokens: rng.IntN(5) - 1,
		JSON: rng.IntN(2) == 0, Step: oddText(rng), ToolChoice: oddText(rng), ParallelToolCalls: oddBool(rng),
		Config: map[string]any{"api_key": "sk-x"}, Vars: map[string]any{"input": map[string]any{"q": "<x>"}}}
	if rng.IntN(6) > 0 {
		req.Messages = []sdk.Message{}
		for range rng.IntN(4) {
			req.Messages = append(req.Messages, sdk.Message{Role: oddText(rng), Content: oddText(rng), ToolCalls: oddCalls(rng),
				ToolCallID: oddText(rng), IsError: rng.IntN(3) == 0})
		}
	}
	for range rng.IntN(3) {
		req.Stop = append(req.Stop, oddText(rng))
	}
	for range rng.IntN(3) {
		t := sdk.ToolSpec{Name: oddText(rng), Description: oddText(rng), InputSchema: oddRaw(rng)}
		if rng.IntN(2) == 0 {
			t.Annotations = &sdk.ToolAnnotations{ReadOnly: oddBool(rng), Idempotent: oddBool(rng), Destructive: oddBool(rng)}
		}
		req.Tools = append(req.Tools, t)
	}
	return req
}

// TestChatRequestJSON: the canonical request appendChatRequest writes is
// encoding/json's, byte for byte, over requests with every escape, float
// form and raw JSON; for the ones it declines, ChatKey falls back to
// encoding/json and gives its bytes or error. Most requests take the
// direct way.
func TestChatRequestJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	direct := 0
	const n = 4000
	for i := range n {
		req := oddRequest(rng)
		want, wantErr := canonicalJSON(req)
		got, ok := appendChatRequest(nil, req)
		if ok {
			direct++
			if wantErr != nil || string(got) != string(want) {
				t.Fatalf("request %d %+v:\n got %s\nwant %s (%v)", i, req, got, want, wantErr)
			}
		}
		_, canon, err := ChatKey(DefaultRedactor(), req)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("request %d: ChatKey error %v, encoding/json's %v", i, err, wantErr)
		}
		if err == nil {
			red, _ := DefaultRedactor().redactJSON(want)
			if string(canon) != string(red) {
				t.Fatalf("request %d: ChatKey canonical\n %s\nwant %s", i, canon, red)
			}
		}
	}
	if direct < n/4 {
		t.Errorf("%d of %d requests written directly; want most", direct, n)
	}
	// Every field set: a field added to sdk.ChatRequest fails here until
	// appendChatRequest writes it.
	var req sdk.ChatRequest
	fillAll(reflect.ValueOf(&req).Elem(), 0)
	want, err := canonicalJSON(&req)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := appendChatRequest(nil, &req); !ok || string(got) != string(want) {
		t.Errorf("every field:\n got %s (%v)\nwant %s", got, ok, want)
	}
}

// TestChatResponseJSON: ChatRecording's response is encoding/json's.
func TestChatResponseJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	direct := 0
	const n = 2000
	for i := range n {
		resp := &sdk.ChatResponse{Text: oddText(rng), Usage: sdk.Usage{InputTokens: rng.IntN(3) - 1, OutputTokens: rng.IntN(1 << 20)},
			FinishReason: oddText(rng), Model: oddText(rng), ID: oddText(rng), ToolCalls: oddCalls(rng)}
		want, wantErr := json.Marshal(resp)
		if got, ok := appendChatResponse(nil, resp); ok {
			direct++
			if wantErr != nil || string(got) != string(want) {
				t.Fatalf("response %d %+v:\n got %s\nwant %s (%v)", i, resp, got, want, wantErr)
			}
		}
		rec, err := ChatRecording("h", []byte(`{}`), "p", "t", resp, 0)
		if (err != nil) != (wantErr != nil) || err == nil && string(rec.Response) != string(want) {
			t.Fatalf("response %d: ChatRecording %v; want %s (%v)", i, rec, want, wantErr)
		}
	}
	if direct < n/2 {
		t.Errorf("%d of %d responses written directly; want most", direct, n)
	}
	var resp sdk.ChatResponse
	fillAll(reflect.ValueOf(&resp).Elem(), 0)
	want, err := json.Marshal(&resp)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := appendChatResponse(nil, &resp); !ok || string(got) != string(want) {
		t.Errorf("every field:\n got %s (%v)\nwant %s", got, ok, want)
	}
}

// rawRecording is the stored value of the recording under hash, pending
// in the journal or applied.
func rawRecording(t *testing.T, s *Store, hash string) []byte {
	t.Helper()
	if v := s.jr.recording(hash); v != nil {
		return v
	}
	var val []byte
	must(t, s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(recordingKey(hash))
		if err != nil {
			return err
		}
		val, err = it.ValueCopy(nil)
		return err
	}))
	return val
}

// TestPutChatRecording: PutChatRecording stores the bytes PutRecording
// stores for ChatRecording's recording (redacted alike, encoding/json's
// way for what the direct encoder declines), and FindRecording finds it,
// pending and applied, and tells a miss by nil.
func TestPutChatRecording(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 0, 0, 123000000, time.UTC)
	cfg := testConfig().WithClock(func() time.Time { return at })
	direct, via := openTest(t, cfg), openTest(t, cfg)
	ctx := context.Background()
	canon := []byte(`{"messages":[{"role":"user","content":"hi"}],"model":"m"}`)
	for i, resp := range []*sdk.ChatResponse{
		{Text: "yo", Usage: sdk.Usage{InputTokens: 3, OutputTokens: 4}, FinishReason: "stop", Model: "m-1", ID: "r1"},
		{Text: "<b> & \u2028 \b\xff", ToolCalls: []sdk.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{"a":1}`)}}},
		{Text: "spaced", ToolCalls: []sdk.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(` { "a" : "<x>" } `)}}},
		{Text: `my api_key="sk-abcdefghijklmnopqrstuvwx1234"`},
		{},
	} {
		key := fmt.Sprintf("rec%d", i)
		if r, err := direct.FindRecording(ctx, key); r != nil || err != nil {
			t.Fatalf("%s: FindRecording before the write = %v, %v; want nil, nil", key, r, err)
		}
		if _, err := direct.Recording(ctx, key); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), key) {
			t.Fatalf("%s: Recording before the write: %v; want ErrNotFound naming it", key, err)
		}
		must(t, direct.PutChatRecording(ctx, key, canon, "prov", "task1", resp, 1500*time.Microsecond))
		rec, err := ChatRecording(key, canon, "prov", "task1", resp, 1500*time.Microsecond)
		must(t, err)
		must(t, via.PutRecording(ctx, rec))
		got, want := rawRecording(t, direct, key), rawRecording(t, via, key)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", key, got, want)
		}
		r, err := direct.FindRecording(ctx, key)
		if err != nil || r == nil || r.Provider != "prov" || r.Task != "task1" || r.Latency != 1500*time.Microsecond || !r.Created.Equal(at) {
			t.Errorf("%s: FindRecording = %+v, %v", key, r, err)
		}
	}
	must(t, direct.Sync())
	must(t, via.Sync())
	for i := range 5 {
		key := fmt.Sprintf("rec%d", i)
		if got, want := rawRecording(t, direct, key), rawRecording(t, via, key); string(got) != string(want) {
			t.Errorf("%s applied:\n got %s\nwant %s", key, got, want)
		}
		if r, err := direct.FindRecording(ctx, key); err != nil || r == nil {
			t.Errorf("%s applied: FindRecording = %v, %v", key, r, err)
		}
	}
	if r, err := direct.FindRecording(ctx, "absent"); r != nil || err != nil {
		t.Errorf("FindRecording of a miss = %v, %v; want nil, nil", r, err)
	}
	if err := direct.PutChatRecording(ctx, "bad key!", canon, "p", "", &sdk.ChatResponse{}, 0); err == nil {
		t.Error("PutChatRecording took a bad key")
	}
	if err := direct.PutChatRecording(ctx, "k", canon, "p", "", nil, 0); err == nil {
		t.Error("PutChatRecording took a nil response")
	}
}
