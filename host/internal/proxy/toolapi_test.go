package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// toolKey is the fake tool upstream's API key.
const toolKey = "sk-upstream-tools-0123456789"

// toolUpstream is a fake OpenAI and Anthropic server on a real port that
// runs a tool loop: a conversation without a tool result is answered
// with a call to get_weather, one with a tool result with a text quoting
// it. It speaks chat completions, the Responses API and the Messages
// API, whole or streamed, and embeddings; it keeps every body it was
// sent and every body it answered. Its streams are framed as the real
// servers frame theirs: chunked, each event flushed as it is written,
// the events the APIs send around the content (Anthropic's ping, the
// Responses API's in_progress and content parts, chat's [DONE]), and a
// keep-alive comment inside a chat stream, as OpenAI-compatible gateways
// send while a model thinks.
type toolUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	received []exchange
	// echoKey, when set, answers every call with a 500 quoting the key
	// it was sent (as some providers do for a wrong key), or with a 200
	// quoting it when echoKey is "ok".
	echoKey string
	// mode: "" answers; "garbage" answers 200 with text that is not
	// JSON; "truncate" stops a stream before its final event; "hang"
	// answers nothing until the request ends.
	mode string
}

// exchange is one call the upstream served.
type exchange struct {
	path      string
	body      []byte // as received
	answer    []byte // as sent
	auth, key string
}

func newToolUpstream(t testing.TB) *toolUpstream {
	u := &toolUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *toolUpstream) calls() []exchange {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]exchange(nil), u.received...)
}

func (u *toolUpstream) serve(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	ex := exchange{path: r.URL.Path, body: body.Bytes(), auth: r.Header.Get("Authorization"), key: r.Header.Get("X-Api-Key")}
	var out bytes.Buffer
	defer func() {
		ex.answer = out.Bytes()
		u.mu.Lock()
		u.received = append(u.received, ex)
		u.mu.Unlock()
	}()
	anthropic := r.URL.Path == "/v1/messages"
	if (anthropic && ex.key != toolKey) || (!anthropic && ex.auth != "Bearer "+toolKey) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"wrong key","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	}
	switch u.echoKey {
	case "":
	case "ok":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(&out, `{"id":"chatcmpl-echo","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"your key is %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":4,"total_tokens":5}}`, toolKey)
		_, _ = w.Write(out.Bytes())
		return
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(&out, `{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://example.invalid","type":"invalid_request_error","code":"invalid_api_key"}}`, toolKey)
		_, _ = w.Write(out.Bytes())
		return
	}
	if u.mode == "hang" {
		<-r.Context().Done()
		return
	}
	var req map[string]any
	if err := json.Unmarshal(ex.body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":"bad_json"}}`, err.Error())
		return
	}
	model, _ := req["model"].(string)
	stream, _ := req["stream"].(bool)
	if u.mode == "garbage" {
		w.Header().Set("Content-Type", "application/json")
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\n\n")
			return
		}
		fmt.Fprint(w, "<html>502 bad gateway</html>")
		return
	}
	var events []string
	var whole any
	switch r.URL.Path {
	case "/v1/chat/completions":
		whole, events = chatAnswer(req, model)
	case "/v1/responses":
		whole, events = responsesAnswer(req, model)
	case "/v1/messages":
		whole, events = messagesAnswer(req, model)
	case "/v1/embeddings":
		whole = map[string]any{"object": "list", "model": model, "data": []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.25, -0.5, 0.125}}},
			"usage": map[string]int{"prompt_tokens": 3, "total_tokens": 3}}
	default:
		http.NotFound(w, r)
		return
	}
	if !stream {
		b, _ := json.Marshal(whole)
		out.Write(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if u.mode == "truncate" {
		events = events[:len(events)/2]
	}
	for _, ev := range events {
		out.WriteString(ev)
		_, _ = w.Write([]byte(ev))
		w.(http.Flusher).Flush()
	}
}

// hasToolResult reports whether a request carries a tool's result.
func hasToolResult(req map[string]any) (string, bool) {
	list, _ := req["messages"].([]any)
	if in, ok := req["input"].([]any); ok {
		list = in
	}
	for _, m := range list {
		m, _ := m.(map[string]any)
		if m["role"] == "tool" {
			return fmt.Sprint(m["content"]), true
		}
		if m["type"] == "function_call_output" {
			return fmt.Sprint(m["output"]), true
		}
		parts, _ := m["content"].([]any)
		for _, p := range parts {
			if p, _ := p.(map[string]any); p["type"] == "tool_result" {
				c := p["content"]
				if cs, ok := c.([]any); ok && len(cs) > 0 {
					c = cs[0].(map[string]any)["text"]
				}
				return fmt.Sprint(c), true
			}
		}
	}
	return "", false
}

func sseData(v any) string {
	b, _ := json.Marshal(v)
	return "data: " + string(b) + "\n\n"
}

func sseNamed(name string, v any) string {
	b, _ := json.Marshal(v)
	return "event: " + name + "\ndata: " + string(b) + "\n\n"
}

const toolArgs = `{"city":"Paris"}`

func chatAnswer(req map[string]any, model string) (any, []string) {
	result, done := hasToolResult(req)
	head := func(v map[string]any) map[string]any {
		v["id"], v["object"], v["created"], v["model"] = "chatcmpl-tools", "chat.completion.chunk", 1700000000, model
		return v
	}
	usage := map[string]int{"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}
	var msg map[string]any
	finish := "stop"
	events := []string{sseData(head(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}})),
		": keep-alive\n\n"}
	if done {
		text := "The weather in Paris: " + result + "."
		msg = map[string]any{"role": "assistant", "content": text, "refusal": nil}
		for _, w := range strings.SplitAfter(text, " ") {
			events = append(events, sseData(head(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": w}, "finish_reason": nil}}})))
		}
	} else {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": []any{map[string]any{"id": "call_weather_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": toolArgs}}}}
		events = append(events, sseData(head(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": "call_weather_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": ""}}}}, "finish_reason": nil}}})))
		for _, part := range []string{`{"city":`, `"Paris"}`} {
			events = append(events, sseData(head(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{
				"index": 0, "function": map[string]any{"arguments": part}}}}, "finish_reason": nil}}})))
		}
	}
	events = append(events, sseData(head(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}})))
	if so, _ := req["stream_options"].(map[string]any); so["include_usage"] == true {
		events = append(events, sseData(head(map[string]any{"choices": []any{}, "usage": usage})))
	}
	events = append(events, "data: [DONE]\n\n")
	whole := map[string]any{"id": "chatcmpl-tools", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}}, "usage": usage}
	return whole, events
}

