package dag

import (
	"context"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// benchDAG has 10 tasks: a fan-out over three items, parallel branches, a
// condition and a join.
const benchDAG = `name = "bench"
[tasks.plan]
[tasks.fetch]
depends_on = ["plan"]
for_each = "vars.urls"
outputs = ["page"]
[tasks.search]
depends_on = ["plan"]
[tasks.rank]
depends_on = ["search"]
[tasks.parse]
depends_on = ["fetch"]
[tasks.merge]
depends_on = ["parse", "rank"]
[tasks.check]
depends_on = ["merge"]
when = "len(vars.page) == 3"
[tasks.draft]
depends_on = ["check"]
[tasks.review]
depends_on = ["draft"]
trigger_rule = "none_failed"
[tasks.publish]
depends_on = ["review"]
`

// BenchmarkNavigate walks one instance from start to end per iteration,
// in memory, completing every Ready token with success.
func BenchmarkNavigate(b *testing.B) {
	b.Run("dag", func(b *testing.B) {
		ctx := context.Background()
		n := New()
		r, err := n.Load(ctx, &sdk.LoadRequest{Name: "bench.toml", Routine: []byte(benchDAG)})
		if err != nil {
			b.Fatal(err)
		}
		env := sdk.Env{Vars: map[string]any{"urls": []any{"a", "b", "c"}}}
		out := sdk.Outcome{Status: sdk.OK, Output: map[string]any{"page": "p"}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			st := sdk.State{Routine: r.Hash, Env: env}
			d, err := n.Start(ctx, &sdk.StartRequest{State: st})
			if err != nil {
				b.Fatal(err)
			}
			st = d.Apply(st)
			for !d.Complete {
				if d.Fault != nil || len(st.Tokens) == 0 {
					b.Fatalf("stuck: %+v", d)
				}
				d, err = n.Next(ctx, &sdk.NextRequest{State: st, Token: st.Tokens[0].ID, Outcome: out})
				if err != nil {
					b.Fatal(err)
				}
				st = d.Apply(st)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
	})
}
