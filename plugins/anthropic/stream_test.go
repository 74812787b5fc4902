package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/plugins/anthropic"
	"github.com/sextant-dev/sextant/sdk"
)

// eventServer answers every call with status, content type and body, and
// checks the request asked for a stream.
func eventServer(t *testing.T, status int, ctype, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if !strings.Contains(b.String(), `"stream":true`) || r.Header.Get("Accept") != "text/event-stream" {
			http.Error(w, "want a streamed request", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func ev(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

func textDelta(s string) string {
	return ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+s+`"}}`)
}

var (
	msgStart = ev("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"claude-x","content":[],"usage":{"input_tokens":4,"cache_read_input_tokens":2,"output_tokens":1}}}`) +
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) + ev("ping", `{"type":"ping"}`)
	msgEnd = ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`) +
		ev("message_stop", `{"type":"message_stop"}`)
)

func streamCall(t *testing.T, url string, json bool) ([]string, *sdk.ChatResponse, error) {
	var deltas []string
	resp, err := anthropic.New().ChatStream(context.Background(), &sdk.ChatRequest{Model: "claude-x", JSON: json,
		Messages: []sdk.Message{{Role: "user", Content: "hi"}}, Config: map[string]any{"base_url": url, "api_key": "sk-ant-test"}},
		func(d string) error { deltas = append(deltas, d); return nil })
	return deltas, resp, err
}

func TestChatStream(t *testing.T) {
	deltas, resp, err := streamCall(t, eventServer(t, 200, "text/event-stream", msgStart+textDelta("Hel")+textDelta("lo")+msgEnd), false)
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.ChatResponse{ID: "msg_1", Model: "claude-x", Text: "Hello", FinishReason: "stop", Usage: sdk.Usage{InputTokens: 6, OutputTokens: 3}}
	if !reflect.DeepEqual(deltas, []string{"Hel", "lo"}) || !reflect.DeepEqual(resp, want) {
		t.Fatalf("deltas %q answer %+v, want Hel lo and %+v", deltas, resp, want)
	}
	// JSON mode: the prefill is the first delta, as Chat puts it back.
	deltas, resp, err = streamCall(t, eventServer(t, 200, "text/event-stream", msgStart+textDelta(`\"a\":1}`)+msgEnd), true)
	if err != nil || !reflect.DeepEqual(deltas, []string{"{", `"a":1}`}) || resp.Text != `{"a":1}` {
		t.Fatalf("json mode: deltas %q answer %+v err %v", deltas, resp, err)
	}
}

func TestChatStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		code              sdk.Code
		msg               string
		deltas            int
	}{
		{"refused", "application/json", `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`, 529, sdk.CodeUnavailable, "busy", 0},
		{"error event", "text/event-stream", msgStart + textDelta("Hi") + ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`), 200, sdk.CodeUnavailable, "stream error overloaded_error: busy", 1},
		{"cut short", "text/event-stream", msgStart + textDelta("Hi"), 200, sdk.CodeUnavailable, "cut short", 1},
		{"malformed", "text/event-stream", ev("message_start", `{"type":`), 200, sdk.CodeUnavailable, "malformed stream event 1", 0},
		{"delta first", "text/event-stream", textDelta("Hi"), 200, sdk.CodeUnavailable, "content before message_start", 0},
		{"huge event", "text/event-stream", strings.Repeat("data: "+strings.Repeat("x", 1<<19)+"\n", 10) + "\n", 200, sdk.CodeUnavailable, "is over", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deltas, resp, err := streamCall(t, eventServer(t, tc.status, tc.ctype, tc.body), false)
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(se.Message, tc.msg) || resp != nil {
				t.Fatalf("err %v (%T), answer %+v; want %s containing %q", err, err, resp, tc.code, tc.msg)
			}
			if len(deltas) != tc.deltas {
				t.Errorf("deltas %q, want %d", deltas, tc.deltas)
			}
		})
	}
}

// TestChatStreamToolUse: tool_use blocks opened by content_block_start
// and filled by input_json_delta events are the answer's tool calls, in
// order; they add no text deltas.
func TestChatStreamToolUse(t *testing.T) {
	jsonDelta := func(i int, s string) string {
		b, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": s}})
		return ev("content_block_delta", string(b))
	}
	body := msgStart + textDelta("Checking.") + ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`) +
		jsonDelta(1, "") + jsonDelta(1, `{"city": "Pa`) + jsonDelta(1, `ris"}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":2}`) +
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`) +
		ev("message_stop", `{"type":"message_stop"}`)
	deltas, resp, err := streamCall(t, eventServer(t, 200, "text/event-stream", body), false)
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.ChatResponse{Text: "Checking.", FinishReason: "tool_calls", Model: "claude-x", ID: "msg_1", Usage: sdk.Usage{InputTokens: 6, OutputTokens: 30},
		ToolCalls: []sdk.ToolCall{{ID: "toolu_a", Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)}, {ID: "toolu_b", Name: "get_time", Arguments: []byte(`{}`)}}}
	if !reflect.DeepEqual(deltas, []string{"Checking."}) || !reflect.DeepEqual(resp, want) {
		t.Fatalf("deltas %q answer %+v, want %+v", deltas, resp, want)
	}
	// Input for a block that is no tool_use, and input that never became
	// JSON, are errors, not calls.
	for _, tc := range []struct{ name, body, msg string }{
		{"stray input", msgStart + jsonDelta(0, `{}`) + msgEnd, "input_json_delta for block 0, which is no tool_use"},
		{"cut input", msgStart + ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_c","name":"f","input":{}}}`) +
			jsonDelta(1, `{"a":`) + msgEnd, "tool_use toolu_c: streamed input is not JSON"},
	} {
		_, resp, err := streamCall(t, eventServer(t, 200, "text/event-stream", tc.body), false)
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != sdk.CodeUnavailable || !strings.Contains(se.Message, tc.msg) || resp != nil {
			t.Errorf("%s: err %v, answer %+v; want unavailable containing %q", tc.name, err, resp, tc.msg)
		}
	}
}
