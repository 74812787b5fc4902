package strategy

import (
	"fmt"
	"slices"
	"strings"
)

// Hygiene says how a playbook is kept clean (ACE's grow-and-refine): which
// bullets are pruned as harmful, which count as near-duplicates, and the
// token budget (evolution.max_playbook_tokens) it must fit.
type Hygiene struct {
	// PruneHarmful removes a bullet once its harmful count reaches this
	// many and exceeds its helpful count; 0 never prunes.
	PruneHarmful int
	// DedupThreshold merges two bullets whose word sets (NormalizeContent)
	// have a Jaccard similarity at or above it, in (0, 1]; 0 never merges.
	// The later bullet is removed and its counters are added to the
	// earlier one by TAG operations.
	DedupThreshold float64
}

// Similarity is the Jaccard similarity of the word sets of two bullets'
// normalized contents: 1 for the same words, 0 for none in common.
func Similarity(a, b string) float64 {
	wa, wb := strings.Fields(NormalizeContent(a)), strings.Fields(NormalizeContent(b))
	if len(wa) == 0 && len(wb) == 0 {
		return 1
	}
	set := map[string]int{}
	for _, w := range wa {
		set[w] |= 1
	}
	for _, w := range wb {
		set[w] |= 2
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both) / float64(len(set))
}

// Tidy returns the delta operations that clean s's playbook under h: REMOVE
// of harmful bullets, REMOVE plus TAG for merged near-duplicates, and, when
// the playbook is over its token budget, REMOVE of the bullets with the
// lowest helpful−harmful score (ties: more harmful first, then the oldest)
// until it fits. Each operation carries its reason. Apply them with Apply
// or Revise; s is not modified.
func (s *Strategy) Tidy(h Hygiene) []Delta {
	var ops []Delta
	gone := map[string]bool{}
	type extra struct{ helpful, harmful, neutral int }
	merged := map[string]*extra{}
	if h.PruneHarmful > 0 {
		for _, b := range s.Playbook {
			if b.Harmful >= h.PruneHarmful && b.Harmful > b.Helpful {
				gone[b.ID] = true
				ops = append(ops, Delta{Op: OpRemove, ID: b.ID,
					Reason: fmt.Sprintf("pruned: harmful %d ≥ %d and more than helpful %d", b.Harmful, h.PruneHarmful, b.Helpful)})
			}
		}
	}
	if h.DedupThreshold > 0 {
		for i, a := range s.Playbook {
			if gone[a.ID] {
				continue
			}
			for _, b := range s.Playbook[i+1:] {
				if gone[b.ID] {
					continue
				}
				if sim := Similarity(a.Content, b.Content); sim >= h.DedupThreshold {
					gone[b.ID] = true
					ops = append(ops, Delta{Op: OpRemove, ID: b.ID,
						Reason: fmt.Sprintf("merged into %s: similarity %.2f ≥ %.2f", a.ID, sim, h.DedupThreshold)})
					e := merged[a.ID]
					if e == nil {
						e = &extra{}
						merged[a.ID] = e
					}
					e.helpful += b.Helpful
					e.harmful += b.Harmful
					e.neutral += b.Neutral
				}
			}
		}
		for _, a := range s.Playbook {
			e := merged[a.ID]
			if e == nil {
				continue
			}
			for _, t := range []struct {
				tag Tag
				n   int
			}{{TagHelpful, e.helpful}, {TagHarmful, e.harmful}, {TagNeutral, e.neutral}} {
				if t.n > 0 {
					ops = append(ops, Delta{Op: OpTag, ID: a.ID, Tag: t.tag, Count: t.n, Reason: "counters of the near-duplicates merged into it"})
				}
			}
		}
	}
	if s.Evolution.MaxPlaybookTokens > 0 {
		kept := slices.DeleteFunc(slices.Clone(s.Playbook), func(b Bullet) bool { return gone[b.ID] })
		for i := range kept {
			if e := merged[kept[i].ID]; e != nil {
				kept[i].Helpful += e.helpful
				kept[i].Harmful += e.harmful
			}
		}
		probe := &Strategy{Playbook: kept}
		for len(probe.Playbook) > 0 && probe.PlaybookTokens() > s.Evolution.MaxPlaybookTokens {
			worst := 0
			for i, b := range probe.Playbook {
				w := probe.Playbook[worst]
				if sb, sw := b.Helpful-b.Harmful, w.Helpful-w.Harmful; sb < sw || (sb == sw && b.Harmful > w.Harmful) {
					worst = i
				}
			}
			b := probe.Playbook[worst]
			ops = append(ops, Delta{Op: OpRemove, ID: b.ID,
				Reason: fmt.Sprintf("over the token budget: the playbook is %d tokens, max_playbook_tokens %d; lowest score %+d", probe.PlaybookTokens(), s.Evolution.MaxPlaybookTokens, b.Helpful-b.Harmful)})
			probe.Playbook = slices.Delete(probe.Playbook, worst, worst+1)
		}
	}
	// TAGs of a merged survivor must come before any REMOVE of it for the
	// budget, which Apply would refuse; a survivor removed for the budget
	// needs no TAG.
	out := ops[:0]
	removed := map[string]bool{}
	for _, d := range ops {
		if d.Op == OpRemove {
			removed[d.ID] = true
		}
	}
	for _, d := range ops {
		if d.Op == OpTag && removed[d.ID] {
			continue
		}
		out = append(out, d)
	}
	return out
}
