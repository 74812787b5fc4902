package cli

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeLayout: the README's Layout block names every Go package of
// the repository by its path, or by a pattern (navigators/*/plugin) whose
// match is the package; a block line whose path names no package is an
// error too, so the layout cannot drift either way.
func TestReadmeLayout(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "## Layout\n")
	if i < 0 {
		t.Fatal("README.md has no Layout section")
	}
	block := text[i:]
	start := strings.Index(block, "```\n")
	end := strings.Index(block[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README.md's Layout section has no code block")
	}
	var patterns []string
	for _, line := range strings.Split(block[start+4:start+4+end], "\n") {
		// The paths are the line's first column: comma-separated, before
		// two spaces.
		head, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		for _, p := range strings.Split(head, ",") {
			if p = strings.TrimSuffix(strings.TrimSpace(p), "/"); p != "" {
				patterns = append(patterns, p)
			}
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...", "./sdk/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	used := map[string]bool{}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if strings.Contains(rel, "testdata/") {
			continue // test plugins and fixtures
		}
		found := false
		for _, p := range patterns {
			if ok, _ := path.Match(p, rel); ok {
				used[p], found = true, true
			}
		}
		if !found {
			t.Errorf("README.md Layout: package %s is not listed", rel)
		}
	}
	for _, p := range patterns {
		if !used[p] && p != "pipelines" && p != "testdata/script" {
			t.Errorf("README.md Layout: %s names no package", p)
		}
	}
}

// TestPlugintestCleanup: every package whose tests build plugins with
// plugintest also removes them in its TestMain (plugintest.Cleanup);
// otherwise each test run leaves its builds (tens of MB) in the
// temporary folder, and CI machines fill up.
func TestPlugintestCleanup(t *testing.T) {
	root := repoRoot(t)
	builds, cleans := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		if strings.Contains(string(b), "plugintest.Native(") || strings.Contains(string(b), "plugintest.Wasm(") {
			builds[dir] = true
		}
		if strings.Contains(string(b), "plugintest.Cleanup()") {
			cleans[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(builds) == 0 {
		t.Fatal("no package builds plugins with plugintest: the check looks for the wrong calls")
	}
	for dir := range builds {
		if !cleans[dir] {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s: its tests build plugins with plugintest but no TestMain calls plugintest.Cleanup()", rel)
		}
	}
}
