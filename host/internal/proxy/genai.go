package proxy

import (
	"encoding/json"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// Attributes of the OpenTelemetry GenAI conventions the store's genai.go
// does not name.
const (
	attrTopP        = "gen_ai.request.top_p"
	attrChoiceCount = "gen_ai.request.choice.count"
	attrSeed        = "gen_ai.request.seed"
)

// genMessage is one message in the GenAI conventions' shape
// (gen_ai.input.messages, gen_ai.output.messages): a role and its parts —
// {"type":"text","content"}, {"type":"tool_call","id","name","arguments"},
// {"type":"tool_call_response","id","response"}, {"type":"uri"|"blob",
// "modality"} for media, {"type":"reasoning","content"}.
type genMessage struct {
	Role         string    `json:"role"`
	Parts        []genPart `json:"parts"`
	FinishReason string    `json:"finish_reason,omitempty"`
}

type genPart map[string]any

// observed is what the proxy read from one answer: never required, each
// field is zero when the answer did not say.
type observed struct {
	id, model string
	finish    []string
	in, out   int
	output    []genMessage
	// text is the answer's text, joined (the dashboard shows it).
	text string
	// failed is an error the answer reported in its own body (a stream's
	// error event, a failed response).
	failed string
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func arr(v any) []any {
	a, _ := v.([]any)
	return a
}

// num reads a JSON number decoded either way (float64 or json.Number).
func num(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func count(v any) int {
	f, ok := num(v)
	if !ok || f < 0 || f > 1e12 {
		return 0
	}
	return int(f)
}

// requestAttrs are the span attributes read from a request's fields.
func requestAttrs(rt *route, f map[string]any) store.Attributes {
	a := make(store.Attributes, 24)
	a[store.AttrGenAIOperationName] = store.String(rt.op)
	a[store.AttrGenAIProviderName] = store.String(rt.api)
	if m := str(f["model"]); m != "" {
		a[store.AttrGenAIRequestModel] = store.String(m)
	}
	if v, ok := num(f["temperature"]); ok {
		a[store.AttrGenAIRequestTemperature] = store.Float(v)
	}
	if v, ok := num(f["top_p"]); ok {
		a[attrTopP] = store.Float(v)
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if v, ok := num(f[k]); ok {
			a[store.AttrGenAIRequestMaxTokens] = store.Int(int64(v))
		}
	}
	if v, ok := num(f["n"]); ok {
		a[attrChoiceCount] = store.Int(int64(v))
	}
	if v, ok := num(f["seed"]); ok {
		a[attrSeed] = store.Int(int64(v))
	}
	stop := f["stop"]
	if rt.api == "anthropic" {
		stop = f["stop_sequences"]
	}
	switch s := stop.(type) {
	case string:
		a[store.AttrGenAIRequestStopSequences] = store.Strings(s)
	case []any:
		var ss []string
		for _, x := range s {
			ss = append(ss, str(x))
		}
		a[store.AttrGenAIRequestStopSequences] = store.Strings(ss...)
	}
	if rt.op == "chat" {
		a[store.AttrGenAIOutputType] = store.String(outputKind(rt, f))
		if msgs := inputMessages(rt, f); len(msgs) > 0 {
			if b, err := json.Marshal(msgs); err == nil {
				a[store.AttrGenAIInputMessages] = store.String(string(b))
			}
		}
	}
	return a
}

// outputKind is gen_ai.output.type: json when the request asks for a
// JSON object or schema.
func outputKind(rt *route, f map[string]any) string {
	var typ string
	switch rt.path {
	case RouteChatCompletions:
		typ = str(obj(f["response_format"])["type"])
	case RouteResponses:
		typ = str(obj(obj(f["text"])["format"])["type"])
	}
	if typ == "json_object" || typ == "json_schema" {
		return "json"
	}
	return "text"
}

// inputMessages reads a request's messages (with the tool calls earlier
// answers asked for and the tool results the client sends back).
func inputMessages(rt *route, f map[string]any) []genMessage {
	var out []genMessage
	switch rt.path {
	case RouteChatCompletions:
		for _, m := range arr(f["messages"]) {
			m := obj(m)
			role := str(m["role"])
			if role == "developer" {
				role = "system"
			}
			msg := genMessage{Role: role}
			if role == "tool" {
				msg.Parts = append(msg.Parts, genPart{"type": "tool_call_response", "id": str(m["tool_call_id"]), "response": contentText(m["content"])})
			} else {
				msg.Parts = append(msg.Parts, contentParts(m["content"])...)
			}
			for _, tc := range arr(m["tool_calls"]) {
				tc := obj(tc)
				fn := obj(tc["function"])
				msg.Parts = append(msg.Parts, toolCall(str(tc["id"]), str(fn["name"]), fn["arguments"]))
			}
			out = append(out, msg)
		}
	case RouteResponses:
		if s := str(f["instructions"]); s != "" {
			out = append(out, genMessage{Role: "system", Parts: []genPart{{"type": "text", "content": s}}})
		}
		if s, ok := f["input"].(string); ok {
			return append(out, genMessage{Role: "user", Parts: []genPart{{"type": "text", "content": s}}})
		}
		for _, it := range arr(f["input"]) {
			it := obj(it)
			switch typ := str(it["type"]); typ {
			case "", "message":
				out = append(out, genMessage{Role: str(it["role"]), Parts: contentParts(it["content"])})
			case "function_call":
				out = append(out, genMessage{Role: "assistant", Parts: []genPart{toolCall(str(it["call_id"]), str(it["name"]), it["arguments"])}})
			case "function_call_output":
				out = append(out, genMessage{Role: "tool", Parts: []genPart{{"type": "tool_call_response", "id": str(it["call_id"]), "response": contentText(it["output"])}}})
			default:
				out = append(out, genMessage{Role: "assistant", Parts: []genPart{{"type": typ}}})
			}
		}
	case RouteMessages:
		if sys := f["system"]; sys != nil {
			out = append(out, genMessage{Role: "system", Parts: contentParts(sys)})
		}
		for _, m := range arr(f["messages"]) {
			m := obj(m)
			out = append(out, genMessage{Role: str(m["role"]), Parts: contentParts(m["content"])})
		}
	}
	return out
}

// toolCall is a tool_call part; arguments that are JSON text are kept as
// the object they encode.
func toolCall(id, name string, args any) genPart {
	p := genPart{"type": "tool_call", "id": id, "name": name}
	if s, ok := args.(string); ok {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			args = v
		}
	}
	if args != nil {
		p["arguments"] = args
	}
	return p
}

// contentParts reads a message's content in any of the three APIs'
// shapes: a string, or an array of typed parts.
func contentParts(c any) []genPart {
	if s, ok := c.(string); ok {
		return []genPart{{"type": "text", "content": s}}
	}
	var out []genPart
	for _, p := range arr(c) {
		p := obj(p)
		switch typ := str(p["type"]); typ {
		case "text", "input_text", "output_text":
			out = append(out, genPart{"type": "text", "content": str(p["text"])})
		case "refusal":
			out = append(out, genPart{"type": "text", "content": str(p["refusal"])})
		case "image_url", "input_image", "image":
			out = append(out, mediaPart(p, "image"))
		case "input_audio":
			out = append(out, genPart{"type": "blob", "modality": "audio"})
		case "tool_use":
			out = append(out, toolCall(str(p["id"]), str(p["name"]), p["input"]))
		case "tool_result":
			out = append(out, genPart{"type": "tool_call_response", "id": str(p["tool_use_id"]), "response": contentText(p["content"])})
		case "thinking":
			out = append(out, genPart{"type": "reasoning", "content": str(p["thinking"])})
		default:
			out = append(out, genPart{"type": typ})
		}
	}
	return out
}

// mediaPart is an image: its URL when it has one, never inline data.
func mediaPart(p map[string]any, modality string) genPart {
	url := str(p["image_url"])
	if u := obj(p["image_url"]); u != nil {
		url = str(u["url"])
	}
	if src := obj(p["source"]); src != nil && str(src["type"]) == "url" {
		url = str(src["url"])
	}
	if url != "" && !strings.HasPrefix(url, "data:") {
		return genPart{"type": "uri", "modality": modality, "uri": url}
	}
	return genPart{"type": "blob", "modality": modality}
}

// contentText is a tool result's content as text: a string, the texts of
// its parts, or its JSON.
func contentText(c any) string {
	if s, ok := c.(string); ok {
		return s
	}
	var b strings.Builder
	for _, p := range arr(c) {
		if t := str(obj(p)["text"]); t != "" {
			b.WriteString(t)
		}
	}
	if b.Len() > 0 || c == nil {
		return b.String()
	}
	js, _ := json.Marshal(c)
	return string(js)
}

// observe reads an answer's whole body (a stream's assembled answer) in
// rt's API's shape.
func observe(rt *route, m map[string]any) observed {
	var o observed
	o.id, o.model = str(m["id"]), str(m["model"])
	u := obj(m["usage"])
	var text strings.Builder
	switch rt.path {
	case RouteChatCompletions:
		o.in, o.out = count(u["prompt_tokens"]), count(u["completion_tokens"])
		for _, c := range arr(m["choices"]) {
			c := obj(c)
			msg := obj(c["message"])
			g := genMessage{Role: "assistant", FinishReason: str(c["finish_reason"])}
			if s := str(msg["content"]); s != "" {
				g.Parts = append(g.Parts, genPart{"type": "text", "content": s})
				text.WriteString(s)
			}
			if s := str(msg["refusal"]); s != "" {
				g.Parts = append(g.Parts, genPart{"type": "text", "content": s})
			}
			for _, tc := range arr(msg["tool_calls"]) {
				tc := obj(tc)
				fn := obj(tc["function"])
				g.Parts = append(g.Parts, toolCall(str(tc["id"]), str(fn["name"]), fn["arguments"]))
			}
			if g.FinishReason != "" {
				o.finish = append(o.finish, g.FinishReason)
			}
			o.output = append(o.output, g)
		}
	case RouteResponses:
		o.in, o.out = count(u["input_tokens"]), count(u["output_tokens"])
		finish := str(m["status"])
		if r := str(obj(m["incomplete_details"])["reason"]); r != "" {
			finish = r
		}
		if e := obj(m["error"]); e != nil {
			o.failed = str(e["message"])
		}
		g := genMessage{Role: "assistant", FinishReason: finish}
		for _, it := range arr(m["output"]) {
			it := obj(it)
			switch typ := str(it["type"]); typ {
			case "message":
				for _, p := range contentParts(it["content"]) {
					g.Parts = append(g.Parts, p)
					if p["type"] == "text" {
						text.WriteString(str(p["content"]))
					}
				}
			case "function_call":
				g.Parts = append(g.Parts, toolCall(str(it["call_id"]), str(it["name"]), it["arguments"]))
			default:
				g.Parts = append(g.Parts, genPart{"type": typ})
			}
		}
		if finish != "" {
			o.finish = []string{finish}
		}
		o.output = []genMessage{g}
	case RouteMessages:
		o.in = count(u["input_tokens"]) + count(u["cache_creation_input_tokens"]) + count(u["cache_read_input_tokens"])
		o.out = count(u["output_tokens"])
		g := genMessage{Role: "assistant", FinishReason: str(m["stop_reason"]), Parts: contentParts(m["content"])}
		for _, p := range g.Parts {
			if p["type"] == "text" {
				text.WriteString(str(p["content"]))
			}
		}
		if g.FinishReason != "" {
			o.finish = []string{g.FinishReason}
		}
		o.output = []genMessage{g}
	case RouteEmbeddings:
		o.in = count(u["prompt_tokens"])
	}
	o.text = text.String()
	return o
}

// attrs adds what o read to a.
func (o *observed) attrs(a store.Attributes) {
	if o.id != "" {
		a[store.AttrGenAIResponseID] = store.String(o.id)
	}
	if o.model != "" {
		a[store.AttrGenAIResponseModel] = store.String(o.model)
	}
	if len(o.finish) > 0 {
		a[store.AttrGenAIResponseFinishReasons] = store.Strings(o.finish...)
	}
	a[store.AttrGenAIUsageInputTokens] = store.Int(int64(o.in))
	a[store.AttrGenAIUsageOutputTokens] = store.Int(int64(o.out))
	if len(o.output) > 0 {
		if b, err := json.Marshal(o.output); err == nil {
			a[store.AttrGenAIOutputMessages] = store.String(string(b))
		}
	}
	var tools []string
	for _, m := range o.output {
		for _, p := range m.Parts {
			if p["type"] == "tool_call" {
				tools = append(tools, str(p["name"]))
			}
		}
	}
	if len(tools) > 0 {
		a["sextant.proxy.tool_calls"] = store.Strings(tools...)
	}
}
