package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func ids(ts []Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// TestTaskPage pages through tasks with a cursor, under every index and
// with time bounds: the pages join into exactly the unpaged listing.
func TestTaskPage(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for i := range 7 {
		tags := []string{"all"}
		if i%2 == 0 {
			tags = append(tags, "even")
		}
		must(t, s.CreateTask(ctx, &Task{ID: fmt.Sprintf("t%d", i), Pipeline: []string{"a", "b"}[i%2], Tags: tags,
			Created: t0.Add(time.Duration(i) * time.Minute)}))
	}
	for _, tc := range []struct {
		name string
		q    Query
		want []string
	}{
		{"all", Query{}, []string{"t6", "t5", "t4", "t3", "t2", "t1", "t0"}},
		{"pipeline", Query{Pipeline: "a"}, []string{"t6", "t4", "t2", "t0"}},
		{"tag", Query{Tag: "even"}, []string{"t6", "t4", "t2", "t0"}},
		{"since", Query{Since: t0.Add(4 * time.Minute)}, []string{"t6", "t5", "t4"}},
		{"until", Query{Until: t0.Add(2 * time.Minute)}, []string{"t2", "t1", "t0"}},
		{"window on an index", Query{Tag: "all", Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}, []string{"t3", "t2", "t1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, err := s.Tasks(ctx, tc.q)
			must(t, err)
			if got := ids(all); !slices.Equal(got, tc.want) {
				t.Fatalf("Tasks = %v, want %v", got, tc.want)
			}
			for size := 1; size <= 4; size++ {
				var got []string
				q := tc.q
				q.Limit = size
				for pages := 0; ; pages++ {
					if pages > 10 {
						t.Fatal("paging does not end")
					}
					page, next, err := s.TaskPage(ctx, q)
					must(t, err)
					if len(page) == 0 && q.After != "" {
						t.Fatalf("pages of %d: the cursor led to an empty page", size)
					}
					got = append(got, ids(page)...)
					if next == "" {
						break
					}
					q.After = next
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("pages of %d = %v, want %v", size, got, tc.want)
				}
			}
		})
	}
	_, _, err := s.TaskPage(ctx, Query{Limit: 2, After: "%%%"})
	if !errors.Is(err, ErrBadCursor) {
		t.Fatalf("bad cursor: got %v", err)
	}
}

// TestRewardTagQuery: tags given with feedback make a task findable, also
// after an export and import.
func TestRewardTagQuery(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, id := range []string{"a", "b", "c"} {
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: "p"}))
	}
	must(t, s.AddReward(ctx, &Reward{Task: "a", Value: 1, Tags: []string{"correct"}}))
	must(t, s.AddReward(ctx, &Reward{Task: "c", Value: -1, Tags: []string{"wrong", "tone"}}))
	must(t, s.AddReward(ctx, &Reward{Task: "c", Value: 1, Tags: []string{"correct"}}))
	check := func(s *Store) {
		t.Helper()
		got, err := s.Tasks(ctx, Query{RewardTag: "correct"})
		must(t, err)
		if g := ids(got); !slices.Equal(g, []string{"c", "a"}) {
			t.Fatalf("reward tag correct: %v", g)
		}
		got, err = s.Tasks(ctx, Query{RewardTag: "tone", Pipeline: "p"})
		must(t, err)
		if g := ids(got); !slices.Equal(g, []string{"c"}) {
			t.Fatalf("reward tag tone: %v", g)
		}
		got, err = s.Tasks(ctx, Query{RewardTag: "nope"})
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("reward tag nope: %v", ids(got))
		}
	}
	check(s)
	var buf bytes.Buffer
	if _, err := s.Export(ctx, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t)
	if _, err := s2.Import(ctx, &buf, "x.jsonl"); err != nil {
		t.Fatal(err)
	}
	check(s2)
}

func TestStrategyNames(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, r := range []StrategyRecord{{Name: "b", Version: "1.0.0", Hash: "h"}, {Name: "a", Version: "1.0.0", Hash: "h"}, {Name: "a", Version: "1.1.0", Parent: "1.0.0", Hash: "h2"}} {
		must(t, s.PutStrategy(ctx, &r))
	}
	got, err := s.StrategyNames(ctx)
	must(t, err)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("names %v", got)
	}
}

// TestCompletedSameTime: a list of completed tasks (no status index
// entry: the walk reads each one's status from its summary) finds every
// task created at one time, also ids one of which starts the other and
// sorts after it in the summaries (run-1, run-1-a: "/" sorts after "-").
func TestCompletedSameTime(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	ids := []string{"run-1", "run-1-a", "run-1+b", "run-1.c", "run-10"}
	for _, id := range ids {
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: "p", Created: at, Status: StatusCompleted}))
	}
	for _, q := range []Query{{Status: StatusCompleted}, {Status: StatusCompleted, Pipeline: "p"}} {
		ts, err := s.Tasks(ctx, q)
		must(t, err)
		var got []string
		for _, x := range ts {
			got = append(got, x.ID)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(ids))
		if !slices.Equal(got, want) {
			t.Errorf("%+v: %v, want %v", q, got, want)
		}
	}
}

// TestCompletedBadSummary: a summary entry that does not read leaves its
// task out of a list of completed tasks, reported as damaged, and the
// list goes on, as a list of every task does with a record that does not
// read.
func TestCompletedBadSummary(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, id := range []string{"a", "b", "c"} {
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: "p", Status: StatusCompleted}))
	}
	b, err := s.Task(ctx, "b")
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(sumTaskKey(sumPrefix(b.Created, "b")), []byte{schemaVersion, '{'})
	}))
	for _, q := range []Query{{Status: StatusCompleted}, {Status: StatusCompleted, Pipeline: "p"}} {
		ts, err := s.Tasks(ctx, q)
		var sk *SkippedError
		if !errors.As(err, &sk) || len(sk.Skipped) != 1 || sk.Skipped[0].Task != "b" {
			t.Errorf("%+v: %v, want task b reported damaged", q, err)
		}
		if got := ids(ts); !slices.Equal(got, []string{"c", "a"}) {
			t.Errorf("%+v: %v, want [c a]", q, got)
		}
	}
}
