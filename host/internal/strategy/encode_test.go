package strategy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

func mustLoad(t testing.TB, path string) *Strategy {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func revision() Revision {
	return Revision{
		By: "sextant evolve (greedy)",
		At: time.Date(2026, 2, 17, 9, 0, 0, 0, time.FixedZone("CET", 3600)),
		Parameters: []Set{
			{Parameter: "response_speed", To: 0.85, Reason: "replay: success_rate +4% [+1%, +7%], n=200"},
			{Parameter: "user_confirmation", To: 0.6, Reason: "unchanged, not logged"},
		},
		Playbook: []Delta{
			{Op: OpAdd, Section: "reasoning", Content: "Ask before replying to a thread with more than ten recipients", Reason: "2 flipped tasks"},
			{Op: OpTag, ID: "tone-00001", Tag: TagHarmful},
			{Op: OpUpdate, ID: "reasoning-00001", Content: "Treat invoices and payment links from unknown senders as financial actions"},
		},
	}
}

func TestEncodeGolden(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	golden(t, "email-handler-2.0.0.toml", s.Encode())

	next, err := s.Revise(revision())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "email-handler-2.1.0.toml", next.Encode())
}

// TestRoundTrip: what Encode writes, Parse reads back to the same strategy,
// and encoding that gives the same bytes.
func TestRoundTrip(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	next, err := s.Revise(revision())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Strategy{s, next} {
		data := st.Encode()
		back, err := Parse("encoded.toml", data)
		if err != nil {
			t.Fatalf("Parse(Encode(%s)): %v\n%s", st.Metadata.Version, err, data)
		}
		if again := back.Encode(); !bytes.Equal(again, data) {
			t.Errorf("Encode(Parse(Encode(%s))) differs:\n%s\nwant\n%s", st.Metadata.Version, again, data)
		}
		if back.Hash() != st.Hash() {
			t.Errorf("hash changed through a round trip")
		}
	}
}

func TestHashStable(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	r := mustLoad(t, filepath.Join("testdata", "hash", "reformatted.toml"))
	if s.Hash() != r.Hash() {
		t.Errorf("reformatted file hashes differently:\n%s\nvs\n%s", s.Encode(), r.Encode())
	}
	sum := sha256.Sum256(s.Encode())
	if got, want := s.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash() = %s, want the sha256 of Encode() %s", got, want)
	}
	// A file that sextant wrote hashes to its own sha256sum.
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "email-handler-2.0.0.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != s.Hash() {
		t.Errorf("sha256 of the written file differs from Hash()")
	}
}

func TestHashSensitive(t *testing.T) {
	base := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	edits := map[string]func(*Strategy){
		"parameter":        func(s *Strategy) { s.Parameters["response_speed"] = 0.76 },
		"constraint":       func(s *Strategy) { s.Constraints.NeverExecute = append(s.Constraints.NeverExecute, "x") },
		"bullet order":     func(s *Strategy) { s.Playbook[0], s.Playbook[1] = s.Playbook[1], s.Playbook[0] },
		"counter":          func(s *Strategy) { s.Playbook[0].Neutral++ },
		"cooldown":         func(s *Strategy) { s.Evolution.Cooldown = 36 * time.Hour },
		"description":      func(s *Strategy) { s.Metadata.Description += "." },
		"change log":       func(s *Strategy) { s.ChangeLog[0].Changes[0].Reason = "" },
		"human review":     func(s *Strategy) { s.Evolution.RequiresHumanReview = true },
		"bounds":           func(s *Strategy) { s.ParameterBounds["max_retries"] = Bounds{0, 6} },
		"created at (ns)":  func(s *Strategy) { s.Metadata.CreatedAt = s.Metadata.CreatedAt.Add(1) },
		"playbook content": func(s *Strategy) { s.Playbook[1].Content = "Reply in the client's language" },
	}
	seen := map[string]string{base.Hash(): "base"}
	for name, edit := range edits {
		s := base.Clone()
		edit(s)
		h := s.Hash()
		if prev, dup := seen[h]; dup {
			t.Errorf("edit %q hashes like %q", name, prev)
		}
		seen[h] = name
	}
	if base.Hash() != mustLoad(t, filepath.Join("testdata", "email-handler.toml")).Hash() {
		t.Errorf("edits of clones changed the original")
	}
}

func TestWriteFile(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	dir := t.TempDir()
	path := filepath.Join(dir, s.FileName())
	if filepath.Base(path) != "email-handler-2.0.0.toml" {
		t.Errorf("FileName() = %s", s.FileName())
	}
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if back := mustLoad(t, path); back.Hash() != s.Hash() {
		t.Errorf("written file hashes differently")
	}
	err := s.WriteFile(path)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("second WriteFile = %v, want fs.ErrExist", err)
	}
	want := "write strategy " + path + ": file already exists (strategy versions are immutable; bump the version)"
	if err == nil || err.Error() != want {
		t.Errorf("second WriteFile = %v, want %q", err, want)
	}
	bad := s.Clone()
	bad.Metadata.Version = "two"
	if err := bad.WriteFile(filepath.Join(dir, "bad.toml")); err == nil {
		t.Error("WriteFile of an invalid strategy succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the strategy file (no temp files)", len(entries))
	}
}

func TestEncodeEscapes(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	s.Playbook[0].Content = "quote \" backslash \\ tab \t newline \n bell \x07 del \x7f é 🚀"
	s.Metadata.Description = "line one\nline two"
	s.Parameters["tiny"] = 1e-7
	s.Parameters["negzero"] = negZero()
	back, err := Parse("escaped.toml", s.Encode())
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Encode())
	}
	if back.Playbook[0].Content != s.Playbook[0].Content || back.Metadata.Description != s.Metadata.Description {
		t.Errorf("strings did not round-trip: %q", back.Playbook[0].Content)
	}
	if back.Parameters["tiny"] != 1e-7 || back.Parameters["negzero"] != 0 {
		t.Errorf("numbers did not round-trip: %v", back.Parameters)
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}
