// Package jsonpos positions JSON mistakes in the document they are in, as
// name:line:column (the column in characters), so that a user's input
// file, inline argument or stdin reads like a compiler error.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Decode decodes data, the content of name (a file, or "stdin"), into v.
// A mistake is positioned as name:line:column: bytes that are not UTF-8
// (which encoding/json would turn into U+FFFD without a word), a syntax
// error, or a value of the wrong type; what says what was read ("--input")
// and want what was wanted ("a JSON object").
func Decode(what, name string, data []byte, v any, want string) error {
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		line, col := Position(data, off)
		return fmt.Errorf("%s:%d:%d: %s: not UTF-8 (byte 0x%02x at offset %d)", name, line, col, what, data[off], off)
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // the offset after the byte at fault
	case errors.As(err, &te):
		off = te.Offset - 1
	}
	msg := fmt.Sprintf("want %s: %v", want, err)
	if te != nil {
		msg = fmt.Sprintf("want %s, got a JSON %s", want, te.Value)
	} else if se != nil && strings.HasPrefix(se.Error(), "unexpected end of JSON input") {
		off = int64(len(data))
	}
	if off < 0 {
		return fmt.Errorf("%s: %s: %s", name, what, msg)
	}
	line, col := Position(data, int(min(off, int64(len(data)))))
	return fmt.Errorf("%s:%d:%d: %s: %s", name, line, col, what, msg)
}

// Error positions err, which a json.Decoder reading data (the content of
// name) returned at offset off, as name:line:column.
func Error(name string, data []byte, off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		off = int64(len(bytes.TrimRight(data, " \t\r\n")))
		msg = "unexpected end of JSON"
	}
	off = max(0, min(off, int64(len(data))))
	line, col := Position(data, int(off))
	return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
}

// invalidUTF8 is the offset of the first byte of data that is not UTF-8.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// Position is the 1-based line and column (in characters) of offset off
// in data.
func Position(data []byte, off int) (line, col int) {
	line, start := 1, 0
	for i := 0; i < off && i < len(data); i++ {
		if data[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, utf8.RuneCount(data[start:min(off, len(data))]) + 1
}
