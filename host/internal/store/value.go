package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Interface guards.
var (
	_ json.Marshaler   = Value{}
	_ json.Unmarshaler = (*Value)(nil)
)

// Attributes are a span's (or link's) key-value pairs.
type Attributes map[string]Value

// Kind is the type of an attribute value.
type Kind uint8

// The attribute value kinds, as in OpenTelemetry.
const (
	KindEmpty Kind = iota
	KindString
	KindInt
	KindFloat
	KindBool
	KindStrings // a list of strings, e.g. gen_ai.response.finish_reasons
)

// Value is one attribute value. It keeps integers and floats apart so
// that they survive a JSON round trip (a float always has a '.' or an
// exponent in JSON; an integer never does) and export to OTLP as
// intValue or doubleValue.
type Value struct {
	kind Kind
	s    string
	n    uint64 // int64 bits, float64 bits, or 0/1
	ss   []string
}

// String makes a string value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Int makes an integer value.
func Int(n int64) Value { return Value{kind: KindInt, n: uint64(n)} }

// Float makes a floating-point value. NaN and infinities cannot be stored.
func Float(f float64) Value { return Value{kind: KindFloat, n: math.Float64bits(f)} }

// Bool makes a boolean value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.n = 1
	}
	return v
}

// Strings makes a string-list value.
func Strings(ss ...string) Value { return Value{kind: KindStrings, ss: slices.Clone(ss)} }

// Kind says which of the accessors is meaningful.
func (v Value) Kind() Kind { return v.kind }

// Str returns a string value's text (and "" for other kinds).
func (v Value) Str() string { return v.s }

// Int returns an integer value.
func (v Value) Int() int64 { return int64(v.n) }

// Float returns a float value (an integer value converted).
func (v Value) Float() float64 {
	if v.kind == KindInt {
		return float64(int64(v.n))
	}
	return math.Float64frombits(v.n)
}

// Bool returns a boolean value.
func (v Value) Bool() bool { return v.n == 1 }

// List returns a string-list value's items.
func (v Value) List() []string { return v.ss }

// Any returns the value as a plain Go value (string, int64, float64, bool,
// []string, or nil).
func (v Value) Any() any {
	switch v.kind {
	case KindString:
		return v.s
	case KindInt:
		return v.Int()
	case KindFloat:
		return v.Float()
	case KindBool:
		return v.Bool()
	case KindStrings:
		return v.ss
	}
	return nil
}

// Equal reports whether two values have the same kind and content.
func (v Value) Equal(w Value) bool {
	return v.kind == w.kind && v.s == w.s && v.n == w.n && slices.Equal(v.ss, w.ss)
}

// AnyValue converts a plain Go value (string, bool, any integer or float
// type, []string) into a Value.
func AnyValue(x any) (Value, error) {
	switch x := x.(type) {
	case nil:
		return Value{}, nil
	case Value:
		return x, nil
	case string:
		return String(x), nil
	case bool:
		return Bool(x), nil
	case int:
		return Int(int64(x)), nil
	case int32:
		return Int(int64(x)), nil
	case int64:
		return Int(x), nil
	case uint32:
		return Int(int64(x)), nil
	case float32:
		return Float(float64(x)), nil
	case float64:
		return Float(x), nil
	case []string:
		return Strings(x...), nil
	case json.Number:
		return numberValue([]byte(x))
	}
	return Value{}, fmt.Errorf("attribute value of type %T is not supported (want string, int, float, bool or []string)", x)
}

var errNotFinite = errors.New("NaN and infinite floats cannot be stored")

// MarshalJSON writes the value as a plain JSON scalar or string array.
func (v Value) MarshalJSON() ([]byte, error) {
	return v.appendJSON(nil)
}

func (v Value) appendJSON(b []byte) ([]byte, error) {
	switch v.kind {
	case KindEmpty:
		return append(b, "null"...), nil
	case KindString:
		return appendJSONString(b, v.s), nil
	case KindInt:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case KindFloat:
		return appendFloat(b, v.Float())
	case KindBool:
		return strconv.AppendBool(b, v.Bool()), nil
	case KindStrings:
		b = append(b, '[')
		for i, s := range v.ss {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		return append(b, ']'), nil
	}
	return nil, fmt.Errorf("attribute value has unknown kind %d", v.kind)
}

// appendFloat formats f so that it reads back as a float: 3 becomes 3.0.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errNotFinite
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	if !bytes.ContainsAny(b[start:], ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// UnmarshalJSON reads a JSON scalar or string array. A number with a '.'
// or an exponent is a float; any other number is an integer.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("empty attribute value")
	}
	switch c := b[0]; {
	case c == 'n':
		*v = Value{}
		return nil
	case c == '"':
		if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b[1:len(b)-1], '\\') < 0 && bytes.IndexByte(b[1:len(b)-1], '"') < 0 && utf8.Valid(b[1:len(b)-1]) {
			*v = String(string(b[1 : len(b)-1])) // nothing escaped: the common case, without a second decode
			return nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = String(s)
		return nil
	case c == 't' || c == 'f':
		var x bool
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		*v = Bool(x)
		return nil
	case c == '[':
		var ss []string
		if err := json.Unmarshal(b, &ss); err != nil {
			return errors.New("attribute arrays must hold strings only")
		}
		if ss == nil {
			ss = []string{}
		}
		*v = Value{kind: KindStrings, ss: ss}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		x, err := numberValue(b)
		if err != nil {
			return err
		}
		*v = x
		return nil
	}
	return fmt.Errorf("attribute value %.40s is not a string, number, bool or string array", b)
}

func numberValue(b []byte) (Value, error) {
	if bytes.ContainsAny(b, ".eE") {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return Value{}, fmt.Errorf("attribute value %s: bad float", b)
		}
		return Float(f), nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return Value{}, fmt.Errorf("attribute value %s: integer out of range", b)
	}
	return Int(n), nil
}

// appendJSONString appends s as a JSON string, escaping like encoding/json
// (including <, > and &), so hand-written and reflected output agree —
// except \b and \f, written as \u0008 and \u000c as spans always were
// (the same value decoded; AppendJSONString writes them as encoding/json).
func appendJSONString(b []byte, s string) []byte { return appendJSON(b, s, false) }

// AppendJSONString appends s as a JSON string exactly as encoding/json
// writes it (HTML-safe, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped), for hand-written encoders that must produce its bytes.
func AppendJSONString(b []byte, s string) []byte { return appendJSON(b, s, true) }

// jsonPlain holds the bytes appendJSON writes as they are: printable
// ASCII but for ", \ and the HTML-unsafe <, > and &.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSON is appendJSONString, and with short also writes \b and \f as
// encoding/json does.
func appendJSON(b []byte, s string, short bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Most strings need no escape: skip the bytes that are written
		// as they are with one table lookup each.
		for i < len(s) && jsonPlain[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < 0x80 {
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b' && short:
				b = append(b, '\\', 'b')
			case c == '\f' && short:
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
