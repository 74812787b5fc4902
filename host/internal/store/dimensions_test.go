package store

import (
	"context"
	"errors"
	"testing"
)

// TestAddRewardsDimensions: rewards on several dimensions are stored
// together, numbered in order; the summary counts the unnamed dimension
// only, DimensionStats the named ones; a batch with one bad reward (an
// unknown span, a bad dimension) writes none of them.
func TestAddRewardsDimensions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seed(t, s, "t1", 1)
	rs := []*Reward{{Task: "t1", Value: 1}, {Task: "t1", Dimension: "safety", Value: -0.5}, {Task: "t1", Dimension: "helpfulness", Value: 0.8}}
	must(t, s.AddRewards(ctx, rs))
	if rs[0].Seq != 1 || rs[1].Seq != 2 || rs[2].Seq != 3 || rs[2].Created.IsZero() {
		t.Fatalf("rewards %+v %+v %+v", rs[0], rs[1], rs[2])
	}
	must(t, s.AddReward(ctx, &Reward{Task: "t1", Dimension: "safety", Value: 1}))
	n, sum, err := s.RewardStats(ctx, "t1")
	if err != nil || n != 1 || sum != 1 {
		t.Fatalf("unnamed: %d %v %v, want 1 1", n, sum, err)
	}
	dims, err := s.DimensionStats(ctx, "t1")
	must(t, err)
	if len(dims) != 2 || dims["safety"] != (DimensionStat{N: 2, Sum: 0.5}) || dims["helpfulness"].Mean() != 0.8 {
		t.Fatalf("dimensions %v", dims)
	}

	bad := [][]*Reward{
		{{Task: "t1", Dimension: "tone", Value: 1}, {Task: "t1", SpanID: "00000000000000ab", Value: 1}},
		{{Task: "t1", Value: 1}, {Task: "t1", Dimension: "9lives", Value: 1}},
		{{Task: "t1", Value: 1}, {Task: "nope", Value: 1}},
	}
	for i, b := range bad {
		if err := s.AddRewards(ctx, b); err == nil {
			t.Fatalf("batch %d: no error", i)
		}
	}
	got, err := s.Rewards(ctx, "t1")
	must(t, err)
	if len(got) != 4 {
		t.Fatalf("%d rewards after refused batches, want 4", len(got))
	}
	if err := ValidDimension("a-b_9"); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"", "9a", "a.b", "a b", string(make([]byte, 65))} {
		if err := ValidDimension(name); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidDimension(%q) = %v, want ErrInvalid", name, err)
		}
	}
}

// BenchmarkDimensionStats is the per-task read /api/v1/metrics and
// runs --min-reward NAME=X make for named dimensions.
func BenchmarkDimensionStats(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	must(b, s.CreateTask(ctx, &Task{ID: "t1", Pipeline: "p"}))
	must(b, s.AddRewards(ctx, []*Reward{{Task: "t1", Value: 1}, {Task: "t1", Dimension: "safety", Value: 1}, {Task: "t1", Dimension: "helpfulness", Value: 0.5}}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.DimensionStats(ctx, "t1"); err != nil {
			b.Fatal(err)
		}
	}
}
