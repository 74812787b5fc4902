package strategy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// FuzzLoad: Parse never panics; a rejected input is sdk.ErrInvalid with one
// problem per line; an accepted one round-trips through Encode to the same
// hash, validates, and survives every other entry point.
//
// Seeds: every fixture under testdata plus testdata/fuzz/FuzzLoad.
//
//	go test -run '^$' -fuzz FuzzLoad -fuzztime 2m ./host/strategy
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/*.toml", "testdata/*/*.toml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.toml", data)
		if err != nil {
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("error does not match sdk.ErrInvalid: %v", err)
			}
			var e *sdk.Error
			errors.As(err, &e)
			for _, p := range e.Problems {
				if p.Message == "" || strings.ContainsAny(p.String(), "\n\r") {
					t.Fatalf("problem is empty or spans lines: %q", p.String())
				}
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate rejects: %v", err)
		}
		enc := s.Encode()
		back, err := Parse("encoded.toml", enc)
		if err != nil {
			t.Fatalf("Parse(Encode(s)): %v\n%s", err, enc)
		}
		if back.Hash() != s.Hash() {
			t.Fatalf("hash changed through a round trip:\n%s\n---\n%s", enc, back.Encode())
		}
		if d := Diff(s, back); !d.Empty() {
			t.Fatalf("round trip changed the strategy:\n%s", d)
		}
		_ = s.Env()
		_ = s.Ref()
		_ = s.RenderPlaybook()
		for _, a := range append(append(s.Constraints.NeverExecute, s.Constraints.PreferConfirmFor...), "x") {
			_ = s.Decide(a, 0.5)
		}
		if len(s.Playbook) > 0 {
			b := s.Playbook[0]
			if _, err := s.Apply(Delta{Op: OpTag, ID: b.ID, Tag: TagHelpful}, Delta{Op: OpAdd, Section: b.Section, Content: b.Content}); err != nil {
				t.Fatalf("Apply on a valid playbook: %v", err)
			}
		}
	})
}
