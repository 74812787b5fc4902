package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// heldProvider is a provider whose calls report that they started and then
// wait until released (or their context ends): it holds a step running
// for as long as a test needs, with no timing involved.
type heldProvider struct {
	started chan struct{}
	mu      sync.Mutex
	release chan struct{}
}

var held = &heldProvider{started: make(chan struct{}, 16), release: make(chan struct{})}

func init() { sdk.Register(held) }

func (*heldProvider) Describe() sdk.Info {
	return sdk.Info{Name: "held-provider", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion,
		Description: "answers once the test releases it"}
}

func (h *heldProvider) Chat(ctx context.Context, _ *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	h.started <- struct{}{}
	h.mu.Lock()
	release := h.release
	h.mu.Unlock()
	select {
	case <-release:
		return &sdk.ChatResponse{Text: "done", FinishReason: "stop"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open releases the calls held now and later; reset holds them again.
func (h *heldProvider) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *heldProvider) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release = make(chan struct{})
}

const liveBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
  <message id="msgPing" name="ping"/>
  <signal id="sigNudge" name="nudge"/>
  <process id="live" isExecutable="true">
    <startEvent id="start"/>
    <sequenceFlow id="f1" sourceRef="start" targetRef="ask"/>
    <serviceTask id="ask"/>
    <sequenceFlow id="f2" sourceRef="ask" targetRef="after"/>
    <scriptTask id="after"/>
    <sequenceFlow id="f3" sourceRef="after" targetRef="end"/>
    <endEvent id="end"/>
    <boundaryEvent id="ping" attachedToRef="ask" cancelActivity="false">
      <messageEventDefinition messageRef="msgPing"/>
    </boundaryEvent>
    <sequenceFlow id="f4" sourceRef="ping" targetRef="pong"/>
    <scriptTask id="pong"/>
    <sequenceFlow id="f5" sourceRef="pong" targetRef="end2"/>
    <endEvent id="end2"/>
    <boundaryEvent id="nudge" attachedToRef="ask" cancelActivity="false">
      <signalEventDefinition signalRef="sigNudge"/>
    </boundaryEvent>
    <sequenceFlow id="f6" sourceRef="nudge" targetRef="nudged"/>
    <scriptTask id="nudged"/>
    <sequenceFlow id="f7" sourceRef="nudged" targetRef="end3"/>
    <endEvent id="end3"/>
  </process>
</definitions>
`

const livePipeline = `name = "live"
[routine]
navigator = "bpmn"
file = "live.bpmn"
[providers.default]
use = "held-provider"
[steps.ask]
kind = "llm"
prompt = "go"
[steps.after]
kind = "expr"
set = { x = "1" }
[steps.pong]
kind = "expr"
set = { p = "1" }
[steps.nudged]
kind = "expr"
set = { g = "1" }
`

// withLivePipeline adds the pipeline "live" to the server's pipelines: a
// held LLM step with a non-interrupting message and signal boundary event.
func withLivePipeline(o *serve.Options) {
	dir := filepath.Join(o.Pipelines, "live")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	for name, body := range map[string]string{"pipeline.toml": livePipeline, "live.bpmn": liveBPMN} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			panic(err)
		}
	}
}

// TestLiveRunDeliveries: a message or signal for a task whose run is in
// progress in the server reaches its running step's boundary events at
// once, as under run --wait, instead of waiting for the run to return:
// the message's path runs while the step is still held. Before, the send
// blocked on the task's lock until the step ended.
func TestLiveRunDeliveries(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		node       string
	}{
		{"message", "/api/v1/tasks/{id}/messages", map[string]any{"name": "ping"}, "pong"},
		{"signal", "/api/v1/signals", map[string]any{"name": "nudge", "pipeline": "live"}, "nudged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held.reset()
			t.Cleanup(held.open) // a failed test must not leave a step held
			e := newEnv(t, "127.0.0.1:0", withLivePipeline)
			id := "live-" + tc.name
			e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "live", "id": id, "wait": false}).want(t, 202)
			select {
			case <-held.started:
			case <-time.After(time.Minute):
				t.Fatal("the run never reached its LLM step")
			}
			path := tc.path
			if path == "/api/v1/tasks/{id}/messages" {
				path = "/api/v1/tasks/" + id + "/messages"
			}
			// Answered while ask is held: the run took the delivery.
			a := e.do("POST", path, tc.body).want(t, 200)
			if tc.name == "signal" {
				var sig struct {
					Received int
					Tasks    []struct{ Task, Status string }
				}
				a.json(t, &sig)
				if sig.Received != 1 || sig.Tasks[0].Task != id || sig.Tasks[0].Status != string(store.StatusRunning) {
					t.Fatalf("signal answer %s", a.body)
				}
			}
			// A message nothing waits for is refused at once, naming what
			// the task waits for.
			e.do("POST", "/api/v1/tasks/"+id+"/messages", map[string]any{"name": "unknown"}).want(t, 400)

			held.open()
			// Resume takes the task's lock, so it answers once the run has
			// returned (it refuses: the task completed).
			e.do("POST", "/api/v1/tasks/"+id+"/resume", map[string]any{}).want(t, 400)
			tree, err := e.store.Tree(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			ex := tree.Executions[len(tree.Executions)-1].Execution
			if ex.Status != store.StatusCompleted {
				t.Fatalf("status %s (%s)", ex.Status, ex.Error)
			}
			var steps []string
			for _, s := range ex.Trace {
				if name, ok := strings.CutPrefix(s, "step "); ok {
					steps = append(steps, name)
				}
			}
			if want := []string{tc.node, "ask", "after"}; !slices.Equal(steps, want) {
				t.Fatalf("steps %v, want %v: %s ran after ask rather than beside it", steps, want, tc.node)
			}
		})
	}
}

// TestStartRunClaims: a run started with wait=false claims its id and a
// run slot before the 202, while the run itself has not begun (held by the
// hook before it stores anything). A second start of the id is a 409, not
// a second 202 whose run fails unseen; a start past --max-runs is a 503
// with Retry-After and starts nothing; once the run returned, its slot is
// free again.
func TestStartRunClaims(t *testing.T) {
	held.reset()
	t.Cleanup(held.open)
	e := newEnv(t, "127.0.0.1:0", withLivePipeline, func(o *serve.Options) { o.Limits.MaxRuns = 1 })
	entered, release := make(chan string, 4), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	e.srv.SetBeforeBackground(func(id string) {
		entered <- id
		<-release
	})
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "live", "id": "first", "wait": false}).want(t, 202)
	if id := <-entered; id != "first" {
		t.Fatalf("held run %q", id)
	}
	if code := e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "live", "id": "first", "wait": false}).want(t, 409).errorCode(t); code != serve.CodeConflict {
		t.Fatalf("second start of the id: code %q", code)
	}
	busy := e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "live", "id": "second", "wait": false}).want(t, 503)
	if code := busy.errorCode(t); code != serve.CodeUnavailable || busy.header.Get("Retry-After") == "" {
		t.Fatalf("start past --max-runs: code %q, Retry-After %q", code, busy.header.Get("Retry-After"))
	}
	if _, err := e.store.Task(context.Background(), "second"); err == nil {
		t.Fatal("the refused start stored its task")
	}

	once.Do(func() { close(release) })
	<-held.started // the run stored its task and holds the task's lock
	held.open()
	// Resume takes the task's lock, so it answers once the run has
	// returned and given its slot up (it refuses: the task completed).
	e.do("POST", "/api/v1/tasks/first/resume", map[string]any{}).want(t, 400)
	e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "live", "id": "second", "wait": false}).want(t, 202)
	if id := <-entered; id != "second" {
		t.Fatalf("held run %q", id)
	}
	<-held.started // leave no start for the next test to take as its own
}
