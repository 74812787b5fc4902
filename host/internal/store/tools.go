package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// The recording kinds of tool calls.
const (
	// RecordTool is a tool call's result: request is a ToolRequest,
	// response an sdk.ToolResult.
	RecordTool RecordingKind = "tool"
	// RecordToolStarted marks a tool call about to be executed: a call
	// with this marker and no RecordTool under its key started and never
	// finished (the process died), so it may have taken effect.
	RecordToolStarted RecordingKind = "tool_started"
	// RecordToolList is the tools a source listed for a task: request is
	// {"source": NAME}, response the []sdk.ToolSpec.
	RecordToolList RecordingKind = "tool_list"
)

// knownKind reports whether k is a recording kind this store keeps.
func knownKind(k RecordingKind) bool {
	switch k {
	case RecordChat, RecordHuman, RecordTool, RecordToolStarted, RecordToolList, RecordEmbed:
		return true
	}
	return false
}

// ToolRequest is what a tool call asked, as its recording keeps it.
type ToolRequest struct {
	Source string `json:"source"`
	Tool   string `json:"tool"`
	// Arguments is the canonical JSON of the arguments (sorted keys).
	Arguments json.RawMessage `json:"arguments"`
	// N counts the calls of this tool with these arguments in the task,
	// from 1.
	N int `json:"n"`
}

// ToolKey is the recording key of the n-th call (from 1) in task of the
// source's tool with the given canonical arguments (JSON with sorted keys).
func ToolKey(task, source, tool string, canonicalArgs []byte, n int) string {
	return keyHash("sextant.tool.v1", []byte(task+"\x00"+source+"\x00"+tool+"\x00"+string(canonicalArgs)+"\x00"+strconv.Itoa(n)))
}

// ToolStartedKey is the key of the started marker of the call recorded
// under callKey.
func ToolStartedKey(callKey string) string {
	return keyHash("sextant.tool.started.v1", []byte(callKey))
}

// ToolApprovalKey is the key of a person's answer about the call recorded
// under callKey: what is "confirm" (may it run?) or "retry" (may a call
// that started before a crash run again?).
func ToolApprovalKey(callKey, what string) string {
	return keyHash("sextant.tool.approval.v1", []byte(callKey+"\x00"+what))
}

// ToolListKey is the key of the tools a source listed for a task.
func ToolListKey(task, source string) string {
	return keyHash("sextant.tool.list.v1", []byte(task+"\x00"+source))
}

// NewToolRecording builds the recording of a tool call's result, under
// key (ToolKey). task may be empty.
func NewToolRecording(key, task string, req ToolRequest, res *sdk.ToolResult, latency time.Duration) (*Recording, error) {
	if res == nil {
		return nil, fmt.Errorf("tool recording: nil result")
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("tool recording: %w", err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("tool recording: %w", err)
	}
	return &Recording{Hash: key, Kind: RecordTool, Provider: req.Source, Task: task, Request: in, Response: out, Latency: latency}, nil
}

// NewToolStarted builds the started marker of the call recorded under
// callKey.
func NewToolStarted(callKey, task string, req ToolRequest) (*Recording, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("tool started marker: %w", err)
	}
	return &Recording{Hash: ToolStartedKey(callKey), Kind: RecordToolStarted, Provider: req.Source, Task: task,
		Request: in, Response: json.RawMessage(`{"call":` + strconv.Quote(callKey) + `}`)}, nil
}

// NewToolList builds the recording of the tools a source listed for a task.
func NewToolList(task, source string, specs []sdk.ToolSpec) (*Recording, error) {
	if specs == nil {
		specs = []sdk.ToolSpec{}
	}
	in, err := json.Marshal(map[string]string{"source": source})
	if err != nil {
		return nil, fmt.Errorf("tool list recording: %w", err)
	}
	out, err := json.Marshal(specs)
	if err != nil {
		return nil, fmt.Errorf("tool list recording: %w", err)
	}
	return &Recording{Hash: ToolListKey(task, source), Kind: RecordToolList, Provider: source, Task: task, Request: in, Response: out}, nil
}
