package pipeline

import "github.com/sextant-dev/sextant/host/internal/schema"

// The step kinds (docs/reference/pipeline.md).
const (
	KindLLM    = "llm"
	KindExpr   = "expr"
	KindAction = "action"
	KindHuman  = "human"
)

// OnMiss values: what replay does when a call has no recording.
var onMissValues = []string{"fail", "skip", "live"}

// Mutators evolution knows.
var adapterNames = []string{"round", "offline"}

var mutatorNames = []string{"greedy", "conservative", "exploratory", "curate"}

// BuiltinGates declares the gates the host implements and the keys each
// reads from its [[gates]] block: the loader checks a built-in gate's
// block with them, and gateBlock's Variants hand the same table to the
// reference and the JSON Schema.
var BuiltinGates = map[string][]schema.Field{
	"delta-bound": nil,
	"cooldown":    nil,
	"constraints": nil,
	"no-regression": {
		{Name: "metric", Type: schema.String, Default: "success_rate", Doc: "metric that must not drop; reward.NAME is a named reward dimension (feedback --reward NAME=X, or a named [[score.assert]])"},
		{Name: "confidence", Type: schema.Number, Default: 0.95, Doc: "confidence level of the interval"},
		{Name: "tolerance", Type: schema.Number, Default: 0.0, Doc: "largest acceptable drop (CI upper bound of the drop)"},
	},
	"improvement": {
		{Name: "metric", Type: schema.String, Default: "success_rate", Doc: "metric that must improve; reward.NAME as for no-regression"},
		{Name: "confidence", Type: schema.Number, Default: 0.95, Doc: "confidence level of the interval"},
		{Name: "min_effect", Type: schema.Number, Default: 0.0, Doc: "smallest improvement the CI lower bound must clear"},
	},
	"min-fidelity": {
		{Name: "min", Type: schema.Number, Default: 1.0, Doc: "smallest acceptable fraction of self-replays that reproduce their trace"},
	},
	"budget": {
		{Name: "max_playbook_tokens", Type: schema.Int, Bound: schema.Positive, Doc: "largest playbook, in estimated tokens"},
		{Name: "max_cost_usd", Type: schema.Number, Bound: schema.Positive, Doc: "largest mean cost per task"},
	},
	"human-review": {
		{Name: "when", Type: schema.String, Enum: []string{"always", "on-change", "strategy"}, Default: "strategy",
			Doc: "ask a person always, on any parameter change, or when the strategy requires it"},
	},
}

