package report

import (
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

func TestWriteRewards(t *testing.T) {
	var b strings.Builder
	WriteRewards(&b, []*store.Reward{{Seq: 3, Task: "t1", Value: 1}, {Seq: 4, Task: "t1", Dimension: "safety", Value: -0.5}})
	WriteImported(&b, store.Counts{Tasks: 2, Executions: 3, Spans: 9, Rewards: 1})
	want := "reward #3 +1 on task t1\nreward #4 safety -0.5 on task t1\n" +
		"imported 2 tasks, 3 executions, 9 spans, 1 rewards, 0 recordings, 0 checkpoints\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
