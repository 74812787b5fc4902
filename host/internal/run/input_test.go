package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestReadInput: an input is a JSON object from a file or stdin; anything
// else is invalid input, positioned in the file.
func TestReadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if in, err := ReadInput("", nil); err != nil || in == nil || len(in) != 0 {
		t.Fatalf("no file: %v, %v", in, err)
	}
	if in, err := ReadInput("-", strings.NewReader(`{"subject": "hi"}`)); err != nil || in["subject"] != "hi" {
		t.Fatalf("stdin: %v, %v", in, err)
	}
	for _, c := range []struct{ file, want string }{
		{write("null.json", "null"), "null.json: --input: want a JSON object, got null"},
		{write("array.json", "[1]"), "array.json:1:1"},
		{write("broken.json", "{\n  \"a\": }"), "broken.json:2:"},
		{filepath.Join(dir, "missing.json"), "no such file"},
	} {
		_, err := ReadInput(c.file, nil)
		if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid input containing %q", c.file, err, c.want)
		}
	}
}

// TestReadTruth: inline JSON is kept as given (trimmed), a file's JSON is
// checked; a mistake in either is invalid input.
func TestReadTruth(t *testing.T) {
	file := filepath.Join(t.TempDir(), "truth.json")
	if err := os.WriteFile(file, []byte(`{"label": "invoice"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{"": "", ` {"a": 1} `: `{"a": 1}`, `"spam"`: `"spam"`, file: `{"label": "invoice"}`} {
		got, err := ReadTruth(arg, nil)
		if err != nil || string(got) != want {
			t.Errorf("ReadTruth(%q) = %s, %v; want %s", arg, got, err, want)
		}
	}
	for _, arg := range []string{`{"a": }`, "[1,", filepath.Join(filepath.Dir(file), "nope.json")} {
		if _, err := ReadTruth(arg, nil); !errors.Is(err, sdk.ErrInvalid) {
			t.Errorf("ReadTruth(%q): %v, want invalid input", arg, err)
		}
	}
	bad := file + ".bad"
	if err := os.WriteFile(bad, []byte("{\"a\" 1}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTruth(bad, nil); !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "truth.json.bad:1:") {
		t.Errorf("a truth file that is not JSON: %v", err)
	}
}
