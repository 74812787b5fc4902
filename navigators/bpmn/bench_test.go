package bpmn

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// BenchmarkNavigate runs whole instances start to end, in memory: Start,
// then Next for every ready token, applying each decision as the host
// does. "bpmn" is a 10-task process with an exclusive (conditional) and a
// parallel gateway. The other rows are the processes of the side-by-side
// comparison with lib-bpmn-engine (testdata/bench), driven the same way:
// a handler looked up by node id per ready token, and the variable amount
// rotating over 50, 500 and 5000 so that every exclusive branch runs.
func BenchmarkNavigate(b *testing.B) {
	b.Run("bpmn", func(b *testing.B) {
		benchInstances(b, filepath.Join("testdata", "routines", "bench.bpmn"), 9, []int{500})
	})
	for _, p := range []string{"linear10", "exclusive", "parallel4"} {
		b.Run(p, func(b *testing.B) {
			benchInstances(b, filepath.Join("testdata", "bench", p+".bpmn"), 10, []int{50, 500, 5000})
		})
	}
}

// benchInstances runs b.N instances of the routine at path, instance i
// with amount amounts[i%len(amounts)], each task through a handler found
// by its node id; every instance must run want tasks. cpu-ns/op is the
// process's CPU time per instance, GC included, which a busy machine
// disturbs less than the wall clock.
func benchInstances(b *testing.B, path string, want int, amounts []int) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	nv := New()
	r, err := nv.Load(ctx, &sdk.LoadRequest{Name: filepath.Base(path), Routine: data})
	if err != nil {
		b.Fatal(err)
	}
	tasks := 0
	handlers := map[string]func(){}
	for _, n := range r.Nodes {
		if n.Step {
			handlers[n.ID] = func() { tasks++ }
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	calls := 0
	for i := 0; i < b.N; i++ {
		vars := map[string]any{"amount": amounts[i%len(amounts)]}
		st := sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: vars}}
		d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
		if err != nil {
			b.Fatal(err)
		}
		calls++
		st = d.Apply(st)
		for !d.Complete {
			if d.Fault != nil || d.Choice != nil {
				b.Fatalf("instance %d: fault %v, choice %v", i, d.Fault, d.Choice)
			}
			id, node := "", ""
			for j := range st.Tokens {
				if st.Tokens[j].Status == sdk.Ready {
					id, node = st.Tokens[j].ID, st.Tokens[j].Node
					break
				}
			}
			h := handlers[node]
			if h == nil {
				b.Fatalf("stuck or no handler: %+v", st.Tokens)
			}
			h()
			d, err = nv.Next(ctx, &sdk.NextRequest{State: st, Token: id, Outcome: sdk.Outcome{Status: sdk.OK}})
			if err != nil {
				b.Fatal(err)
			}
			calls++
			st = d.Apply(st)
		}
	}
	b.StopTimer()
	if cpu >= 0 {
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	}
	if tasks != want*b.N {
		b.Fatalf("%d tasks over %d instances, want %d each", tasks, b.N, want)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/instance")
}
