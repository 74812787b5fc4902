package chain_test

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/sdk"
)

// Load checks a chain's variables as LangChain's SequentialChain does.
func ExampleNavigator_Load() {
	_, err := chain.New().Load(context.Background(), &sdk.LoadRequest{Name: "chain.toml", Routine: []byte(`name = "answer"
inputs = ["question"]
outputs = ["answer"]

[[steps]]
id = "draft"
inputs = ["question"]
outputs = ["draft"]

[[steps]]
id = "review"
inputs = ["drfat"]
outputs = ["question"]
`)})
	fmt.Println(err)
	// Output:
	// chain.toml:3: outputs: output "answer" is not produced by any step
	// chain.toml:12: steps.review.inputs: missing input "drfat": not an input of the chain or an output of an earlier step (did you mean "draft"?)
	// chain.toml:13: steps.review.outputs: output "question" overwrites an existing variable (an input of the chain)
}
