package run

import (
	"strconv"
)

// A JSON reply (an LLM step with output = "json") is usually a small
// object of plain strings, numbers and booleans. decodeJSON reads that
// kind of value straight into the values encoding/json's Unmarshal into
// an any makes (map[string]any, []any, string, float64, bool, nil),
// without Unmarshal's copy of the text, its validating scan and its
// decoder state: its keys and strings are the reply's own substrings.
// Whatever it does not read exactly as Unmarshal would (an escape, a
// byte past ASCII or below space in a string, a number strconv refuses,
// deep nesting, an error of any kind) sends parseJSON to encoding/json,
// which then gives the value or the error. TestParseJSONFastPath checks
// both agree.

// decodeJSONDepth bounds the nesting decodeJSON follows.
const decodeJSONDepth = 64

// decodeJSON is s as one JSON value, when s is one that decodeJSON reads
// (see above), with nothing but white space around it.
func decodeJSON(s string) (any, bool) {
	d := jsonReader{s: s}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.s)
}

// jsonReader reads s from i.
type jsonReader struct {
	s string
	i int
}

// space skips JSON white space.
func (d *jsonReader) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value reads the value at d.i, after white space.
func (d *jsonReader) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.s) || depth >= decodeJSONDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		for _, lit := range [...]struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if len(d.s)-d.i >= len(lit.text) && d.s[d.i:d.i+len(lit.text)] == lit.text {
				d.i += len(lit.text)
				return lit.v, true
			}
		}
		return nil, false
	}
}

// object reads the object at d.i ('{').
func (d *jsonReader) object(depth int) (any, bool) {
	d.i++
	m := map[string]any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v // the last of equal keys wins, as with Unmarshal
		if more, ok := d.next('}'); !ok || !more {
			return m, ok
		}
	}
}

// array reads the array at d.i ('[').
func (d *jsonReader) array(depth int) (any, bool) {
	d.i++
	a := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := d.next(']'); !ok || !more {
			return a, ok
		}
	}
}

// next reads what follows a member of an object or array: a comma
// (more), or its closing bracket end; ok is false for anything else.
func (d *jsonReader) next(end byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.s) {
		return false, false
	}
	switch d.s[d.i] {
	case ',':
		d.i++
		return true, true
	case end:
		d.i++
		return false, true
	}
	return false, false
}

// str reads the string at d.i ('"'): printable ASCII without escapes
// only, which Unmarshal takes as it is.
func (d *jsonReader) str() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return d.s[start:j], true
		case c == '\\' || c < ' ' || c > '~':
			return "", false
		}
	}
	return "", false
}

// number reads the number at d.i, by JSON's grammar, as Unmarshal makes
// it: strconv.ParseFloat of its text.
func (d *jsonReader) number() (any, bool) {
	s, start := d.s, d.i
	j := start
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && s[j] >= '1' && s[j] <= '9':
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	if j < len(s) && s[j] == '.' {
		j++
		if j >= len(s) || s[j] < '0' || s[j] > '9' {
			return nil, false
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j >= len(s) || s[j] < '0' || s[j] > '9' {
			return nil, false
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	f, err := strconv.ParseFloat(s[start:j], 64)
	if err != nil {
		return nil, false // out of range: Unmarshal's error
	}
	d.i = j
	return f, true
}
