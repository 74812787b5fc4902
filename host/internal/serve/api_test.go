package serve_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

type runResult struct {
	Task    string `json:"task"`
	Status  string `json:"status"`
	Waiting []struct{ Node, Question string }
	Output  map[string]any `json:"output"`
}

type taskRow struct {
	ID         string   `json:"id"`
	Pipeline   string   `json:"pipeline"`
	Status     string   `json:"status"`
	Tags       []string `json:"tags"`
	Rewards    int      `json:"rewards"`
	MeanReward *float64 `json:"mean_reward"`
}

type taskPage struct {
	Tasks      []taskRow `json:"tasks"`
	NextCursor string    `json:"next_cursor"`
}

func (p taskPage) ids() []string {
	var out []string
	for _, t := range p.Tasks {
		out = append(out, t.ID)
	}
	return out
}

// runAll starts a run of every example input through the API; the
// e-mail invoice waits for a person.
func runAll(t *testing.T, e *env) map[string]runResult {
	t.Helper()
	out := map[string]runResult{}
	for _, in := range []struct{ p, f string }{
		{"email-triage", "invoice"}, {"email-triage", "meeting"}, {"email-triage", "newsletter"},
		{"answer-and-learn", "refund"}, {"answer-and-learn", "shipping"}, {"research-report", "question"},
	} {
		input := readJSON(t, filepath.Join(e.pipelines, in.p, "inputs", in.f+".json"))
		var r runResult
		e.do("POST", "/api/v1/runs", map[string]any{"pipeline": in.p, "input": input, "tags": []string{"example", in.f}}).want(t, 200).json(t, &r)
		out[in.f] = r
	}
	return out
}

