package strategy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestCheckFiles(t *testing.T) {
	good := filepath.Join("testdata", "email-handler.toml")
	missing := filepath.Join(t.TempDir(), "missing.toml")
	rows, errs := CheckFiles([]string{good, missing, good})
	if len(rows) != 3 || !rows[0].OK || rows[1].OK || !rows[2].OK {
		t.Fatalf("rows: %+v", rows)
	}
	if len(errs) != 1 || !errors.Is(errs[0], sdk.ErrInvalid) {
		t.Errorf("errs: %v, want the missing file's", errs)
	}
	var b strings.Builder
	if err := WriteChecked(&b, rows); err != nil {
		t.Fatal(err)
	}
	line := good + ": ok (email-handler " + rows[0].Version + ", hash " + rows[0].Hash[:12] + "…)\n"
	if b.String() != line+line {
		t.Errorf("WriteChecked:\n%s\nwant two lines %q", b.String(), line)
	}
	if rows, errs := CheckFiles(nil); rows == nil || len(rows) != 0 || errs != nil {
		t.Errorf("no files: %#v, %v; want an empty list", rows, errs)
	}
}

func TestChangesWriteText(t *testing.T) {
	base, cand := candidate(t)
	var b strings.Builder
	if err := Diff(base, cand).WriteText(&b); err != nil || b.String() != Diff(base, cand).String() {
		t.Errorf("a change: got %q, %v; want its String", b.String(), err)
	}
	b.Reset()
	if err := Diff(base, base).WriteText(&b); err != nil || b.String() != "no behavioural change from "+base.Metadata.Version+" to "+base.Metadata.Version+"\n" {
		t.Errorf("no change: got %q, %v", b.String(), err)
	}
}
