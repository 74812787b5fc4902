package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

const defs = `<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
%s
</definitions>`

func load(t *testing.T, nav sdk.Navigator, body string) string {
	t.Helper()
	r, err := nav.Load(context.Background(), &sdk.LoadRequest{Name: "test.bpmn", Routine: []byte(strings.Replace(defs, "%s", body, 1))})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return r.Hash
}

const linear = `<process id="p" isExecutable="true">
  <startEvent id="start"/>
  <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
  <serviceTask id="work"/>
  <sequenceFlow id="f2" sourceRef="work" targetRef="gw"/>
  <exclusiveGateway id="gw"/>
  <sequenceFlow id="f3" sourceRef="gw" targetRef="a"/>
  <sequenceFlow id="f4" sourceRef="gw" targetRef="b"/>
  <endEvent id="a"/>
  <intermediateCatchEvent id="b"><messageEventDefinition/></intermediateCatchEvent>
  <sequenceFlow id="f5" sourceRef="b" targetRef="end"/>
  <endEvent id="end"/>
</process>`

const conditional = `<process id="p" isExecutable="true">
  <startEvent id="start"/>
  <sequenceFlow id="f1" sourceRef="start" targetRef="gw"/>
  <exclusiveGateway id="gw"/>
  <sequenceFlow id="big" sourceRef="gw" targetRef="x"><conditionExpression>=amount &gt; 100</conditionExpression></sequenceFlow>
  <sequenceFlow id="small" sourceRef="gw" targetRef="y"><conditionExpression>vars.amount &lt;= 10</conditionExpression></sequenceFlow>
  <endEvent id="x"/>
  <endEvent id="y"/>
</process>`

const boundary = `<process id="p" isExecutable="true">
  <startEvent id="start"/>
  <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
  <userTask id="work"/>
  <boundaryEvent id="late" attachedToRef="work"><timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition></boundaryEvent>
  <sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
  <sequenceFlow id="f3" sourceRef="late" targetRef="escalated"/>
  <endEvent id="done"/>
  <endEvent id="escalated"/>
</process>`

const loop = `<process id="p" isExecutable="true">
  <startEvent id="start"/>
  <sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
  <task id="work"/>
  <sequenceFlow id="f2" sourceRef="work" targetRef="work"/>
</process>`

