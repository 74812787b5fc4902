package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// The subset of the Messages API the provider speaks. Unknown response
// fields are ignored.

type messagesRequest struct {
	Model         string        `json:"model"`
	MaxTokens     int           `json:"max_tokens"`
	System        string        `json:"system,omitempty"`
	Messages      []sdk.Message `json:"messages"`
	Temperature   *float64      `json:"temperature,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	Stream        bool          `json:"stream,omitempty"`
}

type messagesResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason *string `json:"stop_reason"`
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
	for _, c := range r.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	out := &sdk.ChatResponse{ID: r.ID, Text: text.String(), Model: r.Model, FinishReason: stopReason(r.StopReason)}
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
