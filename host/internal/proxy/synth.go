package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// synthesize renders a whole recorded answer as the event stream its API
// sends for the same answer streamed: a call recorded unstreamed replays
// to a client that asks for a stream. Text arrives one word per event
// (the same on every replay), a tool call's arguments in one piece.
func synthesize(rt *route, whole []byte, includeUsage bool) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(whole, &m); err != nil || m == nil {
		return nil, errors.New("the recorded answer is not a JSON object")
	}
	var b bytes.Buffer
	switch rt.path {
	case RouteChatCompletions:
		synthChat(&b, m, includeUsage)
	case RouteMessages:
		synthMessages(&b, m)
	case RouteResponses:
		synthResponses(&b, m)
	default:
		return nil, fmt.Errorf("%s has no streamed form", rt.path)
	}
	return b.Bytes(), nil
}

func writeData(b *bytes.Buffer, name string, v any) {
	js, _ := json.Marshal(v)
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(js)
	b.WriteString("\n\n")
}

func synthChat(b *bytes.Buffer, m map[string]any, includeUsage bool) {
	chunk := func(choices []any) map[string]any {
		c := map[string]any{"id": m["id"], "object": "chat.completion.chunk", "created": m["created"], "model": m["model"], "choices": choices}
		if fp, ok := m["system_fingerprint"]; ok {
			c["system_fingerprint"] = fp
		}
		return c
	}
	for _, ch := range arr(m["choices"]) {
		ch := obj(ch)
		i := ch["index"]
		one := func(delta map[string]any, finish any) {
			writeData(b, "", chunk([]any{map[string]any{"index": i, "delta": delta, "logprobs": nil, "finish_reason": finish}}))
		}
		msg := obj(ch["message"])
		one(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
		for _, w := range chunks(str(msg["content"])) {
			one(map[string]any{"content": w}, nil)
		}
		if r := str(msg["refusal"]); r != "" {
			one(map[string]any{"refusal": r}, nil)
		}
		for j, tc := range arr(msg["tool_calls"]) {
			tc := obj(tc)
			one(map[string]any{"tool_calls": []any{map[string]any{"index": j, "id": tc["id"], "type": tc["type"], "function": tc["function"]}}}, nil)
		}
		one(map[string]any{}, ch["finish_reason"])
	}
	if u, ok := m["usage"]; ok && includeUsage {
		c := chunk([]any{})
		c["usage"] = u
		writeData(b, "", c)
	}
	b.WriteString("data: [DONE]\n\n")
}

func synthMessages(b *bytes.Buffer, m map[string]any) {
	start := map[string]any{}
	for k, v := range m {
		start[k] = v
	}
	start["content"], start["stop_reason"], start["stop_sequence"] = []any{}, nil, nil
	writeData(b, "message_start", map[string]any{"type": "message_start", "message": start})
	for i, blk := range arr(m["content"]) {
		blk := obj(blk)
		empty := map[string]any{}
		for k, v := range blk {
			empty[k] = v
		}
		delta := func(d map[string]any) {
			writeData(b, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		var deltas func()
		switch str(blk["type"]) {
		case "text":
			empty["text"] = ""
			deltas = func() {
				for _, w := range chunks(str(blk["text"])) {
					delta(map[string]any{"type": "text_delta", "text": w})
				}
			}
		case "tool_use", "server_tool_use":
			empty["input"] = map[string]any{}
			deltas = func() {
				js, _ := json.Marshal(blk["input"])
				delta(map[string]any{"type": "input_json_delta", "partial_json": string(js)})
			}
		case "thinking":
			empty["thinking"], empty["signature"] = "", ""
			deltas = func() {
				delta(map[string]any{"type": "thinking_delta", "thinking": str(blk["thinking"])})
				delta(map[string]any{"type": "signature_delta", "signature": blk["signature"]})
			}
		default:
			deltas = func() {}
		}
		writeData(b, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": empty})
		deltas()
		writeData(b, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	writeData(b, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m["stop_reason"], "stop_sequence": m["stop_sequence"]}, "usage": m["usage"]})
	writeData(b, "message_stop", map[string]any{"type": "message_stop"})
}

func synthResponses(b *bytes.Buffer, m map[string]any) {
	seq := 0
	ev := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		writeData(b, str(v["type"]), v)
	}
	start := map[string]any{}
	for k, v := range m {
		start[k] = v
	}
	start["status"], start["output"] = "in_progress", []any{}
	delete(start, "usage")
	ev(map[string]any{"type": "response.created", "response": start})
	for i, it := range arr(m["output"]) {
		it := obj(it)
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch str(it["type"]) {
		case "message":
			added["content"] = []any{}
		case "function_call":
			added["arguments"] = ""
		}
		ev(map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		id := it["id"]
		switch str(it["type"]) {
		case "message":
			for k, part := range arr(it["content"]) {
				part := obj(part)
				emptyPart := map[string]any{"type": part["type"], "text": "", "annotations": []any{}}
				ev(map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": i, "content_index": k, "part": emptyPart})
				if str(part["type"]) == "output_text" {
					for _, w := range chunks(str(part["text"])) {
						ev(map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i, "content_index": k, "delta": w})
					}
					ev(map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": k, "text": part["text"]})
				}
				ev(map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": k, "part": part})
			}
		case "function_call":
			ev(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": it["arguments"]})
			ev(map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "arguments": it["arguments"]})
		}
		ev(map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	final := "response.completed"
	switch str(m["status"]) {
	case "incomplete":
		final = "response.incomplete"
	case "failed":
		final = "response.failed"
	}
	ev(map[string]any{"type": final, "response": m})
}
