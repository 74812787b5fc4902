package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// openAIRequest is the part of a chat completions request the proxy
// understands. Anything else is refused (openAIAccepted), never dropped:
// a parameter the provider chain cannot carry would silently change the
// answer.
type openAIRequest struct {
	Model               string                 `json:"model"`
	Messages            []openAIMessage        `json:"messages"`
	Temperature         *float64               `json:"temperature"`
	MaxTokens           *int                   `json:"max_tokens"`
	MaxCompletionTokens *int                   `json:"max_completion_tokens"`
	Stop                json.RawMessage        `json:"stop"`
	ResponseFormat      *struct{ Type string } `json:"response_format"`
	Stream              bool                   `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User     string            `json:"user"`
	Metadata map[string]string `json:"metadata"`
	N        *int              `json:"n"`
	// Store is accepted and ignored: the proxy stores every call anyway.
	Store json.RawMessage `json:"store"`
}

type openAIMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

func (p *Proxy) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	c, f := decodeOpenAI(w, r)
	if f != nil {
		writeOpenAIError(w, f)
		return
	}
	a, f := p.chat(r.Context(), c)
	if f != nil {
		writeHeaders(w, f.task, "", false)
		writeOpenAIError(w, f)
		return
	}
	writeHeaders(w, a.task, a.hash, a.recorded)
	model := a.resp.Model
	if model == "" {
		model = c.req.Model
	}
	id, created := responseID("openai", a.hash), a.created.Unix()
	finish := a.resp.FinishReason
	if finish == "" {
		finish = "stop"
	}
	usage := map[string]int{"prompt_tokens": a.resp.Usage.InputTokens, "completion_tokens": a.resp.Usage.OutputTokens,
		"total_tokens": a.resp.Usage.InputTokens + a.resp.Usage.OutputTokens}
	if !c.stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": a.resp.Text, "refusal": nil}}},
			"usage": usage, "system_fingerprint": nil,
		})
		return
	}
	sse := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		sse.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": nil,
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	for _, part := range chunks(a.resp.Text) {
		chunk(map[string]any{"content": part}, nil)
	}
	chunk(map[string]any{}, finish)
	if r := c.streamUsage; r {
		sse.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": nil, "choices": []any{}, "usage": usage})
	}
	sse.raw("[DONE]")
}

// decodeOpenAI reads and checks a chat completions request.
func decodeOpenAI(w http.ResponseWriter, r *http.Request) (*call, *failure) {
	var in openAIRequest
	if f := readBody(w, r, &in); f != nil {
		if name, ok := unknownField(f); ok {
			return nil, badRequest("unsupported_parameter", name, "unsupported parameter %s: the recording proxy carries messages, model, temperature, max_tokens, stop and response_format only", name)
		}
		return nil, f
	}
	c := &call{api: "openai", stream: in.Stream}
	if in.StreamOptions != nil {
		if !in.Stream {
			return nil, badRequest("invalid_value", "stream_options", "stream_options is only allowed when stream is true")
		}
		c.streamUsage = in.StreamOptions.IncludeUsage
	}
	if in.Model == "" {
		return nil, badRequest("missing_required_parameter", "model", "you must provide a model parameter")
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("missing_required_parameter", "messages", "messages must be a non-empty array")
	}
	if in.N != nil && *in.N != 1 {
		return nil, badRequest("unsupported_value", "n", "n = %d: the recording proxy answers with one choice", *in.N)
	}
	c.req.Model = in.Model
	c.req.Temperature = in.Temperature
	switch {
	case in.MaxCompletionTokens != nil:
		c.req.MaxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		c.req.MaxTokens = *in.MaxTokens
	}
	if c.req.MaxTokens < 0 {
		return nil, badRequest("invalid_value", "max_tokens", "max_tokens must be positive")
	}
	if len(in.Stop) > 0 && string(in.Stop) != "null" {
		var one string
		if json.Unmarshal(in.Stop, &one) == nil {
			c.req.Stop = []string{one}
		} else if err := json.Unmarshal(in.Stop, &c.req.Stop); err != nil {
			return nil, badRequest("invalid_value", "stop", "stop must be a string or an array of strings")
		}
	}
	if rf := in.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			c.req.JSON = true
		default:
			return nil, badRequest("unsupported_value", "response_format.type", "response_format %q: the recording proxy carries text and json_object", rf.Type)
		}
	}
	for i, m := range in.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "system", "user", "assistant":
		case "developer":
			role = "system"
		case "":
			return nil, badRequest("missing_required_parameter", where+".role", "%s: missing role", where)
		default:
			return nil, badRequest("unsupported_value", where+".role", "%s: role %q: the recording proxy carries system, developer, user and assistant messages", where, m.Role)
		}
		text, f := textContent(m.Content, where, "text")
		if f != nil {
			return nil, f
		}
		c.req.Messages = append(c.req.Messages, sdk.Message{Role: role, Content: text})
	}
	c.group = r.Header.Get(HeaderTask)
	if c.group == "" {
		c.group = in.Metadata["sextant_task"]
	}
	if c.group == "" {
		c.group = in.User
	}
	var f *failure
	if c.replay, f = replayHeader(r); f != nil {
		return nil, f
	}
	return c, nil
}

// textContent reads a message's content: a string, or an array of text
// parts (whose part type is partType), joined.
func textContent(raw json.RawMessage, where, partType string) (string, *failure) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", badRequest("missing_required_parameter", where+".content", "%s: missing content", where)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("invalid_value", where+".content", "%s: content must be a string or an array of %s parts", where, partType)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != partType || p.Text == nil {
			return "", badRequest("unsupported_value", fmt.Sprintf("%s.content[%d]", where, j),
				"%s.content[%d]: part type %q: the recording proxy carries %s parts only", where, j, p.Type, partType)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// writeOpenAIError writes f in OpenAI's error shape:
// {"error":{"message","type","param","code"}}.
func writeOpenAIError(w http.ResponseWriter, f *failure) {
	typ := "invalid_request_error"
	switch f.class {
	case "rate_limit":
		typ = "rate_limit_error"
	case "auth":
		typ = "authentication_error"
	case "upstream", "overloaded", "timeout", "internal":
		typ = "server_error"
	}
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+999_999_999)/1_000_000_000)))
	}
	var param any
	if f.param != "" {
		param = f.param
	}
	writeJSON(w, f.status, map[string]any{"error": map[string]any{"message": f.msg, "type": typ, "param": param, "code": f.code}})
}
