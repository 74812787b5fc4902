package pipeline

import "github.com/sextant-dev/sextant/host/internal/schema"

// The step kinds of DESIGN.md §4.1.
const (
	KindLLM    = "llm"
	KindExpr   = "expr"
	KindAction = "action"
	KindHuman  = "human"
)

// OnMiss values: what replay does when a call has no recording.
var onMissValues = []string{"fail", "skip", "live"}

// Mutators evolution knows.
var mutatorNames = []string{"greedy", "conservative", "exploratory", "curate"}

// BuiltinGates declares the gates the host implements and the keys each
// reads from its [[gates]] block.
var BuiltinGates = map[string][]schema.Field{
	"delta-bound": nil,
	"cooldown":    nil,
	"constraints": nil,
	"no-regression": {
		{Name: "metric", Type: schema.String, Default: "success_rate", Doc: "metric that must not drop"},
		{Name: "confidence", Type: schema.Number, Default: 0.95, Doc: "confidence level of the interval"},
		{Name: "tolerance", Type: schema.Number, Default: 0.0, Doc: "largest acceptable drop (CI upper bound of the drop)"},
	},
	"improvement": {
		{Name: "metric", Type: schema.String, Default: "success_rate", Doc: "metric that must improve"},
		{Name: "confidence", Type: schema.Number, Default: 0.95, Doc: "confidence level of the interval"},
		{Name: "min_effect", Type: schema.Number, Default: 0.0, Doc: "smallest improvement the CI lower bound must clear"},
	},
	"min-fidelity": {
		{Name: "min", Type: schema.Number, Default: 1.0, Doc: "smallest acceptable fraction of self-replays that reproduce their trace"},
	},
	"budget": {
		{Name: "max_playbook_tokens", Type: schema.Int, Doc: "largest playbook, in estimated tokens"},
		{Name: "max_cost_usd", Type: schema.Number, Doc: "largest mean cost per task"},
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
		{Name: "temperature", Type: schema.Number},
		{Name: "max_tokens", Type: schema.Int},
		{Name: "timeout", Type: schema.Duration, Default: "60s", Doc: "per-call timeout"},
		{Name: "retries", Type: schema.Int, Default: 3, Doc: "retries on rate limits, 5xx and timeouts"},
		{Name: "rules", Type: schema.String, Doc: "rules file (script provider)"},
		{Name: "config", Type: schema.Table, Block: &schema.Block{Open: true}, Doc: "plugin-specific settings"},
	}}
	stepBlock = &schema.Block{Name: "step", Fields: []schema.Field{
		{Name: "kind", Type: schema.String, Required: true, Enum: []string{KindLLM, KindExpr, KindAction, KindHuman}},
		{Name: "provider", Type: schema.String, Doc: "llm: provider name from [providers]"},
		{Name: "system", Type: schema.String, Doc: "llm: system prompt template"},
		{Name: "prompt", Type: schema.String, Doc: "llm: prompt template over input, vars, strategy; {{ playbook }} renders the playbook"},
		{Name: "output", Type: schema.String, Enum: []string{"text", "json"}, Default: "text", Doc: "llm: text, or json parsed into vars.<step> with one repair retry"},
		{Name: "temperature", Type: schema.Number, Doc: "llm: overrides the provider's"},
		{Name: "max_tokens", Type: schema.Int, Doc: "llm: overrides the provider's"},
		{Name: "set", Type: schema.StringMap, Doc: "expr: variables to assign from expressions"},
		{Name: "action", Type: schema.String, Doc: "action: template naming the action"},
		{Name: "confidence", Type: schema.String, Doc: "action: expression giving the confidence (for prefer_confirm_for)"},
		{Name: "question", Type: schema.String, Doc: "human: what to ask"},
		{Name: "options", Type: schema.StringList, Doc: "human: allowed answers"},
	}}
	gateBlock = &schema.Block{Name: "gate", Open: true, Fields: []schema.Field{
		{Name: "use", Type: schema.String, Required: true, Doc: "built-in gate or gate plugin"},
	}}
	grantBlock = &schema.Block{Name: "plugin grant", Fields: []schema.Field{
		{Name: "allow_http", Type: schema.StringList, Doc: "host:port pairs the plugin may reach"},
		{Name: "timeout", Type: schema.Duration, Doc: "per-call deadline"},
		{Name: "memory", Type: schema.String, Doc: "memory cap, e.g. 64MiB"},
		{Name: "pool", Type: schema.Int, Doc: "wasm instances (one per worker)"},
	}}
	priceBlock = &schema.Block{Name: "price", Fields: []schema.Field{
		{Name: "input", Type: schema.Number, Required: true, Doc: "USD per million input tokens"},
		{Name: "output", Type: schema.Number, Required: true, Doc: "USD per million output tokens"},
	}}

	// Spec is the whole pipeline.toml.
	Spec = &schema.Block{Name: "pipeline", Fields: []schema.Field{
		{Name: "name", Type: schema.String, Required: true, Doc: "pipeline name"},
		{Name: "description", Type: schema.String},
		{Name: "routine", Type: schema.Table, Required: true, Block: &schema.Block{Fields: []schema.Field{
			{Name: "navigator", Type: schema.String, Required: true, Doc: "navigator plugin: bpmn, dag, chain or a third-party one"},
			{Name: "file", Type: schema.String, Required: true, Doc: "routine file, relative to the pipeline"},
		}}},
		{Name: "strategy", Type: schema.Table, Required: true, Block: &schema.Block{Fields: []schema.Field{
			{Name: "file", Type: schema.String, Required: true, Doc: "strategy TOML, relative to the pipeline"},
		}}},
		{Name: "providers", Type: schema.TableMap, Block: providerBlock, Doc: "named providers"},
		{Name: "steps", Type: schema.TableMap, Block: stepBlock, Doc: "routine node id -> what the host does there"},
		{Name: "limits", Type: schema.Table, Block: &schema.Block{Fields: []schema.Field{
			{Name: "max_steps", Type: schema.Int, Default: 200},
			{Name: "max_tokens", Type: schema.Int},
			{Name: "max_cost_usd", Type: schema.Number},
			{Name: "timeout", Type: schema.Duration, Default: "10m"},
			{Name: "parallel", Type: schema.Int, Default: 4, Doc: "branches run at once"},
		}}},
		{Name: "score", Type: schema.Table, Block: &schema.Block{Fields: []schema.Field{
			{Name: "success", Type: schema.String, Doc: "expression over output, truth, input, vars: did the task succeed"},
			{Name: "reward", Type: schema.String, Doc: "expression giving a numeric reward"},
		}}},
		{Name: "replay", Type: schema.Table, Block: &schema.Block{Fields: []schema.Field{
			{Name: "dataset", Type: schema.String, Doc: "JSONL dataset (default: the store's own tasks)"},
			{Name: "sample", Type: schema.Int},
			{Name: "stratify_by", Type: schema.String},
			{Name: "workers", Type: schema.Int, Default: 4},
			{Name: "seed", Type: schema.Int, Default: 1},
			{Name: "on_miss", Type: schema.String, Enum: onMissValues, Default: "fail"},
		}}},
		{Name: "evolve", Type: schema.Table, Block: &schema.Block{Fields: []schema.Field{
			{Name: "metric", Type: schema.String, Default: "success_rate"},
			{Name: "mutators", Type: schema.StringList, Enum: mutatorNames},
			{Name: "seed", Type: schema.Int, Default: 1},
		}}},
		{Name: "gates", Type: schema.TableArray, Block: gateBlock},
		{Name: "plugins", Type: schema.TableMap, Block: grantBlock, Doc: "capabilities granted to plugins"},
		{Name: "prices", Type: schema.TableMap, Block: priceBlock, Doc: "per-model prices, overriding the built-in table"},
		{Name: "store", Type: schema.Table, Block: &schema.Block{Fields: []schema.Field{
			{Name: "dir", Type: schema.String, Default: ".sextant", Doc: "Badger directory, relative to the pipeline"},
			{Name: "redact", Type: schema.StringList, Doc: "regular expressions whose matches are redacted before storing"},
			{Name: "fsync", Type: schema.Bool, Default: false, Doc: "fsync every checkpoint (survives power loss; every commit already survives kill -9)"},
		}}},
	}}
)
