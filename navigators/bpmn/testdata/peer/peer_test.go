//go:build unix

// Package peer measures sextant's BPMN navigator beside lib-bpmn-engine
// v0.2.4 (the version the Go module proxy serves) on the processes of
// ../bench, in one process and one benchmark: the ratio is the target, so
// both engines are measured in the same minutes on the same machine.
//
// It is its own module, under testdata, so that lib-bpmn-engine never
// enters sextant's module graph: run it with `make peer`.
package peer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	libbpmn "github.com/nitram509/lib-bpmn-engine/pkg/bpmn_engine"
	"github.com/nitram509/lib-bpmn-engine/pkg/spec/BPMN20/process_instance"
	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
	"golang.org/x/sys/unix"
)

// amounts rotate over the instances so that every branch of the
// exclusive process runs.
var amounts = []int{50, 500, 5000}

// engine runs one whole instance of a process, calling visit for each
// service task it executes.
type engine interface {
	instance(amount int, visit func(task string)) error
}

// sextantEngine drives the navigator as the host does: Start, then for the
// first ready token its task's handler and Next(OK), applying each
// decision to the state the caller owns.
type sextantEngine struct {
	nv    *bpmn.Navigator
	hash  string
	steps map[string]bool
}

func newSextant(data []byte) (*sextantEngine, error) {
	nv := bpmn.New()
	r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: "peer.bpmn", Routine: data})
	if err != nil {
		return nil, err
	}
	e := &sextantEngine{nv: nv, hash: r.Hash, steps: map[string]bool{}}
	for _, n := range r.Nodes {
		if n.Step {
			e.steps[n.ID] = true
		}
	}
	return e, nil
}

func (e *sextantEngine) instance(amount int, visit func(string)) error {
	ctx := context.Background()
	st := sdk.State{Routine: e.hash, Env: sdk.Env{Vars: map[string]any{"amount": amount}}}
	d, err := e.nv.Start(ctx, &sdk.StartRequest{State: st})
	if err != nil {
		return err
	}
	st = d.Apply(st)
	for !d.Complete {
		if d.Fault != nil || d.Choice != nil {
			return fmt.Errorf("fault %v, choice %v", d.Fault, d.Choice)
		}
		id, node := "", ""
		for j := range st.Tokens {
			if st.Tokens[j].Status == sdk.Ready {
				id, node = st.Tokens[j].ID, st.Tokens[j].Node
				break
			}
		}
		if !e.steps[node] {
			return fmt.Errorf("no ready task among %+v", st.Tokens)
		}
		visit(node)
		if d, err = e.nv.Next(ctx, &sdk.NextRequest{State: st, Token: id, Outcome: sdk.Outcome{Status: sdk.OK}}); err != nil {
			return err
		}
		st = d.Apply(st)
	}
	return nil
}

// libEngine runs each instance on a fresh copy of a loaded engine (lib
// keeps every instance in its engine forever, and slows down as they
// pile up); the copy shares the parsed process and the handlers, so
// nothing is parsed again. Handlers are keyed by element id (v0.2).
type libEngine struct {
	tmpl  libbpmn.BpmnEngineState
	key   int64
	visit func(string)
}

func newLib(data []byte, tasks []string) (*libEngine, error) {
	e := &libEngine{tmpl: libbpmn.New("peer")}
	p, err := e.tmpl.LoadFromBytes(data)
	if err != nil {
		return nil, err
	}
	e.key = p.ProcessKey
	h := func(job libbpmn.ActivatedJob) {
		e.visit(job.GetElementId())
		job.Complete()
	}
	for _, t := range tasks {
		e.tmpl.AddTaskHandler(t, h)
	}
	return e, nil
}

func (e *libEngine) instance(amount int, visit func(string)) error {
	e.visit = visit
	eng := e.tmpl
	inst, err := eng.CreateAndRunInstance(e.key, map[string]any{"amount": amount})
	if err != nil {
		return err
	}
	if inst == nil || inst.GetState() != process_instance.COMPLETED {
		return fmt.Errorf("instance did not complete")
	}
	return nil
}

