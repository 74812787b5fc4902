package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The range of a reward: replay counts a task with rewards as a success
// when their mean is above 0, and reports the mean as its reward metric.
const (
	MinReward = -1.0
	MaxReward = 1.0
)

// ParseReward reads a reward as a user writes it (--reward, --min-reward):
// X, or NAME=X for a named dimension; X is a number in the reward range.
func ParseReward(s string) (dim string, v float64, err error) {
	num := s
	if name, val, ok := strings.Cut(s, "="); ok {
		if err := ValidDimension(name); err != nil {
			return "", 0, err
		}
		dim, num = name, val
	}
	v, err = strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return "", 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "", 0, fmt.Errorf("%q: NaN and Inf are not allowed: want a number from %g (bad) to %g (good)", s, MinReward, MaxReward)
	}
	if v < MinReward || v > MaxReward {
		return "", 0, fmt.Errorf("%s is out of range: want %g (bad) to %g (good)", s, MinReward, MaxReward)
	}
	return dim, v, nil
}

// MeanRewardAtLeast reports whether the task's mean reward on dimension
// dim ("" the unnamed one) is at least lo; a task without such rewards
// is not.
func (s *Store) MeanRewardAtLeast(ctx context.Context, task, dim string, lo float64) (bool, error) {
	if dim == "" {
		n, sum, err := s.RewardStats(ctx, task)
		return err == nil && n > 0 && sum/float64(n) >= lo, err
	}
	dims, err := s.DimensionStats(ctx, task)
	if err != nil {
		return false, err
	}
	d, ok := dims[dim]
	return ok && d.Mean() >= lo, nil
}
