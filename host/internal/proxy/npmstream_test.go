package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// streamSeen is what stream-chat.mjs prints.
type streamSeen struct {
	Chunks []json.RawMessage `json:"chunks"`
	Text   string            `json:"text"`
	Finish string            `json:"finish"`
	Usage  map[string]int    `json:"usage"`
	Error  *struct {
		Name    string `json:"name"`
		Status  *int   `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestOpenAINpmStreamWithoutDone drives the proxy with the official
// openai npm client's streamed chat against an upstream that ends its
// stream without data: [DONE], as vLLM, llama.cpp's server, Ollama and
// LiteLLM may, written byte by byte (lines ended by LF, or by lone CRs).
// A finished stream (finish_reason, then the usage chunk asked for) is
// recorded, and replayed with the upstream stopped the client sees
// exactly what it saw live, no [DONE] added; a stream cut before its
// finish_reason makes the client raise the proxy's error, is not
// recorded, and misses in replay.
func TestOpenAINpmStreamWithoutDone(t *testing.T) {
	dir := npmClient(t)
	for _, c := range []struct {
		name, stream string
		complete     bool
	}{
		{"finished", frame("\n", chunkHi, chunkStop, chunkUsage), true},
		{"finished-cr", frame("\r", chunkHi, chunkStop, chunkUsage), true},
		{"cut", frame("\n", chunkHi), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := framedUpstream(t, c.stream, byteByByte)
			st := openStore(t, t.TempDir())
			live := serve(t, toolProviders(t, up).live(st))
			out := runScript(t, dir, "stream-chat.mjs", live.URL+"/v1", "no-done")
			var seen streamSeen
			if err := json.Unmarshal(out, &seen); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			tr, err := st.Tree(context.Background(), "no-done")
			if err != nil {
				t.Fatal(err)
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			replayed := runScript(t, dir, "stream-chat.mjs", replay.URL+"/v1", "no-done")
			if !c.complete {
				if seen.Error == nil || seen.Error.Name != "APIError" || !strings.Contains(seen.Error.Message, "cut short") || seen.Text != "Hi" {
					t.Errorf("live: %s; want the text Hi, then an APIError saying the stream was cut short", out)
				}
				if len(tr.Recordings) != 0 {
					t.Errorf("%d recordings, want none", len(tr.Recordings))
				}
				var miss streamSeen
				if err := json.Unmarshal(replayed, &miss); err != nil || miss.Error == nil || miss.Error.Name != "NotFoundError" {
					t.Errorf("replayed: %s (%v), want a NotFoundError", replayed, err)
				}
				return
			}
			if seen.Error != nil || len(seen.Chunks) != 3 || seen.Text != "Hi" || seen.Finish != "stop" || seen.Usage["completion_tokens"] != 1 {
				t.Fatalf("live: %s; want 3 chunks, the text Hi, finish stop and the usage", out)
			}
			if len(tr.Recordings) != 1 {
				t.Fatalf("%d recordings, want 1", len(tr.Recordings))
			}
			if !bytes.Equal(replayed, out) {
				t.Errorf("replayed, the client saw\n%s\nlive it saw\n%s", replayed, out)
			}
		})
	}
}

// cutSeen is what stream-cut.mjs prints.
type cutSeen struct {
	Events []string `json:"events"`
	Text   string   `json:"text"`
	Final  *string  `json:"final"`
	Error  *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
}

// messagesEvents and responsesEvents are an upstream's stream of the
// answer "Hi", whole or without its final event.
func messagesEvents(final bool) string {
	msg := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 3, "output_tokens": 1}}
	s := sseNamed("message_start", map[string]any{"type": "message_start", "message": msg}) +
		sseNamed("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}) +
		sseNamed("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Hi"}}) +
		sseNamed("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) +
		sseNamed("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 1}})
	if final {
		s += sseNamed("message_stop", map[string]any{"type": "message_stop"})
	}
	return s
}

func responsesEvents(final bool) string {
	resp := func(status string, output []any) map[string]any {
		return map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "status": status, "model": "gpt-4o-mini", "output": output,
			"error": nil, "incomplete_details": nil, "usage": nil}
	}
	item := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": "Hi", "annotations": []any{}}}}
	s := sseNamed("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", []any{})}) +
		sseNamed("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
			"item": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}}) +
		sseNamed("response.content_part.added", map[string]any{"type": "response.content_part.added", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}) +
		sseNamed("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi"}) +
		sseNamed("response.output_text.done", map[string]any{"type": "response.output_text.done", "sequence_number": 4, "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "Hi"}) +
		sseNamed("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": item})
	if final {
		r := resp("completed", []any{item})
		r["usage"] = map[string]any{"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
		s += sseNamed("response.completed", map[string]any{"type": "response.completed", "sequence_number": 6, "response": r})
	}
	return s
}

// TestNpmStreamWithoutFinalEvent drives the proxy with the official
// Anthropic client's messages.stream() and the openai client's
// responses.stream() against an upstream whose stream ends cleanly but
// without its final event (message_stop, response.completed), after the
// whole text. The helper raises the proxy's error rather than hand over a
// final message, nothing is recorded, and a replay misses; the same
// stream with its final event is recorded and replays as the client saw
// it live.
func TestNpmStreamWithoutFinalEvent(t *testing.T) {
	dir := npmClient(t)
	for _, api := range []string{"messages", "responses"} {
		for _, final := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s-final-%v", api, final), func(t *testing.T) {
				stream := messagesEvents(final)
				if api == "responses" {
					stream = responsesEvents(final)
				}
				up := framedUpstream(t, stream, byteByByte)
				st := openStore(t, t.TempDir())
				live := serve(t, toolProviders(t, up).live(st))
				out := runScript(t, dir, "stream-cut.mjs", live.URL, "cut", api)
				var seen cutSeen
				if err := json.Unmarshal(out, &seen); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				tr, err := st.Tree(context.Background(), "cut")
				if err != nil {
					t.Fatal(err)
				}
				up.Close()
				replay := serve(t, proxy.Config{Store: st, Replay: true})
				replayed := runScript(t, dir, "stream-cut.mjs", replay.URL, "cut", api)
				if final {
					if seen.Error != nil || seen.Final == nil || *seen.Final != "Hi" || len(tr.Recordings) != 1 {
						t.Fatalf("live: %s with %d recordings; want the final text Hi, recorded", out, len(tr.Recordings))
					}
					if !bytes.Equal(replayed, out) {
						t.Errorf("replayed, the client saw\n%s\nlive it saw\n%s", replayed, out)
					}
					return
				}
				if seen.Error == nil || seen.Final != nil || !strings.Contains(seen.Error.Message, "cut short") || seen.Text != "Hi" {
					t.Errorf("live: %s; want the text Hi, then the helper raising the proxy's error saying the stream was cut short", out)
				}
				if len(tr.Recordings) != 0 || tr.Executions[0].Execution.Status != store.StatusFailed {
					t.Errorf("%d recordings, execution %s; want none, failed", len(tr.Recordings), tr.Executions[0].Execution.Status)
				}
				var miss cutSeen
				if err := json.Unmarshal(replayed, &miss); err != nil || miss.Error == nil || miss.Error.Name != "NotFoundError" {
					t.Errorf("replayed: %s (%v), want a NotFoundError", replayed, err)
				}
			})
		}
	}
}

// wholeUpstream is an upstream on a real port answering every call 200
// with body as one JSON document, whatever the call asked.
func wholeUpstream(t *testing.T, body string) *toolUpstream {
	up := newToolUpstream(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
	return up
}

// TestNpmUpstreamOtherMode: an upstream that answers a streamed call
// whole (as a server ignoring stream does) or a whole call with an event
// stream. The official clients get the answer in the form they asked
// for — before, a streaming SDK saw an empty stream and reported an empty
// answer, a whole call's SDK failed to parse the events — and it is
// recorded and replays as the client saw it live; an event stream cut
// short is an error and recorded nothing.
func TestNpmUpstreamOtherMode(t *testing.T) {
	dir := npmClient(t)
	item := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": "Hi", "annotations": []any{}}}}
	response, _ := json.Marshal(map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o-mini",
		"output": []any{item}, "error": nil, "incomplete_details": nil, "usage": map[string]any{"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}})
	message := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Hi"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	chat := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null},` +
		`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	for _, c := range []struct {
		name string
		up   func(t *testing.T) *toolUpstream
		args []string // after the base URL
		ok   func(out []byte) bool
		// cut: the answer is an error, and nothing is recorded.
		cut bool
	}{
		{"chat-stream-answered-whole", func(t *testing.T) *toolUpstream { return wholeUpstream(t, chat) }, []string{"stream-chat.mjs", "/v1", "other"},
			func(out []byte) bool {
				var s streamSeen
				return json.Unmarshal(out, &s) == nil && s.Error == nil && s.Text == "Hi" && s.Finish == "stop" && s.Usage["completion_tokens"] == 1
			}, false},
		{"messages-stream-answered-whole", func(t *testing.T) *toolUpstream { return wholeUpstream(t, message) }, []string{"stream-cut.mjs", "", "other", "messages"},
			func(out []byte) bool {
				var s cutSeen
				return json.Unmarshal(out, &s) == nil && s.Error == nil && s.Text == "Hi" && s.Final != nil && *s.Final == "Hi"
			}, false},
		{"responses-stream-answered-whole", func(t *testing.T) *toolUpstream { return wholeUpstream(t, string(response)) }, []string{"stream-cut.mjs", "", "other", "responses"},
			func(out []byte) bool {
				var s cutSeen
				return json.Unmarshal(out, &s) == nil && s.Error == nil && s.Text == "Hi" && s.Final != nil && *s.Final == "Hi"
			}, false},
		{"chat-whole-answered-streamed", func(t *testing.T) *toolUpstream {
			return framedUpstream(t, frame("\n", chunkHi, chunkStop, "[DONE]"), byteByByte)
		}, []string{"client.mjs", "/v1", "one"},
			func(out []byte) bool { return string(out) == `{"text":"Hi"}` }, false},
		{"chat-whole-answered-streamed-cut", func(t *testing.T) *toolUpstream {
			return framedUpstream(t, frame("\n", chunkHi), byteByByte)
		}, []string{"client.mjs", "/v1", "one"},
			func(out []byte) bool {
				var e struct{ Status int }
				return json.Unmarshal(out, &e) == nil && e.Status == http.StatusBadGateway && strings.Contains(string(out), "cut short")
			}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := c.up(t)
			st := openStore(t, t.TempDir())
			live := serve(t, toolProviders(t, up).live(st))
			args := append([]string{live.URL + c.args[1]}, c.args[2:]...)
			out := runScript(t, dir, c.args[0], args...)
			if !c.ok(out) {
				t.Fatalf("live, the client saw %s", out)
			}
			tasks, err := st.Tasks(context.Background(), store.Query{})
			if err != nil || len(tasks) != 1 {
				t.Fatalf("%d tasks (%v), want 1", len(tasks), err)
			}
			tr, err := st.Tree(context.Background(), tasks[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if c.cut {
				if len(tr.Recordings) != 0 || tr.Executions[0].Execution.Status != store.StatusFailed {
					t.Errorf("%d recordings, execution %s; want none, failed", len(tr.Recordings), tr.Executions[0].Execution.Status)
				}
				return
			}
			if len(tr.Recordings) != 1 {
				t.Fatalf("%d recordings, want 1", len(tr.Recordings))
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			args[0] = replay.URL + c.args[1]
			if replayed := runScript(t, dir, c.args[0], args...); !bytes.Equal(replayed, out) {
				t.Errorf("replayed, the client saw\n%s\nlive it saw\n%s", replayed, out)
			}
		})
	}
}
