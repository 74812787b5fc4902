package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// The range of a reward, as `sextant feedback` takes it.
const (
	minReward = store.MinReward
	maxReward = store.MaxReward
)

// PipelineInfo is one pipeline the server may run.
type PipelineInfo struct {
	Name string `json:"name"`
	File string `json:"file"`
}

func (s *Server) listPipelines(*http.Request) (int, any, error) {
	out := []PipelineInfo{}
	for name, p := range s.pipelines {
		out = append(out, PipelineInfo{Name: name, File: p.File})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return 200, map[string]any{"pipelines": out}, nil
}

// TaskPage is a page of GET /api/v1/tasks.
type TaskPage struct {
	Tasks []TaskRow `json:"tasks"`
	// NextCursor is the cursor of the next page. With serve --temporal
	// the runs going on on the cluster come first, then the stored tasks,
	// through the one cursor.
	NextCursor string `json:"next_cursor,omitempty"`
}

// TaskRow is a task as listed: the task and its rewards' mean and count.
type TaskRow struct {
	store.Task
	Rewards    int      `json:"rewards"`
	MeanReward *float64 `json:"mean_reward,omitempty"`
	// Workers is WorkersNone for a run going on on the cluster that no
	// worker answered for: its status is the cluster's record, running,
	// and its status now unknown.
	Workers string `json:"workers,omitempty"`
}

func queryTime(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, badRequest("%s: %q is not an RFC 3339 time (like 2026-11-23T17:00:00Z)", name, v)
	}
	return t, nil
}

func queryFloat(q url.Values, name string) (*float64, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		// ParseFloat reads NaN and infinities, which no mean reward is.
		return nil, badRequest("%s: %q is not a finite number: want a mean reward from %g (bad) to %g (good), like 0.5", name, v, minReward, maxReward)
	}
	if err != nil {
		return nil, badRequest("%s: %q is not a number: want a mean reward from %g (bad) to %g (good), like 0.5", name, v, minReward, maxReward)
	}
	if f < minReward || f > maxReward {
		// No mean reward is out of the range: such a bound would list
		// nothing, or everything rewarded, without saying why.
		return nil, badRequest("%s: %s is out of range: want a mean reward from %g (bad) to %g (good), like 0.5", name, v, minReward, maxReward)
	}
	return &f, nil
}

