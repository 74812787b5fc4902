package bpmn

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCase walks a fixture with the test driver and compares the trace,
// the end status, the variables set and the tokens left with a golden file.
type goldenCase struct {
	name     string
	file     string
	vars     map[string]any
	choose   map[string][]string
	triggers []string
	fail     map[string]string // node -> error code its task fails with
}

var goldenCases = []goldenCase{
	{name: "tasks", file: "tasks.bpmn", triggers: []string{"receive"}},
	{name: "tasks-waiting", file: "tasks.bpmn"},
	{name: "exclusive-first-true", file: "exclusive.bpmn", vars: map[string]any{"amount": 500}},
	{name: "exclusive-second", file: "exclusive.bpmn", vars: map[string]any{"amount": 50}},
	{name: "exclusive-default", file: "exclusive.bpmn", vars: map[string]any{"amount": 1}},
	{name: "exclusive-no-default", file: "exclusive-nodefault.bpmn", vars: map[string]any{"amount": 1}},
	{name: "exclusive-runtime-error", file: "exclusive-nodefault.bpmn", vars: map[string]any{"amount": "lots"}},
	{name: "exclusive-choice", file: "exclusive-choice.bpmn", choose: map[string][]string{"decide": {"toB"}}},
	{name: "exclusive-join", file: "exclusive-choice.bpmn", choose: map[string][]string{"decide": {"toA"}}},
	{name: "parallel", file: "parallel.bpmn"},
	{name: "inclusive-both", file: "inclusive.bpmn", vars: map[string]any{"x": 1, "y": 1}},
	{name: "inclusive-one", file: "inclusive.bpmn", vars: map[string]any{"x": 1, "y": 0}},
	{name: "inclusive-default", file: "inclusive.bpmn", vars: map[string]any{"x": 0, "y": 0}},
	{name: "inclusive-reach-waits", file: "inclusive-reach.bpmn", choose: map[string][]string{"split": {"toTask", "toWait"}}},
	{name: "inclusive-reach-fires", file: "inclusive-reach.bpmn", choose: map[string][]string{"split": {"toTask", "toWait"}}, triggers: []string{"wait"}},
	{name: "inclusive-reach-one", file: "inclusive-reach.bpmn", choose: map[string][]string{"split": {"toTask"}}},
	{name: "event-gateway-timer", file: "event-gateway.bpmn", triggers: []string{"timer"}},
	{name: "event-gateway-receive", file: "event-gateway.bpmn", triggers: []string{"reply"}},
	{name: "event-gateway-waiting", file: "event-gateway.bpmn"},
	{name: "catch-throw", file: "catch-throw.bpmn", triggers: []string{"timer", "message", "signal"}},
	{name: "signal-throw-catch", file: "signal.bpmn"},
	{name: "start-none", file: "starts.bpmn"},
	{name: "start-message", file: "starts.bpmn", triggers: []string{"byMessage"}},
	{name: "start-timer-and-signal", file: "starts.bpmn", triggers: []string{"byTimer", "bySignal"}},
	{name: "terminate", file: "terminate.bpmn"},
	{name: "error-end-uncaught", file: "error-end.bpmn"},
	{name: "escalation-end-uncaught", file: "escalation-end.bpmn"},
	{name: "signal-end-event-sub", file: "signal-end.bpmn"},
	{name: "boundary-timer", file: "boundary-timer.bpmn", triggers: []string{"late"}},
	{name: "boundary-timer-not-fired", file: "boundary-timer.bpmn"},
	{name: "boundary-message-non-interrupting", file: "boundary-message.bpmn", triggers: []string{"nudge", "nudge", "answer"}},
	{name: "boundary-error-by-code", file: "boundary-error.bpmn", vars: map[string]any{"code": "E1"}},
	{name: "boundary-error-catch-all", file: "boundary-error.bpmn", vars: map[string]any{"code": "E2"}},
	{name: "boundary-escalation", file: "boundary-escalation.bpmn"},
	{name: "boundary-signal", file: "boundary-signal.bpmn"},
	{name: "subprocess", file: "subprocess.bpmn"},
	{name: "event-sub-non-interrupting", file: "event-sub.bpmn", triggers: []string{"tick", "tick", "approved"}},
	{name: "event-sub-interrupting", file: "event-sub.bpmn", triggers: []string{"tick", "cancel"}},
	{name: "call-activity", file: "call.bpmn"},
	{name: "multi-parallel", file: "multi.bpmn", vars: map[string]any{"items": []any{3, 1, 2}}},
	{name: "multi-empty", file: "multi.bpmn", vars: map[string]any{"items": []any{}}},
	{name: "multi-sequential", file: "multi-seq.bpmn", vars: map[string]any{"n": 3}},
	{name: "multi-receive", file: "multi-receive.bpmn", vars: map[string]any{"orders": []any{"a", "b"}}, triggers: []string{"wait", "wait"}},
	{name: "message-flow", file: "collab.bpmn"},
	{name: "implicit-start", file: "implicit.bpmn"},
	{name: "transaction-as-sub-process", file: "transaction.bpmn"},
	{name: "compensation-not-needed", file: "compensation.bpmn"},
	{name: "timer-expression", file: "timer-expression.bpmn", vars: map[string]any{"minutes": 5, "due": "2026-12-24T18:00:00Z"}},
	{name: "timer-expression-fires", file: "timer-expression.bpmn", vars: map[string]any{"minutes": 5, "due": "2026-12-24T18:00:00Z"}, triggers: []string{"pause", "deadline"}},
	{name: "transaction-cancel", file: "transaction-cancel.bpmn", vars: map[string]any{"ok": false}},
	{name: "transaction-commit", file: "transaction-cancel.bpmn", vars: map[string]any{"ok": true}},
	{name: "compensation", file: "compensation.bpmn", fail: map[string]string{"pay": "DECLINED"}},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := runGolden(t, tc)
			path := filepath.Join("testdata", "golden", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

func runGolden(t *testing.T, tc goldenCase) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "routines", tc.file))
	if err != nil {
		t.Fatal(err)
	}
	var nv sdk.Navigator = New()
	if wireMode {
		nv = sdktest.Wire(New())
	}
	r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: tc.file, Routine: data})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	d := newDriver(nv, r)
	d.fail = tc.fail
	d.st.Env.Vars = tc.vars
	for k, v := range tc.choose {
		d.choose[k] = v
	}
	if err := d.run(tc.triggers); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range d.lines() {
		b.WriteString(l + "\n")
	}
	if len(d.st.Env.Vars) > 0 {
		keys := make([]string, 0, len(d.st.Env.Vars))
		for k := range d.st.Env.Vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(d.st.Env.Vars[k])
			fmt.Fprintf(&b, "var %s = %s\n", k, v)
		}
	}
	for _, tk := range d.st.Tokens {
		fmt.Fprintf(&b, "token %s %s %s", tk.ID, tk.Node, tk.Status)
		if tk.Scope != "" {
			fmt.Fprintf(&b, " scope=%s", tk.Scope)
		}
		if len(tk.Triggers) > 0 {
			fmt.Fprintf(&b, " triggers=%s", strings.Join(tk.Triggers, ","))
		}
		if len(tk.Attrs) > 0 {
			a, _ := json.Marshal(tk.Attrs)
			fmt.Fprintf(&b, " attrs=%s", a)
		}
		b.WriteString("\n")
	}
	return b.String()
}
