package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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

// serveOpenAI serves a call to a block that is not an HTTP upstream of
// the openai API: translated into an sdk.ChatRequest for the provider chain.
func (p *Proxy) serveOpenAI(w http.ResponseWriter, r *http.Request, body []byte, block string) {
	c, f := decodeOpenAI(body, r)
	if f != nil {
		if f.code == "unsupported_parameter" || f.code == "unsupported_value" {
			f.msg += p.translatedNote(block)
		}
		writeOpenAIError(w, f)
		return
	}
	c.block = block
	p.answerOpenAI(w, r, c)
}

// answerOpenAI answers a decoded call through the provider chain (or its
// translated recording) and writes it in the openai API's shape.
func (p *Proxy) answerOpenAI(w http.ResponseWriter, r *http.Request, c *call) {
	var (
		out *openAIStream
		ls  *liveStream
	)
	if c.stream {
		out = &openAIStream{w: w, c: c}
		ls = &liveStream{open: func(task, hash string, created time.Time) { out.open(task, hash, false, created, "") },
			delta: out.delta}
	}
	a, f := p.chat(r.Context(), c, ls)
	if f != nil {
		if ls != nil && ls.started {
			out.fail(f)
			return
		}
		writeHeaders(w, f.task, "", false)
		writeOpenAIError(w, f)
		return
	}
	if c.stream {
		if !ls.started {
			// A replayed answer (or an empty live one): chunked here.
			out.open(a.task, a.hash, a.recorded, a.created, a.resp.Model)
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
		"id": responseID("openai", a.hash), "object": "chat.completion", "created": a.created.Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": openAIFinish(a.resp), "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": a.resp.Text, "refusal": nil}}},
		"usage": openAIUsage(a.resp), "system_fingerprint": nil,
	})
}

func openAIFinish(resp *sdk.ChatResponse) string {
	if resp.FinishReason == "" {
		return "stop"
	}
	return resp.FinishReason
}

func openAIUsage(resp *sdk.ChatResponse) map[string]int {
	return map[string]int{"prompt_tokens": resp.Usage.InputTokens, "completion_tokens": resp.Usage.OutputTokens,
		"total_tokens": resp.Usage.InputTokens + resp.Usage.OutputTokens}
}

// openAIStream writes a chat completion as chat.completion.chunk events:
// a role chunk, one chunk per delta, a chunk with the finish reason, the
// usage chunk (stream_options.include_usage) and [DONE].
type openAIStream struct {
	w       http.ResponseWriter
	c       *call
	sse     *sse
	id      string
	created int64
	model   string
}

// open writes the headers and the role chunk. model "" is the requested
// one (a live stream does not know the upstream's until it ends).
func (s *openAIStream) open(task, hash string, recorded bool, created time.Time, model string) {
	writeHeaders(s.w, task, hash, recorded)
	if model == "" {
		model = s.c.req.Model
	}
	s.id, s.created, s.model = responseID("openai", hash), created.Unix(), model
	s.sse = newSSE(s.w)
	s.chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
}

func (s *openAIStream) chunk(delta map[string]any, finish any) {
	s.sse.data(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
		"system_fingerprint": nil,
		"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}})
}

func (s *openAIStream) delta(text string) { s.chunk(map[string]any{"content": text}, nil) }

// end writes the final chunks; they carry the answer's own model.
func (s *openAIStream) end(resp *sdk.ChatResponse) {
	if resp.Model != "" {
		s.model = resp.Model
	}
	s.chunk(map[string]any{}, openAIFinish(resp))
	if s.c.streamUsage {
		s.sse.data(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
			"system_fingerprint": nil, "choices": []any{}, "usage": openAIUsage(resp)})
	}
	s.sse.raw("[DONE]")
}

// fail ends a stream that broke after its first delta with an error
// event in OpenAI's shape ({"error":{...}}, which OpenAI's own clients
// raise as an APIError) and no [DONE].
func (s *openAIStream) fail(f *failure) {
	s.sse.data(map[string]any{"error": openAIErrorBody(f)})
}

// decodeOpenAI reads and checks a chat completions request.
func decodeOpenAI(body []byte, r *http.Request) (*call, *failure) {
	var in openAIRequest
	if f := decodeStrict(body, &in); f != nil {
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
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+999_999_999)/1_000_000_000)))
	}
	writeJSON(w, f.status, map[string]any{"error": openAIErrorBody(f)})
}

// openAIErrorBody is f as OpenAI's {"message","type","param","code"}.
func openAIErrorBody(f *failure) map[string]any {
	var param any
	if f.param != "" {
		param = f.param
	}
	return map[string]any{"message": f.msg, "type": openAIErrorType(f), "param": param, "code": f.code}
}

func openAIErrorType(f *failure) string {
	switch f.class {
	case "rate_limit":
		return "rate_limit_error"
	case "auth":
		return "authentication_error"
	case "upstream", "overloaded", "timeout", "internal":
		return "server_error"
	}
	return "invalid_request_error"
}
