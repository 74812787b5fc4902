package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// The subset of the Messages API the provider speaks. Unknown response
// fields are ignored.

type messagesRequest struct {
	Model         string      `json:"model"`
	MaxTokens     int         `json:"max_tokens"`
	System        string      `json:"system,omitempty"`
	Messages      []message   `json:"messages"`
	Temperature   *float64    `json:"temperature,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
	Tools         []tool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice `json:"tool_choice,omitempty"`
}

// message is a conversation turn: Content is a string, or []block when
// the turn holds tool calls or tool results.
type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// block is a content block of a request's turn: text, tool_use (an
// assistant's call) or tool_result (the answer, in a user turn).
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"` // auto | any | tool | none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// contentBlock is a content block of an answer.
type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type messagesResponse struct {
	ID         string         `json:"id"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason *string        `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// errorBody decodes {"type":"error","error":{"type","message"}}; ok is
// false when the body is something else (an HTML page from a proxy).
func errorBody(body []byte) (typ, message string, ok bool) {
	var b struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil || b.Error == nil {
		return "", "", false
	}
	return b.Error.Type, b.Error.Message, true
}

// refusalError turns a non-2xx answer into an *sdk.Error. The status
// decides the code: 429 rate_limit_error is CodeRateLimited, 529
// overloaded_error and 5xx are CodeUnavailable (with the Retry-After the
// host's backoff honours, when sent).
func refusalError(resp *sdk.HTTPResponse) *sdk.Error {
	typ, msg, ok := errorBody(resp.Body)
	if !ok {
		return web.StatusError(resp, "", "")
	}
	return web.StatusError(resp, typ, msg)
}

// decodeResponse reads an answer. prefix is the text the request
// prefilled the answer with; the model continues it, so it is put back.
func decodeResponse(resp *sdk.HTTPResponse, prefix string) (*sdk.ChatResponse, error) {
	var r messagesResponse
	if err := json.Unmarshal(resp.Body, &r); err != nil {
		return nil, web.Malformed(resp, err)
	}
	if r.Content == nil && r.StopReason == nil {
		return nil, web.Malformed(resp, fmt.Errorf("no content and no stop_reason"))
	}
	var text strings.Builder
	text.WriteString(prefix)
	var calls []sdk.ToolCall
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			text.WriteString(c.Text)
		case "tool_use":
			calls = append(calls, sdk.ToolCall{ID: c.ID, Name: c.Name, Arguments: input(c.Input)})
		}
	}
	out := &sdk.ChatResponse{ID: r.ID, Text: text.String(), Model: r.Model, FinishReason: stopReason(r.StopReason), ToolCalls: calls}
	if len(calls) > 0 {
		out.FinishReason = "tool_calls"
	}
	if u := r.Usage; u != nil {
		// Cached prompt tokens are reported apart; all of them were read.
		out.Usage = sdk.Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
	}
	return out, nil
}

// stopReason maps Anthropic's stop_reason onto sextant's finish reasons
// (OpenAI's words): end_turn and stop_sequence are stop, max_tokens and
// model_context_window_exceeded are length, tool_use is tool_calls;
// anything else (refusal, pause_turn) passes through.
func stopReason(r *string) string {
	if r == nil {
		return ""
	}
	switch *r {
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	}
	return *r
}

// input is a tool_use block's input as a tool call's arguments: the JSON
// compacted (as every wire carries it), {} when there is none.
func input(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&b, raw) != nil || b.String() == "null" {
		return json.RawMessage("{}")
	}
	return b.Bytes()
}
