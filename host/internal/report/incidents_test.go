package report

import (
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestWriteIncidentList: none says so without a hint; some end with how to
// continue one, reaching the same store.
func TestWriteIncidentList(t *testing.T) {
	var b strings.Builder
	if err := WriteIncidentList(&b, nil, " --store x"); err != nil || b.String() != "no incidents\n" {
		t.Errorf("none: %q %v", b.String(), err)
	}
	b.Reset()
	inc := &store.Incident{Kind: "error", Node: "classify", Error: "boom"}
	if err := WriteIncidentList(&b, []store.Task{{ID: "t1", Pipeline: "p", Incident: inc}}, " --store x"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "t1") || !strings.Contains(lines[1], "boom") ||
		lines[2] != "continue: sextant retry TASK [--set NAME=VALUE]... --store x" {
		t.Errorf("got\n%s", b.String())
	}
}