func TestSimulate(t *testing.T) {
	tests := []struct {
		name    string
		routine string
		opts    SimOptions
		want    []string
	}{
		{"first flow by default", linear, SimOptions{},
			[]string{"exit:start", "enter:work", "exit:work", "enter:gw", "exit:gw", "enter:a", "exit:a", "completed"}},
		{"choose and wait", linear, SimOptions{Choose: map[string][]string{"gw": {"f4"}}},
			[]string{"exit:start", "enter:work", "exit:work", "enter:gw", "exit:gw", "enter:b", "waiting:b"}},
		{"choose and trigger", linear, SimOptions{Choose: map[string][]string{"gw": {"f4"}}, Triggers: []string{"b"}},
			[]string{"exit:start", "enter:work", "exit:work", "enter:gw", "exit:gw", "enter:b", "exit:b", "enter:end", "exit:end", "completed"}},
		{"trigger at start event", linear, SimOptions{Triggers: []string{"start"}},
			[]string{"exit:start", "enter:work", "exit:work", "enter:gw", "exit:gw", "enter:a", "exit:a", "completed"}},
		{"trigger nothing waits for", linear, SimOptions{Triggers: []string{"b"}},
			[]string{"exit:start", "enter:work", "exit:work", "enter:gw", "exit:gw", "enter:a", "exit:a", `error:trigger "b": nothing waits for it`}},
		{"condition true", conditional, SimOptions{Vars: map[string]any{"amount": 500}},
			[]string{"exit:start", "enter:gw", "exit:gw", "enter:x", "exit:x", "completed"}},
		{"condition on vars", conditional, SimOptions{Vars: map[string]any{"amount": 5}},
			[]string{"exit:start", "enter:gw", "exit:gw", "enter:y", "exit:y", "completed"}},
		{"no condition true", conditional, SimOptions{Vars: map[string]any{"amount": 50}},
			[]string{"exit:start", "enter:gw", `error:exclusiveGateway "gw": no outgoing sequence flow condition is true and there is no default flow`}},
		{"boundary on a ready task", boundary, SimOptions{Triggers: []string{"late"}},
			[]string{"exit:start", "enter:work", "exit:work", "exit:late", "enter:escalated", "exit:escalated", "completed"}},
		{"task completes", boundary, SimOptions{},
			[]string{"exit:start", "enter:work", "exit:work", "enter:done", "exit:done", "completed"}},
		{"step limit", loop, SimOptions{MaxSteps: 3},
			[]string{"exit:start", "enter:work", "exit:work", "enter:work", "exit:work", "enter:work", `error:more than 3 steps, stopped at "work" (raise the limit, or look for a loop)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nav := bpmn.New()
			hash := load(t, nav, tt.routine)
			res, err := Simulate(context.Background(), nav, hash, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Lines, tt.want) {
				t.Errorf("lines:\n got %q\nwant %q", res.Lines, tt.want)
			}
		})
	}
}

func TestSimulateBadChoice(t *testing.T) {
	nav := bpmn.New()
	hash := load(t, nav, linear)
	_, err := Simulate(context.Background(), nav, hash, SimOptions{Choose: map[string][]string{"gw": {"nope"}}})
	want := `simulate: choose at "gw": exclusiveGateway "gw" has no outgoing flow "nope" (it has f3, f4)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestSimulateUnknownRoutine(t *testing.T) {
	res, err := Simulate(context.Background(), bpmn.New(), "feedbeef", SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `error:bpmn: routine "feedbeef" is not loaded (call Load with its document first)`
	if got := res.Lines[len(res.Lines)-1]; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestSimulateCancelled(t *testing.T) {
	nav := bpmn.New()
	hash := load(t, nav, linear)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Simulate(ctx, nav, hash, SimOptions{}); err == nil {
		t.Fatal("want an error from a cancelled context")
	}
}

func TestSimulateJSON(t *testing.T) {
	nav := bpmn.New()
	hash := load(t, nav, linear)
	res, err := Simulate(context.Background(), nav, hash, SimOptions{Choose: map[string][]string{"gw": {"f4"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"events":[{"type":"exit","node":"start"},{"type":"enter","node":"work"},{"type":"exit","node":"work"},{"type":"enter","node":"gw"},{"type":"exit","node":"gw"},{"type":"enter","node":"b"}],"status":"waiting","waiting":["b"],"lines":["exit:start","enter:work","exit:work","enter:gw","exit:gw","enter:b","waiting:b"],"steps":3}`
	if string(b) != want {
		t.Errorf("json:\n got %s\nwant %s", b, want)
	}
	if res.Text() != strings.Join(res.Lines, "\n")+"\n" {
		t.Error("Text does not join the lines")
	}
}

// TestSimulateDeterministic runs the same simulation twice.
func TestSimulateDeterministic(t *testing.T) {
	nav := bpmn.New()
	hash := load(t, nav, linear)
	opts := SimOptions{Choose: map[string][]string{"gw": {"f4"}}, Triggers: []string{"b"}}
	a, _ := Simulate(context.Background(), nav, hash, opts)
	b, _ := Simulate(context.Background(), nav, hash, opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs differ")
	}
}

// TestSimulateTokenSimulation replays the token-simulation scenarios that
// Simulate's flags can express (every choice fixed before the first
// trigger) and compares the final enter/exit counts.
func TestSimulateTokenSimulation(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "corpus", "bpmn", "token-simulation")
	data, err := os.ReadFile(filepath.Join(dir, "scenarios.json"))
	if err != nil {
		t.Skipf("corpus not found: %v", err)
	}
	var all []struct {
		ID    string `json:"id"`
		BPMN  string `json:"bpmn"`
		Steps []struct {
			Choose  map[string][]string `json:"choose"`
			Trigger string              `json:"trigger"`
			Expect  string              `json:"expect"`
			Entered map[string]int      `json:"entered"`
			Exited  map[string]int      `json:"exited"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	var tried, passed int
	for _, sc := range all {
		if len(sc.Steps) == 0 {
			continue
		}
		opts := SimOptions{Choose: map[string][]string{}}
		entered, exited := map[string]int{}, map[string]int{}
		expressible := true
		for _, s := range sc.Steps {
			switch {
			case s.Choose != nil:
				if len(opts.Triggers) > 0 {
					expressible = false
				}
				for k, v := range s.Choose {
					opts.Choose[k] = v
				}
			case s.Trigger != "":
				opts.Triggers = append(opts.Triggers, s.Trigger)
			case s.Expect != "":
				for k, v := range s.Entered {
					entered[k] += v
				}
				for k, v := range s.Exited {
					exited[k] += v
				}
			}
		}
		if !expressible {
			continue
		}
		tried++
		src, err := os.ReadFile(filepath.Join(dir, sc.BPMN))
		if err != nil {
			t.Fatal(err)
		}
		nav := bpmn.New()
		r, err := nav.Load(context.Background(), &sdk.LoadRequest{Name: sc.BPMN, Routine: src})
		if err != nil {
			continue // rejected by validation
		}
		opts.Routine = r
		res, err := Simulate(context.Background(), nav, r.Hash, opts)
		if err != nil {
			t.Errorf("%s: %v", sc.ID, err)
			continue
		}
		gotIn, gotOut := map[string]int{}, map[string]int{}
		for _, e := range res.Events {
			if e.Type == sdk.Enter {
				gotIn[e.Node]++
			} else {
				gotOut[e.Node]++
			}
		}
		if reflect.DeepEqual(gotIn, entered) && reflect.DeepEqual(gotOut, exited) {
			passed++
		} else if testing.Verbose() {
			t.Logf("%s: entered %v (want %v), exited %v (want %v)", sc.ID, gotIn, entered, gotOut, exited)
		}
	}
	t.Logf("simulate: %d/%d expressible token-simulation scenarios match", passed, tried)
	if rate := float64(passed) / float64(tried); rate < 0.80 {
		t.Errorf("match rate %.1f%% is below 80%%", 100*rate)
	}
}
