package builtins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadDMNInput: inline JSON, a file, stdin and no input; a file's
// mistakes are positioned by its name.
func TestReadDMNInput(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "in.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"Age": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{\n  \"Age\": }"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ arg, stdin, want string }{
		{` {"Age": 1.50}`, "", "1.50"},
		{good, "", "7"},
		{"-", `{"Age": 3}`, "3"},
	} {
		m, err := ReadDMNInput(tt.arg, strings.NewReader(tt.stdin))
		if err != nil || m["Age"] != json.Number(tt.want) {
			t.Errorf("%q: got %v %v, want Age %s", tt.arg, m, err, tt.want)
		}
	}
	if m, err := ReadDMNInput("  ", nil); err != nil || m == nil || len(m) != 0 {
		t.Errorf("no input: got %v %v, want an empty map", m, err)
	}
	for _, tt := range []struct{ arg, want string }{
		{bad, bad + ":2:11:"},
		{"-", "stdin:1:1:"},
		{filepath.Join(dir, "missing.json"), "--input"},
	} {
		if _, err := ReadDMNInput(tt.arg, strings.NewReader("[1]")); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want it to name %q", tt.arg, err, tt.want)
		}
	}
}

// TestWriteDMNResult: FEEL text, or indented JSON with exact numbers.
func TestWriteDMNResult(t *testing.T) {
	var b strings.Builder
	if err := WriteDMNResult(&b, map[string]any{"ok": true}, true); err != nil || b.String() != "{\n  \"ok\": true\n}\n" {
		t.Errorf("json: got %q %v", b.String(), err)
	}
	b.Reset()
	if err := WriteDMNResult(&b, "Approve", false); err != nil || b.String() != "\"Approve\"\n" {
		t.Errorf("text: got %q %v", b.String(), err)
	}
}
