package strategy

import (
	"strings"
	"testing"
)

func TestTidy(t *testing.T) {
	pb := []Bullet{
		{ID: "a-1", Section: "a", Content: "Refunds are possible within 30 days of purchase", Helpful: 4},
		{ID: "a-2", Section: "a", Content: "Always promise next-day delivery", Helpful: 1, Harmful: 3},
		{ID: "a-3", Section: "a", Content: "Refunds are possible within 30 days of the purchase", Helpful: 2, Harmful: 1, Neutral: 1},
		{ID: "a-4", Section: "a", Content: "Shipping to the EU takes 5 to 7 business days", Harmful: 2, Helpful: 2},
	}
	for _, tc := range []struct {
		name   string
		h      Hygiene
		budget int
		want   []string
	}{
		{"nothing configured", Hygiene{}, 0, nil},
		{"prune harmful", Hygiene{PruneHarmful: 3}, 0, []string{"REMOVE a-2"}},
		{"harmful below the threshold stays", Hygiene{PruneHarmful: 4}, 0, nil},
		{"tie with helpful stays", Hygiene{PruneHarmful: 2}, 0, []string{"REMOVE a-2"}},
		{"merge near-duplicates", Hygiene{DedupThreshold: 0.8}, 0, []string{"REMOVE a-3", "TAG a-1 helpful +2", "TAG a-1 harmful +1", "TAG a-1 neutral +1"}},
		{"threshold above the similarity keeps both", Hygiene{DedupThreshold: 0.95}, 0, nil},
		{"budget removes the lowest score", Hygiene{PruneHarmful: 3, DedupThreshold: 0.8}, 20, []string{"REMOVE a-2", "REMOVE a-3", "TAG a-1 helpful +2", "TAG a-1 harmful +1", "TAG a-1 neutral +1", "REMOVE a-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Strategy{Playbook: pb, Evolution: Evolution{MaxPlaybookTokens: tc.budget}}
			ops := s.Tidy(tc.h)
			var got []string
			for _, d := range ops {
				if d.Reason == "" {
					t.Errorf("%s has no reason", d)
				}
				got = append(got, d.String())
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("Tidy = %q, want %q", got, tc.want)
			}
			applied, err := s.Apply(ops...)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if tokens, over := applied.Strategy.OverBudget(); over {
				t.Fatalf("still over budget: %d tokens", tokens)
			}
		})
	}
}

func TestSimilarity(t *testing.T) {
	if s := Similarity("Ask before bulk deletes!", "ask before bulk-deletes"); s != 1 {
		t.Fatalf("same words: %v", s)
	}
	if s := Similarity("a b c d", "a b c e"); s != 0.6 {
		t.Fatalf("3 of 5 words: %v", s)
	}
}
