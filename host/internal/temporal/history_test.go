package temporal_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// replayHistory replays a history against this binary's workflow, as a worker
// that takes over a run another worker began does: any command the code
// gives that the history lacks is a nondeterminism error.
func replayHistory(t *testing.T, name string, h *historypb.History) {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.ReplayWorkflow(), workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistory(nil, h); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// TestReplayOldHistories: runs recorded by earlier versions of the
// workflow (testdata/histories: chain10 with and without local steps,
// each named by the version it recorded; v3 added StepNext, v4
// BeginNext, v5 escapes in span sizes) replay on this one, so a worker
// upgraded while they run takes them over without a nondeterminism
// error. A new version adds the histories of the one before.
func TestReplayOldHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*.json.gz")
	must(t, err)
	if len(files) == 0 {
		t.Fatal("no recorded histories")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		must(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		must(t, err)
		b, err := io.ReadAll(zr)
		must(t, err)
		h := &historypb.History{}
		must(t, protojson.Unmarshal(b, h))
		replayHistory(t, filepath.Base(f), h)
	}
}

// TestReplayNewHistories: the runs this workflow records replay on it.
func TestReplayNewHistories(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t, nil, 1, chain10)
	for _, c := range []struct {
		task  string
		local bool
	}{{"replay-steps", false}, {"replay-local-steps", true}} {
		cl.startWith(t, temporal.RunInput{Pipeline: "chain10", Task: c.task, Input: map[string]any{"topic": c.task}, LocalSteps: c.local})
		_, err := temporal.Result(ctx, cl.c, c.task)
		must(t, err)
		it := cl.c.GetWorkflowHistory(ctx, c.task, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		h := &historypb.History{}
		for it.HasNext() {
			e, err := it.Next()
			must(t, err)
			h.Events = append(h.Events, e)
		}
		replayHistory(t, c.task, h)
	}
}
