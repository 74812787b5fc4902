package plugin

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSearch: the plugins folder beside a pipeline and the --plugin-dir
// flags are searched; a bad manifest fails Search, while Find still
// returns the good plugins beside its error.
func TestSearch(t *testing.T) {
	t.Setenv("SEXTANT_PLUGIN_PATH", "")
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	pipeDir, flagDir := t.TempDir(), t.TempDir()
	writePlugin(t, filepath.Join(pipeDir, "plugins"), "beside", strings.Replace(gateManifest, "%q", `"beside"`, 1), "bin")
	writePlugin(t, flagDir, "flagged", strings.Replace(gateManifest, "%q", `"flagged"`, 1), "bin")
	reg, err := Search([]string{flagDir}, pipeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"beside", "flagged"} {
		if _, ok := reg.Lookup(name); !ok {
			t.Errorf("%s not found: %v", name, reg.Names(""))
		}
	}
	other, err := Search(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Lookup("beside"); ok {
		t.Error("another pipeline's plugins folder searched")
	}

	writePlugin(t, flagDir, "broken", "name = \"broken\"\nkind = \"widget\"\n", "")
	if _, err := Search([]string{flagDir}, pipeDir); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("a bad manifest: Search gave %v, want its error", err)
	}
	entries, err := Find([]string{flagDir}, pipeDir)
	if err == nil || len(entries) < 2 {
		t.Errorf("Find: %d entries, %v; want the good plugins and the bad one's error", len(entries), err)
	}
}
