package feel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MarshalJSON encodes a FEEL value as JSON: numbers exactly, strings,
// booleans, null, lists as arrays, contexts as objects (in key order),
// ranges as their FEEL text, and dates, times, date-and-times and durations
// as the string FEEL's string() gives them. Functions encode as null.
func MarshalJSON(v any) ([]byte, error) {
	return AppendJSON(nil, v)
}

// AppendJSON appends the JSON encoding of v (see MarshalJSON) to buf.
func AppendJSON(buf []byte, v any) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(jsonTooBig); !ok {
				panic(r)
			}
			out, err = nil, fmt.Errorf("feel: encode json: value larger than %d bytes", maxJSON)
		}
	}()
	return appendJSON(buf, norm(v), 0), nil
}

// maxJSON bounds MarshalJSON's output: lists may share sublists, so a
// small value can stand for an exponentially large document.
const maxJSON = 256 << 20

type jsonTooBig struct{}

func appendJSON(b []byte, v any, depth int) []byte {
	if depth > 10*MaxDepth {
		return append(b, "null"...)
	}
	if len(b) > maxJSON {
		panic(jsonTooBig{})
	}
	switch x := v.(type) {
	case nil, *Function:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case Number:
		return x.appendString(b)
	case string:
		return appendJSONString(b, x)
	case Date:
		return appendJSONString(b, x.String())
	case Time:
		return appendJSONString(b, x.String())
	case DateTime:
		return appendJSONString(b, x.String())
	case DaysTime:
		return appendJSONString(b, x.String())
	case YearsMonths:
		return appendJSONString(b, x.String())
	case *Range:
		return appendJSONString(b, x.String())
	case []any:
		b = append(b, '[')
		for i, el := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, norm(el), depth+1)
		}
		return append(b, ']')
	case *Context:
		b = append(b, '{')
		for i, k := range x.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSON(b, x.vals[i], depth+1)
		}
		return append(b, '}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSON(b, norm(x[k]), depth+1)
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

const hexDigits = "0123456789abcdef"

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// ToJSON converts a FEEL value into plain Go values that encoding/json
// encodes as MarshalJSON does (numbers as json-compatible Number, contexts
// as map[string]any), for callers that build larger documents.
func ToJSON(v any) any {
	switch x := norm(v).(type) {
	case nil, *Function:
		return nil
	case bool, string, Number:
		return x
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = ToJSON(el)
		}
		return out
	case *Context:
		m := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			m[k] = ToJSON(x.vals[i])
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, el := range x {
			m[k] = ToJSON(el)
		}
		return m
	case interface{ String() string }:
		return x.String()
	}
	return nil
}

// MarshalJSON encodes the context as a JSON object in key order.
func (c *Context) MarshalJSON() ([]byte, error) { return MarshalJSON(c) }

// Format returns v as FEEL source text that evaluates back to it where
// FEEL has a literal for it: null, true, 1.5, "text", [1, 2], {a: 1},
// @"2024-01-31", @"P1D", [1..5). Functions print as their name.
func Format(v any) string {
	var b strings.Builder
	format(&b, norm(v), 0)
	return b.String()
}

func format(b *strings.Builder, v any, depth int) {
	if depth > 10*MaxDepth || b.Len() > maxJSON {
		b.WriteString("…")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(quoted(x))
	case Date, Time, DateTime, DaysTime, YearsMonths:
		b.WriteString(`@"`)
		b.WriteString(x.(fmt.Stringer).String())
		b.WriteString(`"`)
	case []any:
		b.WriteByte('[')
		for i, el := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			format(b, norm(el), depth+1)
		}
		b.WriteByte(']')
	case *Context, map[string]any:
		b.WriteByte('{')
		for i, k := range ctxKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			if isPlainName(k) {
				b.WriteString(k)
			} else {
				b.WriteString(quoted(k))
			}
			b.WriteString(": ")
			el, _ := ctxGet(x, k)
			format(b, el, depth+1)
		}
		b.WriteByte('}')
	case *Range:
		if x.Op != "" {
			b.WriteString(x.Op + " ")
			if x.Op == "<" || x.Op == "<=" {
				format(b, x.End, depth+1)
			} else {
				format(b, x.Start, depth+1)
			}
			return
		}
		if x.StartClosed {
			b.WriteByte('[')
		} else {
			b.WriteByte('(')
		}
		format(b, x.Start, depth+1)
		b.WriteString("..")
		format(b, x.End, depth+1)
		if x.EndClosed {
			b.WriteByte(']')
		} else {
			b.WriteByte(')')
		}
	default:
		b.WriteString(toString(x))
	}
}

func isPlainName(k string) bool {
	if k == "" || keywords[k] {
		return false
	}
	for i, r := range k {
		if i == 0 && !isNameStart(r) || i > 0 && !isNamePart(r) || r == '?' {
			return false
		}
	}
	return true
}
