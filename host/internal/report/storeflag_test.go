package report

import (
	"testing"

	"github.com/sextant-dev/sextant/host/internal/project"
)

// TestStoreFlag: a store the next command finds by itself needs no
// --store; a named one is quoted for the shell.
func TestStoreFlag(t *testing.T) {
	for _, c := range []struct {
		loc  project.StoreLoc
		want string
	}{
		{project.StoreLoc{Dir: "/x", From: project.FromEnv}, ""},
		{project.StoreLoc{Dir: ".sextant", From: project.FromPipeline}, ""},
		{project.StoreLoc{Dir: "p/.sextant", From: project.FromPipeline}, " --store p/.sextant"},
		{project.StoreLoc{Dir: "my store", From: project.FromFlag}, " --store 'my store'"},
	} {
		if got := StoreFlag(c.loc); got != c.want {
			t.Errorf("StoreFlag(%+v) = %q, want %q", c.loc, got, c.want)
		}
	}
}

// TestCommandLine: arguments that need quoting for a shell get it.
func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"show", "my task", "--json"})
	if want := "sextant show 'my task' --json"; got != want {
		t.Fatalf("CommandLine = %q, want %q", got, want)
	}
}
