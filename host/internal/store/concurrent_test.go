package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentWriters runs several runs at once against one store:
// spans of a shared execution get distinct sequence numbers, rewards
// distinct seqs, and concurrent checkpoints share fsyncs without losing
// any.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, shared := seed(t, s, "shared", 0)
	const workers, steps = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		id := fmt.Sprintf("run-%d", w)
		seed(t, s, id, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for step := uint64(1); step <= steps; step++ {
				sp := Span{Task: id, Execution: id + "-e1", Name: "step", Start: t0}
				if err := s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: id + "-e1", Step: step, State: []byte("{}")}, sp); err != nil {
					errs <- err
					return
				}
				if err := s.AppendSpans(ctx, []Span{{Task: "shared", Execution: shared.ID, Name: id, Start: t0}}); err != nil {
					errs <- err
					return
				}
				if err := s.AddReward(ctx, &Reward{Task: "shared", Value: 1}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	spans, err := s.Spans(ctx, "shared", shared.ID)
	must(t, err)
	rewards, err := s.Rewards(ctx, "shared")
	must(t, err)
	if len(spans) != workers*steps || spans[len(spans)-1].Seq != workers*steps || len(rewards) != workers*steps {
		t.Fatalf("%d spans (last seq %d), %d rewards; want %d of each", len(spans), spans[len(spans)-1].Seq, len(rewards), workers*steps)
	}
	for w := range workers {
		id := fmt.Sprintf("run-%d", w)
		c, err := s.LatestCheckpoint(ctx, id, id+"-e1")
		must(t, err)
		if c.Step != steps {
			t.Fatalf("%s at step %d", id, c.Step)
		}
	}
}
