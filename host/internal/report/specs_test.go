package report_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/sdk"
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
	// whole or not at all: a report that cannot be written leaves the
	// others as they were, and no temporary file behind
	if err := os.WriteFile(filepath.Join(dir, "r.md"), []byte("previous run"), 0o644); err != nil {
		t.Fatal(err)
	}
	specs := []string{"md=" + filepath.Join(dir, "r.md"), "json=" + filepath.Join(dir, "missing", "r.json")}
	if err := report.WriteSpecs(specs, &stdout, r); err == nil {
		t.Fatal("a report to a missing directory did not fail")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "r.md")); err != nil || string(got) != "previous run" {
		t.Fatalf("r.md after a failed write: %q, %v; want the previous run's", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("files left: %v, want r.json and r.md", entries)
	}
}

func TestCheckSpecsFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		specs []string
		want  string
	}{
		{"files", []string{"json=" + filepath.Join(dir, "r.json"), "md=" + filepath.Join(dir, "r.md")}, ""},
		{"no folder", []string{"json=" + filepath.Join(dir, "nodir", "r.json")}, "folder " + `"` + filepath.Join(dir, "nodir") + `" does not exist`},
		{"a folder", []string{"json=" + dir}, `"` + dir + `" is a folder`},
		{"one file twice", []string{"json=" + filepath.Join(dir, "r"), "md=" + filepath.Join(dir, ".", "r")}, "is also written by"},
		{"a file the command reads", []string{"json=" + filepath.Join(dir, "shard.jsonl")}, "is a file this command reads or writes: the report would overwrite it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := report.CheckSpecs(tc.specs, filepath.Join(dir, "pipeline.toml"), filepath.Join(dir, "x", "..", "shard.jsonl"), "")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err %v, want an invalid-input error containing %s", err, tc.want)
			}
		})
	}
}

// TestStdoutNames: /dev/stdout is stdout, as "-" is: the summary moves to
// stderr instead of the report truncating it, and two reports there are
// refused.
func TestStdoutNames(t *testing.T) {
	if !report.ToStdout([]string{"md=/dev/stdout"}) {
		t.Fatal("md=/dev/stdout does not write stdout")
	}
	if err := report.CheckSpecs([]string{"json=-", "md=/dev/stdout"}); err == nil {
		t.Fatal("two reports to stdout were accepted")
	}
	var stdout bytes.Buffer
	if err := report.WriteSpecs([]string{"md=/dev/stdout"}, &stdout, &report.Report{Pipeline: "p"}); err != nil || !strings.HasPrefix(stdout.String(), "## sextant: p") {
		t.Fatalf("md=/dev/stdout wrote %q, %v; want the report on the given stdout", stdout.String(), err)
	}
}
