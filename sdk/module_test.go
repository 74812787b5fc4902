package sdk_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestModuleFiles: the embedded go.mod and go.sum are the module's own,
// so a plugin scaffolded from them requires what this sdk requires.
func TestModuleFiles(t *testing.T) {
	goMod, goSum := sdk.ModuleFiles()
	if !bytes.HasPrefix(goMod, []byte("module "+sdk.ModulePath+"\n")) {
		t.Fatalf("go.mod starts %q, want module %s", goMod[:min(len(goMod), 60)], sdk.ModulePath)
	}
	for name, got := range map[string][]byte{"go.mod": goMod, "go.sum": goSum} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("ModuleFiles %s differs from the module's %s", name, name)
		}
	}
	goMod[0] = 'x' // a copy: callers cannot change what the next call returns
	if again, _ := sdk.ModuleFiles(); again[0] != 'm' {
		t.Error("ModuleFiles returned its own buffer")
	}
}
