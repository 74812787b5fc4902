package store

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/sextant-dev/sextant/sdk"
)

// appendChatRequest appends req as encoding/json writes it, without its
// Config and Vars (the canonical request, ChatKey), and reports false
// for a request it cannot write so: a float JSON cannot hold, or raw
// JSON (tool arguments, input schemas) that is invalid or that
// compacting would change (whitespace, <, >, &, U+2028, U+2029). The
// caller then uses encoding/json, whose bytes or error these are
// (TestChatRequestJSON). A run encodes one per provider call.
func appendChatRequest(b []byte, req *sdk.ChatRequest) ([]byte, bool) {
	b = append(b, `{"messages":`...)
	if req.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range req.Messages {
			m := &req.Messages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = AppendJSONString(b, m.Role)
			b = append(b, `,"content":`...)
			b = AppendJSONString(b, m.Content)
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":`...)
				var ok bool
				if b, ok = appendToolCalls(b, m.ToolCalls); !ok {
					return b, false
				}
			}
			if m.ToolCallID != "" {
				b = append(b, `,"tool_call_id":`...)
				b = AppendJSONString(b, m.ToolCallID)
			}
			if m.IsError {
				b = append(b, `,"is_error":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if req.Model != "" {
		b = append(b, `,"model":`...)
		b = AppendJSONString(b, req.Model)
	}
	if req.Temperature != nil {
		b = append(b, `,"temperature":`...)
		var ok bool
		if b, ok = appendJSONFloat(b, *req.Temperature); !ok {
			return b, false
		}
	}
	if req.MaxTokens != 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	if len(req.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range req.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, s)
		}
		b = append(b, ']')
	}
	if req.JSON {
		b = append(b, `,"json":true`...)
	}
	if req.Step != "" {
		b = append(b, `,"step":`...)
		b = AppendJSONString(b, req.Step)
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range req.Tools {
			t := &req.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = AppendJSONString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = AppendJSONString(b, t.Description)
			}
			if len(t.InputSchema) > 0 {
				b = append(b, `,"input_schema":`...)
				var ok bool
				if b, ok = appendRawJSON(b, t.InputSchema); !ok {
					return b, false
				}
			}
			if a := t.Annotations; a != nil {
				b = append(b, `,"annotations":{`...)
				n := len(b)
				b = appendOptBool(b, n, `"read_only":`, a.ReadOnly)
				b = appendOptBool(b, n, `"idempotent":`, a.Idempotent)
				b = appendOptBool(b, n, `"destructive":`, a.Destructive)
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if req.ToolChoice != "" {
		b = append(b, `,"tool_choice":`...)
		b = AppendJSONString(b, req.ToolChoice)
	}
	if req.ParallelToolCalls != nil {
		b = append(b, `,"parallel_tool_calls":`...)
		b = strconv.AppendBool(b, *req.ParallelToolCalls)
	}
	return append(b, '}'), true
}

// appendChatResponse appends resp as encoding/json writes it, and
// reports false when a tool call's arguments are raw JSON it cannot
// write so (appendChatRequest).
func appendChatResponse(b []byte, resp *sdk.ChatResponse) ([]byte, bool) {
	b = append(b, `{"text":`...)
	b = AppendJSONString(b, resp.Text)
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(resp.Usage.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(resp.Usage.OutputTokens), 10)
	b = append(b, '}')
	if resp.FinishReason != "" {
		b = append(b, `,"finish_reason":`...)
		b = AppendJSONString(b, resp.FinishReason)
	}
	if resp.Model != "" {
		b = append(b, `,"model":`...)
		b = AppendJSONString(b, resp.Model)
	}
	if resp.ID != "" {
		b = append(b, `,"id":`...)
		b = AppendJSONString(b, resp.ID)
	}
	if len(resp.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":`...)
		var ok bool
		if b, ok = appendToolCalls(b, resp.ToolCalls); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// chatResponseSize is about the length of resp's JSON, for a buffer made
// once.
func chatResponseSize(resp *sdk.ChatResponse) int {
	n := 96 + len(resp.Text) + len(resp.FinishReason) + len(resp.Model) + len(resp.ID)
	for _, c := range resp.ToolCalls {
		n += 40 + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return n + n/16 // a few escapes
}

// chatRequestSize is about the length of req's canonical JSON.
func chatRequestSize(req *sdk.ChatRequest) int {
	n := 64 + len(req.Model) + len(req.Step) + len(req.ToolChoice)
	for i := range req.Messages {
		m := &req.Messages[i]
		n += 32 + len(m.Role) + len(m.Content) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += 40 + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, s := range req.Stop {
		n += 3 + len(s)
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		n += 96 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n + n/16
}

func appendToolCalls(b []byte, calls []sdk.ToolCall) ([]byte, bool) {
	b = append(b, '[')
	for i := range calls {
		c := &calls[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = AppendJSONString(b, c.ID)
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, c.Name)
		b = append(b, `,"arguments":`...)
		if c.Arguments == nil {
			b = append(b, "null"...)
		} else {
			var ok bool
			if b, ok = appendRawJSON(b, c.Arguments); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendRawJSON appends raw JSON that encoding/json would write as it
// is (valid, and plainCompact); false otherwise.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, bool) {
	if !plainCompact(raw) || !json.Valid(raw) {
		return b, false
	}
	return append(b, raw...), true
}

// appendOptBool appends name and *v after a comma unless it is the first
// member written since n, for a set v.
func appendOptBool(b []byte, n int, name string, v *bool) []byte {
	if v == nil {
		return b
	}
	if len(b) > n {
		b = append(b, ',')
	}
	return strconv.AppendBool(append(b, name...), *v)
}

// appendJSONFloat appends f as encoding/json writes a float64; false for
// NaN and the infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 as e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