func queryInt(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s: %q is not a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func (s *Server) listTasks(r *http.Request) (int, any, error) {
	ctx := r.Context()
	qv := r.URL.Query()
	q := store.Query{Pipeline: qv.Get("pipeline"), Tag: qv.Get("tag"), RewardTag: qv.Get("reward_tag"), After: qv.Get("cursor")}
	if st := qv.Get("status"); st != "" {
		status, err := store.ParseStatus(st)
		if err != nil {
			return 0, nil, badRequest("status: %v", err)
		}
		q.Status = status
	}
	var err error
	if q.Since, err = queryTime(qv, "since"); err != nil {
		return 0, nil, err
	}
	if q.Until, err = queryTime(qv, "until"); err != nil {
		return 0, nil, err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return 0, nil, badRequest("since %s is after until %s: no task can match", qv.Get("since"), qv.Get("until"))
	}
	if q.Limit, err = queryInt(qv, "limit", 50, 1, 500); err != nil {
		return 0, nil, err
	}
	lo, err := queryFloat(qv, "min_reward")
	if err != nil {
		return 0, nil, err
	}
	hi, err := queryFloat(qv, "max_reward")
	if err != nil {
		return 0, nil, err
	}
	if lo != nil && hi != nil && *lo > *hi {
		return 0, nil, badRequest("min_reward %g is above max_reward %g: no task can match", *lo, *hi)
	}
	// The rewards' count and sum come from the task's summary: one read
	// per task listed, whatever the number of rewards.
	type stats struct {
		n   int
		sum float64
	}
	rewards := map[string]stats{}
	var readErr error
	q.Match = func(t *store.Task) bool {
		n, sum, err := s.opts.Store.RewardStats(ctx, t.ID)
		if err != nil {
			readErr = err
			return false
		}
		rewards[t.ID] = stats{n, sum}
		if lo == nil && hi == nil {
			return true
		}
		if n == 0 {
			return false
		}
		m := sum / float64(n)
		return (lo == nil || m >= *lo) && (hi == nil || m <= *hi)
	}
	page := TaskPage{Tasks: []TaskRow{}}
	if s.opts.Cluster != nil && (q.After == "" || strings.HasPrefix(q.After, clusterCursor)) {
		done, err := s.clusterPage(ctx, &q, &page, lo != nil || hi != nil)
		if err != nil {
			return 0, nil, err
		}
		if done {
			return 200, page, nil
		}
	}
	if q.After != "" {
		after, ok := s.cursors.Unseal(q.After)
		if !ok {
			return 0, nil, badRequest("cursor %.40q is not one this server gave (a cursor lasts the server's life): list from the first page, without cursor", q.After)
		}
		q.After = string(after)
	}
	tasks, next, err := s.opts.Store.TaskPage(ctx, q)
	if err == nil {
		err = readErr
	}
	if err != nil {
		return 0, nil, err
	}
	page.NextCursor = s.cursors.Seal([]byte(next))
	for _, t := range tasks {
		st := rewards[t.ID]
		row := TaskRow{Task: t, Rewards: st.n}
		if st.n > 0 {
			m := st.sum / float64(st.n)
			row.MeanReward = &m
		}
		page.Tasks = append(page.Tasks, row)
	}
	return 200, page, nil
}

// TaskDetail is GET /api/v1/tasks/{id}: the task's tree (executions with
// their spans, rewards, recording hashes) and the recordings themselves.
type TaskDetail struct {
	*store.Tree
	Calls []*store.Recording `json:"calls"`
	// Workers is WorkersNone for a run going on on the cluster that no
	// worker answered for (TaskRow.Workers): the task is the cluster's
	// record, with no execution.
	Workers string `json:"workers,omitempty"`
}

func (s *Server) getTask(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	tree, err := s.opts.Store.Tree(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) && s.onCluster(r.Context(), id) {
		return s.clusterTask(r.Context(), id)
	}
	if err != nil {
		return 0, nil, taskErr(id, err)
	}
	d := TaskDetail{Tree: tree, Calls: []*store.Recording{}}
	for _, h := range tree.Recordings {
		rec, err := s.opts.Store.Recording(r.Context(), h)
		if errors.Is(err, store.ErrNotFound) {
			continue // linked but never written (a call that failed)
		}
		if err != nil {
			return 0, nil, err
		}
		d.Calls = append(d.Calls, rec)
	}
	return 200, d, nil
}

// taskErr makes a bad or unknown task id a 400 or 404.
func taskErr(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound("task %q not found", id)
	}
	return err
}

func (s *Server) getRecording(r *http.Request) (int, any, error) {
	h := r.PathValue("hash")
	rec, err := s.opts.Store.Recording(r.Context(), h)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, notFound("recording %q not found", h)
	}
	if err != nil {
		return 0, nil, err
	}
	return 200, rec, nil
}

// RewardRequest is the body of POST /api/v1/tasks/{id}/rewards: a value
// (the unnamed dimension), rewards on named dimensions, or both — stored
// together or not at all.
type RewardRequest struct {
	Value *float64 `json:"value,omitempty"`
	// Dimensions are rewards by dimension name (helpfulness, safety, …).
	Dimensions map[string]float64 `json:"dimensions,omitempty"`
	SpanID     string             `json:"span_id,omitempty"`
	Execution  string             `json:"execution,omitempty"`
	Tags       []string           `json:"tags,omitempty"`
	Note       string             `json:"note,omitempty"`
}

// RewardsResponse answers a RewardRequest with dimensions: every reward
// stored, the unnamed one first, then by dimension name. A request
// without dimensions is answered with its one reward.
type RewardsResponse struct {
	Rewards []*store.Reward `json:"rewards"`
}

