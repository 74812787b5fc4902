package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheDifferential edits a copy of the email-triage example one way at
// a time (a step's system prompt, the score, the limits, the provider's
// model, a gate's options, the routine, the provider's rules) and checks
// that sextant gate gives the same report, byte for byte, and the same exit
// status from a result cache warmed by every earlier edit as from an empty
// cache. Each edit is then undone and the original judged warm again (a
// stale result must not leak back either).
func TestCacheDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the example pipeline many times")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	example := filepath.Join(root, "pipelines", "email-triage")
	for _, f := range []string{"pipeline.toml", "email-triage.bpmn", "responses.toml", "dataset.jsonl",
		"strategies/email-handler.toml", "candidates/improving.toml", "candidates/regressing.toml"} {
		b, err := os.ReadFile(filepath.Join(example, f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	isolate(t) // SEXTANT_CACHE is then set per run below
	t.Setenv("NO_COLOR", "1")
	warm := filepath.Join(dir, ".cache-warm")
	fresh := 0
	gate := func(cache string) (int, []byte, string) {
		t.Helper()
		t.Setenv("SEXTANT_CACHE", cache)
		out := filepath.Join(dir, "report.json")
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"gate", filepath.Join(dir, "pipeline.toml"),
			"--candidate", filepath.Join(dir, "candidates", "improving.toml"), "--sample", "60", "--report", "json=" + out},
			nil, &stdout, &stderr)
		b, _ := os.ReadFile(out)
		os.Remove(out)
		return code, b, stdout.String() + stderr.String()
	}
	check := func(name string) {
		t.Helper()
		fresh++
		wc, wr, wout := gate(warm)
		fc, fr, fout := gate(filepath.Join(dir, ".cache-fresh-"+strings.Repeat("x", fresh)))
		if wc != fc || !bytes.Equal(wr, fr) {
			t.Errorf("%s: warm cache exit %d, fresh cache exit %d\nwarm:\n%s\nfresh:\n%s", name, wc, fc, wout, fout)
		}
		if fc == ExitInvalid {
			t.Errorf("%s: the edit made the pipeline invalid:\n%s", name, fout)
		}
		t.Logf("%s: exit %d", name, fc)
	}
	edit := func(file, old, new string) func() {
		path := filepath.Join(dir, file)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(orig, []byte(old)) {
			t.Fatalf("%s has no %q", file, old)
		}
		if err := os.WriteFile(path, bytes.Replace(orig, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("original")
	for _, e := range []struct{ name, file, old, new string }{
		{"system prompt of steps.classify", "pipeline.toml", "You triage e-mail for a busy professional.", "You triage e-mail for a CEO."},
		{"prompt template of steps.classify", "pipeline.toml", "Subject: {{ .input.subject }}", "Subject line: {{ .input.subject }}"},
		{"score expression", "pipeline.toml", `success = "output.action == truth.action"`, `success = "output.action != truth.action"`},
		{"limits", "pipeline.toml", "max_steps = 50", "max_steps = 1"},
		{"provider model", "pipeline.toml", "use = \"script\"\n", "use = \"script\"\nmodel = \"other-model\"\n"},
		{"gate options", "pipeline.toml", "min = 1.0", "min = 0.5"},
		{"routine", "email-triage.bpmn", "&gt;= strategy.parameters.user_confirmation", "&gt;= 0.99"},
		{"provider rules", "responses.toml", `"confidence": 0.55`, `"confidence": 0.95`},
	} {
		undo := edit(e.file, e.old, e.new)
		check(e.name)
		undo()
		check("original after " + e.name)
	}
}
