package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

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

// serveAnthropic serves a call to a block that is not an HTTP upstream of
// the anthropic API: translated into an sdk.ChatRequest for the provider chain.
func (p *Proxy) serveAnthropic(w http.ResponseWriter, r *http.Request, body []byte, block string) {
	c, f := decodeAnthropic(body, r)
	if f != nil {
		if f.code == "unsupported_parameter" || f.code == "unsupported_value" {
			f.msg += p.translatedNote(block)
		}
		writeAnthropicError(w, f)
		return
	}
	c.block = block
	p.answerAnthropic(w, r, c)
}

// answerAnthropic answers a decoded call through the provider chain (or its
// translated recording) and writes it in the anthropic API's shape.
func (p *Proxy) answerAnthropic(w http.ResponseWriter, r *http.Request, c *call) {
	var (
		out *anthropicStream
		ls  *liveStream
	)
	if c.stream {
		out = &anthropicStream{w: w, c: c}
		ls = &liveStream{open: func(task, hash string, _ time.Time) { out.open(task, hash, false, "", 0) },
			delta: out.delta}
	}
	a, f := p.chat(r.Context(), c, ls)
	if f != nil {
		if ls != nil && ls.started {
			out.fail(f)
			return
		}
		writeHeaders(w, f.task, "", false)
		writeAnthropicError(w, f)
		return
	}
	if c.stream {
		if !ls.started {
			// A replayed answer (or an empty live one): chunked here.
			out.open(a.task, a.hash, a.recorded, a.resp.Model, a.resp.Usage.InputTokens)
			for _, part := range chunks(a.resp.Text) {
				out.delta(part)
			}
		}
		out.end(a.resp)
		return
	}
	writeHeaders(w, a.task, a.hash, a.recorded)
	model := a.resp.Model
	if model == "" {
		model = c.req.Model
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": responseID("anthropic", a.hash), "type": "message", "role": "assistant", "model": model,
		"content":     []any{map[string]any{"type": "text", "text": a.resp.Text}},
		"stop_reason": stopReason(a.resp.FinishReason), "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": a.resp.Usage.InputTokens, "output_tokens": a.resp.Usage.OutputTokens},
	})
}

// anthropicStream writes a message as the Messages API's events:
// message_start, content_block_start, ping, one content_block_delta per
// delta, content_block_stop, message_delta (stop reason, usage) and
// message_stop.
type anthropicStream struct {
	w   http.ResponseWriter
	c   *call
	sse *sse
}

// open writes the headers and the opening events. model "" is the
// requested one, and input the prompt's tokens when known (a live stream
// learns them at its end, in message_delta's usage).
func (s *anthropicStream) open(task, hash string, recorded bool, model string, input int) {
	writeHeaders(s.w, task, hash, recorded)
	if model == "" {
		model = s.c.req.Model
	}
	s.sse = newSSE(s.w)
	s.sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": responseID("anthropic", hash), "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": input, "output_tokens": 1},
	}})
	s.sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	s.sse.event("ping", map[string]any{"type": "ping"})
}

func (s *anthropicStream) delta(text string) {
	s.sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": text}})
}

func (s *anthropicStream) end(resp *sdk.ChatResponse) {
	s.sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(resp.FinishReason), "stop_sequence": nil},
		"usage": map[string]int{"input_tokens": resp.Usage.InputTokens, "output_tokens": resp.Usage.OutputTokens}})
	s.sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// fail ends a stream that broke after its first delta with Anthropic's
// error event.
func (s *anthropicStream) fail(f *failure) {
	s.sse.event("error", map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(f), "message": f.msg}})
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
func decodeAnthropic(body []byte, r *http.Request) (*call, *failure) {
	var in anthropicRequest
	if f := decodeStrict(body, &in); f != nil {
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
	typ := anthropicErrorType(f)
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+999_999_999)/1_000_000_000)))
	}
	writeJSON(w, f.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": f.msg}})
}

func anthropicErrorType(f *failure) string {
	if f.status == http.StatusRequestEntityTooLarge {
		return "request_too_large"
	}
	switch f.class {
	case "not_found":
		return "not_found_error"
	case "rate_limit":
		return "rate_limit_error"
	case "auth":
		return "authentication_error"
	case "overloaded":
		return "overloaded_error"
	case "upstream", "timeout", "internal":
		return "api_error"
	}
	return "invalid_request_error"
}
