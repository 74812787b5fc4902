package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestREADMERecipes: the shard and merge commands of the README's GitHub
// Actions and Kubernetes recipes are the ones replay_ci_recipe.txtar runs,
// so the tested commands cannot drift from the documented ones.
func TestREADMERecipes(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ar, err := txtar.ParseFile(filepath.Join(root, "testdata", "script", "replay_ci_recipe.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{}
	for _, f := range ar.Files {
		scripts[f.Name] = string(f.Data)
	}
	for _, tc := range []struct{ script, readmeLine, substitute, with string }{
		{"gha-shard.sh", "./sextant replay pipelines/email-triage/pipeline.toml --strategy \"$CANDIDATE\" --shard ${{ matrix.shard }}/2", "${{ matrix.shard }}", "$1"},
		{"gha-verdict.sh", "./sextant merge shard-*.jsonl", "", ""},
		{"k8s-shard.sh", "mkdir -p results && sextant replay pipelines/email-triage/pipeline.toml --strategy \"$CANDIDATE\" --shard auto", "mkdir -p results && ", "mkdir -p results\n"},
	} {
		var doc string
		for _, line := range strings.Split(string(readme), "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
			line = strings.TrimSpace(strings.TrimPrefix(line, "run: "))
			if strings.HasPrefix(line, tc.readmeLine) {
				doc = line
				break
			}
		}
		if doc == "" {
			t.Errorf("README has no line starting %q", tc.readmeLine)
			continue
		}
		if tc.substitute != "" {
			doc = strings.ReplaceAll(doc, tc.substitute, tc.with)
		}
		if !strings.Contains(scripts[tc.script], doc+"\n") {
			t.Errorf("%s does not run the README's command\n  %s\nit has:\n%s", tc.script, doc, scripts[tc.script])
		}
	}
}