func (s *Server) addReward(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	var req RewardRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Value == nil && len(req.Dimensions) == 0 {
		return 0, nil, badRequest("value: required (or dimensions), from %g (bad) to %g (good)", minReward, maxReward)
	}
	if v := req.Value; v != nil && (*v < minReward || *v > maxReward) {
		return 0, nil, badRequest("value: %g is out of range: want %g (bad) to %g (good)", *v, minReward, maxReward)
	}
	if len(req.Note) > 4096 {
		return 0, nil, badRequest("note: longer than 4096 bytes")
	}
	var rs []*store.Reward
	if req.Value != nil {
		rs = append(rs, &store.Reward{Task: id, SpanID: req.SpanID, Execution: req.Execution, Value: *req.Value, Tags: req.Tags, Note: req.Note})
	}
	for _, name := range slices.Sorted(maps.Keys(req.Dimensions)) {
		v := req.Dimensions[name]
		if err := store.ValidDimension(name); err != nil {
			return 0, nil, badRequest("dimensions: %v", err)
		}
		if v < minReward || v > maxReward || math.IsNaN(v) {
			return 0, nil, badRequest("dimensions.%s: %g is out of range: want %g (bad) to %g (good)", name, v, minReward, maxReward)
		}
		rs = append(rs, &store.Reward{Task: id, SpanID: req.SpanID, Execution: req.Execution, Dimension: name, Value: v, Tags: req.Tags, Note: req.Note})
	}
	if err := s.opts.Store.AddRewards(r.Context(), rs); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil, notFound("%v", err)
		}
		return 0, nil, err
	}
	if len(req.Dimensions) == 0 {
		return http.StatusCreated, rs[0], nil
	}
	return http.StatusCreated, RewardsResponse{Rewards: rs}, nil
}

