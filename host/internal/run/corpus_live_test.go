package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

// tracer keeps the enter/exit events of every decision a navigator makes
// for a live run (the engine keeps only the state).
type tracer struct {
	sdk.Navigator
	mu     sync.Mutex
	events []sdk.Event
}

func (t *tracer) keep(d *sdk.Decision, err error) (*sdk.Decision, error) {
	if d != nil {
		t.mu.Lock()
		t.events = append(t.events, d.Trace...)
		t.mu.Unlock()
	}
	return d, err
}

func (t *tracer) Start(ctx context.Context, r *sdk.StartRequest) (*sdk.Decision, error) {
	return t.keep(t.Navigator.Start(ctx, r))
}

func (t *tracer) Next(ctx context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	return t.keep(t.Navigator.Next(ctx, r))
}

func (t *tracer) Boundary(ctx context.Context, r *sdk.BoundaryRequest) (*sdk.Decision, error) {
	return t.keep(t.Navigator.Boundary(ctx, r))
}

type corpusCase struct {
	name, dir, file string
	triggers        []string
}

// corpusCases lists every BPMN file of the token-simulation and
// lib-bpmn-engine corpora with no trigger, and each token-simulation
// scenario that only fires triggers (no --choose).
func corpusCases(t *testing.T) []corpusCase {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "corpus", "bpmn")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not found: %v", err)
	}
	var out []corpusCase
	for _, sub := range []string{"token-simulation", "lib-bpmn-engine"} {
		files, _ := filepath.Glob(filepath.Join(root, sub, "*.bpmn"))
		for _, f := range files {
			out = append(out, corpusCase{name: sub + "/" + filepath.Base(f), dir: filepath.Join(root, sub), file: filepath.Base(f)})
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "token-simulation", "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all []struct {
		ID    string `json:"id"`
		BPMN  string `json:"bpmn"`
		Steps []struct {
			Choose  map[string][]string `json:"choose"`
			Trigger string              `json:"trigger"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		c := corpusCase{name: "scenario " + sc.ID, dir: filepath.Join(root, "token-simulation"), file: sc.BPMN}
		ok := len(sc.Steps) > 0
		for _, s := range sc.Steps {
			ok = ok && s.Choose == nil
			if s.Trigger != "" {
				c.triggers = append(c.triggers, s.Trigger)
			}
		}
		if ok && len(c.triggers) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// TestCorpusLive: every corpus routine (and trigger scenario) that
// `routine simulate` completes also completes under a live run with an
// expr step at each task, the same triggers delivered as a user would
// (timers by moving the clock and resuming, messages by send, signals by
// signal), and the same enter/exit events.
func TestCorpusLive(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus walk")
	}
	ctx := context.Background()
	var tried, passed int
	var failures []string
	for _, c := range corpusCases(t) {
		src, err := os.ReadFile(filepath.Join(c.dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.dir, "token-simulation") {
			src = fillTimers(src)
		}
		nav := bpmn.New()
		r, err := nav.Load(ctx, &sdk.LoadRequest{Name: c.file, Routine: src})
		if err != nil {
			continue // rejected by validation
		}
		live := c
		if len(c.triggers) > 0 && contains(r.Starts, c.triggers[0]) {
			if r.Starts[0] != c.triggers[0] {
				continue // starts at a triggered start event: not a live run's start
			}
			live.triggers = c.triggers[1:] // a live run starts there anyway
		}
		again := false
		for _, trig := range live.triggers {
			again = again || contains(r.Starts, trig)
		}
		if again {
			continue // a second instance in the same state: simulate only
		}
		sim, err := run.Simulate(ctx, nav, r.Hash, run.SimOptions{Triggers: c.triggers, Routine: r})
		if err != nil || sim.Status != run.SimCompleted {
			continue
		}
		tried++
		got, err := liveTrace(t, live, src, r)
		switch {
		case err != nil:
			failures = append(failures, fmt.Sprintf("%s: %v", c.name, err))
		case !reflect.DeepEqual(eventCounts(got), eventCounts(sim.Events)):
			failures = append(failures, fmt.Sprintf("%s: live %v, simulate %v", c.name, eventCounts(got), eventCounts(sim.Events)))
		default:
			passed++
		}
	}
	t.Logf("live runs: %d/%d routines and scenarios that simulate completes give the same enter/exit events", passed, tried)
	for _, f := range failures {
		t.Log(f)
	}
	if tried == 0 || passed < tried {
		t.Errorf("%d of %d differ", tried-passed, tried)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func eventCounts(evs []sdk.Event) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[string(e.Type)+":"+e.Node]++
	}
	return m
}

// liveTrace runs routine src live and returns its enter/exit events.
func liveTrace(t *testing.T, c corpusCase, src []byte, r *sdk.Routine) ([]sdk.Event, error) {
	ctx := context.Background()
	dir := t.TempDir()
	strat, err := os.ReadFile("testdata/chain10/strategy.toml")
	if err != nil {
		t.Fatal(err)
	}
	var steps strings.Builder
	var ids []string
	for _, n := range r.Nodes {
		if n.Step {
			ids = append(ids, n.ID)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(&steps, "[steps.%q]\nkind = \"expr\"\nset = { done = \"true\" }\n", id)
	}
	files := map[string]string{
		"routine.bpmn":   string(src),
		"strategy.toml":  string(strat),
		"responses.toml": "[default]\nreply = \"ok\"\n",
		"pipeline.toml": "name = \"corpus\"\n[routine]\nnavigator = \"bpmn\"\nfile = \"routine.bpmn\"\n[strategy]\nfile = \"strategy.toml\"\n" +
			"[providers.default]\nuse = \"script\"\nrules = \"responses.toml\"\n" + steps.String(),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prep, err := run.Prepare(ctx, filepath.Join(dir, "pipeline.toml"), builtinRegistry(t), nil)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer prep.Close(ctx)
	st := openStore(t)
	clock := &fakeClock{now: t0}
	tr := &tracer{Navigator: prep.Navigator}
	runner := run.NewRunner(run.Config{Pipeline: prep.Pipeline, Navigator: tr, Routine: prep.Routine, Strategy: prep.Strategy,
		Providers: prep.Providers, Prices: prep.Prices, Store: st, Clock: clock.Now})
	res, err := runner.Start(ctx, run.Input{ID: "c1"})
	for _, trig := range c.triggers {
		if err != nil {
			return nil, err
		}
		if res.Status != store.StatusWaiting {
			return nil, fmt.Errorf("trigger %s: run %s before it (%s)", trig, res.Status, res.Error)
		}
		var w *store.Wait
		for i := range res.Waits {
			if res.Waits[i].Event == trig {
				w = &res.Waits[i]
				break
			}
		}
		if w == nil {
			return nil, fmt.Errorf("trigger %s: the run waits for %v", trig, res.Waits)
		}
		switch {
		case w.Kind == store.WaitTimer && w.Error == "":
			if w.Due.After(clock.Now()) {
				clock.Advance(w.Due.Sub(clock.Now()))
			}
			res, err = runner.Resume(ctx, "c1", nil)
		case w.Kind == store.WaitSignal:
			res, err = runner.Deliver(ctx, "c1", run.Delivery{Kind: store.WaitSignal, Name: w.Name})
		default:
			res, err = runner.Deliver(ctx, "c1", run.Delivery{Kind: store.WaitMessage, Name: trig})
		}
	}
	if err != nil {
		return nil, err
	}
	if res.Status != store.StatusCompleted {
		return nil, fmt.Errorf("run %s (%s), waits %v", res.Status, res.Error, res.Waits)
	}
	return tr.events, nil
}

// emptyTimer matches a timer event definition with no value, which the
// token-simulation corpus (a visual simulator that ignores timer values)
// has and the BPMN navigator, like Zeebe, refuses.
var emptyTimer = regexp.MustCompile(`<((?:\w+:)?)timerEventDefinition(\s[^>]*?)?\s*(/>|>\s*</(?:\w+:)?timerEventDefinition>)`)

// emptyCondition and emptyConditional match a conditional event with no
// condition, which the corpus also has.
var (
	emptyCondition   = regexp.MustCompile(`<((?:\w+:)?)condition(\s[^>]*?)?\s*/>`)
	emptyConditional = regexp.MustCompile(`<((?:\w+:)?)conditionalEventDefinition(\s[^>]*?)?\s*/>`)
)

// fillTimers gives the empty timers of a corpus diagram the values PT1H,
// PT2H, … in document order (distinct, so that moving the clock to one
// fires no other), so that the gateway and token semantics those diagrams
// test stay tested.
//
// Empty conditional events get the condition =false: they then fire only
// when named, as the corpus's scenarios trigger them.
func fillTimers(src []byte) []byte {
	src = emptyCondition.ReplaceAll(src, []byte(`<${1}condition${2}>=false</${1}condition>`))
	src = emptyConditional.ReplaceAll(src, []byte(`<${1}conditionalEventDefinition${2}><${1}condition>=false</${1}condition></${1}conditionalEventDefinition>`))
	n := 0
	return emptyTimer.ReplaceAllFunc(src, func(m []byte) []byte {
		n++
		sub := emptyTimer.FindSubmatch(m)
		p := string(sub[1])
		return fmt.Appendf(nil, "<%stimerEventDefinition%s><%stimeDuration>PT%dH</%stimeDuration></%stimerEventDefinition>", p, sub[2], p, n, p, p)
	})
}
