package replay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

// TestFingerprintCoversDecisions: a changed decision file changes the
// cache key, as a changed routine does: a business rule task's result
// depends on it.
func TestFingerprintCoversDecisions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("r.bpmn", "<definitions/>")
	write("d.dmn", "<definitions>1</definitions>")
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(entries)
	p := &pipeline.Pipeline{File: filepath.Join(dir, "pipeline.toml"),
		Routine: pipeline.Routine{Navigator: "bpmn", File: "r.bpmn", Decisions: []string{"d.dmn"}}}
	key := func() string {
		t.Helper()
		k, err := fingerprint(p, reg, "test")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := key()
	if b := key(); a != b {
		t.Fatalf("the same files give two keys: %s, %s", a, b)
	}
	write("d.dmn", "<definitions>2</definitions>")
	if b := key(); a == b {
		t.Fatalf("a changed decision file keeps the key %s", a)
	}
	os.Remove(filepath.Join(dir, "d.dmn"))
	if _, err := fingerprint(p, reg, "test"); err == nil {
		t.Fatal("a missing decision file gave a key")
	}
}
