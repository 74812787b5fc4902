package strategy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLargeStrategy: a 50 000-bullet playbook (8 MB) validates, and its
// positions cost allocation linear in its size: ten times the bullets may
// not cost much more than ten times the bytes (the tracker this replaced
// copied the document's prefix for every key, a hundredfold).
func TestLargeStrategy(t *testing.T) {
	if testing.Short() {
		t.Skip("validates an 8 MB strategy")
	}
	small, large := bigStrategy(5_000), bigStrategy(50_000)
	var s *Strategy
	a := allocated(func() {
		var err error
		if _, err = Parse("small.toml", small); err != nil {
			t.Fatal(err)
		}
	})
	b := allocated(func() {
		var err error
		if s, err = Parse("large.toml", large); err != nil {
			t.Fatal(err)
		}
	})
	if len(s.Playbook) != 50_000 || s.Playbook[49_999].ID != "safety-49999" {
		t.Fatalf("decoded %d bullets, last %+v", len(s.Playbook), s.Playbook[len(s.Playbook)-1])
	}
	if ratio := float64(b) / float64(a); ratio > 15 {
		t.Errorf("10x the bullets allocated %.1fx the bytes (%d vs %d), want about 10x", ratio, b, a)
	}
	// A problem in the last bullet is still positioned exactly.
	bad := strings.Replace(string(small), `id = "safety-04999"`, `id = "safety 04999"`, 1)
	_, err := Parse("small.toml", []byte(bad))
	line := 1 + strings.Count(bad[:strings.Index(bad, `id = "safety 04999"`)], "\n")
	want := fmt.Sprintf("small.toml:%d", line) + `: playbook.4999.id: invalid id "safety 04999" (want letters, digits, '.', '_' and '-')`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestDeepStrategyRefused: a 200 KB strategy nesting arrays 100 000 deep,
// which once grew past 20 GB, is refused at its line before it is decoded,
// allocating little.
func TestDeepStrategyRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep.toml")
	data := "[metadata]\nname = \"deep\"\nbomb = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	n := allocated(func() { _, err = Load(path) })
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != path+":3: nesting deeper than 64 levels" {
		t.Errorf("err = %v", err)
	}
	if n > 8<<20 {
		t.Errorf("refusing a %d-byte strategy allocated %d bytes, want < 8 MiB", len(data), n)
	}
}
