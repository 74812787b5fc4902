package bpmn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// chainDoc is a process of n none throw events between a start event and a
// task, then n more before the end: Start and the task's Next each produce
// a trace of 2n+3 events.
func chainDoc(n int) string {
	var b strings.Builder
	b.WriteString(`<process id="p"><startEvent id="s"/>`)
	prev := "s"
	link := func(to string) {
		fmt.Fprintf(&b, `<sequenceFlow id="%s_%s" sourceRef="%s" targetRef="%s"/>`, prev, to, prev, to)
		prev = to
	}
	for i := range n {
		id := fmt.Sprintf("a%d", i)
		fmt.Fprintf(&b, `<intermediateThrowEvent id="%s"/>`, id)
		link(id)
	}
	b.WriteString(`<serviceTask id="work"/>`)
	link("work")
	for i := range n {
		id := fmt.Sprintf("b%d", i)
		fmt.Fprintf(&b, `<intermediateThrowEvent id="%s"/>`, id)
		link(id)
	}
	b.WriteString(`<endEvent id="e"/>`)
	link("e")
	b.WriteString(`</process>`)
	return doc(b.String())
}

// TestAnswersShareNothing: decisions and the states they apply to are never
// written again by later calls. Instances with traces of every length
// (shorter and longer than the memory a call carves its answer from) and
// of several tokens run interleaved; every answer is encoded when it
// arrives and again at the end, and the two must match.
func TestAnswersShareNothing(t *testing.T) {
	ctx := context.Background()
	nv := New()
	type kept struct {
		d    *sdk.Decision
		st   sdk.State
		json string
	}
	var all []kept
	keep := func(d *sdk.Decision, st sdk.State) {
		b, err := json.Marshal([]any{d, st})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, kept{d, st, string(b)})
	}
	var routines []*sdk.Routine
	for _, n := range []int{0, 1, 3, 7, 15, 16, 17, 31, 33, 40, 70} {
		routines = append(routines, loadString(t, nv, chainDoc(n)))
	}
	routines = append(routines, loadFixture(t, nv, "bench.bpmn"), loadFixture(t, nv, "parallel.bpmn"))
	states := make([]sdk.State, len(routines))
	for i, r := range routines {
		states[i] = sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: map[string]any{"amount": 500, "n": 2}}}
		d, err := nv.Start(ctx, &sdk.StartRequest{State: states[i]})
		if err != nil {
			t.Fatal(err)
		}
		states[i] = d.Apply(states[i])
		keep(d, states[i])
	}
	for moved := true; moved; {
		moved = false
		for i := range states {
			var ready string
			for _, tk := range states[i].Tokens {
				if tk.Status == sdk.Ready {
					ready = tk.ID
					break
				}
			}
			if ready == "" {
				continue
			}
			d, err := nv.Next(ctx, &sdk.NextRequest{State: states[i], Token: ready, Outcome: sdk.Outcome{Status: sdk.OK}})
			if err != nil {
				t.Fatal(err)
			}
			states[i] = d.Apply(states[i])
			keep(d, states[i])
			moved = true
		}
	}
	for i, st := range states {
		if len(st.Tokens) != 0 {
			t.Errorf("%d: instance did not complete: %+v", i, st.Tokens)
		}
	}
	for i, k := range all {
		b, _ := json.Marshal([]any{k.d, k.st})
		if string(b) != k.json {
			t.Fatalf("answer %d changed after it was returned:\nthen %s\nnow  %s", i, k.json, b)
		}
	}
}

// TestLongTrace: a trace keeps every event, in order, whether it fits in
// the memory set aside for traces or outgrows it. Short instances between
// the long ones move where in that memory the long traces start.
func TestLongTrace(t *testing.T) {
	nv := New()
	short := loadString(t, nv, chainDoc(0))
	for round := range 24 {
		for range round {
			walk(t, nv, short, nil, func([]sdk.Token) int { return 0 }, nil)
		}
		for _, n := range []int{2, 16, 20, 31, 40, 100} {
			r := loadString(t, nv, chainDoc(n))
			_, ds := walk(t, nv, r, nil, func([]sdk.Token) int { return 0 }, nil)
			for i, d := range ds {
				want := []string{"exit s"}
				first := "a"
				if i == 1 {
					want = []string{"exit work"}
					first = "b"
				}
				for j := range n {
					want = append(want, fmt.Sprintf("enter %s%d", first, j), fmt.Sprintf("exit %s%d", first, j))
				}
				if i == 0 {
					want = append(want, "enter work")
				} else {
					want = append(want, "enter e", "exit e")
				}
				var got []string
				for _, e := range d.Trace {
					got = append(got, string(e.Type)+" "+e.Node)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("round %d, n=%d, call %d: trace\n%v\nwant\n%v", round, n, i, got, want)
				}
			}
		}
	}
}

