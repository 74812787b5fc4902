package serve

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Cluster is where runs go on that this server does not drive: a Temporal
// cluster (sextant serve --temporal, the app layer's Temporal backend),
// whose workers record each run in this server's store once it ended.
// The task routes take a task the store lacks to it, so that a run still
// going on the cluster is shown, answered, sent to and cancelled from the
// API and the dashboard (RATIONALE "Why a Temporal cancel is an update
// first, and serve --temporal acts through the app layer"). A task it has
// no run of is an error matching store.ErrNotFound; a change the run
// does not allow (it ended, waits for nothing of the kind) one matching
// sdk.ErrInvalid; a change that needs a worker of the run when none
// answers one matching sdk.ErrUnavailable, returned within the cluster's
// query bound rather than when a worker comes back. A run going on that
// no worker answers for is shown from what the cluster records
// (ClusterRun.Workers), not waited for.
type Cluster interface {
	// Task is the task's run as the cluster has it now.
	Task(ctx context.Context, id string) (*ClusterRun, error)
	// Tree is Task with, while the run goes on, its execution so far:
	// the spans the cluster holds that the store has not been given yet,
	// and the state of its last step.
	Tree(ctx context.Context, id string) (*ClusterRun, error)
	// Running lists a page of the runs going on that f selects, newest
	// first, each with its status now (running, or waiting with its
	// waits), or, when no worker answers for it, whatever f.Status, as
	// the cluster records it: those f selects of about limit runs of the
	// cluster's list from after (a cursor it gave, "" for the first
	// page), and the cursor of the next page ("" after the last). A
	// cursor it never gave is an error matching store.ErrBadCursor.
	Running(ctx context.Context, f ClusterFilter, limit int, after string) ([]*ClusterRun, string, error)
	// Start starts a run of prep's pipeline on in (its ID set) on the
	// cluster, under the version the cluster's workers find live unless
	// the pipeline is pinned; with follow it returns the run's result
	// once it ends or waits, else nil once the cluster has the run. A
	// task id the cluster has already is an error matching
	// store.ErrExists.
	Start(ctx context.Context, prep *run.Prepared, in run.Input, follow bool) (*run.Result, error)
	Resume(ctx context.Context, task string, answers map[string]any) (*run.Result, error)
	Send(ctx context.Context, task string, d run.Delivery) (*run.Result, error)
	Signal(ctx context.Context, pipeline string, d run.Delivery) ([]*run.Result, error)
	Cancel(ctx context.Context, task string, c run.Cancelled) (*run.Result, error)
	Close() error
}

// WorkersNone is ClusterRun.Workers, TaskRow.Workers and
// TaskDetail.Workers for a run going on that no worker answered for
// within the cluster's query bound (every worker down, say): its task is
// what the cluster itself records (status running since it began, its
// pipeline and tags), and its status now is unknown.
const WorkersNone = "none answering"

// ClusterRun is a task's run as the cluster has it now: its tree (the
// task; from Tree, while it goes on, its execution so far) and Workers,
// WorkersNone when no worker answered for it, else "".
type ClusterRun struct {
	store.Tree
	Workers string
}

// onCluster reports whether task id is the cluster's: the server has a
// cluster, runs no run of the task itself, and its store lacks the task.
func (s *Server) onCluster(ctx context.Context, id string) bool {
	if s.opts.Cluster == nil || run.Running(id) {
		return false
	}
	_, err := s.opts.Store.Task(ctx, id)
	return errors.Is(err, store.ErrNotFound)
}

// clusterStart is POST /api/v1/runs on a server with a cluster: the run
// goes on there, as sextant run --temporal's does, once its input is
// checked here, so that a run the routine refuses starts no workflow.
// Without follow it answers 202 with the task id once the cluster has
// the run. It closes prep.
func (s *Server) clusterStart(ctx context.Context, prep *run.Prepared, in run.Input, follow bool) (int, any, error) {
	defer prep.Close(ctx)
	if err := prep.CheckInput(ctx, in); err != nil {
		return 0, nil, runErr(err)
	}
	res, err := s.opts.Cluster.Start(ctx, prep, in, follow)
	switch {
	case err != nil:
		return 0, nil, runErr(err)
	case !follow:
		return http.StatusAccepted, map[string]string{"task": in.ID}, nil
	}
	return 200, res, nil
}

// clusterErr maps the cluster's refusal: an unknown task is a 404, a
// change the run does not allow a 409 for a cancel (as for a stored
// task) and a 400 otherwise.
func clusterErr(id string, cancel bool, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("task %q not found, in the store or on Temporal", id)
	case cancel && errors.Is(err, sdk.ErrInvalid):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	}
	return err
}

// ClusterFilter selects the runs going on on a cluster: of Pipeline,
// with Status (running or waiting) and Tag, begun from Since and before
// Until (each when set).
type ClusterFilter struct {
	Pipeline     string
	Status       store.Status
	Tag          string
	Since, Until time.Time
}