// load returns both engines for the process name of ../bench.
func load(tb testing.TB, name string) (sx, lib engine) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "bench", name+".bpmn"))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := newSextant(data)
	if err != nil {
		tb.Fatalf("sextant: %v", err)
	}
	tasks := make([]string, 0, len(s.steps))
	for id := range s.steps {
		tasks = append(tasks, id)
	}
	l, err := newLib(data, tasks)
	if err != nil {
		tb.Fatalf("lib-bpmn-engine: %v", err)
	}
	return s, l
}

var processes = []string{"linear10", "exclusive", "parallel4"}

// TestSameTasks: for every amount both engines run the same ten tasks (in
// any order: the parallel branches interleave differently), so the
// benchmark compares the same work.
func TestSameTasks(t *testing.T) {
	for _, p := range processes {
		sx, lib := load(t, p)
		for _, a := range amounts {
			var got [2][]string
			for i, e := range []engine{sx, lib} {
				if err := e.instance(a, func(task string) { got[i] = append(got[i], task) }); err != nil {
					t.Fatalf("%s amount %d, engine %d: %v", p, a, i, err)
				}
				slices.Sort(got[i])
			}
			if len(got[0]) != 10 || !slices.Equal(got[0], got[1]) {
				t.Errorf("%s amount %d: sextant ran %v, lib-bpmn-engine %v", p, a, got[0], got[1])
			}
		}
	}
}

// BenchmarkPeer: one op is a slice of 100 ms of CPU time on each engine,
// in alternating order (sextant first in even ops), after a collection
// outside the slice so that no engine is charged for another's garbage.
// A slice is long enough for ten or more collections of each engine's own
// garbage, so the little left uncollected at its end hardly counts. It
// reports each engine's process CPU time and allocations per instance,
// and lib/sextant-cpu — the ratio the target asks for — as the median of
// the ops' ratios, which a burst of load on a shared machine moves less
// than it moves a sum.
func BenchmarkPeer(b *testing.B) {
	for _, p := range processes {
		b.Run(p, func(b *testing.B) {
			sx, lib := load(b, p)
			engines := []engine{sx, lib}
			var cpu, allocs, n [2]int64
			var ratios []float64
			for k := range b.N {
				var per [2]float64
				for j := range 2 {
					i := j ^ (k & 1)
					c, m, ni := slice(b, engines[i], 100*time.Millisecond)
					cpu[i] += c
					allocs[i] += m
					n[i] += ni
					per[i] = float64(c) / float64(ni)
				}
				ratios = append(ratios, per[1]/per[0])
			}
			slices.Sort(ratios)
			b.ReportMetric(float64(cpu[0])/float64(n[0]), "sextant-cpu-ns/inst")
			b.ReportMetric(float64(cpu[1])/float64(n[1]), "lib-cpu-ns/inst")
			b.ReportMetric(float64(allocs[0])/float64(n[0]), "sextant-allocs/inst")
			b.ReportMetric(float64(allocs[1])/float64(n[1]), "lib-allocs/inst")
			b.ReportMetric(ratios[len(ratios)/2], "lib/sextant-cpu")
		})
	}
}

// slice runs instances of e, 16 at a time, until they have taken d of the
// process's CPU time, after a collection; it returns that CPU time (ns,
// all threads, the collections of the slice's garbage included), the heap
// allocations and the instances, each of which must run ten tasks.
func slice(b *testing.B, e engine, d time.Duration) (cpu, allocs, n int64) {
	visits := 0
	visit := func(string) { visits++ }
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	for cpuTime()-c0 < d.Nanoseconds() {
		for range 16 {
			if err := e.instance(amounts[n%int64(len(amounts))], visit); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	cpu = cpuTime() - c0
	runtime.ReadMemStats(&m1)
	if visits != 10*int(n) {
		b.Fatalf("%d tasks over %d instances, want 10 each", visits, n)
	}
	return cpu, int64(m1.Mallocs - m0.Mallocs), n
}

// cpuTime is the process's CPU time in nanoseconds, all threads, from the
// kernel's per-process clock (getrusage counts in scheduler ticks, too
// coarse for blocks of a few milliseconds).
func cpuTime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}
