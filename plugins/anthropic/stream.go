package anthropic

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"github.com/sextant-dev/sextant/sdk"
)

var _ sdk.StreamingProvider = (*Provider)(nil)

// ChatStream implements sdk.StreamingProvider: one POST to
// {base_url}/v1/messages with "stream": true, whose server-sent events
// are read as they arrive and whose text deltas are handed to onDelta
// (a JSON-mode prefill first, as Chat puts it back in front of the
// answer). A server that answers in one piece is one delta.
//
// Errors are typed as for Chat; an error event inside the stream, a
// malformed or oversized event and a stream cut short (no message_stop)
// are errors too, never a shorter answer.
//
// It needs sdk.HTTPStream, so it works linked into the host; in a wasm
// module it fails.
func (p *Provider) ChatStream(ctx context.Context, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error) {
	cfg, err := parseConfig(r.Config)
	if err != nil {
		return nil, err
	}
	resp, err := p.chatStream(ctx, cfg, r, onDelta)
	return resp, llmhttp.Scrub(err, cfg.apiKey)
}

func (p *Provider) chatStream(ctx context.Context, cfg *config, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error) {
	c, err := prepare(cfg, r, true)
	if err != nil {
		return nil, err
	}
	sr, err := web.PostStream(ctx, cfg.baseURL+"/v1/messages", c.header, c.body, c.creds...)
	if err != nil {
		return nil, err
	}
	whole := func(resp *sdk.HTTPResponse) (*sdk.ChatResponse, error) {
		if resp.Status < 200 || resp.Status > 299 {
			return nil, refusalError(resp)
		}
		return decodeResponse(resp, c.prefix)
	}
	a := &streamAssembler{}
	a.text.WriteString(c.prefix)
	return web.Stream(ctx, sr, c.prefix, whole, a, onDelta)
}

// streamEvent is any event of a Messages stream; which fields are set
// depends on its type.
type streamEvent struct {
	Type    string            `json:"type"`
	Message *messagesResponse `json:"message"`
	Index   int               `json:"index"`
	// ContentBlock opens a block (content_block_start).
	ContentBlock *contentBlock `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// streamAssembler builds one answer from a Messages stream's events.
type streamAssembler struct {
	text    strings.Builder
	out     sdk.ChatResponse
	stop    *string
	started bool // message_start seen
	stopped bool // message_stop seen
	// calls are the tool_use blocks, in the order they opened; blocks
	// maps a block's index to its call.
	calls  []streamedCall
	blocks map[int]int
}

// streamedCall is a tool_use block assembled from its input_json_delta
// events.
type streamedCall struct {
	id, name string
	input    []byte
}

var _ llmhttp.Assembler = (*streamAssembler)(nil)

// Add implements llmhttp.Assembler: the text event n adds, and done at
// message_stop.
func (a *streamAssembler) Add(data string, n int) (string, bool, error) {
	delta, err := a.add(data, n)
	return delta, a.stopped, err
}

// add takes the data of event n and returns the text it adds.
func (a *streamAssembler) add(data string, n int) (string, error) {
	var e streamEvent
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		return "", sdk.Errorf(sdk.CodeUnavailable, "%s: malformed stream event %d: %v", Name, n, err)
	}
	switch e.Type {
	case "error":
		typ, msg := "", ""
		if e.Error != nil {
			typ, msg = e.Error.Type, e.Error.Message
		}
		code := sdk.CodeUnavailable
		switch typ {
		case "rate_limit_error":
			code = sdk.CodeRateLimited
		case "invalid_request_error":
			code = sdk.CodeBadRequest
		case "authentication_error", "permission_error":
			code = sdk.CodeAuth
		}
		return "", sdk.Errorf(code, "%s: stream error %s: %s", Name, typ, msg)
	case "message_start":
		if e.Message == nil {
			return "", sdk.Errorf(sdk.CodeUnavailable, "%s: malformed stream event %d: message_start without a message", Name, n)
		}
		a.started = true
		a.out.ID, a.out.Model = e.Message.ID, e.Message.Model
		if u := e.Message.Usage; u != nil {
			a.out.Usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			a.out.Usage.OutputTokens = u.OutputTokens
		}
	case "content_block_start":
		if !a.started {
			return "", sdk.Errorf(sdk.CodeUnavailable, "%s: malformed stream event %d: content before message_start", Name, n)
		}
		if b := e.ContentBlock; b != nil && b.Type == "tool_use" {
			if a.blocks == nil {
				a.blocks = map[int]int{}
			}
			a.blocks[e.Index] = len(a.calls)
			// The block's input is {} here; its text comes in deltas.
			a.calls = append(a.calls, streamedCall{id: b.ID, name: b.Name})
		}
	case "content_block_delta":
		if !a.started {
			return "", sdk.Errorf(sdk.CodeUnavailable, "%s: malformed stream event %d: content before message_start", Name, n)
		}
		switch {
		case e.Delta == nil:
		case e.Delta.Type == "text_delta":
			a.text.WriteString(e.Delta.Text)
			return e.Delta.Text, nil
		case e.Delta.Type == "input_json_delta":
			i, ok := a.blocks[e.Index]
			if !ok {
				return "", sdk.Errorf(sdk.CodeUnavailable, "%s: malformed stream event %d: input_json_delta for block %d, which is no tool_use", Name, n, e.Index)
			}
			a.calls[i].input = append(a.calls[i].input, e.Delta.PartialJSON...)
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != nil {
			a.stop = e.Delta.StopReason
		}
		if e.Usage != nil {
			a.out.Usage.OutputTokens = e.Usage.OutputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	return "", nil
}

// Finish implements llmhttp.Assembler: the assembled answer, or an error
// for a stream cut short.
func (a *streamAssembler) Finish(n int) (*sdk.ChatResponse, error) {
	if !a.stopped {
		return nil, sdk.Errorf(sdk.CodeUnavailable, "%s: stream cut short after %d events (no message_stop)", Name, n)
	}
	out := a.out
	out.Text, out.FinishReason = a.text.String(), stopReason(a.stop)
	for _, c := range a.calls {
		if len(c.input) > 0 && !json.Valid(c.input) {
			return nil, sdk.Errorf(sdk.CodeUnavailable, "%s: tool_use %s: streamed input is not JSON: %.80s", Name, c.id, c.input)
		}
		out.ToolCalls = append(out.ToolCalls, sdk.ToolCall{ID: c.id, Name: c.name, Arguments: input(c.input)})
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	return &out, nil
}
