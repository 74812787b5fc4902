package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sse"
)

// The subset of the Chat Completions API the provider speaks. Unknown
// response fields are ignored, so servers that add their own (vLLM's
// prompt_logprobs, Ollama's system_fingerprint) decode the same.

type chatRequest struct {
	Model               string          `json:"model,omitempty"`
	Messages            []message       `json:"messages"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	Tools               []tool          `json:"tools,omitempty"`
	// ToolChoice is "auto", "none", "required" or a namedChoice.
	ToolChoice        any   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
}

// message is a chat message on the wire. Content is null only for an
// assistant message that holds tool calls and no text.
type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type tool struct {
	Type     string   `json:"type"` // function
	Function function `json:"function"`
}

type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type namedChoice struct {
	Type     string `json:"type"` // function
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// toolCall is a tool call in an assistant message, and in a streamed
// delta, where it comes in pieces: the first with its index, id and
// name, the rest with more of its arguments.
type toolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"` // function
	Function struct {
		Name string `json:"name,omitempty"`
		// Arguments is the JSON text of the arguments, as a string.
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatResponse struct {
	ID      string    `json:"id"`
	Model   string    `json:"model"`
	Choices []choice  `json:"choices"`
	Usage   *usage    `json:"usage"`
	Error   *apiError `json:"error"`
}

type choice struct {
	Message struct {
		Content   *string    `json:"content"`
		Refusal   *string    `json:"refusal"`
		ToolCalls []toolCall `json:"tool_calls"`
	} `json:"message"`
	Delta struct {
		Content   *string    `json:"content"`
		Refusal   *string    `json:"refusal"`
		ToolCalls []toolCall `json:"tool_calls"`
	} `json:"delta"`
	Index        int     `json:"index"`
	FinishReason *string `json:"finish_reason"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// apiError is the body of a refusal: {"error":{"message","type","code"}}.
// code is a string at OpenAI and a number at some imitations.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// kind is the most specific name the error carries: its code when that is
// a string (llama.cpp and vLLM put the HTTP status there), else its type.
func (e *apiError) kind() string {
	var s string
	if json.Unmarshal(e.Code, &s) == nil && s != "" {
		return s
	}
	return e.Type
}

// errorBody decodes an error body: OpenAI's {"error":{...}}, Ollama's
// {"error":"text"} or older vLLM's flat {"object":"error","message":...}.
// ok is false when the body is something else (an HTML page from a
// proxy, plain text).
func errorBody(body []byte) (e *apiError, ok bool) {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Object  string          `json:"object"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil, false
	}
	if len(b.Error) == 0 || string(b.Error) == "null" {
		if b.Object == "error" || b.Message != "" {
			e = new(apiError)
			return e, json.Unmarshal(body, e) == nil
		}
		return nil, false
	}
	e = new(apiError)
	if json.Unmarshal(b.Error, e) == nil {
		return e, true
	}
	var s string
	if json.Unmarshal(b.Error, &s) != nil {
		return nil, false
	}
	return &apiError{Message: s}, true
}

// refusalError turns a non-2xx answer into an *sdk.Error.
func refusalError(resp *sdk.HTTPResponse) *sdk.Error {
	e, ok := errorBody(resp.Body)
	if !ok {
		return web.StatusError(resp, "", "")
	}
	err := web.StatusError(resp, e.kind(), e.Message)
	if e.kind() == "insufficient_quota" {
		// A 429 that waiting does not cure: the account is out of credit.
		err.Code, err.RetryAfter = sdk.CodeAuth, 0
	}
	return err
}

// streamError turns an error event inside a 200 stream into an *sdk.Error.
func streamError(e *apiError) *sdk.Error {
	code := sdk.CodeUnavailable
	switch k := e.kind(); {
	case k == "insufficient_quota":
		code = sdk.CodeAuth
	case strings.Contains(k, "rate_limit"):
		code = sdk.CodeRateLimited
	case k == "invalid_request_error":
		code = sdk.CodeBadRequest
	case strings.Contains(k, "api_key"), k == "authentication_error":
		code = sdk.CodeAuth
	}
	msg := fmt.Sprintf("%s: stream error", Name)
	if k := e.kind(); k != "" {
		msg += " " + k
	}
	return &sdk.Error{Code: code, Message: msg + ": " + e.Message}
}

// decodeResponse reads a whole (non-streamed) answer.
func decodeResponse(resp *sdk.HTTPResponse) (*sdk.ChatResponse, error) {
	var r chatResponse
	if err := json.Unmarshal(resp.Body, &r); err != nil {
		return nil, web.Malformed(resp, err)
	}
	if r.Error != nil {
		return nil, streamError(r.Error)
	}
	if len(r.Choices) == 0 {
		return nil, web.Malformed(resp, fmt.Errorf("no choices"))
	}
	c := r.Choices[0]
	out := &sdk.ChatResponse{ID: r.ID, Model: r.Model, FinishReason: finishReason(c.FinishReason)}
	switch {
	case c.Message.Content != nil && *c.Message.Content != "":
		out.Text = *c.Message.Content
	case c.Message.Refusal != nil && *c.Message.Refusal != "":
		out.Text, out.FinishReason = *c.Message.Refusal, "refusal"
	}
	for _, tc := range c.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, sdk.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments)})
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls" // some servers (Ollama) say stop
	}
	if r.Usage != nil {
		out.Usage = sdk.Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}
	}
	return out, nil
}

