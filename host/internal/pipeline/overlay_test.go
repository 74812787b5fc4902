package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

var noEnv = Options{Getenv: func(string) (string, bool) { return "", false }}

// writeOverlay writes doc as candidates/NAME beside the pipeline at base.
func writeOverlay(t *testing.T, base, name, doc string) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(base), "candidates")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadOverlay(t *testing.T) {
	base := setup(t, good)
	ov := writeOverlay(t, base, "bigger.toml", `overlay = "../pipeline.toml"
description = "a bigger model"

[providers.default]
model = "big"

[steps.classify]
prompt = "Classify carefully: {{ .input.body }}"
`)
	p, err := Load(context.Background(), ov, staticResolver{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if p.Providers["default"].Model != "big" || p.Providers["default"].Use != "script" || p.Providers["default"].Rules != "responses.toml" {
		t.Errorf("providers.default = %+v: want the model changed and the rest kept", p.Providers["default"])
	}
	if c := p.Steps["classify"]; c.Prompt != "Classify carefully: {{ .input.body }}" || c.Output != "json" {
		t.Errorf("steps.classify = %+v", c)
	}
	if p.Name != "email-triage" || len(p.Gates) != 2 || p.Limits.MaxSteps != 50 {
		t.Errorf("the base's other tables are lost: %+v", p)
	}
	if p.File != base || p.Overlay != ov || p.Path("r.bpmn") != filepath.Join(filepath.Dir(base), "r.bpmn") {
		t.Errorf("File %s Overlay %s Path %s: paths resolve as in the base", p.File, p.Overlay, p.Path("r.bpmn"))
	}
	full, err := Load(context.Background(), base, staticResolver{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest() == full.Digest() {
		t.Error("an overlay that changes the model has the base's digest")
	}
	same := writeOverlay(t, base, "same.toml", `overlay = "../pipeline.toml"`+"\n")
	q, err := Load(context.Background(), same, staticResolver{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if q.Digest() != full.Digest() {
		t.Error("an overlay that changes nothing has a digest of its own")
	}
}

func TestLoadOverlayErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		base      func(string) string // edits the base pipeline
		want      []string
	}{
		{"unknown key and wrong type at the overlay's lines", `overlay = "../pipeline.toml"

[providers.default]
modle = "big"
[limits]
max_steps = "many"
`, nil, []string{
			`candidates/o.toml:4: providers.default.modle: unknown key (did you mean "model"?)`,
			`candidates/o.toml:6: limits.max_steps: want integer, got string "many"`}},
		{"a reference the overlay breaks", `overlay = "../pipeline.toml"
[steps.classify]
provider = "defualt"
`, nil, []string{`candidates/o.toml:3: steps.classify.provider: unknown provider "defualt" (did you mean "default"?)`}},
		{"the base's own problems in the base file", `overlay = "../pipeline.toml"
`, func(s string) string { return strings.Replace(s, "[score]", "[score]\nsucess = \"x\"", 1) },
			[]string{`pipeline.toml:30: score.sucess: unknown key (did you mean "success"?)`}},
		{"no such base", `overlay = "../nope.toml"
`, nil, []string{`candidates/o.toml:1: overlay: ../nope.toml: no such file or directory`}},
		{"not a path", `overlay = 3
`, nil, []string{`candidates/o.toml:1: overlay: want the path of the pipeline file this one changes, got integer 3`}},
		{"an overlay of an overlay", `overlay = "other.toml"
`, nil, []string{`candidates/o.toml:1: overlay: other.toml is an overlay itself: name a pipeline that is not one`}},
		{"a syntax error", "overlay = \"../pipeline.toml\"\n[steps\n", nil, []string{`candidates/o.toml:3: expected '.' or ']'`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := good
			if tc.base != nil {
				doc = tc.base(doc)
			}
			base := setup(t, doc)
			writeOverlay(t, base, "other.toml", `overlay = "../pipeline.toml"`+"\n")
			ov := writeOverlay(t, base, "o.toml", tc.doc)
			_, err := Load(context.Background(), ov, staticResolver{}, noEnv)
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			got := strings.ReplaceAll(err.Error(), filepath.Dir(base)+string(filepath.Separator), "")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("error\n%s\nlacks\n%s", got, w)
				}
			}
		})
	}
}

func TestCheckCandidate(t *testing.T) {
	base := setup(t, good)
	full, err := Load(context.Background(), base, staticResolver{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, doc string
		want      []string // "" lines: no error
	}{
		{"model and on_miss may differ", `overlay = "../pipeline.toml"
[providers.default]
model = "big"
[replay]
on_miss = "live"
max_live_cost_usd = 0.5
`, nil},
		{"score, gates and the sample may not", `overlay = "../pipeline.toml"
[score]
success = "true"
[replay]
sample = 3

[[gates]]
use = "no-regression"
tolerance = 1.0
`, []string{
			`candidates/o.toml:2: score: differs from pipeline.toml's: a candidate is judged by the gated pipeline's score (only replay.on_miss and replay.max_live_cost_usd may differ)`,
			`candidates/o.toml:5: replay.sample: differs from pipeline.toml's`,
			`candidates/o.toml:7: gates: differs`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov := writeOverlay(t, base, "o.toml", tc.doc)
			cand, err := Load(context.Background(), ov, staticResolver{}, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckCandidate(full, cand)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			got := strings.ReplaceAll(err.Error(), filepath.Dir(base)+string(filepath.Separator), "")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("error\n%s\nlacks\n%s", got, w)
				}
			}
		})
	}
}