// clusterTask is GET /api/v1/tasks/{id} for a run on the cluster: its
// task as the cluster has it and, while it goes on, its execution so
// far (RATIONALE "Why a Temporal run's progress is a query"): the spans
// the workers staged into this store, then those the workflow holds, and
// the recordings they name. Once the run ended, the store has it.
func (s *Server) clusterTask(ctx context.Context, id string) (int, any, error) {
	cr, err := s.opts.Cluster.Tree(ctx, id)
	if err != nil {
		return 0, nil, clusterErr(id, false, err)
	}
	tr := &cr.Tree
	calls := []*store.Recording{}
	for i := range tr.Executions {
		x := &tr.Executions[i]
		staged, err := s.opts.Store.Spans(ctx, id, x.Execution.ID)
		if err != nil {
			return 0, nil, err
		}
		x.Spans = mergeSpans(staged, x.Spans)
		seen := map[string]bool{}
		for _, sp := range x.Spans {
			h := sp.Attr("sextant.recording").Str()
			if h == "" || seen[h] {
				continue
			}
			seen[h] = true
			r, err := s.opts.Store.Recording(ctx, h)
			if errors.Is(err, store.ErrNotFound) {
				continue // another store's, or not written yet
			}
			if err != nil {
				return 0, nil, err
			}
			tr.Recordings = append(tr.Recordings, h)
			calls = append(calls, r)
		}
	}
	return 200, TaskDetail{Tree: tr, Calls: calls, Workers: cr.Workers}, nil
}

// mergeSpans is an execution's spans in seq order: those staged into the
// store and those its workflow holds (a span staged while the query was
// answered is in both).
func mergeSpans(staged, held []store.Span) []store.Span {
	out := append(staged, held...)
	slices.SortStableFunc(out, func(a, b store.Span) int { return cmp.Compare(a.Seq, b.Seq) })
	return slices.CompactFunc(out, func(a, b store.Span) bool { return a.Seq == b.Seq })
}

// clusterCursor begins the cursors of GET /api/v1/tasks that page
// through the runs going on on the cluster, listed before the stored
// tasks: the cluster's cursor follows it, and alone it is the stored
// tasks' first page. A store's cursor never holds a '~' (base64url).
const clusterCursor = "t~"

// clusterRows are a page of the runs going on on the cluster that tasks
// filtered by q show, before the stored ones (clusterCursor): those the
// store lacks (a run is stored once it ended), from the cluster's cursor
// after, with the cursor of the cluster's next page ("" after the last).
// No run going on has rewards or an ended status, so a filter by either
// selects none.
func (s *Server) clusterRows(ctx context.Context, q store.Query, after string, rewardFilter bool) ([]TaskRow, string, error) {
	if q.RewardTag != "" || rewardFilter || q.Status != "" && q.Status != store.StatusRunning && q.Status != store.StatusWaiting {
		return nil, "", nil
	}
	runs, next, err := s.opts.Cluster.Running(ctx, ClusterFilter{Pipeline: q.Pipeline, Status: q.Status, Tag: q.Tag, Since: q.Since, Until: q.Until}, q.Limit, after)
	if err != nil {
		return nil, "", err
	}
	var rows []TaskRow
	for _, r := range runs {
		if _, err := s.opts.Store.Task(ctx, r.Task.ID); errors.Is(err, store.ErrNotFound) {
			rows = append(rows, TaskRow{Task: r.Task, Workers: r.Workers})
		}
	}
	return rows, next, nil
}

// clusterPage puts on page the rows of the runs going on on the cluster
// from q.After (clusterCursor and the cluster's cursor; "" for the first
// page), up to q.Limit, taking one page of the cluster's list after
// another while rows are wanted. done is true when the page is full:
// its cursor is then set to what follows. Otherwise q is left for the
// stored tasks that fill the rest of the page: their first, with the
// limit less the cluster's rows. An error is a cursor the cluster
// refuses, or its failure.
func (s *Server) clusterPage(ctx context.Context, q *store.Query, page *TaskPage, rewardFilter bool) (done bool, err error) {
	after := strings.TrimPrefix(q.After, clusterCursor)
	if q.After != clusterCursor { // clusterCursor alone: the stored tasks' first page
		for q.Limit > 0 {
			rows, next, err := s.clusterRows(ctx, *q, after, rewardFilter)
			if err != nil {
				return false, err
			}
			page.Tasks = append(page.Tasks, rows...)
			q.Limit -= len(rows)
			if after = next; next == "" {
				break
			}
		}
		if q.Limit <= 0 {
			more, err := s.clusterMore(ctx, *q, after, rewardFilter)
			if err != nil {
				return false, err
			}
			if more {
				page.NextCursor = clusterCursor + after
			}
			return true, nil
		}
	}
	q.After = ""
	return false, nil
}

// clusterMore reports whether a page follows a full one that ended at
// the cluster's cursor after ("" past its last page): a run going on
// from there, else a stored task. A page exactly full of the last rows
// has no cursor, so no client is sent on to an empty page.
func (s *Server) clusterMore(ctx context.Context, q store.Query, after string, rewardFilter bool) (bool, error) {
	q.Limit = 1
	for after != "" {
		rows, next, err := s.clusterRows(ctx, q, after, rewardFilter)
		if err != nil || len(rows) > 0 {
			return len(rows) > 0, err
		}
		after = next
	}
	q.After = ""
	tasks, _, err := s.opts.Store.TaskPage(ctx, q)
	return len(tasks) > 0, err
}
