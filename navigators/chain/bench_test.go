package chain

import (
	"context"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// benchChain has 10 nodes: sequential steps, a sub-chain that fans the
// work out over three reviewers, and a skip_if.
const benchChain = `name = "bench"
inputs = ["ticket"]
[[steps]]
id = "classify"
inputs = ["ticket"]
outputs = ["category"]
[[steps]]
id = "lookup"
outputs = ["history"]
[[steps]]
id = "draft"
inputs = ["ticket", "category", "history"]
outputs = ["reply"]
[[steps]]
id = "review"
inputs = ["reply"]
outputs = ["verdict"]
  [[steps.chain]]
  id = "tone"
  inputs = ["reply"]
  outputs = ["tone"]
  [[steps.chain]]
  id = "policy"
  inputs = ["reply"]
  outputs = ["policy"]
  [[steps.chain]]
  id = "facts"
  inputs = ["reply"]
  outputs = ["facts"]
  [[steps.chain]]
  id = "judge"
  inputs = ["tone", "policy", "facts"]
  outputs = ["verdict"]
[[steps]]
id = "escalate"
skip_if = "input.priority != 'high'"
[[steps]]
id = "send"
inputs = ["reply", "verdict"]
`

// BenchmarkNavigate walks one instance from start to end per iteration,
// in memory, completing every Ready token with success.
func BenchmarkNavigate(b *testing.B) {
	b.Run("chain", func(b *testing.B) { navigate(b, New()) })
	// Through the wire, bound, as the host calls a chain plugin: what the
	// plugin side allocates per call is what a wasm guest allocates.
	b.Run("chain-wire", func(b *testing.B) { navigate(b, sdktest.Wire(New())) })
	// As a wasm guest answers (sdk.ServeGuest), natively: make pgo
	// profiles this for the plugin's default.pgo.
	b.Run("chain-guest", func(b *testing.B) { navigate(b, sdktest.Guest(New())) })
}

func navigate(b *testing.B, n sdk.Navigator) {
	ctx := context.Background()
	r, err := n.Load(ctx, &sdk.LoadRequest{Name: "bench.toml", Routine: []byte(benchChain)})
	if err != nil {
		b.Fatal(err)
	}
	env := sdk.Env{Input: map[string]any{"ticket": "t", "priority": "low"}}
	out := sdk.Outcome{Status: sdk.OK}
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
			ready := -1
			for k, t := range st.Tokens {
				if t.Status == sdk.Ready {
					ready = k
				}
			}
			if d.Fault != nil || ready < 0 {
				b.Fatalf("stuck: %+v", d)
			}
			d, err = n.Next(ctx, &sdk.NextRequest{State: st, Token: st.Tokens[ready].ID, Outcome: out})
			if err != nil {
				b.Fatal(err)
			}
			st = d.Apply(st)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
}
