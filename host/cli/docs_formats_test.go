package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestDocKeysExist: every key the hand-written tables of expressions.md
// and templates.md name is a key of the format they say it is in.
func TestDocKeysExist(t *testing.T) {
	for _, k := range append(slices.Clone(exprKeys), templateKeys...) {
		if !slices.Contains(specKeys(k.Spec), k.Key) {
			t.Errorf("%s: no key %q (keys: %q)", k.File, k.Key, specKeys(k.Spec))
		}
	}
}

// TestDocExprExamples runs the sextant expr lines of expressions.md.
func TestDocExprExamples(t *testing.T) {
	isolate(t)
	n := 0
	for _, line := range strings.Split(expressionsPage(), "\n") {
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
