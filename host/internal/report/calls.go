package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// writeCall writes what a recording holds: a chat's messages and reply
// (with the tool calls the model made), the question put to a person and
// the answer, or a tool call, its started marker or a source's tool list.
// A recording that does not decode as its kind is written raw.
func writeCall(w io.Writer, indent string, r *store.Recording) {
	block := blockWriter(w, indent)
	switch r.Kind {
	case store.RecordHuman:
		var q struct{ Prompt string }
		_ = json.Unmarshal(r.Request, &q)
		block("asked", q.Prompt)
		block("answer", string(r.Response))
	case store.RecordTool:
		writeToolCall(block, r)
	case store.RecordToolStarted:
		var q store.ToolRequest
		_ = json.Unmarshal(r.Request, &q)
		block("started", toolCall(q)+" — no result was recorded: the run stopped during the call")
	case store.RecordToolList:
		var q struct{ Source string }
		var specs []sdk.ToolSpec
		_ = json.Unmarshal(r.Request, &q)
		_ = json.Unmarshal(r.Response, &specs)
		names := make([]string, len(specs))
		for i, sp := range specs {
			names[i] = sp.Name
		}
		block("tools of "+q.Source, strings.Join(names, ", "))
	default:
		writeChat(block, r)
	}
}

func writeToolCall(block func(label, text string), r *store.Recording) {
	var q store.ToolRequest
	var res sdk.ToolResult
	if !decodeCall(block, r, &q, &res) {
		return
	}
	block("tool", toolCall(q))
	label := "result"
	if res.IsError {
		label = "error"
	}
	block(label, res.Content)
	if len(res.Structured) > 0 {
		block("structured", string(res.Structured))
	}
}

func writeChat(block func(label, text string), r *store.Recording) {
	var req sdk.ChatRequest
	var resp sdk.ChatResponse
	if !decodeCall(block, r, &req, &resp) {
		return
	}
	for _, m := range req.Messages {
		if m.Content != "" || len(m.ToolCalls) == 0 {
			block(m.Role, m.Content)
		}
		for _, c := range m.ToolCalls {
			block(m.Role+" calls", fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
		}
	}
	if resp.Text != "" || len(resp.ToolCalls) == 0 {
		block("reply", resp.Text)
	}
	for _, c := range resp.ToolCalls {
		block("calls", fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
	}
}

// decodeCall decodes r's request and response into req and resp, or
// writes both raw and reports false.
func decodeCall(block func(label, text string), r *store.Recording, req, resp any) bool {
	if json.Unmarshal(r.Request, req) == nil && json.Unmarshal(r.Response, resp) == nil {
		return true
	}
	block("request", string(r.Request))
	block("response", string(r.Response))
	return false
}

// toolCall is a call as show prints it: source.tool(arguments), with its
// occurrence when the task made the same call before.
func toolCall(q store.ToolRequest) string {
	s := fmt.Sprintf("%s.%s(%s)", q.Source, q.Tool, q.Arguments)
	if q.N > 1 {
		s += fmt.Sprintf(" #%d", q.N)
	}
	return s
}