// decodeStream assembles a server-sent event stream into one answer: the
// content deltas of choice 0 joined, its finish reason, and the usage of
// the final chunk that stream_options.include_usage asks for (req is the
// request sent).
//
// sdk.HTTP hands over the whole body, so the stream is parsed after it
// ended (ChatStream parses it as it arrives), by the same reader and
// with the same rule: a stream cut short is an error, not a shorter
// answer.
func decodeStream(resp *sdk.HTTPResponse, req *chatRequest) (*sdk.ChatResponse, error) {
	if b := bytes.TrimSpace(resp.Body); len(b) > 0 && b[0] == '{' {
		// The server ignored "stream": true and answered in one piece.
		return decodeResponse(resp)
	}
	a := newAssembler(req)
	events := llmhttp.NewSSE(bytes.NewReader(resp.Body), Name)
	for {
		_, data, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		_, done, err := a.Add(data, events.Count())
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return a.Finish(events.Count())
}

// assembler builds one answer from the data of a stream's events.
type assembler struct {
	text, refusal strings.Builder
	out           sdk.ChatResponse
	finishReason  *string
	done          bool
	n             int // events read
	// calls are the tool calls being streamed, by their index.
	calls []streamedCall
	// ends says, for each choice the stream carried (by index), whether
	// it had a finish_reason; usage whether the usage chunk came and
	// askedUsage whether the request asked for it: what a stream without
	// [DONE] must hold to be complete.
	ends              map[int]bool
	usage, askedUsage bool
}

// newAssembler returns the assembler for the stream that answers req.
func newAssembler(req *chatRequest) *assembler {
	return &assembler{ends: map[int]bool{}, askedUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
}

// streamedCall is a tool call assembled from a stream's deltas.
type streamedCall struct {
	id, name string
	args     []byte // a strings.Builder may not be copied, and calls grows
}

var _ llmhttp.Assembler = (*assembler)(nil)

// Add implements llmhttp.Assembler: it returns the text an event adds to
// the answer (a content delta, or a refusal delta while there is no
// content: a refusal is the answer only without content), and done at
// [DONE]. It counts the events itself, [DONE] aside.
func (a *assembler) Add(data string, _ int) (delta string, done bool, err error) {
	if data == "[DONE]" {
		a.done = true
		return "", true, nil
	}
	a.n++
	var c chatResponse
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return "", false, sdk.Errorf(sdk.CodeUnavailable, "%s: malformed stream event %d: %v", Name, a.n, err)
	}
	if c.Error != nil {
		return "", false, streamError(c.Error)
	}
	if c.Model != "" {
		a.out.Model = c.Model
	}
	if c.ID != "" {
		a.out.ID = c.ID
	}
	if c.Usage != nil {
		a.out.Usage = sdk.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		a.usage = true
	}
	for _, ch := range c.Choices {
		a.ends[ch.Index] = a.ends[ch.Index] || (ch.FinishReason != nil && *ch.FinishReason != "")
	}
	if len(c.Choices) == 0 {
		return "", false, nil
	}
	ch := c.Choices[0]
	if ch.Delta.Content != nil {
		a.text.WriteString(*ch.Delta.Content)
		delta = *ch.Delta.Content
	}
	if ch.Delta.Refusal != nil {
		a.refusal.WriteString(*ch.Delta.Refusal)
		if a.text.Len() == 0 {
			delta += *ch.Delta.Refusal
		}
	}
	for _, tc := range ch.Delta.ToolCalls {
		i := len(a.calls) // a server that sends no index streams one call at a time
		if tc.Index != nil {
			i = *tc.Index
		} else if tc.ID == "" && i > 0 {
			i-- // more of the last call's arguments
		}
		if i < 0 || i > len(a.calls) {
			return "", false, sdk.Errorf(sdk.CodeUnavailable, "%s: stream event %d: tool call index %d out of order (%d calls so far)", Name, a.n, i, len(a.calls))
		}
		if i == len(a.calls) {
			a.calls = append(a.calls, streamedCall{})
		}
		c := &a.calls[i]
		if tc.ID != "" {
			c.id = tc.ID
		}
		if tc.Function.Name != "" {
			c.name = tc.Function.Name
		}
		c.args = append(c.args, tc.Function.Arguments...)
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		a.finishReason = ch.FinishReason
	}
	return delta, false, nil
}

// Finish implements llmhttp.Assembler: the assembled answer, or an error
// for a stream cut short. A stream is complete at [DONE], or, ended
// cleanly without it, by the rule the recording proxy records by
// (sse.ChatEnd): every choice finished, and the usage chunk asked for in.
func (a *assembler) Finish(int) (*sdk.ChatResponse, error) {
	if !a.done {
		end := sse.ChatEnd{Choices: len(a.ends), Asked: 1, AskedUsage: a.askedUsage, Usage: a.usage}
		for _, finished := range a.ends {
			if finished {
				end.Finished++
			}
		}
		if m := end.Missing(); m != "" {
			return nil, sdk.Errorf(sdk.CodeUnavailable, "%s: stream cut short after %d events: it ended before %s", Name, a.n, m)
		}
	}
	out := a.out
	out.Text, out.FinishReason = a.text.String(), finishReason(a.finishReason)
	if out.Text == "" && a.refusal.Len() > 0 {
		out.Text, out.FinishReason = a.refusal.String(), "refusal"
	}
	for i := range a.calls {
		c := &a.calls[i]
		out.ToolCalls = append(out.ToolCalls, sdk.ToolCall{ID: c.id, Name: c.name, Arguments: arguments(string(c.args))})
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	return &out, nil
}

// arguments turns the arguments a model wrote (JSON text in a string)
// into a tool call's: the text compacted (as every wire carries it) when
// it is JSON, {} when it is empty, and otherwise the text as a JSON
// string, so that a model's malformed arguments reach the tool (which
// refuses them, and the model sees why) rather than failing the answer.
func arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) == nil {
		return b.Bytes()
	}
	q, _ := json.Marshal(s)
	return q
}

// argumentText is the arguments of a tool call as a request carries
// them: JSON text, {} for none (a call without arguments crosses the
// host's wire as null).
func argumentText(a json.RawMessage) string {
	if len(a) == 0 || string(a) == "null" {
		return "{}"
	}
	return string(a)
}

// finishReason maps OpenAI's finish_reason onto sextant's: stop, length,
// content_filter and tool_calls are kept; function_call (the older name)
// becomes tool_calls; anything else passes through.
func finishReason(r *string) string {
	if r == nil {
		return ""
	}
	if *r == "function_call" {
		return "tool_calls"
	}
	return *r
}
