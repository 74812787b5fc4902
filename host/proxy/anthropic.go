package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sextant-dev/sextant/sdk"
)

// anthropicRequest is the part of a Messages API request the proxy
// understands; anything else is refused (anthropicAccepted).
type anthropicRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	Messages      []anthropicMessage `json:"messages"`
	System        json.RawMessage    `json:"system"`
	Temperature   *float64           `json:"temperature"`
	StopSequences []string           `json:"stop_sequences"`
	Stream        bool               `json:"stream"`
	Metadata      *struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (p *Proxy) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	c, f := decodeAnthropic(w, r)
	if f != nil {
		writeAnthropicError(w, f)
		return
	}
	a, f := p.chat(r.Context(), c)
	if f != nil {
		writeHeaders(w, f.task, "", false)
		writeAnthropicError(w, f)
		return
	}
	writeHeaders(w, a.task, a.hash, a.recorded)
	model := a.resp.Model
	if model == "" {
		model = c.req.Model
	}
	id := responseID("anthropic", a.hash)
	stop := stopReason(a.resp.FinishReason)
	if !c.stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": a.resp.Text}},
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": a.resp.Usage.InputTokens, "output_tokens": a.resp.Usage.OutputTokens},
		})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": a.resp.Usage.InputTokens, "output_tokens": 1},
	}})
	sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	sse.event("ping", map[string]any{"type": "ping"})
	for _, part := range chunks(a.resp.Text) {
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": part}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": a.resp.Usage.OutputTokens}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// stopReason maps a provider's finish reason to Anthropic's stop_reason.
func stopReason(finish string) string {
	switch finish {
	case "", "stop", "end_turn":
		return "end_turn"
	case "length", "max_tokens":
		return "max_tokens"
	case "stop_sequence":
		return "stop_sequence"
	}
	return finish
}

// decodeAnthropic reads and checks a Messages API request.
func decodeAnthropic(w http.ResponseWriter, r *http.Request) (*call, *failure) {
	var in anthropicRequest
	if f := readBody(w, r, &in); f != nil {
		if name, ok := unknownField(f); ok {
			return nil, badRequest("unsupported_parameter", name, "%s: unsupported parameter: the recording proxy carries model, max_tokens, messages, system, temperature and stop_sequences only", name)
		}
		return nil, f
	}
	c := &call{api: "anthropic", stream: in.Stream}
	if in.Model == "" {
		return nil, badRequest("missing_required_parameter", "model", "model: field required")
	}
	if in.MaxTokens == nil {
		return nil, badRequest("missing_required_parameter", "max_tokens", "max_tokens: field required")
	}
	if *in.MaxTokens < 1 {
		return nil, badRequest("invalid_value", "max_tokens", "max_tokens: must be at least 1")
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("missing_required_parameter", "messages", "messages: at least one message is required")
	}
	c.req.Model, c.req.MaxTokens, c.req.Temperature, c.req.Stop = in.Model, *in.MaxTokens, in.Temperature, in.StopSequences
	if len(in.System) > 0 && string(in.System) != "null" {
		text, f := textContent(in.System, "system", "text")
		if f != nil {
			return nil, f
		}
		c.req.Messages = append(c.req.Messages, sdk.Message{Role: "system", Content: text})
	}
	for i, m := range in.Messages {
		where := fmt.Sprintf("messages.%d", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest("invalid_value", where+".role", "%s.role: %q: want user or assistant", where, m.Role)
		}
		text, f := textContent(m.Content, where, "text")
		if f != nil {
			return nil, f
		}
		c.req.Messages = append(c.req.Messages, sdk.Message{Role: m.Role, Content: text})
	}
	c.group = r.Header.Get(HeaderTask)
	if c.group == "" && in.Metadata != nil {
		c.group = in.Metadata.UserID
	}
	var f *failure
	if c.replay, f = replayHeader(r); f != nil {
		return nil, f
	}
	return c, nil
}

// writeAnthropicError writes f in Anthropic's error shape:
// {"type":"error","error":{"type","message"}}.
func writeAnthropicError(w http.ResponseWriter, f *failure) {
	typ := "invalid_request_error"
	switch f.class {
	case "not_found":
		typ = "not_found_error"
	case "rate_limit":
		typ = "rate_limit_error"
	case "auth":
		typ = "authentication_error"
	case "overloaded":
		typ = "overloaded_error"
	case "upstream", "timeout", "internal":
		typ = "api_error"
	}
	if f.status == http.StatusRequestEntityTooLarge {
		typ = "request_too_large"
	}
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+999_999_999)/1_000_000_000)))
	}
	writeJSON(w, f.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": f.msg}})
}
