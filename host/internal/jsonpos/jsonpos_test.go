package jsonpos

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestDecode: each kind of mistake is positioned by line and character.
func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		name, data, want string
	}{
		{"syntax", "{\n  \"a\": 1,\n  \"b\" 2\n}", `in.json:3:7: --input: want a JSON object: invalid character '2' after object key`},
		{"type", "[1, 2]", `in.json:1:1: --input: want a JSON object, got a JSON array`},
		{"truncated", "{\"a\":", `in.json:1:6: --input: want a JSON object: unexpected end of JSON input`},
		{"not utf-8", "{\"é\": \"\xff\"}", `in.json:1:8: --input: not UTF-8 (byte 0xff at offset 8)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v map[string]any
			err := Decode("--input", "in.json", []byte(tt.data), &v, "a JSON object")
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
	var v map[string]any
	if err := Decode("--input", "in.json", []byte(`{"a": 1}`), &v, "a JSON object"); err != nil || v["a"] != 1.0 {
		t.Fatalf("valid input: %v %v", err, v)
	}
}

// TestError: a decoder's offset is the byte after the fault, as sextant
// decide has always reported it.
func TestError(t *testing.T) {
	data := []byte("{\n  \"Age\": 4x\n}")
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var v any
	err := dec.Decode(&v)
	if got := Error("input", data, dec.InputOffset(), err); got.Error() != "input:2:12: invalid character 'x' after object key:value pair" {
		t.Fatalf("syntax error: %v", got)
	}
	data = []byte("{\"a\": 1  \n")
	if got := Error("stdin", data, 99, io.ErrUnexpectedEOF); got.Error() != "stdin:1:8: unexpected end of JSON" {
		t.Fatalf("truncated: %v", got)
	}
	if got := Error("input", data, 3, errors.New("more than one JSON value")); got.Error() != "input:1:4: more than one JSON value" {
		t.Fatalf("other error: %v", got)
	}
}
