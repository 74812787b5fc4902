package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"

	// Named for this file: the proxy's own sse type writes events.
	sseread "github.com/sextant-dev/sextant/sdk/sse"
)

// MaxEvent is the largest server-sent event the proxy passes on; an
// upstream event over it ends the call with an error.
const MaxEvent = sseread.MaxEvent

// assembler rebuilds a streamed answer's whole body from its events, as
// the API would have answered unstreamed: the span reads it, and a
// streamed recording answers an unstreamed replay with it.
type assembler interface {
	// add takes one event; an error is an event that is not the API's.
	add(ev sseread.Event) error
	// missing says what the stream lacks to be complete, or "" once it
	// has it; asked when the stream has ended cleanly.
	missing() string
	// failed is the error the stream reported in an event, or "".
	failed() string
	// whole is the assembled answer.
	whole() map[string]any
}

// newAssembler returns the assembler for path's events; req is the
// request's body (nil when unknown), which says what a complete chat
// stream holds.
func newAssembler(path string, req map[string]any) assembler {
	switch path {
	case RouteMessages:
		return &anthropicAsm{blocks: map[int]map[string]any{}, partial: map[int]*bytes.Buffer{}}
	case RouteResponses:
		return &responsesAsm{}
	}
	a := &chatAsm{byIndex: map[int]*chatChoice{}, choices: 1}
	if n, ok := req["n"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v > 1 && v <= 128 {
			a.choices = int(v)
		}
	}
	a.wantUsage, _ = obj(req["stream_options"])["include_usage"].(bool)
	return a
}

// decodeEvent decodes an event's data as a JSON object.
func decodeEvent(ev sseread.Event) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("malformed stream event %.200q", ev.Data)
	}
	return m, nil
}

// chatAsm assembles chat.completion.chunk events.
type chatAsm struct {
	head     map[string]any
	byIndex  map[int]*chatChoice
	order    []int
	usage    any
	finished bool
	err      string
	// choices is how many choices the request asked for (n), wantUsage
	// whether it asked for the usage chunk: what a stream without
	// [DONE] must hold to be complete.
	choices   int
	wantUsage bool
}

type chatChoice struct {
	role, content, refusal, finish string
	tools                          map[int]map[string]any
	toolOrder                      []int
	args                           map[int]*bytes.Buffer
}

func (a *chatAsm) add(ev sseread.Event) error {
	if ev.Data == nil {
		return nil
	}
	if string(ev.Data) == "[DONE]" {
		a.finished = true
		return nil
	}
	m, err := decodeEvent(ev)
	if err != nil {
		return err
	}
	if e := obj(m["error"]); e != nil {
		a.err = str(e["message"])
		if a.err == "" {
			a.err = "the upstream reported an error in its stream"
		}
		return nil
	}
	if a.head == nil {
		a.head = map[string]any{"id": m["id"], "object": "chat.completion", "created": m["created"], "model": m["model"]}
		if fp, ok := m["system_fingerprint"]; ok {
			a.head["system_fingerprint"] = fp
		}
	}
	if u, ok := m["usage"]; ok && u != nil {
		a.usage = u
	}
	for _, c := range arr(m["choices"]) {
		c := obj(c)
		i := count(c["index"])
		ch := a.byIndex[i]
		if ch == nil {
			ch = &chatChoice{tools: map[int]map[string]any{}, args: map[int]*bytes.Buffer{}}
			a.byIndex[i] = ch
			a.order = append(a.order, i)
		}
		d := obj(c["delta"])
		if r := str(d["role"]); r != "" {
			ch.role = r
		}
		ch.content += str(d["content"])
		ch.refusal += str(d["refusal"])
		if f := str(c["finish_reason"]); f != "" {
			ch.finish = f
		}
		for _, tc := range arr(d["tool_calls"]) {
			tc := obj(tc)
			j := count(tc["index"])
			t := ch.tools[j]
			if t == nil {
				t = map[string]any{"type": "function"}
				ch.tools[j] = t
				ch.args[j] = &bytes.Buffer{}
				ch.toolOrder = append(ch.toolOrder, j)
			}
			if id := str(tc["id"]); id != "" {
				t["id"] = id
			}
			fn := obj(tc["function"])
			if n := str(fn["name"]); n != "" {
				t["name"] = n
			}
			ch.args[j].WriteString(str(fn["arguments"]))
		}
	}
	return nil
}

// missing: a chat stream is complete at [DONE], or without it by the
// rule the builtin providers apply too (sseread.ChatEnd).
func (a *chatAsm) missing() string {
	if a.finished {
		return ""
	}
	end := sseread.ChatEnd{Choices: len(a.order), Asked: a.choices, AskedUsage: a.wantUsage, Usage: a.usage != nil}
	for _, i := range a.order {
		if a.byIndex[i].finish != "" {
			end.Finished++
		}
	}
	return end.Missing()
}

func (a *chatAsm) failed() string { return a.err }

