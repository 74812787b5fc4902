package dag

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGolden walks the routines under testdata with scripted outcomes and
// compares the trace, the final task states and the variables with
// testdata/golden/NAME.trace. Each walk runs twice, in memory and with every
// message round-tripped through JSON, and both must match.
func TestGolden(t *testing.T) {
	urls := map[string]any{"urls": []any{"a.example", "b.example", "c.example"}}
	for _, c := range []struct {
		name, file string
		env        sdk.Env
		plan       map[string][]sdk.Status
	}{
		{"research-ok", "research.toml", sdk.Env{Vars: urls, Strategy: map[string]any{"use_search": true}},
			map[string][]sdk.Status{"fetch[1]": {sdk.Failed, sdk.OK}}},
		{"research-nosearch", "research.toml", sdk.Env{Vars: urls, Strategy: map[string]any{"use_search": false}}, nil},
		{"research-fetch-fails", "research.toml", sdk.Env{Vars: urls, Strategy: map[string]any{"use_search": true}},
			map[string][]sdk.Status{"fetch[0]": {sdk.Failed, sdk.Failed, sdk.Failed}}},
		{"research-no-urls", "research.toml", sdk.Env{Vars: map[string]any{"urls": []any{}}, Strategy: map[string]any{"use_search": true}}, nil},
		{"branch-question", "branch.toml", sdk.Env{Input: map[string]any{"kind": "question"}}, nil},
		{"branch-other", "branch.toml", sdk.Env{Input: map[string]any{"kind": "spam"}}, nil},
		{"branch-fail", "branch.toml", sdk.Env{Input: map[string]any{"kind": "spam"}}, map[string][]sdk.Status{"classify": {sdk.Failed}}},
		{"failure", "failure.toml", sdk.Env{}, map[string][]sdk.Status{"load": {sdk.Failed, sdk.Failed}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var got [2]string
			for k, wire := range []bool{false, true} {
				w := newWalker(t, string(src), c.env, script(c.plan))
				w.useWire(wire)
				w.run()
				got[k] = w.summary()
			}
			if got[0] != got[1] {
				t.Fatalf("in memory and over JSON differ:\n%s\n---\n%s", got[0], got[1])
			}
			golden := filepath.Join("testdata", "golden", c.name+".trace")
			if *update {
				if err := os.WriteFile(golden, []byte(got[0]), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got[0] != string(want) {
				t.Errorf("%s differs:\n%s\nwant:\n%s", golden, got[0], want)
			}
		})
	}
}
