package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
)

func TestWriteTasks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	tasks := []store.Task{
		{ID: "a", Status: store.StatusCompleted, Pipeline: "p", Created: t0, Strategy: store.StrategyRef{Version: "1.0.0"}, Tags: []string{"x", "y"}},
		{ID: "bb", Status: store.StatusWaiting, Pipeline: "p", Created: t0, Waits: []store.Wait{{Kind: store.WaitHuman, Node: "n", Question: "q"}, {Kind: store.WaitHuman, Node: "m", Question: "r"}}},
	}
	var b bytes.Buffer
	if err := WriteTasks(&b, tasks, func(t *store.Task) string { return WaitsSummary(t.Waits) }); err != nil {
		t.Fatal(err)
	}
	want := `TASK  STATUS     PIPELINE  STRATEGY  CREATED               TAGS  WAITING FOR
a     completed  p         1.0.0     2026-01-02T02:04:05Z  x,y
bb    waiting    p                   2026-01-02T02:04:05Z    answer at n: q (+1 more)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteStrategyLog(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	err := WriteStrategyLog(&b, []store.StrategyRecord{
		{Version: "1.1.0", Parent: "1.0.0", Hash: "0123456789abcdef0123", Author: "ann@box", Created: t0},
		{Version: "1.0.0", Hash: "abc", Created: t0},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `VERSION  PARENT  HASH          AUTHOR   CREATED
1.1.0    1.0.0   0123456789ab  ann@box  2026-01-02T03:04:05Z
1.0.0            abc                    2026-01-02T03:04:05Z
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
