package dag_test

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/navigators/dag"
	"github.com/sextant-dev/sextant/sdk"
)

// A host loads a routine once, starts an instance and then reports each
// finished step, applying every Decision to the state it keeps.
func Example() {
	ctx := context.Background()
	nav := dag.New()
	r, err := nav.Load(ctx, &sdk.LoadRequest{Name: "hello.toml", Routine: []byte(`name = "hello"
[tasks.fetch]
[tasks.search]
[tasks.answer]
depends_on = ["fetch", "search"]
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := sdk.State{Routine: r.Hash}
	d, _ := nav.Start(ctx, &sdk.StartRequest{State: st})
	for {
		for _, e := range d.Trace {
			fmt.Println(e.Type, e.Node)
		}
		st = d.Apply(st)
		if d.Complete || d.Fault != nil {
			break
		}
		d, _ = nav.Next(ctx, &sdk.NextRequest{State: st, Token: st.Tokens[0].ID, Outcome: sdk.Outcome{Status: sdk.OK}})
	}
	fmt.Println("complete:", d.Complete)
	// Output:
	// enter fetch
	// enter search
	// exit fetch
	// exit search
	// enter answer
	// exit answer
	// complete: true
}

// Load reports every problem of a routine at once, each with its line.
func ExampleNavigator_Load() {
	_, err := dag.New().Load(context.Background(), &sdk.LoadRequest{Name: "dag.toml", Routine: []byte(`name = "broken"
[tasks.a]
depends_on = ["c"]
[tasks.b]
depends_on = ["a"]
trigger_rule = "al_done"
[tasks.c]
depends_on = ["b"]
`)})
	fmt.Println(err)
	// Output:
	// dag.toml:6: tasks.b.trigger_rule: unknown trigger rule "al_done" (did you mean "all_done"?)
	// dag.toml:8: tasks.c: cycle c → a → b → c
}
