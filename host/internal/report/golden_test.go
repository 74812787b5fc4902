package report

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var fixtures = []struct {
	name   string
	report func() *Report
}{
	{"pass", passingReport},
	{"fail", failingReport},
	{"tools", toolsReport},
	{"live", liveReport},
}

var goldenFormats = []struct {
	ext   string
	write WriteFunc
}{
	{"txt", func(w io.Writer, r *Report) error { return WriteText(w, r) }},
	{"color.txt", func(w io.Writer, r *Report) error { return WriteText(w, r, WithColor(true)) }},
	{"json", WriteJSON},
	{"xml", WriteJUnit},
	{"md", WriteMarkdown},
	{"html", WriteHTML},
}

func render(t *testing.T, write WriteFunc, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGolden compares every format of every fixture with its golden file,
// and checks that rendering is deterministic: twice in a row, and after
// the task lists and gate metric maps are reordered.
func TestGolden(t *testing.T) {
	for _, fx := range fixtures {
		for _, f := range goldenFormats {
			t.Run(fx.name+"."+f.ext, func(t *testing.T) {
				r := fx.report()
				got := render(t, f.write, r)
				if again := render(t, f.write, r); !bytes.Equal(got, again) {
					t.Fatal("two renderings of the same report differ")
				}
				for seed := range uint64(5) {
					if s := render(t, f.write, shuffled(r, seed)); !bytes.Equal(got, s) {
						t.Fatalf("rendering depends on the order of task lists or map keys (seed %d)", seed)
					}
				}
				path := filepath.Join("testdata", fx.name+"."+f.ext)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("output differs from %s (run go test -update if the change is intended)\n--- got ---\n%s", path, got)
				}
			})
		}
	}
}

// TestWritersLeaveReportAlone checks that no writer sorts or changes the
// caller's Report.
func TestWritersLeaveReportAlone(t *testing.T) {
	for _, f := range goldenFormats {
		t.Run(f.ext, func(t *testing.T) {
			r := shuffled(failingReport(), 42)
			before := shuffled(failingReport(), 42) // an equal, separate copy
			render(t, f.write, r)
			if string(render(t, WriteJSON, r)) != string(render(t, WriteJSON, before)) {
				t.Fatal("report changed")
			}
			for i := range r.Flipped {
				if !reflect.DeepEqual(r.Flipped[i], before.Flipped[i]) {
					t.Fatalf("Flipped[%d] changed: %v, was %v", i, r.Flipped[i], before.Flipped[i])
				}
			}
			for i := range r.Regressed {
				if r.Regressed[i] != before.Regressed[i] {
					t.Fatalf("Regressed[%d] changed: %v, was %v", i, r.Regressed[i], before.Regressed[i])
				}
			}
		})
	}
}

// TestEmptyReport renders a zero Report in every format.
func TestEmptyReport(t *testing.T) {
	for _, f := range goldenFormats {
		t.Run(f.ext, func(t *testing.T) {
			if len(render(t, f.write, &Report{})) == 0 {
				t.Fatal("empty output")
			}
		})
	}
}
