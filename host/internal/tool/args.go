package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a tool's input schema, resolved once. A nil *Schema, or one
// whose schema could not be resolved, checks only that the arguments are a
// JSON object.
type Schema struct {
	resolved *jsonschema.Resolved
}

// Compile resolves a tool's input schema. A schema the library cannot
// resolve (a remote $ref, an unsupported draft) is not an error of the
// call: such a tool's arguments are checked only for being an object.
func Compile(raw json.RawMessage) (out *Schema) {
	out = &Schema{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return out
	}
	defer func() {
		if recover() != nil { // a schema the library chokes on is one it cannot check
			out = &Schema{}
		}
	}()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return out
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return out
	}
	return &Schema{resolved: r}
}

// Check validates arguments: a JSON object matching the schema. An error
// matches ErrBadArguments and says what is wrong, in words a model can act
// on.
func (a *Schema) Check(args json.RawMessage) (err error) {
	var v any
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrBadArguments, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%w: want a JSON object, got %s", ErrBadArguments, clip(string(args), 80))
	}
	if a == nil || a.resolved == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = nil // the library failed, not the arguments
		}
	}()
	if err := a.resolved.Validate(v); err != nil {
		return fmt.Errorf("%w: %s", ErrBadArguments, strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

// Canonical returns the arguments as canonical JSON: an object with its
// keys sorted at every level, numbers as written, no spaces. Two calls
// with the same arguments written differently have the same canonical
// form, which is what a recording is keyed by. Empty arguments are {}.
func Canonical(args json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("arguments are not one JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