// fixtureStrategies are the e-mail pipeline's strategy and its improving
// candidate, as files.
func fixtureStrategies(t *testing.T, e *env) (*strategy.Strategy, *strategy.Strategy) {
	t.Helper()
	base, err := strategy.Load(filepath.Join(e.pipelines, "email-triage", "strategies", "email-handler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := strategy.Load(filepath.Join(e.pipelines, "email-triage", "candidates", "improving.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return base, cand
}

// judged is a real judgment (evolve.Judge) of replay results of the given
// tasks: the first regresses, the second improves, the rest agree.
func judged(t *testing.T, base, cand *strategy.Strategy, tasks []string) *evolve.Judgment {
	var results []replay.Result
	for i, id := range tasks {
		b, c := true, true
		switch i {
		case 0:
			c = false
		case 1:
			b = false
		}
		results = append(results,
			replay.Result{Task: id, Strategy: base.Metadata.Version, Hash: base.Hash(), Status: store.StatusCompleted, Outcome: sdk.TaskResult{Success: b, Confidence: 1}},
			replay.Result{Task: id, Strategy: cand.Metadata.Version, Hash: cand.Hash(), Status: store.StatusCompleted, Outcome: sdk.TaskResult{Success: c, Confidence: 1}})
	}
	return evolve.Judge(context.Background(), results, base, cand, nil, evolve.Options{Seed: 1})
}

// TestAPI drives every route over real HTTP: the happy path, then bad
// input (400 with a JSON error and nothing written), then unknown ids.
// TestRoutesCovered checks that it reached every route.
func TestAPI(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	ctx := context.Background()
	t.Cleanup(func() { checkCovered(t, e) })

	// The OpenAPI document and the pipelines.
	var doc map[string]any
	e.do("GET", "/api/v1/openapi.json", nil).want(t, 200).json(t, &doc)
	if doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi %v", doc["openapi"])
	}
	var pipes struct{ Pipelines []struct{ Name, File string } }
	e.do("GET", "/api/v1/pipelines", nil).want(t, 200).json(t, &pipes)
	if len(pipes.Pipelines) != 4 || pipes.Pipelines[0].Name != "answer-and-learn" {
		t.Fatalf("pipelines %+v", pipes)
	}

	// Runs of every example; the invoice waits for a person.
	runs := runAll(t, e)
	inv := runs["invoice"]
	if inv.Status != "waiting" || len(inv.Waiting) != 1 || inv.Waiting[0].Node != "confirm" {
		t.Fatalf("invoice run %+v", inv)
	}
	for name, r := range runs {
		if name != "invoice" && r.Status != "completed" {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	// A run started without waiting answers 202 with its task id.
	var started struct{ Task string }
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "research-report", "id": "bg-1",
		"input": readJSON(t, filepath.Join(e.pipelines, "research-report", "inputs", "question.json")), "wait": false}).want(t, 202).json(t, &started)
	if started.Task != "bg-1" {
		t.Fatalf("started %+v", started)
	}
	e.srv.Wait()
	if tk, err := e.store.Task(ctx, "bg-1"); err != nil || tk.Status != store.StatusCompleted {
		t.Fatalf("background run: %v %+v", err, tk)
	}

	// Answer the waiting step.
	var resumed runResult
	e.do("POST", "/api/v1/tasks/"+inv.Task+"/resume", map[string]any{"answers": map[string]any{"answer": "yes"}}).want(t, 200).json(t, &resumed)
	if resumed.Status != "completed" {
		t.Fatalf("resumed %+v", resumed)
	}

	// List with filters and pages.
	var page taskPage
	e.do("GET", "/api/v1/tasks", nil).want(t, 200).json(t, &page)
	if len(page.Tasks) != 7 || page.NextCursor != "" {
		t.Fatalf("all tasks: %d, cursor %q", len(page.Tasks), page.NextCursor)
	}
	all := page.ids()
	e.do("GET", "/api/v1/tasks?pipeline=email-triage&status=completed", nil).want(t, 200).json(t, &page)
	if len(page.Tasks) != 3 {
		t.Fatalf("email-triage completed: %v", page.ids())
	}
	e.do("GET", "/api/v1/tasks?tag=refund", nil).want(t, 200).json(t, &page)
	if !slices.Equal(page.ids(), []string{runs["refund"].Task}) {
		t.Fatalf("tag refund: %v", page.ids())
	}
	var paged []string
	q := "/api/v1/tasks?limit=3"
	for i := 0; ; i++ {
		if i > 5 {
			t.Fatal("paging does not end")
		}
		page = taskPage{}
		e.do("GET", q, nil).want(t, 200).json(t, &page)
		paged = append(paged, page.ids()...)
		if page.NextCursor == "" {
			break
		}
		q = "/api/v1/tasks?limit=3&cursor=" + url.QueryEscape(page.NextCursor)
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("pages %v, want %v", paged, all)
	}
	// A cursor the server never gave, forged in the store's own form
	// or a real one damaged, positions nothing: it is a 400.
	e.do("GET", "/api/v1/tasks?limit=3", nil).want(t, 200).json(t, &page)
	real, _ := base64.RawURLEncoding.DecodeString(page.NextCursor)
	damaged := slices.Clone(real)
	damaged[len(damaged)-1] ^= 1
	for _, c := range []string{"AAAAAAAAAAAAAAAAAAAA", base64.RawURLEncoding.EncodeToString(damaged),
		base64.RawURLEncoding.EncodeToString(real[:len(real)-1]), string(real[:len(real)-16])} {
		a := e.do("GET", "/api/v1/tasks?limit=3&cursor="+url.QueryEscape(c), nil).want(t, 400)
		var body struct{ Error struct{ Message string } }
		a.json(t, &body)
		if !strings.Contains(body.Error.Message, "is not one this server gave") {
			t.Errorf("cursor %q: %q, want it refused as one this server did not give", c, body.Error.Message)
		}
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	e.do("GET", "/api/v1/tasks?since="+future, nil).want(t, 200).json(t, &page)
	if len(page.Tasks) != 0 {
		t.Fatalf("since the future: %v", page.ids())
	}
	e.do("GET", "/api/v1/tasks?until="+future, nil).want(t, 200).json(t, &page)
	if len(page.Tasks) != 7 {
		t.Fatalf("until the future: %v", page.ids())
	}

	// A task with its spans, rewards and recordings (prompt and reply).
	var detail struct {
		Task       taskRow
		Executions []struct {
			Execution struct{ ID string }
			Spans     []struct {
				SpanID string `json:"span_id"`
				Name   string
			}
		}
		Recordings []string
		Calls      []struct {
			Hash     string
			Kind     string
			Request  json.RawMessage
			Response json.RawMessage
		}
	}
	e.do("GET", "/api/v1/tasks/"+inv.Task, nil).want(t, 200).json(t, &detail)
	if detail.Task.ID != inv.Task || len(detail.Executions) == 0 || len(detail.Executions[0].Spans) < 2 {
		t.Fatalf("task detail %+v", detail)
	}
	var prompt string
	for _, c := range detail.Calls {
		if c.Kind == "chat" {
			prompt = string(c.Request)
		}
	}
	if !strings.Contains(prompt, "Invoice 4471 overdue") {
		t.Fatalf("no prompt with the subject in the calls: %s", prompt)
	}
	var rec struct{ Hash, Kind string }
	e.do("GET", "/api/v1/recordings/"+detail.Calls[0].Hash, nil).want(t, 200).json(t, &rec)
	if rec.Hash != detail.Calls[0].Hash {
		t.Fatalf("recording %+v", rec)
	}

	// Rewards on the task and on a span, with tags that become queryable.
	span := detail.Executions[0].Spans[1].SpanID
	var rw store.Reward
	e.do("POST", "/api/v1/tasks/"+inv.Task+"/rewards", map[string]any{"value": 1, "tags": []string{"correct"}, "note": "good call"}).want(t, 201).json(t, &rw)
	if rw.Seq != 1 || rw.Task != inv.Task {
		t.Fatalf("reward %+v", rw)
	}
	e.do("POST", "/api/v1/tasks/"+inv.Task+"/rewards", map[string]any{"value": 0.5, "span_id": span, "tags": []string{"tone"}}).want(t, 201).json(t, &rw)
	e.do("POST", "/api/v1/tasks/"+runs["refund"].Task+"/rewards", map[string]any{"value": -1, "tags": []string{"wrong"}}).want(t, 201)
	e.do("GET", "/api/v1/tasks?reward_tag=tone", nil).want(t, 200).json(t, &page)
	if !slices.Equal(page.ids(), []string{inv.Task}) || page.Tasks[0].Rewards != 2 || *page.Tasks[0].MeanReward != 0.75 {
		t.Fatalf("reward_tag tone: %+v", page.Tasks)
	}
	e.do("GET", "/api/v1/tasks?min_reward=0", nil).want(t, 200).json(t, &page)
	if !slices.Equal(page.ids(), []string{inv.Task}) {
		t.Fatalf("min_reward 0: %v", page.ids())
	}
	e.do("GET", "/api/v1/tasks?max_reward=-0.5", nil).want(t, 200).json(t, &page)
	if !slices.Equal(page.ids(), []string{runs["refund"].Task}) {
		t.Fatalf("max_reward -0.5: %v", page.ids())
	}

	// Rewards on named dimensions: stored together (a bad one refuses
	// them all), answered as a list, and charted per dimension.
	meet := runs["meeting"].Task
	var dimRes serve.RewardsResponse
	e.do("POST", "/api/v1/tasks/"+meet+"/rewards", map[string]any{"dimensions": map[string]float64{"safety": -0.5, "helpfulness": 1}}).want(t, 201).json(t, &dimRes)
	if len(dimRes.Rewards) != 2 || dimRes.Rewards[0].Dimension != "helpfulness" || dimRes.Rewards[1].Dimension != "safety" || dimRes.Rewards[1].Seq != 2 {
		t.Fatalf("dimension rewards %+v", dimRes.Rewards)
	}
	e.do("POST", "/api/v1/tasks/"+meet+"/rewards", map[string]any{"dimensions": map[string]float64{"tone": 1, "9x": 1}}).want(t, 400)
	e.do("POST", "/api/v1/tasks/"+meet+"/rewards", map[string]any{"dimensions": map[string]float64{"tone": 1.5}}).want(t, 400)
	if rs, err := e.store.Rewards(ctx, meet); err != nil || len(rs) != 2 {
		t.Fatalf("rewards after refused requests: %d %v", len(rs), err)
	}
	var metrics struct{ Metrics []serve.MetricRow }
	e.do("GET", "/api/v1/metrics?pipeline=email-triage", nil).want(t, 200).json(t, &metrics)
	var safety *serve.DimensionRow
	for _, row := range metrics.Metrics {
		if d := row.Dimensions["safety"]; d != nil {
			safety = d
		}
	}
	if safety == nil || safety.Rewarded != 1 || safety.MeanReward != -0.5 {
		t.Fatalf("metrics safety dimension %+v in %+v", safety, metrics.Metrics)
	}

	// Messages and signals: nothing waits for them here.
	if code := e.do("POST", "/api/v1/tasks/"+inv.Task+"/messages", map[string]any{"name": "approved"}).want(t, 400).errorCode(t); code != "bad_request" {
		t.Fatal(code)
	}
	var sig struct {
		Signal   string
		Received int
		Tasks    []any
	}
	e.do("POST", "/api/v1/signals", map[string]any{"name": "go", "pipeline": "email-triage"}).want(t, 200).json(t, &sig)
	if sig.Signal != "go" || sig.Received != 0 || sig.Tasks == nil {
		t.Fatalf("signal %+v", sig)
	}

	// A judged replay with per-task outcomes and the flipped tasks' outputs.
	base, cand := fixtureStrategies(t, e)
	j := judged(t, base, cand, []string{runs["invoice"].Task, runs["meeting"].Task, runs["newsletter"].Task})
	v, err := evolve.NewVerdict(j, "gate", "email-triage", "", time.Now(), func(task, hash string) (json.RawMessage, bool) {
		return json.RawMessage(fmt.Sprintf(`{"answer":"%s under %s"}`, task, hash[:8])), true
	})
	if err != nil {
		t.Fatal(err)
	}
	var saved evolve.Verdict
	e.do("POST", "/api/v1/comparisons", v).want(t, 201).json(t, &saved)
	var list struct{ Comparisons []evolve.Verdict }
	e.do("GET", "/api/v1/comparisons?pipeline=email-triage", nil).want(t, 200).json(t, &list)
	if len(list.Comparisons) != 1 || list.Comparisons[0].ID != saved.ID || list.Comparisons[0].Tasks != nil {
		t.Fatalf("comparisons %+v", list)
	}
	var got evolve.Verdict
	e.do("GET", "/api/v1/comparisons/"+saved.ID, nil).want(t, 200).json(t, &got)
	if len(got.Tasks) != 3 || got.Tasks[0].Flip != evolve.FlipRegressed || !strings.Contains(string(got.Tasks[0].CandidateOutput), cand.Hash()[:8]) ||
		got.Tasks[2].Flip != "" || got.Tasks[2].BaselineOutput != nil {
		t.Fatalf("comparison tasks %+v", got.Tasks)
	}

	// The review queue: reject one, approve another (it is promoted).
	queue := func(c *strategy.Strategy) string {
		j := judged(t, base, c, []string{runs["invoice"].Task, runs["meeting"].Task})
		r, err := evolve.Queue(ctx, e.store, "email-triage", evolve.Evaluated{Mutator: "greedy", Strategy: c, Comparison: j.Comparison,
			Result: evolve.Result{Ruling: sdk.Review, Gates: []evolve.GateResult{{Name: "human-review", Ruling: sdk.Review, Reasons: []string{"a person decides"}}}}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	other := cand.Clone()
	other.Parameters["user_confirmation"] = 0.55
	approveID, rejectID := queue(cand), queue(other)
	var reviews struct{ Reviews []evolve.ReviewRequest }
	e.do("GET", "/api/v1/reviews", nil).want(t, 200).json(t, &reviews)
	if len(reviews.Reviews) != 2 {
		t.Fatalf("reviews %+v", reviews)
	}
	var rv evolve.ReviewRequest
	e.do("GET", "/api/v1/reviews/"+approveID, nil).want(t, 200).json(t, &rv)
	if rv.Status != evolve.ReviewPending {
		t.Fatalf("review %+v", rv)
	}
	e.do("POST", "/api/v1/reviews/"+rejectID+"/reject", map[string]any{"by": "ana", "note": "too far"}).want(t, 200).json(t, &rv)
	if rv.Status != evolve.ReviewRejected || rv.By != "ana" {
		t.Fatalf("rejected %+v", rv)
	}
	e.do("POST", "/api/v1/reviews/"+approveID+"/approve", map[string]any{"by": "ana"}).want(t, 200).json(t, &rv)
	if rv.Status != evolve.ReviewApproved || rv.Path == "" {
		t.Fatalf("approved %+v", rv)
	}
	if _, err := os.Stat(rv.Path); err != nil {
		t.Fatalf("promoted file: %v", err)
	}
	if code := e.do("POST", "/api/v1/reviews/"+approveID+"/approve", map[string]any{"by": "bo"}).want(t, 409).errorCode(t); code != "conflict" {
		t.Fatal(code)
	}
	e.do("GET", "/api/v1/reviews?status=all", nil).want(t, 200).json(t, &reviews)
	if len(reviews.Reviews) != 2 {
		t.Fatalf("all reviews %+v", reviews)
	}

	// Strategies: the promoted version, its lineage, file and diff.
	var strats struct {
		Strategies []struct{ Name, Latest string }
	}
	e.do("GET", "/api/v1/strategies", nil).want(t, 200).json(t, &strats)
	if len(strats.Strategies) != 1 || strats.Strategies[0].Latest != "2.1.0" {
		t.Fatalf("strategies %+v", strats)
	}
	var lineage struct{ Versions []store.StrategyRecord }
	e.do("GET", "/api/v1/strategies/email-handler", nil).want(t, 200).json(t, &lineage)
	if len(lineage.Versions) != 1 || lineage.Versions[0].Parent != "2.0.0" {
		t.Fatalf("lineage %+v", lineage)
	}
	var sv struct {
		Version, File, Text string
	}
	e.do("GET", "/api/v1/strategies/email-handler/versions/2.1.0", nil).want(t, 200).json(t, &sv)
	if sv.File != rv.Path || !strings.Contains(sv.Text, `version = "2.1.0"`) {
		t.Fatalf("version %+v", sv)
	}
	var diff struct{ Text string }
	e.do("GET", "/api/v1/strategies/email-handler/diff?from=2.0.0&to=2.1.0", nil).want(t, 200).json(t, &diff)
	if !strings.Contains(diff.Text, "user_confirmation") {
		t.Fatalf("diff %q", diff.Text)
	}

	// Metrics per day, pipeline and strategy version.
	var m struct {
		Metrics []struct {
			Pipeline string
			Tasks    int
			Success  int
			Tokens   int
		}
	}
	e.do("GET", "/api/v1/metrics?pipeline=email-triage", nil).want(t, 200).json(t, &m)
	if len(m.Metrics) != 1 || m.Metrics[0].Tasks != 3 || m.Metrics[0].Tokens == 0 {
		t.Fatalf("metrics %+v", m)
	}

	importTasks(t, e)
	badInput(t, e, inv.Task, span)
	operateAPI(t, e)
}

// importTasks: a JSONL export of another store is imported all or
// nothing; a bad line, a task the store has, or a body that is not
// JSONL is refused and writes nothing.
func importTasks(t *testing.T, e *env) {
	ctx := context.Background()
	other, err := store.Open(ctx, filepath.Join(t.TempDir(), ".sextant"), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"imported-1", "imported-2"} {
		if err := other.CreateTask(ctx, &store.Task{ID: id, Pipeline: "elsewhere", Tags: []string{"imported"}}); err != nil {
			t.Fatal(err)
		}
	}
	var dump strings.Builder
	if _, err := other.Export(ctx, &dump, store.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	other.Close()
	const ndjson = "Content-Type: application/x-ndjson"
	before, _ := e.store.Tasks(ctx, store.Query{})
	lines := strings.SplitAfter(dump.String(), "\n")
	for _, tc := range []struct {
		name, body, header string
		status             int
		code, msg          string
	}{
		{"a bad line", lines[0] + lines[1] + "{\"type\":\"task\",\"id\":\"a b\"}\n", ndjson, 400, "bad_request", "dump.jsonl:3:"},
		{"not JSON", lines[0] + "not json\n", ndjson, 400, "bad_request", "dump.jsonl:2:"},
		{"as JSON", dump.String(), "Content-Type: application/json", 415, "unsupported_media_type", "application/x-ndjson"},
		{"as a form", dump.String(), "Content-Type: text/plain", 415, "unsupported_media_type", "application/x-ndjson"},
	} {
		t.Run("import "+tc.name, func(t *testing.T) {
			a := e.do("POST", "/api/v1/import?name=dump.jsonl", tc.body, tc.header).want(t, tc.status)
			var er struct {
				Error struct{ Code, Message string }
			}
			a.json(t, &er)
			if er.Error.Code != tc.code || !strings.Contains(er.Error.Message, tc.msg) {
				t.Fatalf("error %+v, want %s with %q", er.Error, tc.code, tc.msg)
			}
		})
	}
	if after, _ := e.store.Tasks(ctx, store.Query{}); len(after) != len(before) {
		t.Fatalf("refused imports wrote %d tasks", len(after)-len(before))
	}
	var n struct{ Tasks, Executions int }
	e.do("POST", "/api/v1/import", dump.String(), ndjson).want(t, 201).json(t, &n)
	if n.Tasks != 2 {
		t.Fatalf("imported %+v", n)
	}
	var page taskPage
	e.do("GET", "/api/v1/tasks?tag=imported", nil).want(t, 200).json(t, &page)
	if ids := page.ids(); len(ids) != 2 {
		t.Fatalf("imported tasks listed: %v", ids)
	}
	// Again: the store has the tasks (bad input, positioned).
	if a := e.do("POST", "/api/v1/import", dump.String(), ndjson).want(t, 409); a.errorCode(t) != "conflict" || !strings.Contains(string(a.body), `already exists`) {
		t.Fatalf("import again: %s", a.body)
	}
}

// badInput: every write refused with 400 (or 404, 409, 415) and a JSON
// error, and nothing written.
func badInput(t *testing.T, e *env, task, span string) {
	ctx := context.Background()
	before, err := e.store.Tasks(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	rewardsBefore, _ := e.store.Rewards(ctx, task)
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"reward out of range", "POST", "/api/v1/tasks/" + task + "/rewards", map[string]any{"value": 2}, 400, "bad_request"},
		{"reward missing value", "POST", "/api/v1/tasks/" + task + "/rewards", map[string]any{"note": "x"}, 400, "bad_request"},
		{"reward not a number", "POST", "/api/v1/tasks/" + task + "/rewards", `{"value": "high"}`, 400, "bad_request"},
		{"reward unknown field", "POST", "/api/v1/tasks/" + task + "/rewards", map[string]any{"value": 1, "score": 3}, 400, "bad_request"},
		{"reward bad tag", "POST", "/api/v1/tasks/" + task + "/rewards", map[string]any{"value": 1, "tags": []string{"a\nb"}}, 400, "bad_request"},
		{"reward unknown span", "POST", "/api/v1/tasks/" + task + "/rewards", map[string]any{"value": 1, "span_id": "00000000000000ff"}, 404, "not_found"},
		{"reward bad span id", "POST", "/api/v1/tasks/" + task + "/rewards", map[string]any{"value": 1, "span_id": "xyz"}, 400, "bad_request"},
		{"reward unknown task", "POST", "/api/v1/tasks/nope/rewards", map[string]any{"value": 1}, 404, "not_found"},
		{"reward bad task id", "POST", "/api/v1/tasks/a%20b/rewards", map[string]any{"value": 1}, 400, "bad_request"},
		{"reward two values", "POST", "/api/v1/tasks/" + task + "/rewards", `{"value": 1} {"value": 1}`, 400, "bad_request"},
		{"reward truncated", "POST", "/api/v1/tasks/" + task + "/rewards", `{"value": 1`, 400, "bad_request"},
		{"reward as a form", "POST", "/api/v1/tasks/" + task + "/rewards", nil, 415, "unsupported_media_type"},
		{"run unknown pipeline", "POST", "/api/v1/runs", map[string]any{"pipeline": "nope"}, 400, "bad_request"},
		{"run bad id", "POST", "/api/v1/runs", map[string]any{"pipeline": "research-report", "id": "a/b"}, 400, "bad_request"},
		{"run existing id", "POST", "/api/v1/runs", map[string]any{"pipeline": "research-report", "id": task}, 409, "conflict"},
		{"run input not an object", "POST", "/api/v1/runs", map[string]any{"pipeline": "research-report", "input": []int{1}}, 400, "bad_request"},
		{"run bad tag", "POST", "/api/v1/runs", map[string]any{"pipeline": "research-report", "id": "fresh-1", "tags": []string{""}}, 400, "bad_request"},
		{"resume not waiting with answers", "POST", "/api/v1/tasks/" + task + "/resume", map[string]any{"answers": map[string]any{"answer": "no"}}, 400, "bad_request"},
		{"resume unknown task", "POST", "/api/v1/tasks/nope/resume", map[string]any{}, 404, "not_found"},
		{"message without name", "POST", "/api/v1/tasks/" + task + "/messages", map[string]any{}, 400, "bad_request"},
		{"message unknown task", "POST", "/api/v1/tasks/nope/messages", map[string]any{"name": "x"}, 404, "not_found"},
		{"signal without name", "POST", "/api/v1/signals", map[string]any{}, 400, "bad_request"},
		{"comparison without candidate", "POST", "/api/v1/comparisons", map[string]any{"pipeline": "p"}, 400, "bad_request"},
		{"comparison bad id", "POST", "/api/v1/comparisons", map[string]any{"id": "a/b", "pipeline": "p", "comparison": map[string]any{"candidate": map[string]any{"hash": "ab"}}}, 400, "bad_request"},
		{"approve without by", "POST", "/api/v1/reviews/abc/approve", map[string]any{}, 400, "bad_request"},
		{"reject unknown review", "POST", "/api/v1/reviews/ffffffffffff/reject", map[string]any{"by": "ana"}, 404, "not_found"},
		{"list bad status", "GET", "/api/v1/tasks?status=done", nil, 400, "bad_request"},
		{"list bad since", "GET", "/api/v1/tasks?since=yesterday", nil, 400, "bad_request"},
		{"list bad limit", "GET", "/api/v1/tasks?limit=0", nil, 400, "bad_request"},
		{"list huge limit", "GET", "/api/v1/tasks?limit=100000", nil, 400, "bad_request"},
		{"list bad reward", "GET", "/api/v1/tasks?min_reward=NaN", nil, 400, "bad_request"},
		{"list bad cursor", "GET", "/api/v1/tasks?cursor=%25%25", nil, 400, "bad_request"},
		{"list unknown parameter", "GET", "/api/v1/tasks?piepline=x", nil, 400, "bad_request"},
		{"task unknown", "GET", "/api/v1/tasks/nope", nil, 404, "not_found"},
		{"task bad id", "GET", "/api/v1/tasks/a%20b", nil, 400, "bad_request"},
		{"recording unknown", "GET", "/api/v1/recordings/nope", nil, 404, "not_found"},
		{"strategy unknown", "GET", "/api/v1/strategies/nope", nil, 404, "not_found"},
		{"strategy version unknown", "GET", "/api/v1/strategies/email-handler/versions/9.9.9", nil, 404, "not_found"},
		{"diff without versions", "GET", "/api/v1/strategies/email-handler/diff", nil, 400, "bad_request"},
		{"diff unknown version", "GET", "/api/v1/strategies/email-handler/diff?from=2.0.0&to=9.9.9", nil, 404, "not_found"},
		{"comparison unknown", "GET", "/api/v1/comparisons/nope", nil, 404, "not_found"},
		{"review unknown", "GET", "/api/v1/reviews/ffffffffffff", nil, 404, "not_found"},
		{"reviews bad status", "GET", "/api/v1/reviews?status=maybe", nil, 400, "bad_request"},
		{"metrics bad limit", "GET", "/api/v1/metrics?limit=-1", nil, 400, "bad_request"},
		{"unknown route", "GET", "/api/v1/nope", nil, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a answer
			if tc.body == nil && tc.method == "POST" {
				a = e.do(tc.method, tc.path, "value=1", "Content-Type: application/x-www-form-urlencoded")
			} else {
				a = e.do(tc.method, tc.path, tc.body)
			}
			a.want(t, tc.status)
			if code := a.errorCode(t); code != tc.code {
				t.Fatalf("code %q, want %q", code, tc.code)
			}
		})
	}
	after, err := e.store.Tasks(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("bad input wrote tasks: %d, were %d", len(after), len(before))
	}
	rewardsAfter, _ := e.store.Rewards(ctx, task)
	if len(rewardsAfter) != len(rewardsBefore) {
		t.Fatalf("bad input wrote rewards: %d, were %d", len(rewardsAfter), len(rewardsBefore))
	}
	if vs, _ := evolve.ListVerdicts(ctx, e.store, ""); len(vs) != 1 {
		t.Fatalf("bad input wrote comparisons: %d", len(vs))
	}

	liveAPI(t, e)
}

// checkCovered fails unless the requests made reached every route of the
// OpenAPI document.
func checkCovered(t *testing.T, e *env) {
	if t.Failed() {
		return
	}
	var doc struct {
		Paths map[string]map[string]any
	}
	e.do("GET", "/api/v1/openapi.json", nil).want(t, 200).json(t, &doc)
	mux := http.NewServeMux()
	want := map[string]bool{}
	for path, ops := range doc.Paths {
		for m := range ops {
			p := strings.ToUpper(m) + " " + path
			want[p] = true
			mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.seen {
		if _, p := mux.Handler(r); p != "" {
			delete(want, p)
		}
	}
	for p := range want {
		t.Errorf("no test request reached %s", p)
	}
}

// TestListRewardBounds: a reward bound that is not a finite number, a
// min_reward above max_reward, a bound out of the reward range, a since after until and a parameter given
// twice are each a 400 saying what is wrong — never "NaN is not a
// number", never a silently empty list or a value dropped unseen.
func TestListRewardBounds(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	for q, want := range map[string]string{
		"min_reward=NaN":                 `min_reward: "NaN" is not a finite number: want a mean reward from -1 (bad) to 1 (good), like 0.5`,
		"max_reward=-Inf":                `max_reward: "-Inf" is not a finite number: want a mean reward from -1 (bad) to 1 (good)`,
		"min_reward=high":                `min_reward: "high" is not a number: want a mean reward from -1 (bad) to 1 (good)`,
		"min_reward=0.5&max_reward=0.25": "min_reward 0.5 is above max_reward 0.25: no task can match",
		"min_reward=2":                   "min_reward: 2 is out of range: want a mean reward from -1 (bad) to 1 (good)",
		"max_reward=-1.5":                "max_reward: -1.5 is out of range: want a mean reward from -1 (bad) to 1 (good)",
		"min_reward=-5&max_reward=0":     "min_reward: -5 is out of range: want a mean reward from -1 (bad) to 1 (good)",
		"since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z": "since 2026-02-01T00:00:00Z is after until 2026-01-01T00:00:00Z: no task can match",
		"status=running&status=completed":                       `query parameter "status" is given 2 times: it takes one value`,
		"limit=1&limit=2":                                       `query parameter "limit" is given 2 times: it takes one value`,
	} {
		a := e.do("GET", "/api/v1/tasks?"+q, nil).want(t, 400)
		var body struct{ Error struct{ Message string } }
		a.json(t, &body)
		if !strings.HasPrefix(body.Error.Message, want) {
			t.Errorf("%s: %q, want %q", q, body.Error.Message, want)
		}
	}
	e.do("GET", "/api/v1/tasks?min_reward=0.25&max_reward=0.25", nil).want(t, 200)
	e.do("GET", "/api/v1/tasks?min_reward=-1&max_reward=1", nil).want(t, 200)
}
