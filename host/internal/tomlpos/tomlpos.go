// Package tomlpos maps TOML key paths to the lines that define them, so
// that errors found after decoding (unknown keys, bad values, references to
// missing things) can still say `file:line:`.
//
// It reads the document with go-toml's position-preserving parser and never
// decodes values: decoding stays with the caller's TOML library.
package tomlpos

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Index maps dotted key paths to 1-based line numbers. Elements of arrays of
// tables appear twice: with their index ("gates.1.use") and without it
// ("gates.use", the first occurrence).
type Index struct {
	lines map[string]int
}

// Build indexes data. A document that does not parse is indexed up to the
// error; the caller's decoder reports the error itself.
func Build(data []byte) *Index {
	ix := &Index{lines: map[string]int{}}
	p := &unstable.Parser{KeepComments: false}
	p.Reset(data)
	var prefix []string
	arrays := map[string]int{} // array-of-tables path -> count so far
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts := keyParts(e.Key())
			line := lineOf(p, e.Key())
			if e.Kind == unstable.ArrayTable {
				plain := strings.Join(parts, ".")
				n := arrays[plain]
				arrays[plain] = n + 1
				ix.add(plain, line)
				parts = append(append([]string(nil), parts...), strconv.Itoa(n))
			}
			prefix = expand(parts, arrays)
			ix.add(strings.Join(prefix, "."), line)
		case unstable.KeyValue:
			parts := keyParts(e.Key())
			line := lineOf(p, e.Key())
			full := append(append([]string(nil), prefix...), parts...)
			ix.add(strings.Join(full, "."), line)
			ix.add(strings.Join(stripIndexes(full), "."), line)
			ix.addInline(p, full, e.Value())
		}
	}
	return ix
}

// expand rewrites a table header path so that it lands inside the latest
// element of any array of tables it starts with ([[gates]] then
// [gates.config] → gates.N.config).
func expand(parts []string, arrays map[string]int) []string {
	for i := len(parts); i > 0; i-- {
		head := strings.Join(parts[:i], ".")
		if n, ok := arrays[head]; ok && (i < len(parts) && !isIndex(parts[i])) {
			out := append(append([]string(nil), parts[:i]...), strconv.Itoa(n-1))
			return append(out, parts[i:]...)
		}
	}
	return parts
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func stripIndexes(parts []string) []string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if !isIndex(p) {
			out = append(out, p)
		}
	}
	return out
}

func (ix *Index) addInline(p *unstable.Parser, path []string, v *unstable.Node) {
	if v == nil {
		return
	}
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			full := append(append([]string(nil), path...), keyParts(kv.Key())...)
			line := lineOf(p, kv.Key())
			ix.add(strings.Join(full, "."), line)
			ix.add(strings.Join(stripIndexes(full), "."), line)
			ix.addInline(p, full, kv.Value())
		}
	case unstable.Array:
		it := v.Children()
		i := 0
		for it.Next() {
			el := it.Node()
			full := append(append([]string(nil), path...), strconv.Itoa(i))
			if line := nodeLine(p, el); line > 0 {
				ix.add(strings.Join(full, "."), line)
			}
			ix.addInline(p, full, el)
			i++
		}
	}
}

// add records the line of path and, for implicitly defined parent tables
// ([steps.a] defines steps), the first line under each parent.
func (ix *Index) add(path string, line int) {
	if line <= 0 {
		return
	}
	for p := path; ; {
		if _, ok := ix.lines[p]; !ok {
			ix.lines[p] = line
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return
		}
		p = p[:i]
	}
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func lineOf(p *unstable.Parser, it unstable.Iterator) int {
	if it.Next() {
		return nodeLine(p, it.Node())
	}
	return 0
}

func nodeLine(p *unstable.Parser, n *unstable.Node) int {
	if n == nil {
		return 0
	}
	if len(n.Data) > 0 {
		r := p.Range(n.Data)
		return 1 + strings.Count(string(p.Data()[:r.Offset]), "\n")
	}
	r := n.Raw
	if r.Length == 0 && r.Offset == 0 {
		return 0
	}
	return 1 + strings.Count(string(p.Data()[:r.Offset]), "\n")
}

// Line returns the line of the key at path, or of its nearest defined
// ancestor, or 0 when none is known. Path elements are joined with dots;
// pass array indexes as decimal strings.
func (ix *Index) Line(path ...string) int {
	if ix == nil {
		return 0
	}
	for i := len(path); i > 0; i-- {
		if l, ok := ix.lines[strings.Join(path[:i], ".")]; ok {
			return l
		}
	}
	return 0
}
