package docgen

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// repoRoot is the sextant checkout this test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// isolate keeps the loaders the schema tests call from the user's store,
// plugins and caches.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"SEXTANT_STORE":       "",
		"SEXTANT_PLUGIN_PATH": "",
		"SEXTANT_CACHE":       filepath.Join(dir, "cache", "sextant"),
		"XDG_CACHE_HOME":      filepath.Join(dir, "cache"),
		"XDG_DATA_HOME":       filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME":     filepath.Join(dir, "config"),
	} {
		t.Setenv(k, v)
	}
}

// testRoot is a small command tree: a visible command with a subcommand
// and flags, and a hidden one.
func testRoot() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "Do things"}
	root.PersistentFlags().String("store", "", "where the store is")
	run := &cobra.Command{Use: "run FILE", Short: "Run a file", Example: "  tool run a.toml", RunE: func(*cobra.Command, []string) error { return nil }}
	run.Flags().Int("limit", 3, "at most this many")
	run.Flags().Bool("secret", false, "not shown")
	_ = run.Flags().MarkHidden("secret")
	sub := &cobra.Command{Use: "fast", Short: "Run fast", RunE: func(*cobra.Command, []string) error { return nil }}
	run.AddCommand(sub)
	root.AddCommand(run, &cobra.Command{Use: "docs", Short: "hidden", Hidden: true, RunE: func(*cobra.Command, []string) error { return nil }})
	return root
}

// TestFilesCommandPages: one page per visible command, named by its path,
// with usage, examples, its own and inherited flags (hidden ones and help
// left out) and links up and down the tree.
func TestFilesCommandPages(t *testing.T) {
	files := Files(testRoot())
	var pages []string
	for name := range files {
		if strings.HasPrefix(name, "cli/") {
			pages = append(pages, name)
		}
	}
	slices.Sort(pages)
	if want := []string{"cli/tool.md", "cli/tool_run.md", "cli/tool_run_fast.md"}; !slices.Equal(pages, want) {
		t.Fatalf("command pages %q, want %q", pages, want)
	}
	run := string(files["cli/tool_run.md"])
	for _, want := range []string{
		generated + "# tool run\n\nRun a file\n\n```\ntool run FILE [flags]\n```\n",
		"## Examples\n\n```sh\n  tool run a.toml\n```\n",
		"## Flags\n\n```\n      --limit int   at most this many (default 3)\n```\n",
		"## Global flags\n\n```\n      --store string   where the store is\n```\n",
		"## See also\n\n- [tool](tool.md): Do things\n- [tool run fast](tool_run_fast.md): Run fast\n",
	} {
		if !strings.Contains(run, want) {
			t.Errorf("tool_run.md lacks %q:\n%s", want, run)
		}
	}
	if strings.Contains(run, "secret") || strings.Contains(run, "--help") {
		t.Errorf("tool_run.md shows a hidden flag or help:\n%s", run)
	}
	if idx := string(files["README.md"]); !strings.Contains(idx, "- [cli/tool.md](cli/tool.md): every command") {
		t.Errorf("README.md does not link the root command's page:\n%s", idx)
	}
}

// TestWrite: writing replaces the command pages, so a page of a command
// that is gone does not stay behind, and leaves other files in the folder.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"cli/tool_gone.md": "old", "tools.md": "hand-written"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := Files(testRoot())
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cli", "tool_gone.md")); !os.IsNotExist(err) {
		t.Errorf("a stale command page stayed: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tools.md")); err != nil || string(b) != "hand-written" {
		t.Errorf("tools.md: %q, %v", b, err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: not written as generated (%v)", name, err)
		}
	}
}