func (a *chatAsm) whole() map[string]any {
	out := map[string]any{}
	for k, v := range a.head {
		out[k] = v
	}
	var choices []any
	for _, i := range a.order {
		ch := a.byIndex[i]
		role := ch.role
		if role == "" {
			role = "assistant"
		}
		msg := map[string]any{"role": role, "content": nil, "refusal": nil}
		if ch.content != "" {
			msg["content"] = ch.content
		}
		if ch.refusal != "" {
			msg["refusal"] = ch.refusal
		}
		if len(ch.toolOrder) > 0 {
			var tools []any
			for _, j := range ch.toolOrder {
				t := ch.tools[j]
				tools = append(tools, map[string]any{"id": t["id"], "type": "function",
					"function": map[string]any{"name": t["name"], "arguments": ch.args[j].String()}})
			}
			msg["tool_calls"] = tools
		}
		var finish any
		if ch.finish != "" {
			finish = ch.finish
		}
		choices = append(choices, map[string]any{"index": i, "message": msg, "finish_reason": finish, "logprobs": nil})
	}
	out["choices"] = choices
	if a.usage != nil {
		out["usage"] = a.usage
	}
	return out
}

// anthropicAsm assembles the Messages API's events.
type anthropicAsm struct {
	msg      map[string]any
	blocks   map[int]map[string]any
	order    []int
	partial  map[int]*bytes.Buffer // input_json_delta text by block
	finished bool
	err      string
}

func (a *anthropicAsm) add(ev sseread.Event) error {
	if ev.Data == nil {
		return nil
	}
	m, err := decodeEvent(ev)
	if err != nil {
		return err
	}
	switch str(m["type"]) {
	case "message_start":
		a.msg = obj(m["message"])
	case "content_block_start":
		i := count(m["index"])
		b := obj(m["content_block"])
		if b == nil {
			b = map[string]any{}
		}
		if _, ok := a.blocks[i]; !ok {
			a.order = append(a.order, i)
		}
		a.blocks[i] = b
	case "content_block_delta":
		i := count(m["index"])
		b := a.blocks[i]
		if b == nil {
			return fmt.Errorf("stream event content_block_delta for block %d, which never started", i)
		}
		d := obj(m["delta"])
		switch str(d["type"]) {
		case "text_delta":
			b["text"] = str(b["text"]) + str(d["text"])
		case "input_json_delta":
			if a.partial[i] == nil {
				a.partial[i] = &bytes.Buffer{}
			}
			a.partial[i].WriteString(str(d["partial_json"]))
		case "thinking_delta":
			b["thinking"] = str(b["thinking"]) + str(d["thinking"])
		case "signature_delta":
			b["signature"] = d["signature"]
		case "citations_delta":
			b["citations"] = append(arr(b["citations"]), d["citation"])
		}
	case "content_block_stop":
		i := count(m["index"])
		if p := a.partial[i]; p != nil && a.blocks[i] != nil {
			var input any
			if json.Unmarshal(p.Bytes(), &input) == nil {
				a.blocks[i]["input"] = input
			}
		}
	case "message_delta":
		if a.msg == nil {
			a.msg = map[string]any{}
		}
		for k, v := range obj(m["delta"]) {
			a.msg[k] = v
		}
		if u := obj(m["usage"]); u != nil {
			mu := obj(a.msg["usage"])
			if mu == nil {
				mu = map[string]any{}
			}
			for k, v := range u {
				if v != nil {
					mu[k] = v
				}
			}
			a.msg["usage"] = mu
		}
	case "message_stop":
		a.finished = true
	case "error":
		a.err = str(obj(m["error"])["message"])
		if a.err == "" {
			a.err = "the upstream reported an error in its stream"
		}
	}
	return nil
}

func (a *anthropicAsm) missing() string {
	if a.finished {
		return ""
	}
	return "its final event (message_stop)"
}

func (a *anthropicAsm) failed() string { return a.err }

func (a *anthropicAsm) whole() map[string]any {
	out := map[string]any{}
	for k, v := range a.msg {
		out[k] = v
	}
	content := []any{}
	for _, i := range a.order {
		content = append(content, a.blocks[i])
	}
	out["content"] = content
	return out
}

// responsesAsm assembles the Responses API's events: its final event
// carries the whole response.
type responsesAsm struct {
	resp     map[string]any
	finished bool
	err      string
}

func (a *responsesAsm) add(ev sseread.Event) error {
	if ev.Data == nil {
		return nil
	}
	m, err := decodeEvent(ev)
	if err != nil {
		return err
	}
	switch str(m["type"]) {
	case "response.created", "response.in_progress":
		a.resp = obj(m["response"])
	case "response.completed", "response.incomplete":
		a.resp, a.finished = obj(m["response"]), true
	case "response.failed":
		a.resp, a.finished = obj(m["response"]), true
		a.err = str(obj(a.resp["error"])["message"])
		if a.err == "" {
			a.err = "the upstream reported a failed response"
		}
	case "error":
		a.err = str(m["message"])
		if a.err == "" {
			a.err = "the upstream reported an error in its stream"
		}
	}
	return nil
}

func (a *responsesAsm) missing() string {
	if a.finished {
		return ""
	}
	return "its final event (response.completed, response.incomplete or response.failed)"
}

func (a *responsesAsm) failed() string { return a.err }

func (a *responsesAsm) whole() map[string]any {
	if a.resp == nil {
		return map[string]any{}
	}
	return a.resp
}
