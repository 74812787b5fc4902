// Package chain is the chain navigator: it walks a routine written as a
// TOML list of sequential steps, each declaring the variables it reads and
// writes, checked when the routine loads as LangChain's SequentialChain
// checks its chains. It registers itself as the builtin navigator "chain";
// navigators/chain/plugin builds the same code as a go-plugin binary or a
// wasip1 module.
//
// A routine looks like this:
//
//	name = "answer"                   # required: the routine id
//	description = "…"                 # optional
//	inputs = ["question"]             # the variables the chain starts with
//	outputs = ["answer"]              # optional; default: the last step's outputs
//
//	[[steps]]
//	id = "draft"                      # required; unique in the routine, nested steps included
//	inputs = ["question"]
//	outputs = ["draft"]
//	skip_if = "vars.cached != nil"    # optional expr-lang condition over input, vars, strategy
//
//	[[steps]]                         # a step with [[steps.chain]] is a sub-chain: its
//	id = "polish"                     # inputs and outputs are the sub-chain's, and the
//	inputs = ["draft"]                # host runs its inner steps, not the step itself
//	outputs = ["answer"]
//	[[steps.chain]]
//	id = "critique"
//	inputs = ["draft"]
//	outputs = ["critique"]
//	[[steps.chain]]
//	id = "rewrite"
//	inputs = ["draft", "critique"]
//	outputs = ["answer"]
//
// # Checks
//
// Going through each chain in order, with the known variables starting as
// the chain's inputs: every input of a step must be known (a chain input or
// an earlier step's output), and no output of a step may overwrite a
// variable that already exists; then the step's outputs become known. Every
// declared output of a chain must be produced by one of its steps. A
// sub-chain sees only its own inputs, as a nested SequentialChain does, but
// because all steps write to the same variables its steps may not overwrite
// any variable written before them, inside or outside the sub-chain.
// Each problem is reported with its file and line, all at once.
//
// # Walking
//
// Start checks that the chain's inputs are present in Env.Input or
// Env.Vars. Steps then run one at a time, in order: a step whose skip_if is
// true is passed over without a token; a sub-chain gets a Scope token that
// its inner step tokens name as Scope. A failed step ends the instance with
// a Fault (code "step_failed"); a step the host reports skipped is passed
// over. Trace events are emitted when a token enters and leaves a step or a
// sub-chain. The navigator keeps no run state: the token says where the
// instance is.
package chain
