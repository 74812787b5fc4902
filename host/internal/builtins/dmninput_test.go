package builtins

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodeDMNInput: exact numbers; every mistake positioned.
func TestDecodeDMNInput(t *testing.T) {
	m, err := DecodeDMNInput("input", []byte(`{"Age": 42.10, "Risk": "Low"}`))
	if err != nil || m["Age"] != json.Number("42.10") || m["Risk"] != "Low" {
		t.Fatalf("got %v %v, want exact numbers", m, err)
	}
	for _, tt := range []struct{ data, want string }{
		{`{"Age": 4`, "input:1:10: unexpected end of JSON"},
		{`[1]`, "input:1:1: want a JSON object of inputs by name"},
		{`{} {}`, "input:1:5: more than one JSON value"},
		{`{"a": ` + strings.Repeat(" ", DMNMaxSize) + `1}`, "input: larger than"},
	} {
		if _, err := DecodeDMNInput("input", []byte(tt.data)); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%.20q: %v, want %q", tt.data, err, tt.want)
		}
	}
}