// The declaration of pipeline.toml. Field names here are the only place the
// keys are spelled: decoding, validation and `sextant pipeline --reference`
// read them.
var (
	providerBlock = &schema.Block{Name: "provider", Fields: []schema.Field{
		{Name: "use", Type: schema.String, Required: true, Doc: "provider plugin name"},
		{Name: "model", Type: schema.String, Doc: "model name sent to the provider"},
		{Name: "base_url", Type: schema.String, Doc: "API base URL"},
		{Name: "api_key_env", Type: schema.String, Doc: "environment variable holding the API key (keys never live in files)"},
		{Name: "api_key", Type: schema.Any, Doc: "refused: keys never live in files, use api_key_env"},
		{Name: "fallback", Type: schema.StringList, Doc: "providers to try, in order, when this one fails"},
		{Name: "temperature", Type: schema.Number, Bound: schema.NonNegative, Doc: "sampling temperature sent with every request (steps may override it)"},
		{Name: "max_tokens", Type: schema.Int, Bound: schema.Positive, Doc: "most tokens a reply may have (steps may override it)"},
		{Name: "timeout", Type: schema.Duration, Default: "60s", Bound: schema.Positive, Doc: "per-call timeout"},
		{Name: "retries", Type: schema.Int, Default: 3, Bound: schema.NonNegative, Doc: "retries on rate limits, 5xx and timeouts"},
		{Name: "rules", Type: schema.String, Doc: "rules file (script provider)"},
		{Name: "config", Type: schema.Table, Block: &schema.Block{Open: true}, Doc: "plugin-specific settings"},
	}}
	stepBlock = &schema.Block{Name: "step", Fields: []schema.Field{
		{Name: "kind", Type: schema.String, Required: true, Enum: []string{KindLLM, KindExpr, KindAction, KindHuman}, Doc: "what the host does at the node"},
		{Name: "provider", Type: schema.String, Doc: "llm: provider name from [providers]"},
		{Name: "system", Type: schema.String, Doc: "llm: system prompt template"},
		{Name: "prompt", Type: schema.String, Doc: "llm: prompt template over input, vars, strategy; {{ playbook }} renders the playbook"},
		{Name: "output", Type: schema.String, Enum: []string{"text", "json"}, Default: "text", Doc: "llm: text, or json parsed into vars.<step> with one repair retry"},
		{Name: "temperature", Type: schema.Number, Bound: schema.NonNegative, Doc: "llm: overrides the provider's"},
		{Name: "max_tokens", Type: schema.Int, Bound: schema.Positive, Doc: "llm: overrides the provider's"},
		{Name: "set", Type: schema.StringMap, Doc: "expr: variables to assign from expressions"},
		{Name: "action", Type: schema.String, Doc: "action: template naming the action"},
		{Name: "confidence", Type: schema.String, Doc: "action: expression giving the confidence (for prefer_confirm_for)"},
		{Name: "question", Type: schema.String, Doc: "human: what to ask"},
		{Name: "options", Type: schema.StringList, Doc: "human: allowed answers"},
		{Name: "tools", Type: schema.StringList, Doc: "llm: tools offered to the model: a [tools] source name (all its tools), SOURCE.TOOL, or SOURCE.GLOB such as files.read_*; the step runs the model ↔ tool loop"},
		{Name: "tool_choice", Type: schema.String, Doc: "llm: auto, none, required, or the name of the one tool the model must call (default: the provider's)"},
		{Name: "max_turns", Type: schema.Int, Default: 8, Bound: schema.Positive, Doc: "llm: model calls the tool loop may make; the step fails beyond it"},
	}}
	gateBlock = &schema.Block{Name: "gate", Open: true, Fields: []schema.Field{
		{Name: "use", Type: schema.String, Required: true, Doc: "built-in gate or gate plugin"},
	}, Variants: &schema.Variants{Key: "use", Cases: BuiltinGates}}
	grantBlock = &schema.Block{Name: "plugin grant", Fields: []schema.Field{
		{Name: "allow_http", Type: schema.StringList, Doc: "host:port pairs the plugin may reach"},
		{Name: "timeout", Type: schema.Duration, Bound: schema.Positive, Doc: "per-call deadline"},
		{Name: "memory", Type: schema.Size, Doc: "memory cap, e.g. 64MiB"},
		{Name: "pool", Type: schema.Int, Bound: schema.Positive, Doc: "wasm instances (one per worker)"},
	}}
	priceBlock = &schema.Block{Name: "price", Fields: []schema.Field{
		{Name: "input", Type: schema.Number, Required: true, Bound: schema.NonNegative, Doc: "USD per million input tokens"},
		{Name: "output", Type: schema.Number, Required: true, Bound: schema.NonNegative, Doc: "USD per million output tokens"},
	}}

	// assertBlock is one [[score.assert]] entry.
	assertBlock = &schema.Block{Fields: []schema.Field{
		{Name: "type", Type: schema.String, Required: true, Enum: AssertTypes, Doc: "contains: the text holds value; regex: the text matches value (RE2); json_schema: the output (JSON) is valid against the schema file; rubric: an LLM judge rates the text against value; similar: the text's embedding is close to a reference's"},
		{Name: "value", Type: schema.String, Doc: "contains: the substring; regex: the pattern; rubric: the rubric the judge rates against; similar: the reference text"},
		{Name: "schema", Type: schema.String, Doc: "json_schema: JSON Schema file, relative to the pipeline"},
		{Name: "of", Type: schema.String, Doc: "expression over output, truth, input, vars giving what is checked (a string as is, anything else as JSON); default: output"},
		{Name: "name", Type: schema.String, Doc: "reward dimension the check also gives (contains, regex, json_schema: 1 pass, -1 fail; rubric, similar: the score), for reward.NAME gates"},
		{Name: "provider", Type: schema.String, Doc: "rubric: the [providers] block of the judge; similar: the block whose plugin embeds (openai's /embeddings); its calls are recorded with the task"},
		{Name: "model", Type: schema.String, Doc: "rubric, similar: model asked instead of the provider block's (an embedding model for similar)"},
		{Name: "prompt", Type: schema.String, Doc: "rubric: the judge's message, a template over output, truth, input, vars, text (what is graded), rubric (value) and scale; default: the rubric and the text"},
		{Name: "scale", Type: schema.Int, Default: 5, Bound: schema.Positive, Doc: "rubric: the judge rates 1 to scale (at least 2); rating r scores (r-1)/(scale-1), 0 to 1"},
		{Name: "threshold", Type: schema.Number, Doc: "rubric: the score (0 to 1) a pass needs; similar: the cosine similarity (-1 to 1) a pass needs; required by both"},
		{Name: "reference", Type: schema.String, Doc: "similar: expression over output, truth, input, vars giving the reference text, instead of value (e.g. truth.reply)"},
	}}

	// Spec is the whole pipeline.toml.
	Spec = &schema.Block{Name: "pipeline", Fields: []schema.Field{
		{Name: "name", Type: schema.String, Required: true, Doc: "pipeline name"},
		{Name: "description", Type: schema.String, Doc: "what the pipeline is for"},
		{Name: keyOverlay, Type: schema.String, Doc: "makes this file an overlay: the pipeline file (relative to this one) whose tables this file's are merged over, key by key; values and arrays of tables replace. Paths resolve as in that pipeline. Use it for a candidate (gate --candidate-pipeline) that changes a model, a prompt, a provider or the routine"},
		{Name: "routine", Type: schema.Table, Required: true, Doc: "the workflow the navigator walks", Block: &schema.Block{Fields: []schema.Field{
			{Name: "navigator", Type: schema.String, Required: true, Doc: "navigator plugin: bpmn, dag, chain or a third-party one"},
			{Name: "file", Type: schema.String, Required: true, Doc: "routine file, relative to the pipeline"},
			{Name: "decisions", Type: schema.StringList, Doc: "DMN files the routine's business rule tasks call (BPMN zeebe:calledDecision), relative to the pipeline"},
		}}},
		{Name: "strategy", Type: schema.Table, Doc: "the strategy the pipeline runs under; without it the pipeline runs under an empty one (no parameters, constraints or playbook), and evolve and gate refuse it", Block: &schema.Block{Fields: []schema.Field{
			{Name: "file", Type: schema.String, Required: true, Doc: "strategy TOML, relative to the pipeline: the live version until one is promoted (sextant promote, evolve, review approve), which runs then use"},
			{Name: "pin", Type: schema.Bool, Default: false, Doc: "run file always, whatever version is live (promotions are still recorded)"},
		}}},
		{Name: "providers", Type: schema.TableMap, Block: providerBlock, Doc: "named providers"},
		{Name: "tools", Type: schema.TableMap, Block: toolBlock, Doc: "named tool sources: MCP servers (stdio or streamable HTTP) and tool plugins, offered by llm steps (docs/reference/tools.md)"},
		{Name: "steps", Type: schema.TableMap, Block: stepBlock, Doc: "routine node id -> what the host does there"},
		{Name: "limits", Type: schema.Table, Doc: "what one run may use; a run that exceeds a limit fails", Block: &schema.Block{Fields: []schema.Field{
			{Name: "max_steps", Type: schema.Int, Default: 200, Bound: schema.Positive, Doc: "steps one run may take"},
			{Name: "max_tokens", Type: schema.Int, Bound: schema.Positive, Doc: "tokens (input + output) one run may use; unset: no limit"},
			{Name: "max_cost_usd", Type: schema.Number, Bound: schema.Positive, Doc: "USD one run may spend (from the price table); unset: no limit"},
			{Name: "timeout", Type: schema.Duration, Default: "10m", Bound: schema.Positive, Doc: "wall-clock time one run (or one resume of it) may take"},
			{Name: "parallel", Type: schema.Int, Default: 4, Bound: schema.Positive, Doc: "branches run at once, and tool calls of one model turn run at once"},
			{Name: "max_tool_calls", Type: schema.Int, Bound: schema.Positive, Doc: "tool calls one run may make; unset: no limit"},
		}}},
		{Name: "score", Type: schema.Table, Doc: "how a finished task is scored", Block: &schema.Block{Fields: []schema.Field{
			{Name: "success", Type: schema.String, Doc: "expression over output, truth, input, vars: did the task succeed"},
			{Name: "reward", Type: schema.String, Doc: "expression giving a numeric reward"},
			{Name: "assert", Type: schema.TableArray, Block: assertBlock, Doc: "checks of the output beside success: a task succeeds only when every one passes"},
		}}},
		{Name: "replay", Type: schema.Table, Doc: "how recorded tasks are replayed", Block: &schema.Block{Fields: []schema.Field{
			{Name: "dataset", Type: schema.String, Doc: "JSONL dataset (default: the store's own tasks)"},
			{Name: "sample", Type: schema.Int, Bound: schema.Positive, Doc: "tasks to replay (stratified); unset: all"},
			{Name: "stratify_by", Type: schema.String, Doc: "task field the sample keeps proportions of, e.g. tags.difficulty"},
			{Name: "workers", Type: schema.Int, Default: 4, Bound: schema.Positive, Doc: "tasks replayed at once"},
			{Name: "seed", Type: schema.Int, Default: 1, Doc: "seed of the sample and of replayed randomness"},
			{Name: "on_miss", Type: schema.String, Enum: onMissValues, Default: "fail", Doc: "what a call with no recording does"},
			{Name: "max_live_cost_usd", Type: schema.Number, Bound: schema.Positive, Doc: "most USD the calls sent to a live provider (on_miss = live) may cost in one replay or gate, each of its --shard I/N shards 1/N of it; the replay fails beyond it; unset: no cap"},
			{Name: "min_fidelity", Type: schema.Number, Default: 1.0, Bound: schema.NonNegative, Doc: "least share of self-replays (tasks replayed under the strategy they were recorded with) that must reproduce their recorded trace, 0 to 1; below it the verdict fails, naming the first divergences"},
		}}},
		{Name: "evolve", Type: schema.Table, Doc: "how candidates are made and chosen", Block: &schema.Block{Fields: []schema.Field{
			{Name: "metric", Type: schema.String, Default: "success_rate", Doc: "metric the mutators improve"},
			{Name: "mutators", Type: schema.StringList, Enum: mutatorNames, Default: mutatorNames, Doc: "mutators that propose candidates"},
			{Name: "seed", Type: schema.Int, Default: 0, Doc: "seed of the exploratory mutator"},
			{Name: "adapter", Type: schema.String, Enum: adapterNames, Default: "round", Doc: "round: one round of the mutators; offline: ACE epochs over the recorded tasks (generate, reflect on failures, curate, tidy), each epoch's candidate gated"},
			{Name: "epochs", Type: schema.Int, Default: 1, Bound: schema.Positive, Doc: "offline adapter: passes over the recorded tasks"},
			{Name: "on_miss", Type: schema.String, Enum: onMissValues, Doc: "what a candidate's call with no recording does while evolving (default: [replay] on_miss); live asks the pipeline's providers, e.g. the script provider's rules"},
			{Name: "online", Type: schema.Bool, Default: false, Doc: "learn while serving: after each scored run, count its cited bullets and apply its curator delta as a new strategy version that the next run uses (experimental strategies only)"},
			{Name: "delta", Type: schema.String, Default: "delta", Doc: "online: the run variable holding the curator's {\"operations\": [...]}"},
			{Name: "prune_harmful", Type: schema.Int, Default: 0, Bound: schema.NonNegative, Doc: "remove a bullet once its harmful count reaches this and exceeds helpful; 0 never"},
			{Name: "dedup_threshold", Type: schema.Number, Default: 0, Bound: schema.NonNegative, Doc: "merge bullets whose word sets have a Jaccard similarity at or above this (0 < t ≤ 1); 0 never"},
		}}},
		{Name: "gates", Type: schema.TableArray, Block: gateBlock, Doc: "the gate chain a candidate must pass"},
		{Name: "plugins", Type: schema.TableMap, Block: grantBlock, Doc: "capabilities granted to plugins"},
		{Name: "prices", Type: schema.TableMap, Block: priceBlock, Doc: "per-model prices, overriding the built-in table"},
		{Name: "store", Type: schema.Table, Doc: "where runs are recorded", Block: &schema.Block{Fields: []schema.Field{
			{Name: "dir", Type: schema.String, Default: ".sextant", Doc: "Badger directory, relative to the pipeline"},
			{Name: "redact", Type: schema.StringList, Doc: "regular expressions whose matches are redacted before storing"},
			{Name: "fsync", Type: schema.Bool, Default: false, Doc: "fsync every checkpoint (survives power loss; every commit already survives kill -9)"},
		}}},
	}}
)
