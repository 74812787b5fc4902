package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

func TestRecordings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	temp := 0.0
	req := &sdk.ChatRequest{Model: "gpt-4o-mini", Temperature: &temp, Messages: []sdk.Message{{Role: "user", Content: "hi"}},
		Config: map[string]any{"base_url": "https://api.openai.com/v1"}}
	resp := &sdk.ChatResponse{Text: "hello", Usage: sdk.Usage{InputTokens: 3, OutputTokens: 1}, FinishReason: "stop"}
	rec, err := NewChatRecording(s.Redactor(), "openai", "t1", req, resp, 420*time.Millisecond)
	must(t, err)
	must(t, s.PutRecording(ctx, rec))

	// A live run looks its request up by the same key.
	key, _, err := ChatKey(s.Redactor(), req)
	must(t, err)
	got, err := s.Recording(ctx, key)
	must(t, err)
	var back sdk.ChatResponse
	must(t, json.Unmarshal(got.Response, &back))
	if !reflect.DeepEqual(back, *resp) || got.Usage != resp.Usage || got.Latency != 420*time.Millisecond || got.Provider != "openai" {
		t.Fatalf("recording %+v", got)
	}
	if string(got.Request) != `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini","temperature":0}` {
		t.Fatalf("canonical request %s", got.Request)
	}

	h, err := NewHumanRecording("t1", "confirm", 1, "Send?", json.RawMessage(`{"answer":"yes"}`))
	must(t, err)
	must(t, s.PutRecording(ctx, h))
	if got, err := s.Recording(ctx, HumanKey("t1", "confirm", 1)); err != nil || got.Kind != RecordHuman {
		t.Fatalf("human recording %+v, %v", got, err)
	}
	if HumanKey("t1", "confirm", 1) == HumanKey("t1", "confirm", 2) {
		t.Fatal("human keys collide")
	}

	_, err = s.Recording(ctx, "0000")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	tests := []struct {
		name string
		r    Recording
		want string
	}{
		{"bad kind", Recording{Hash: "h", Kind: "video", Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}, `write recording: recording h: unknown kind "video" (want chat, human, tool, tool_started or tool_list)`},
		{"bad request", Recording{Hash: "h", Kind: RecordChat, Request: json.RawMessage(`{`), Response: json.RawMessage(`{}`)}, `write recording: recording h: request is not valid JSON`},
		{"no response", Recording{Hash: "h", Kind: RecordChat, Request: json.RawMessage(`{}`)}, `write recording: recording h: response is not valid JSON`},
		{"bad hash", Recording{Hash: "a/b", Kind: RecordChat}, `write recording: recording hash "a/b" has a bad character '/' (use letters, digits and . _ - : +)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, s.PutRecording(ctx, &tt.r), tt.want) })
	}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	v1 := &StrategyRecord{Name: "email-handler", Version: "1.5.0", Hash: "aaa", Author: "me"}
	v2 := &StrategyRecord{Name: "email-handler", Version: "2.0.0", Parent: "1.5.0", Hash: "bbb", Author: "automated-learning",
		Evidence: json.RawMessage(`{"success_rate":{"effect":0.04}}`)}
	must(t, s.PutStrategy(ctx, v1))
	must(t, s.PutStrategy(ctx, v2))
	must(t, s.PutStrategy(ctx, &StrategyRecord{Name: "email-handler", Version: "2.0.0", Hash: "bbb"})) // same again: no-op
	err := s.PutStrategy(ctx, &StrategyRecord{Name: "email-handler", Version: "2.0.0", Hash: "ccc"})
	wantErr(t, err, "write strategy email-handler 2.0.0: already exists with hash bbb")
	if !errors.Is(err, ErrExists) {
		t.Fatal("not ErrExists")
	}
	log, err := s.StrategyLog(ctx, "email-handler")
	must(t, err)
	if len(log) != 2 || log[0].Version != "1.5.0" || log[1].Parent != "1.5.0" {
		t.Fatalf("log %+v", log)
	}
	got, err := s.Strategy(ctx, "email-handler", "2.0.0")
	must(t, err)
	if got.Author != "automated-learning" || string(got.Evidence) != `{"success_rate":{"effect":0.04}}` {
		t.Fatalf("got %+v", got)
	}
	wantErr(t, s.PutStrategy(ctx, &StrategyRecord{Name: "x", Version: "1"}), "write strategy: strategy x 1: hash is empty")
}

func TestCollection(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	type verdict struct {
		Gate    string   `json:"gate"`
		Pass    bool     `json:"pass"`
		Reasons []string `json:"reasons"`
	}
	c, err := NewCollection[verdict](s, CollGateDecisions)
	must(t, err)
	must(t, c.Put(ctx, "cand-1/no-regression", verdict{Gate: "no-regression", Pass: true}))
	must(t, c.Put(ctx, "cand-1/delta-bound", verdict{Gate: "delta-bound", Reasons: []string{"too far"}}))
	must(t, c.Put(ctx, "cand-2/delta-bound", verdict{Gate: "delta-bound", Pass: true}))
	got, err := c.Get(ctx, "cand-1/delta-bound")
	must(t, err)
	if got.Pass || got.Reasons[0] != "too far" {
		t.Fatalf("got %+v", got)
	}
	var keys []string
	must(t, c.Scan(ctx, "cand-1/", func(k string, v verdict) error { keys = append(keys, k); return nil }))
	if len(keys) != 2 || keys[0] != "cand-1/delta-bound" {
		t.Fatalf("scan %v", keys)
	}
	must(t, c.Delete(ctx, "cand-1/delta-bound"))
	_, err = c.Get(ctx, "cand-1/delta-bound")
	wantErr(t, err, `collection gate-decisions: get "cand-1/delta-bound": not found`)
	_, err = NewCollection[verdict](s, "bad/name")
	wantErr(t, err, `collection name "bad/name" has a bad character '/' (use letters, digits and . _ - : +)`)
	wantErr(t, c.Put(ctx, "", verdict{}), "collection gate-decisions: key must be 1 to 512 bytes of UTF-8")
}
