package store

import "context"

// RewardBound keeps the tasks whose mean reward on dimension Dim ("" the
// unnamed one) is at least Lo (sextant runs --min-reward).
type RewardBound struct {
	Dim string
	Lo  float64
}

// ParseRewardBound reads a bound as a user writes it: X, or NAME=X for a
// named dimension (see [ParseReward]); "" is no bound (nil).
func ParseRewardBound(s string) (*RewardBound, error) {
	if s == "" {
		return nil, nil
	}
	dim, lo, err := ParseReward(s)
	if err != nil {
		return nil, err
	}
	return &RewardBound{Dim: dim, Lo: lo}, nil
}

// TasksRewarded is [Store.Tasks] keeping, after q.Match, only the tasks
// within bound (all when it is nil). A failed reward read fails the list.
func (s *Store) TasksRewarded(ctx context.Context, q Query, bound *RewardBound) ([]Task, error) {
	if bound == nil {
		return s.Tasks(ctx, q)
	}
	var readErr error
	match := q.Match
	q.Match = func(t *Task) bool {
		if match != nil && !match(t) {
			return false
		}
		ok, err := s.MeanRewardAtLeast(ctx, t.ID, bound.Dim, bound.Lo)
		if err != nil && readErr == nil {
			readErr = err
		}
		return ok
	}
	tasks, err := s.Tasks(ctx, q)
	if err == nil && readErr != nil {
		return nil, readErr
	}
	return tasks, err
}
