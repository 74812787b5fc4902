package cli

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// goMDFile is a markdown file named in a comment: RATIONALE.md,
	// sdk/PROTOCOL.md, docs/serve.md.
	goMDFile = regexp.MustCompile(`(?:^|[\s(\[` + "`" + `"'])((?:[\w.-]+/)*[\w-]+\.md)\b`)
	// rationaleSection is a section of RATIONALE.md cited by its title:
	// RATIONALE.md, then the title in double quotes, with or without a comma
	// or parentheses between them.
	rationaleSection = regexp.MustCompile(`RATIONALE(?:\.md)?,?\s*\(?"([^"]+)"`)
	mdHeading        = regexp.MustCompile(`(?m)^#+\s+(.+?)\s*$`)
)

// TestCommentCitations: the code's comments cite only what the repository
// has. Every markdown file a comment names exists (relative to the file,
// to the root, or, for a bare name, as the one file of that name), and every RATIONALE.md section cited by title is the start
// of one of its headings.
func TestCommentCitations(t *testing.T) {
	root := repoRoot(t)
	rationale, err := os.ReadFile(filepath.Join(root, "RATIONALE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for _, m := range mdHeading.FindAllStringSubmatch(string(rationale), -1) {
		headings = append(headings, strings.ToLower(m[1]))
	}
	hasSection := func(title string) bool {
		title = strings.ToLower(strings.Join(strings.Fields(title), " "))
		for _, h := range headings {
			if strings.HasPrefix(h, title) {
				return true
			}
		}
		return false
	}
	// A bare name (PROTOCOL-process.md) is found when one file in the
	// repository has it.
	byName := map[string]int{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			byName[d.Name()]++
		}
		return nil
	})
	checked := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == ".git" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ParseComments)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		for _, g := range f.Comments {
			text := strings.Join(strings.Fields(g.Text()), " ")
			checked++
			for _, m := range goMDFile.FindAllStringSubmatch(text, -1) {
				ref := m[1]
				found := !strings.Contains(ref, "/") && byName[ref] == 1
				for _, base := range []string{filepath.Dir(p), root} {
					if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(ref))); err == nil {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s: a comment cites %s: no such file in the repository", rel, ref)
				}
			}
			for _, m := range rationaleSection.FindAllStringSubmatch(text, -1) {
				if !hasSection(m[1]) {
					t.Errorf("%s: a comment cites RATIONALE.md section %q: no such heading", rel, m[1])
				}
			}
		}
		return nil
	})
	if checked == 0 {
		t.Fatal("no comments checked")
	}
}

// TestRationaleLength: RATIONALE.md holds decisions only, one short
// section each, and stays short enough to read in one sitting.
func TestRationaleLength(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "RATIONALE.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 600 {
		t.Errorf("RATIONALE.md has %d lines; keep it at 600 or fewer (merge or shorten sections)", n)
	}
}
