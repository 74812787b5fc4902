package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ignoredFields are the top-level request fields the canonical form
// drops, by API: they change how an answer is delivered, billed or
// grouped, never what it says.
var ignoredFields = map[string][]string{
	RouteChatCompletions: {"stream", "stream_options", "user", "metadata", "store", "safety_identifier", "prompt_cache_key"},
	RouteResponses:       {"stream", "stream_options", "user", "metadata", "store", "safety_identifier", "prompt_cache_key"},
	RouteEmbeddings:      {"user"},
	RouteMessages:        {"stream", "metadata"},
}

// rawCall is one request to a pass-through route: the client's body as
// it came, and what the proxy reads from it.
type rawCall struct {
	rt     *route
	body   []byte
	fields map[string]any // the body decoded, numbers kept as written
	model  string
	stream bool
	group  string // the grouping key; "" = one task per call
	replay bool
	// canon is the canonical form (see canonical); hash its recording
	// key for the stream mode asked, other the key of the other mode.
	canon       []byte
	hash, other string
}

// checkRaw refuses, before its body is read, a request that is not a
// POST of JSON, whose body is encoded (gzip), or whose Content-Length is
// over MaxBody.
func checkRaw(r *http.Request) *failure {
	if r.Method != http.MethodPost {
		return &failure{status: http.StatusMethodNotAllowed, class: "invalid_request", code: "method_not_allowed",
			msg: fmt.Sprintf("%s %s: only POST is served", r.Method, r.URL.Path)}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return &failure{status: http.StatusUnsupportedMediaType, class: "invalid_request", code: "unsupported_media_type",
			msg: fmt.Sprintf("content type %q: the body must be JSON", ct)}
	}
	// An encoded body would reach the JSON decoder as the bytes of its
	// encoding: it is refused by name, and no compressed body is ever
	// unpacked here (a small one unpacks to gigabytes).
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return &failure{status: http.StatusUnsupportedMediaType, class: "invalid_request", code: "unsupported_media_type",
			msg: fmt.Sprintf("content encoding %q: the proxy reads request bodies unencoded: send the JSON as it is", enc)}
	}
	if r.ContentLength > MaxBody {
		return tooLarge()
	}
	return nil
}

func tooLarge() *failure {
	return &failure{status: http.StatusRequestEntityTooLarge, class: "invalid_request", code: "request_too_large",
		msg: fmt.Sprintf("request body is larger than %d bytes", MaxBody)}
}

// parseRaw decodes body (a JSON object) for rt and computes its
// recording keys. Nothing in it is required: what the upstream requires
// is the upstream's to say.
func parseRaw(rt *route, r *http.Request, body []byte) (*rawCall, *failure) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest("invalid_json", "", "request body is not valid JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("invalid_json", "", "request body holds more than one JSON value")
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest("invalid_request", "", "request body must be a JSON object, not %s", jsonKind(v))
	}
	c := &rawCall{rt: rt, body: body, fields: fields}
	c.model, _ = fields["model"].(string)
	c.stream, _ = fields["stream"].(bool)
	c.group = r.Header.Get(HeaderTask)
	meta, _ := fields["metadata"].(map[string]any)
	if c.group == "" && rt.api == "openai" {
		c.group, _ = meta["sextant_task"].(string)
		if c.group == "" {
			c.group, _ = fields["user"].(string)
		}
	}
	if c.group == "" && rt.api == "anthropic" {
		c.group, _ = meta["user_id"].(string)
	}
	var f *failure
	if c.replay, f = replayHeader(r); f != nil {
		return nil, f
	}
	canon, err := canonical(rt.path, fields)
	if err != nil {
		return nil, badRequest("invalid_request", "", "%v", err)
	}
	c.canon = canon
	c.hash, c.other = recordingKey(rt.path, c.stream, canon), recordingKey(rt.path, !c.stream, canon)
	return c, nil
}

// canonical is the question a request asks: its body with the fields
// ignoredFields names dropped, re-encoded with object keys sorted at
// every level, no insignificant space, and numbers as the client wrote
// them.
func canonical(path string, fields map[string]any) ([]byte, error) {
	ignored := ignoredFields[path]
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if !slices.Contains(ignored, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b := make([]byte, 0, 1024)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendCanon(b, fields[k])
	}
	return append(b, '}'), nil
}

// appendCanon appends v (as the decoder made it: UseNumber) in canonical
// JSON: sorted keys, no space.
func appendCanon(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case json.Number:
		return append(b, x...)
	case string:
		return appendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanon(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendCanon(b, x[k])
		}
		return append(b, '}')
	}
	js, _ := json.Marshal(v) // not reached: the decoder makes the types above
	return append(b, js...)
}

// appendString appends s as a JSON string: the decoder made it valid
// UTF-8, so only quotes, backslashes and control characters are escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// recordingKey is the recording hash of a canonical request on path,
// asked streamed or not: a streamed answer and a whole one are recorded
// apart, each replayed byte for byte.
func recordingKey(path string, stream bool, canon []byte) string {
	h := sha256.New()
	mode := "whole"
	if stream {
		mode = "stream"
	}
	h.Write([]byte("sextant.proxy.v2\x00" + path + "\x00" + mode + "\x00"))
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

// withModel is body with its top-level "model" value replaced by model,
// every other byte as the client sent it.
func withModel(body []byte, model string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if key != "model" {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		v, _ := json.Marshal(model)
		out := make([]byte, 0, len(body)-len(raw)+len(v))
		out = append(out, body[:start]...)
		out = append(out, v...)
		return append(out, body[end:]...), nil
	}
	// No model in the request: the block's is added.
	v, _ := json.Marshal(model)
	i := bytes.IndexByte(body, '{')
	sep := ","
	if bytes.TrimSpace(body[i+1:])[0] == '}' {
		sep = ""
	}
	out := make([]byte, 0, len(body)+len(v)+10)
	out = append(out, body[:i+1]...)
	out = append(out, `"model":`...)
	out = append(out, v...)
	out = append(out, sep...)
	return append(out, body[i+1:]...), nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	}
	return "object"
}
