package strategy

import (
	"regexp"
	"slices"
	"strings"
)

// The citation convention (ACE's "bullet tagging"): a generator names the
// playbook bullets it used either inline, as "[answers-00002]" markers, or
// on a line of its own, as "cited: [answers-00002, reasoning-00001]" (the
// brackets are optional there). Only ids of bullets in the playbook count,
// so a bracketed word that is not a bullet id is never a citation.
var (
	citeBracketRE = regexp.MustCompile(`\[([^\[\]\n]{1,400})\]`)
	citeLineRE    = regexp.MustCompile(`(?im)^[ \t]*cited[ \t]*:[ \t]*([^\n]*)$`)
)

// Cited returns the ids of the playbook bullets that text cites, in order of
// first citation, each once. See the convention above; ids are matched
// exactly (case-sensitively).
func (s *Strategy) Cited(text string) []string {
	if len(s.Playbook) == 0 || text == "" {
		return nil
	}
	known := make(map[string]bool, len(s.Playbook))
	for _, b := range s.Playbook {
		known[b.ID] = true
	}
	type hit struct {
		at int
		id string
	}
	var hits []hit
	add := func(at int, list string) {
		for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '[' || r == ']' }) {
			if id := strings.Trim(f, `"'`); known[id] {
				hits = append(hits, hit{at, id})
			}
		}
	}
	for _, m := range citeBracketRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], text[m[2]:m[3]])
	}
	for _, m := range citeLineRE.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], text[m[2]:m[3]])
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.at - b.at })
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.id) {
			out = append(out, h.id)
		}
	}
	return out
}
