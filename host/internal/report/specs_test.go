package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/report"
)

func TestCheckSpecs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs []string
		want  string
	}{
		{"none", nil, ""},
		{"files and one stdout", []string{"json=r.json", "md=-", "junit=g.xml"}, ""},
		{"two to stdout", []string{"json=-", "md=-"}, "--report: json=-, md=- all ask for stdout; only one report may go to stdout (-), write the others to files"},
		{"no path", []string{"json"}, `--report: report "json": want FORMAT=PATH, as in junit=report.xml`},
		{"unknown format", []string{"jsn=r"}, `--report: report "jsn=r": unknown report format "jsn"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := report.CheckSpecs(tc.specs)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err %v, want %s…", err, tc.want)
			}
		})
	}
	if report.ToStdout([]string{"json=r.json"}) || !report.ToStdout([]string{"json=r.json", "md=-"}) {
		t.Fatal("ToStdout does not tell a report to stdout")
	}
}

func TestWriteSpecs(t *testing.T) {
	r := &report.Report{Pipeline: "p"}
	dir := t.TempDir()
	var stdout bytes.Buffer
	if err := report.WriteSpecs([]string{"json=" + filepath.Join(dir, "r.json"), "md=-"}, &stdout, r); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := report.WriteJSON(&want, r); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("r.json: %v\n%s\nwant\n%s", err, got, want.Bytes())
	}
	if stdout.Len() == 0 {
		t.Fatal("md=- wrote nothing to stdout")
	}
	if err := report.WriteSpecs([]string{"json=" + filepath.Join(dir, "missing", "r.json")}, &stdout, r); err == nil {
		t.Fatal("a report to a missing directory did not fail")
	}
}
