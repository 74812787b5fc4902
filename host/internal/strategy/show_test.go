package strategy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestWriteSummary compares strategy show's text for the example
// strategy with testdata/golden/email-handler.show.txt (-update rewrites
// it).
func TestWriteSummary(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "email-handler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "golden", "email-handler.show.txt")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if !strings.Contains(b.String(), "hash "+s.Hash()+"\n") {
		t.Errorf("the summary does not name the hash %s", s.Hash())
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join("testdata", "email-handler.toml")
	s, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Check(good)
	if want := (Checked{File: good, OK: true, Name: "email-handler", Version: s.Metadata.Version, Hash: s.Hash()}); err != nil || !reflect.DeepEqual(c, want) {
		t.Errorf("valid: got %+v, %v", c, err)
	}

	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[metadata]\nname = \"x\"\nversion = \"1.0.0\"\n[parameters]\na = 1.5\n[bounds]\na = [0, 1]\nnope = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = Check(bad)
	if !errors.Is(err, sdk.ErrInvalid) || c.OK || len(c.Problems) < 2 {
		t.Fatalf("invalid: got %+v, %v; want every problem", c, err)
	}
	lines := map[string]int{}
	for _, p := range c.Problems {
		if p.File != bad {
			t.Errorf("problem of another file: %+v", p)
		}
		lines[p.Element] = p.Line
	}
	if lines["parameters.a"] != 5 || lines["bounds"] != 6 {
		t.Errorf("problems not positioned: %+v", c.Problems)
	}

	missing := filepath.Join(dir, "missing.toml")
	c, err = Check(missing)
	if err == nil || len(c.Problems) != 1 || c.Problems[0].File != missing || c.Problems[0].Message == "" {
		t.Errorf("missing: got %+v, %v", c, err)
	}
}
