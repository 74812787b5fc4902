package bpmn

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// BenchmarkNavigate runs whole instances of a 10-task process with an
// exclusive (conditional) and a parallel gateway, start to end, in memory:
// Start, then Next for every ready token, applying each decision as the
// host does.
func BenchmarkNavigate(b *testing.B) {
	b.Run("bpmn", func(b *testing.B) {
		data, err := os.ReadFile(filepath.Join("testdata", "routines", "bench.bpmn"))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		nv := New()
		r, err := nv.Load(ctx, &sdk.LoadRequest{Name: "bench.bpmn", Routine: data})
		if err != nil {
			b.Fatal(err)
		}
		vars := map[string]any{"amount": 500}
		b.ReportAllocs()
		b.ResetTimer()
		calls := 0
		for i := 0; i < b.N; i++ {
			st := sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: vars}}
			d, err := nv.Start(ctx, &sdk.StartRequest{State: st})
			if err != nil {
				b.Fatal(err)
			}
			calls++
			st = d.Apply(st)
			for !d.Complete {
				var id string
				for j := range st.Tokens {
					if st.Tokens[j].Status == sdk.Ready {
						id = st.Tokens[j].ID
						break
					}
				}
				if id == "" {
					b.Fatalf("stuck: %+v", st.Tokens)
				}
				d, err = nv.Next(ctx, &sdk.NextRequest{State: st, Token: id, Outcome: sdk.Outcome{Status: sdk.OK}})
				if err != nil {
					b.Fatal(err)
				}
				calls++
				st = d.Apply(st)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
		b.ReportMetric(float64(calls)/float64(b.N), "calls/instance")
	})
}
