package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsFresh fails when the committed docs/reference is not what
// `sextant docs` writes from the schemas and commands of this tree.
func TestDocsFresh(t *testing.T) {
	isolate(t)
	t.Setenv("SEXTANT_LOG", "") // flag defaults shown in the pages come from it
	want := filepath.Join(repoRoot(t), "docs", "reference")
	got := t.TempDir()
	var stderr bytes.Buffer
	if code := Run(context.Background(), []string{"docs", got}, nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("sextant docs: exit %d: %s", code, stderr.String())
	}
	stale := func(name, why string) {
		t.Errorf("docs/reference/%s %s: run `go generate ./host/cli`", name, why)
	}
	seen := map[string]bool{}
	filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(got, p)
		seen[filepath.ToSlash(rel)] = true
		b, _ := os.ReadFile(p)
		old, err := os.ReadFile(filepath.Join(want, rel))
		switch {
		case err != nil:
			stale(rel, "is missing")
		case !bytes.Equal(old, b):
			stale(rel, "is stale")
		}
		return nil
	})
	filepath.WalkDir(filepath.Join(want, "cli"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(want, p)
		if !seen[filepath.ToSlash(rel)] {
			stale(rel, "documents no command")
		}
		return nil
	})
}

var (
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// mdFile is a mention of a markdown file by name (RATIONALE.md, sdk/PROTOCOL.md).
	mdFile = regexp.MustCompile(`(?:^|[\s(\[` + "`" + `"'])((?:[\w.-]+/)*[\w-]+\.md)\b`)
	// repoPath is a path in backquotes that starts at one of the
	// repository's top-level folders.
	repoPath = regexp.MustCompile("`((?:cmd|host|sdk|navigators|plugins|pipelines|testdata|docs)/[^`\\s*…{}<>$]*)`")
)

// TestDocLinks: the repository's documents stand alone. Every relative link,
// every markdown file named and every repository path in backquotes exists.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	docs := []string{"README.md", "RATIONALE.md"}
	for _, pat := range []string{"sdk/*.md", "plugins/*.md"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			docs = append(docs, rel)
		}
	}
	filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			docs = append(docs, rel)
		}
		return nil
	})
	exists := func(doc, ref string) bool {
		ref = strings.TrimSuffix(strings.SplitN(ref, "#", 2)[0], "/")
		if ref == "" {
			return true
		}
		for _, base := range []string{filepath.Dir(filepath.Join(root, doc)), root} {
			if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(ref))); err == nil {
				return true
			}
		}
		// a Go symbol in a package folder: sdk/tomlpos.Scan
		if pkg, sym, ok := strings.Cut(filepath.Base(ref), "."); ok && sym != "" && sym[0] >= 'A' && sym[0] <= 'Z' {
			info, err := os.Stat(filepath.Join(root, filepath.Dir(ref), pkg))
			return err == nil && info.IsDir()
		}
		return false
	}
	for _, doc := range docs {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue // commands and examples name files they create
			}
			var refs []string
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(m[1], "://") && !strings.HasPrefix(m[1], "mailto:") {
					refs = append(refs, m[1])
				}
			}
			for _, m := range mdFile.FindAllStringSubmatch(line, -1) {
				refs = append(refs, m[1])
			}
			for _, m := range repoPath.FindAllStringSubmatch(line, -1) {
				refs = append(refs, m[1])
			}
			for _, ref := range refs {
				if !exists(doc, ref) {
					t.Errorf("%s:%d: %s: no such file in the repository", doc, i+1, ref)
				}
			}
		}
	}
}

// TestDocExprExamples runs the sextant expr lines of the expressions.md
// that sextant docs writes.
func TestDocExprExamples(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	if code := Run(context.Background(), []string{"docs", dir}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("sextant docs: exit %d", code)
	}
	page, err := os.ReadFile(filepath.Join(dir, "expressions.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(page), "\n") {
		if !strings.HasPrefix(line, "sextant expr ") {
			continue
		}
		if i := strings.Index(line, "  #"); i > 0 {
			line = line[:i]
		}
		args := shellWords(line)
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), args[1:], nil, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit %d: %s", line, code, stderr.String())
		}
		n++
	}
	if n == 0 {
		t.Fatal("no sextant expr examples found")
	}
}

// shellWords splits a shell command line with single and double quotes
// (no escapes, no expansion): enough for the documented examples.
func shellWords(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote, word := false, rune(0), false
	for _, r := range line {
		switch {
		case in && r == quote:
			in = false
		case in:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			in, quote, word = true, r, true
		case r == ' ':
			if word {
				out = append(out, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteRune(r)
			word = true
		}
	}
	if word {
		out = append(out, cur.String())
	}
	return out
}
