package builtins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/jsonpos"
)

// DecodeDMNInput decodes data, the content of name, as the input of a
// decision: one JSON object of input data by name, its numbers exact
// (json.Number, which DMN reads as decimals). Mistakes are positioned as
// name:line:column.
func DecodeDMNInput(name string, data []byte) (map[string]any, error) {
	if len(data) > DMNMaxSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, DMNMaxSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonpos.Error(name, data, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, jsonpos.Error(name, data, dec.InputOffset(), errors.New("more than one JSON value"))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s:1:1: want a JSON object of inputs by name", name)
	}
	return m, nil
}
