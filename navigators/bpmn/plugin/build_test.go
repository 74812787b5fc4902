package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBuild builds this plugin the two ways a third party would: natively
// (a go-plugin binary) and as a wasip1 reactor module.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin twice")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"native", nil, []string{"build", "-o", filepath.Join(dir, "bpmn")}},
		{"wasm", []string{"GOOS=wasip1", "GOARCH=wasm"}, []string{"build", "-buildmode=c-shared", "-o", filepath.Join(dir, "bpmn.wasm")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("go", append(c.args, ".")...)
			cmd.Env = append(os.Environ(), c.env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go %v: %v\n%s", c.args, err, out)
			}
		})
	}
}