// RunRequest is the body of POST /api/v1/runs.
type RunRequest struct {
	// Pipeline names one of GET /api/v1/pipelines.
	Pipeline string          `json:"pipeline"`
	ID       string          `json:"id,omitempty"`
	Input    map[string]any  `json:"input,omitempty"`
	Truth    json.RawMessage `json:"truth,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	// Wait false answers 202 with the task id at once; the run goes on.
	Wait *bool `json:"wait,omitempty"`
	// File, when set, is the pipeline file the client means (absolute):
	// a server whose pipeline of that name is another file refuses, so
	// the CLI never runs a different pipeline than the one it was given.
	File string `json:"file,omitempty"`
}

func (s *Server) startRun(r *http.Request) (int, any, error) {
	var req RunRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	p, ok := s.pipelines[req.Pipeline]
	if !ok {
		if len(s.pipelines) == 0 {
			return 0, nil, badRequest("pipeline %q: the server runs no pipelines (start it with --pipelines DIR)", req.Pipeline)
		}
		return 0, nil, badRequest("pipeline %q: not one of the server's pipelines (GET /api/v1/pipelines)", req.Pipeline)
	}
	if req.File != "" && filepath.Clean(req.File) != p.File {
		return 0, nil, badRequest("pipeline %q: the server runs %s, not %s", req.Pipeline, p.File, req.File)
	}
	if len(req.Truth) > 0 && !json.Valid(req.Truth) {
		return 0, nil, badRequest("truth: not valid JSON")
	}
	if req.Input == nil {
		req.Input = map[string]any{}
	}
	if s.opts.Prepare == nil {
		return 0, nil, &Error{Status: http.StatusNotImplemented, Code: "not_implemented", Message: "this server cannot open plugins"}
	}
	ctx := context.WithoutCancel(r.Context())
	prep, err := s.opts.Prepare(ctx, p.File)
	if err != nil {
		return 0, nil, badRequest("%v", err)
	}
	id := req.ID
	if id == "" {
		id = s.opts.Store.NewID()
	}
	release, err := s.claimStart(ctx, id)
	if err != nil {
		prep.Close(ctx)
		return 0, nil, err
	}
	in := run.Input{ID: id, Input: req.Input, Truth: req.Truth, Tags: req.Tags}
	if s.opts.Cluster != nil {
		defer release()
		return s.clusterStart(ctx, prep, in, req.Wait == nil || *req.Wait)
	}
	if req.Wait != nil && !*req.Wait {
		select {
		case s.bgSlots <- struct{}{}:
		default:
			release()
			prep.Close(ctx)
			return 0, nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, RetryAfter: retryRuns,
				Message: fmt.Sprintf("the server runs %d runs started with wait=false already (serve --max-runs): try again later", cap(s.bgSlots))}
		}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			if s.beforeBackground != nil {
				s.beforeBackground(id)
			}
			// The slot and the claim are given up before the task's lock:
			// whoever takes the lock next sees the run wholly over.
			unlock := s.lockTask(id)
			defer unlock()
			defer func() { <-s.bgSlots }()
			defer release()
			defer prep.Close(context.Background())
			cfg, ended := s.runConfig(id, p.Name)
			defer ended()
			if _, err := prep.Runner(cfg).Start(s.bgCtx, in); err != nil {
				s.opts.Logger.Error("run failed to start", "task", id, "err", err)
			}
		}()
		return http.StatusAccepted, map[string]string{"task": id}, nil
	}
	defer release()
	defer prep.Close(ctx)
	unlock := s.lockTask(id)
	defer unlock()
	cfg, ended := s.runConfig(id, p.Name)
	defer ended()
	res, err := prep.Runner(cfg).Start(ctx, in)
	if err != nil {
		return 0, nil, runErr(err)
	}
	return 200, res, nil
}

// claimStart claims id for a run this server starts, refusing with a 409
// an id whose task is stored or whose start here has not returned; release
// gives the claim up once the run returned (its task is stored by then,
// or it never will be). Checking the store alone is not enough: a run
// started with wait=false stores its task after the 202.
func (s *Server) claimStart(ctx context.Context, id string) (release func(), err error) {
	s.startingMu.Lock()
	_, busy := s.starting[id]
	if !busy {
		s.starting[id] = struct{}{}
	}
	s.startingMu.Unlock()
	exists := &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "task " + id + " exists already"}
	if busy {
		return nil, exists
	}
	release = func() {
		s.startingMu.Lock()
		delete(s.starting, id)
		s.startingMu.Unlock()
	}
	// Check the input before anything is written (or answered 202).
	if _, err := s.opts.Store.Task(ctx, id); err == nil {
		release()
		return nil, exists
	} else if !errors.Is(err, store.ErrNotFound) {
		release()
		return nil, taskErr(id, err)
	}
	return release, nil
}

// runErr is an error of a run: bad input (store.ErrInvalid,
// sdk.ErrInvalid) becomes a 400 in toError.
func runErr(err error) error { return err }

// ResumeRequest is the body of POST /api/v1/tasks/{id}/resume.
type ResumeRequest struct {
	Answers map[string]any `json:"answers,omitempty"`
}

// MessageRequest is the body of POST /api/v1/tasks/{id}/messages.
type MessageRequest struct {
	Name string `json:"name"`
	// Key, when set, is the correlation key the task's subscription must have.
	Key  string         `json:"key,omitempty"`
	Vars map[string]any `json:"vars,omitempty"`
}

// taskRunner prepares the pipeline a recorded task ran with. The task's
// run is live (live.go) until done is called.
func (s *Server) taskRunner(ctx context.Context, id string) (runner *run.Runner, done func(), err error) {
	if s.opts.Prepare == nil {
		return nil, nil, &Error{Status: http.StatusNotImplemented, Code: "not_implemented", Message: "this server cannot open plugins"}
	}
	if _, err := s.opts.Store.Task(ctx, id); err != nil {
		return nil, nil, taskErr(id, err)
	}
	file, err := run.PipelineOf(ctx, s.opts.Store, id)
	if err != nil {
		return nil, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	}
	prep, err := s.opts.Prepare(ctx, file)
	if err != nil {
		return nil, nil, err
	}
	cfg, ended := s.runConfig(id, prep.Pipeline.Name)
	return prep.Runner(cfg), func() { ended(); prep.Close(context.WithoutCancel(ctx)) }, nil
}

func (s *Server) resumeTask(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	var req ResumeRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	ctx := context.WithoutCancel(r.Context())
	answers := req.Answers
	if len(answers) == 0 {
		answers = nil
	}
	if s.onCluster(ctx, id) {
		res, err := s.opts.Cluster.Resume(ctx, id, answers)
		return 200, res, clusterErr(id, false, err)
	}
	unlock := s.lockTask(id)
	defer unlock()
	runner, done, err := s.taskRunner(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	defer done()
	res, err := runner.Resume(ctx, id, answers)
	if err != nil {
		return 0, nil, runErr(err)
	}
	return 200, res, nil
}

func (s *Server) sendMessage(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	var req MessageRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Name == "" {
		return 0, nil, badRequest("name: name the message to send")
	}
	ctx := context.WithoutCancel(r.Context())
	d := run.Delivery{Kind: store.WaitMessage, Name: req.Name, Vars: req.Vars, Key: req.Key}
	if s.onCluster(ctx, id) {
		res, err := s.opts.Cluster.Send(ctx, id, d)
		return 200, res, clusterErr(id, false, err)
	}
	// A run of the task in progress here takes it at once (a boundary
	// event on its running step); else the stored task does, once no
	// run of it is in progress.
	switch err := s.toLive(r.Context(), id, d); {
	case err == nil:
		return 200, &run.Result{Task: id, Status: store.StatusRunning}, nil
	case !errors.Is(err, errNotLive):
		return 0, nil, runErr(err)
	}
	unlock := s.lockTask(id)
	defer unlock()
	runner, done, err := s.taskRunner(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	defer done()
	res, err := runner.Deliver(ctx, id, d)
	if err != nil {
		return 0, nil, runErr(err)
	}
	return 200, res, nil
}

// SignalRequest is the body of POST /api/v1/signals.
type SignalRequest struct {
	Name     string         `json:"name"`
	Pipeline string         `json:"pipeline,omitempty"`
	Vars     map[string]any `json:"vars,omitempty"`
}

// SignalResult says which tasks received a signal.
type SignalResult struct {
	Signal   string        `json:"signal"`
	Received int           `json:"received"`
	Tasks    []*run.Result `json:"tasks"`
}

func (s *Server) broadcastSignal(r *http.Request) (int, any, error) {
	var req SignalRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Name == "" {
		return 0, nil, badRequest("name: name the signal to broadcast")
	}
	if s.opts.Prepare == nil {
		return 0, nil, &Error{Status: http.StatusNotImplemented, Code: "not_implemented", Message: "this server cannot open plugins"}
	}
	ctx := context.WithoutCancel(r.Context())
	preps := map[string]*run.Prepared{}
	defer func() {
		for _, p := range preps {
			p.Close(ctx)
		}
	}()
	results, err := run.Broadcast(ctx, s.opts.Store, req.Pipeline, "", req.Name, req.Vars, func(ctx context.Context, file string) (*run.Runner, error) {
		prep := preps[file]
		if prep == nil {
			var err error
			if prep, err = s.opts.Prepare(ctx, file); err != nil {
				return nil, err
			}
			preps[file] = prep
		}
		return prep.Runner(run.Config{Store: s.opts.Store, Logger: s.opts.Logger}), nil
	})
	if err != nil {
		return 0, nil, err
	}
	// Runs in progress here are running, not waiting, in the store: they
	// take the signal through their inbox.
	live, err := s.signalLive(r.Context(), req.Pipeline, run.Delivery{Kind: store.WaitSignal, Name: req.Name, Vars: req.Vars})
	results = append(results, live...)
	if err != nil {
		return 0, nil, err
	}
	if s.opts.Cluster != nil {
		// Runs on the cluster wait there, not in the store.
		remote, err := s.opts.Cluster.Signal(ctx, req.Pipeline, run.Delivery{Kind: store.WaitSignal, Name: req.Name, Vars: req.Vars})
		results = append(results, remote...)
		if err != nil {
			return 0, nil, err
		}
	}
	if results == nil {
		results = []*run.Result{}
	}
	return 200, SignalResult{Signal: req.Name, Received: len(results), Tasks: results}, nil
}
