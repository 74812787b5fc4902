package store

import "fmt"

// NewRewards makes the rewards of one piece of feedback on task (on its
// span spanID, if set): one per value as a user writes it ([NAME=]X,
// ParseReward), each with tags and note. A dimension given twice is an
// error.
func NewRewards(task, spanID string, values, tags []string, note string) ([]*Reward, error) {
	var rs []*Reward
	seen := map[string]bool{}
	for _, s := range values {
		dim, v, err := ParseReward(s)
		if err != nil {
			return nil, err
		}
		if seen[dim] {
			return nil, fmt.Errorf("dimension %q given twice", dim)
		}
		seen[dim] = true
		rs = append(rs, &Reward{Task: task, SpanID: spanID, Dimension: dim, Value: v, Tags: tags, Note: note})
	}
	return rs, nil
}