func responsesAnswer(req map[string]any, model string) (any, []string) {
	result, done := hasToolResult(req)
	var item map[string]any
	if done {
		item = map[string]any{"type": "message", "id": "msg_tools_2", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": "The weather in Paris: " + result + ".", "annotations": []any{}}}}
	} else {
		item = map[string]any{"type": "function_call", "id": "fc_tools_1", "call_id": "call_weather_1", "name": "get_weather", "arguments": toolArgs, "status": "completed"}
	}
	resp := func(status string, output []any) map[string]any {
		r := map[string]any{"id": "resp_tools", "object": "response", "created_at": 1700000000, "status": status, "model": model,
			"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil, "incomplete_details": nil,
			"instructions": req["instructions"], "metadata": map[string]any{}, "temperature": 1.0, "top_p": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}}}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": 40, "output_tokens": 12, "total_tokens": 52,
				"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
		}
		return r
	}
	whole := resp("completed", []any{item})
	seq := 0
	ev := func(v map[string]any) string {
		v["sequence_number"] = seq
		seq++
		return sseNamed(v["type"].(string), v)
	}
	events := []string{ev(map[string]any{"type": "response.created", "response": resp("in_progress", []any{})}),
		ev(map[string]any{"type": "response.in_progress", "response": resp("in_progress", []any{})})}
	if done {
		part := item["content"].([]any)[0].(map[string]any)
		text := part["text"].(string)
		events = append(events, ev(map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": "msg_tools_2", "status": "in_progress", "role": "assistant", "content": []any{}}}))
		events = append(events, ev(map[string]any{"type": "response.content_part.added", "item_id": "msg_tools_2", "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
		for _, w := range strings.SplitAfter(text, " ") {
			events = append(events, ev(map[string]any{"type": "response.output_text.delta", "item_id": "msg_tools_2", "output_index": 0, "content_index": 0, "delta": w}))
		}
		events = append(events, ev(map[string]any{"type": "response.output_text.done", "item_id": "msg_tools_2", "output_index": 0, "content_index": 0, "text": text}))
		events = append(events, ev(map[string]any{"type": "response.content_part.done", "item_id": "msg_tools_2", "output_index": 0, "content_index": 0, "part": part}))
	} else {
		events = append(events, ev(map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "function_call", "id": "fc_tools_1", "call_id": "call_weather_1", "name": "get_weather", "arguments": "", "status": "in_progress"}}))
		events = append(events, ev(map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_tools_1", "output_index": 0, "delta": toolArgs}))
		events = append(events, ev(map[string]any{"type": "response.function_call_arguments.done", "item_id": "fc_tools_1", "output_index": 0, "arguments": toolArgs}))
	}
	events = append(events, ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item}))
	events = append(events, ev(map[string]any{"type": "response.completed", "response": whole}))
	return whole, events
}

func messagesAnswer(req map[string]any, model string) (any, []string) {
	result, done := hasToolResult(req)
	var block map[string]any
	stop := "end_turn"
	if done {
		block = map[string]any{"type": "text", "text": "The weather in Paris: " + result + "."}
	} else {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": "toolu_weather_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}}
	}
	whole := map[string]any{"id": "msg_tools", "type": "message", "role": "assistant", "model": model, "content": []any{block},
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 40, "output_tokens": 12}}
	events := []string{sseNamed("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_tools", "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 40, "output_tokens": 1}}}),
		"event: ping\ndata: {\"type\": \"ping\"}\n\n"}
	if done {
		events = append(events, sseNamed("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}))
		for _, w := range strings.SplitAfter(block["text"].(string), " ") {
			events = append(events, sseNamed("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": w}}))
		}
	} else {
		events = append(events, sseNamed("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_weather_1", "name": "get_weather", "input": map[string]any{}}}))
		for _, part := range []string{`{"city":`, ` "Paris"}`} {
			events = append(events, sseNamed("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}}))
		}
	}
	events = append(events,
		sseNamed("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		sseNamed("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 12}}),
		sseNamed("message_stop", map[string]any{"type": "message_stop"}))
	return whole, events
}
