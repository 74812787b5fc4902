package strategy

import (
	"slices"
	"testing"
)

func TestCited(t *testing.T) {
	s := &Strategy{Playbook: []Bullet{{ID: "answers-00001"}, {ID: "answers-00002"}, {ID: "b-3"}, {ID: "b-7"}}}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"inline markers", "Refunds within 30 days [answers-00001]; see also [answers-00002].", []string{"answers-00001", "answers-00002"}},
		{"cited line with brackets", "The answer.\ncited: [b-3, b-7]", []string{"b-3", "b-7"}},
		{"cited line without brackets", "The answer.\nCited: b-7 b-3", []string{"b-7", "b-3"}},
		{"list in one bracket", "used [b-7, answers-00001]", []string{"b-7", "answers-00001"}},
		{"each once, first citation first", "[b-7] then [b-3] then [b-7]\ncited: b-3", []string{"b-7", "b-3"}},
		{"unknown ids are not citations", "[b-4] [note] [B-3]", nil},
		{"no citation", "Please contact support.", nil},
		{"quoted ids", `cited: ["b-3", 'b-7']`, []string{"b-3", "b-7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Cited(tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("Cited(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	if got := (&Strategy{}).Cited("[b-3]"); got != nil {
		t.Fatalf("empty playbook cites %q", got)
	}
}
