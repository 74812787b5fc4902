package report

import (
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestHTMLSelfContained: the HTML report must open offline, so it may refer
// to nothing outside itself.
func TestHTMLSelfContained(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			out := strings.ToLower(string(render(t, WriteHTML, fx.report())))
			for _, bad := range []string{"http://", "https://", "//cdn", "<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import"} {
				if strings.Contains(out, bad) {
					t.Errorf("contains %q", bad)
				}
			}
			for _, want := range []string{"<!doctype html>", "<style>", `<svg class="forest"`, "</html>\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("missing %q", want)
				}
			}
		})
	}
	if out := string(render(t, WriteHTML, failingReport())); !strings.Contains(out, `<svg class="flips"`) {
		t.Error("no flipped-task chart")
	}
}

// TestHTMLEscapes: text from gates and tasks cannot inject markup.
func TestHTMLEscapes(t *testing.T) {
	r := &Report{
		Pipeline:  "<script>alert(1)</script>",
		Gates:     []GateResult{{Name: `"><svg onload=x>`, Ruling: sdk.Fail, Reasons: []string{"<b>bold</b> & <a href=https://evil>x</a>"}}},
		Metrics:   []sdk.Metric{{Name: "</text><script>", Kind: "binary"}},
		Flipped:   []Flip{{Task: "<i>t</i>", Metric: "m", From: "pass", To: "fail"}},
		Regressed: []string{"<i>t</i>"},
	}
	out := string(render(t, WriteHTML, r))
	for _, bad := range []string{"<script", "<b>", "<a ", "<i>", "<svg onload", "</text><"} {
		if strings.Contains(out, bad) {
			t.Errorf("unescaped %q", bad)
		}
	}
	if !strings.Contains(out, "&lt;b&gt;bold&lt;/b&gt;") {
		t.Error("reason not shown escaped")
	}
}

// TestForestScale: every row is scaled so its largest |value| reaches the
// edge of the plot, on the side of its sign, around the shared zero.
func TestForestScale(t *testing.T) {
	ch := forestModel([]sdk.Metric{
		{Name: "a", Effect: -0.5, CILow: -1, CIHigh: 0.25},
		{Name: "b", Effect: 200, CILow: 100, CIHigh: 400},
		{Name: "zero"},
	})
	if ch.ZeroX != "242.0" {
		t.Fatalf("zero line at %s, want 242.0 (8 + 60 + 14 + 150 + 10)", ch.ZeroX)
	}
	want := [][3]string{{"92.0", "279.5", "167.0"}, {"279.5", "392.0", "317.0"}, {"242.0", "242.0", "242.0"}}
	for i, w := range want {
		r := ch.Rows[i]
		if got := [3]string{r.X1, r.X2, r.CX}; got != w || !r.Draw {
			t.Errorf("row %d: got %v, want %v", i, got, w)
		}
	}
}

func TestTextColor(t *testing.T) {
	r := failingReport()
	plain := string(render(t, func(w io.Writer, r *Report) error { return WriteText(w, r) }, r))
	if strings.Contains(plain, "\x1b") {
		t.Fatal("escape sequence without WithColor")
	}
	off := string(render(t, func(w io.Writer, r *Report) error { return WriteText(w, r, WithColor(false)) }, r))
	if off != plain {
		t.Fatal("WithColor(false) differs from the default")
	}
	colored := string(render(t, func(w io.Writer, r *Report) error { return WriteText(w, r, WithColor(true)) }, r))
	if !strings.Contains(colored, ansiRed+"FAIL"+ansiReset) || !strings.Contains(colored, ansiYellow+"REVIEW"+ansiReset) {
		t.Fatal("rulings not coloured")
	}
	// Without the escapes, the coloured report is the plain one: colour
	// never shifts a column.
	if stripped := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(colored, ""); stripped != plain {
		t.Fatalf("coloured text differs from plain text once escapes are removed:\n%s", stripped)
	}
}