// TestCallsAllocateLittle: a whole instance of the benchmark process (an
// exclusive gateway with a condition, a parallel fork and join), decisions
// applied as the host does, allocates less than once per call on average:
// answers are carved from shared chunks and Apply builds the state in room
// the decision carries.
func TestCallsAllocateLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	nv := New()
	r := loadFixture(t, nv, "bench.bpmn")
	vars := map[string]any{"amount": 500}
	calls := 0
	instance := func() {
		st := sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: vars}}
		d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
		for calls++; err == nil && !d.Complete; calls++ {
			st = d.Apply(st)
			id := ""
			for i := range st.Tokens {
				if st.Tokens[i].Status == sdk.Ready {
					id = st.Tokens[i].ID
					break
				}
			}
			d, err = nv.Next(ctx, &sdk.NextRequest{State: st, Token: id, Outcome: sdk.Outcome{Status: sdk.OK}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	instance()
	calls = 0
	allocs := testing.AllocsPerRun(200, instance)
	perCall := allocs / (float64(calls) / 201)
	if perCall >= 1 {
		t.Fatalf("%.2f allocations per call (%.1f per instance), want fewer than 1", perCall, allocs)
	}
}

// tasksDoc is a process of n service tasks w0…w(n-1) in a row: the Next
// of task i has the trace "exit wi, enter w(i+1)", a different one for
// every task.
func tasksDoc(n int) string {
	var b strings.Builder
	b.WriteString(`<process id="p"><startEvent id="s"/><endEvent id="e"/>`)
	prev := "s"
	for i := range n {
		fmt.Fprintf(&b, `<serviceTask id="w%d"/><sequenceFlow id="f%d" sourceRef="%s" targetRef="w%d"/>`, i, i, prev, i)
		prev = fmt.Sprintf("w%d", i)
	}
	fmt.Fprintf(&b, `<sequenceFlow id="fe" sourceRef="%s" targetRef="e"/></process>`, prev)
	return doc(b.String())
}

// runTasks runs one instance of tasksDoc(n) and checks every trace; it
// returns the decisions.
func runTasks(nv *Navigator, r *sdk.Routine, n int) ([]*sdk.Decision, error) {
	ctx := context.Background()
	st := sdk.State{Routine: r.Hash}
	d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
	var ds []*sdk.Decision
	for i := 0; err == nil; i++ {
		want := "exit w" + fmt.Sprint(i-1) + ",enter w" + fmt.Sprint(i)
		switch {
		case i == 0:
			want = "exit s,enter w0"
		case i == n:
			want = fmt.Sprintf("exit w%d,enter e,exit e", n-1)
		}
		var got []string
		for _, e := range d.Trace {
			got = append(got, string(e.Type)+" "+e.Node)
		}
		if strings.Join(got, ",") != want {
			return nil, fmt.Errorf("call %d: trace %v, want %s", i, got, want)
		}
		ds = append(ds, d)
		st = d.Apply(st)
		if d.Complete {
			return ds, nil
		}
		d, err = nv.Next(ctx, &sdk.NextRequest{State: st, Token: st.Tokens[len(st.Tokens)-1].ID, Outcome: sdk.Outcome{Status: sdk.OK}})
	}
	return nil, err
}

// TestTracesKept: a routine keeps the first maxTraces traces its answers
// carry, and a later answer with the same trace carries the kept copy;
// past the bound, traces are the answer's own. Every trace is right either
// way.
func TestTracesKept(t *testing.T) {
	n := maxTraces + 40
	nv := New()
	r := loadString(t, nv, tasksDoc(n))
	first, err := runTasks(nv, r, n)
	if err != nil {
		t.Fatal(err)
	}
	second, err := runTasks(nv, r, n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		shared := &first[i].Trace[0] == &second[i].Trace[0]
		if kept := i < maxTraces; shared != kept {
			t.Fatalf("call %d: trace shared with the first instance's %v, want %v", i, shared, kept)
		}
	}
}

// TestTracesConcurrent: instances that run at once on one navigator, and
// keep their routine's traces as they go, all get their own right traces
// (run with -race, it also checks how kept traces are published).
func TestTracesConcurrent(t *testing.T) {
	const n = 40
	nv := New()
	r := loadString(t, nv, tasksDoc(n))
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			var err error
			for range 5 {
				if _, err = runTasks(nv, r, n); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