// TestTextAligned: every column of the metric table starts at the same
// offset on every line (checked on the N column, right-aligned, and the CI
// column, left-aligned).
func TestTextAligned(t *testing.T) {
	out := string(render(t, func(w io.Writer, r *Report) error { return WriteText(w, r) }, failingReport()))
	var lines []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "METRIC") {
			in = true
		}
		if in && l == "" {
			break
		}
		if in {
			lines = append(lines, l)
		}
	}
	if len(lines) != 5 {
		t.Fatalf("want header and 4 rows, got %q", lines)
	}
	ci := strings.Index(lines[0], "CI")
	for _, l := range lines {
		if len(l) != len(lines[0]) {
			t.Errorf("line %q is %d bytes, header %d", l, len(l), len(lines[0]))
		}
		if l[ci-2:ci] != "  " || l[ci] == ' ' {
			t.Errorf("CI column not at %d in %q", ci, l)
		}
	}
}

func TestMarkdownEscapesAndCaps(t *testing.T) {
	out := string(render(t, WriteMarkdown, failingReport()))
	for _, want := range []string{
		`never\_promise\_refund \| t-012`,                        // a pipe cannot end the cell
		`constraint &lt;no\_pii&gt; broken by t-150 &amp; t-077`, // no raw HTML
		"`route\\|escalate`",
		"- … and 6 more\n",   // 26 regressed, 20 shown
		"\n… and 16 more.\n", // 36 flips, 20 shown
		"**Verdict: FAIL** (exit 1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	// Every table row has the same number of cells as its header.
	var cols int
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row has %d pipes, header %d: %s", n, cols, l)
		}
	}
}

func TestMdCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"t-1", "`t-1`"},
		{"a`b", "`` a`b ``"},
		{"a|b", "`a\\|b`"},
		{"two\nlines", "`two lines`"},
		{"", ""},
	} {
		if got := mdCode(tc.in); got != tc.want {
			t.Errorf("mdCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestWriteError: a failed write fails the report, with the cause.
func TestWriteError(t *testing.T) {
	for _, f := range goldenFormats {
		t.Run(f.ext, func(t *testing.T) {
			err := f.write(failWriter{}, failingReport())
			if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.HasPrefix(err.Error(), "write ") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

var errDiskFull = errors.New("disk full")

// TestTextHostile: text from the store or a plugin (a model's reply in a
// divergence, a tool's result, a gate's reason, a task id) is shown with
// its control characters escaped, coloured or not, so none is obeyed as
// an escape sequence; sextant's own colours are written as they are.
func TestTextHostile(t *testing.T) {
	const osc, csi = "\x1b]0;pwned\x07", "\u009b2J"
	r := failingReport()
	r.Gates[0].Reasons = []string{"reason " + osc}
	r.Reasons = append(r.Reasons, "because "+csi)
	r.Regressed = []string{"task" + osc}
	r.Divergences = []Divergence{{Task: "d" + osc, Node: "n", Expected: "reply " + csi, Got: "x\x7f"}}
	r.Flipped = []Flip{{Task: "f", Metric: "m", From: "pass", To: "fail",
		Baseline:  []ToolCall{{Tool: "get", Arguments: `{"q":"` + csi + `"}`, Decision: "executed", Result: "result " + osc}},
		Candidate: []ToolCall{{Tool: "get", Decision: "failed", Error: "error " + osc}}}}
	for _, on := range []bool{false, true} {
		out := string(render(t, func(w io.Writer, r *Report) error { return WriteText(w, r, WithColor(on)) }, r))
		if strings.Contains(out, "\x1b]") || strings.ContainsAny(out, "\x07\x7f\u009b") {
			t.Errorf("colour %v: a control character from the store is written as it is:\n%q", on, out)
		}
		for _, want := range []string{`reason \x1b]0;pwned\x07`, `because \u009b2J`, `result \x1b]0;pwned\x07`, `reply \u009b2J`, `x\x7f`} {
			if !strings.Contains(out, want) {
				t.Errorf("colour %v: %q not shown escaped:\n%s", on, want, out)
			}
		}
		if on && !strings.Contains(out, ansiRed+"FAIL"+ansiReset) {
			t.Errorf("sextant's own colours are lost:\n%q", out)
		}
	}
}
