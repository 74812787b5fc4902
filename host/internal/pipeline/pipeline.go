// Package pipeline loads pipeline.toml files: strict decoding against one
// declared schema, ${VAR} interpolation, and validation of everything a
// pipeline refers to (files, plugins, providers, routine nodes), reporting
// every problem at once as `file:line: key.path: message`.
//
// It must not run anything: a pipeline that has any problem is never
// returned.
package pipeline

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/host/internal/schema"
)

// Pipeline is a loaded, validated pipeline.toml.
type Pipeline struct {
	Name        string                `json:"name"`
	Description string                `json:"description,omitempty"`
	Routine     Routine               `json:"routine"`
	Strategy    StrategyRef           `json:"strategy"`
	Providers   map[string]Provider   `json:"providers,omitempty"`
	Tools       map[string]ToolSource `json:"tools,omitempty"`
	Steps       map[string]Step       `json:"steps,omitempty"`
	Limits      Limits                `json:"limits"`
	Score       Score                 `json:"score"`
	Replay      Replay                `json:"replay"`
	Evolve      Evolve                `json:"evolve"`
	Gates       []Gate                `json:"gates,omitempty"`
	Plugins     map[string]Grant      `json:"plugins,omitempty"`
	Prices      map[string]Price      `json:"prices,omitempty"`
	Store       Store                 `json:"store"`

	// File is the pipeline file's path; Dir its directory. Relative paths
	// in the pipeline (routine, strategy, rules, dataset) are resolved
	// against Dir by Path.
	File string `json:"-"`
	Dir  string `json:"-"`
	// Overlay is the overlay file's path when the pipeline was loaded
	// from one (a file whose overlay key names the pipeline it changes);
	// File is then that pipeline, against which paths resolve.
	Overlay string `json:"-"`
}

// Routine is the [routine] block.
type Routine struct {
	Navigator string `json:"navigator"`
	File      string `json:"file"`
	// Decisions are the DMN files the routine's business rule tasks
	// call, relative to the pipeline.
	Decisions []string `json:"decisions,omitempty"`
}

// StrategyRef is the [strategy] block. File is the strategy the pipeline
// starts with; once a version is promoted (sextant promote, evolve,
// review approve) runs follow the pipeline's live version instead, unless
// Pin keeps them on File.
type StrategyRef struct {
	File string `json:"file"`
	Pin  bool   `json:"pin,omitempty"`
}

// Provider is one [providers.NAME] block.
type Provider struct {
	Use         string         `json:"use"`
	Model       string         `json:"model,omitempty"`
	BaseURL     string         `json:"base_url,omitempty"`
	APIKeyEnv   string         `json:"api_key_env,omitempty"`
	Fallback    []string       `json:"fallback,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	Timeout     Duration       `json:"timeout,omitempty"`
	Retries     int            `json:"retries"`
	Rules       string         `json:"rules,omitempty"`
	Config      map[string]any `json:"config,omitempty"`
}

// Step is one [steps.NODE] block.
type Step struct {
	Kind        string            `json:"kind"`
	Provider    string            `json:"provider,omitempty"`
	System      string            `json:"system,omitempty"`
	Prompt      string            `json:"prompt,omitempty"`
	Output      string            `json:"output,omitempty"`
	Temperature *float64          `json:"temperature,omitempty"`
	MaxTokens   int               `json:"max_tokens,omitempty"`
	Set         map[string]string `json:"set,omitempty"`
	Action      string            `json:"action,omitempty"`
	Confidence  string            `json:"confidence,omitempty"`
	Question    string            `json:"question,omitempty"`
	Options     []string          `json:"options,omitempty"`
	// Tools selects the tools an llm step offers the model (see
	// ToolSelector); ToolChoice and MaxTurns shape its model ↔ tool loop.
	Tools      []string `json:"tools,omitempty"`
	ToolChoice string   `json:"tool_choice,omitempty"`
	MaxTurns   int      `json:"max_turns,omitempty"`
}

// Limits is the [limits] block; zero means no limit.
type Limits struct {
	MaxSteps   int      `json:"max_steps,omitempty"`
	MaxTokens  int      `json:"max_tokens,omitempty"`
	MaxCostUSD float64  `json:"max_cost_usd,omitempty"`
	Timeout    Duration `json:"timeout,omitempty"`
	Parallel   int      `json:"parallel,omitempty"`
	// MaxToolCalls caps the tool calls of one run; 0 means no limit.
	MaxToolCalls int `json:"max_tool_calls,omitempty"`
}

// Score is the [score] block.
type Score struct {
	Success string `json:"success,omitempty"`
	Reward  string `json:"reward,omitempty"`
	// Assert are checks of the output a task must all pass to succeed.
	Assert []Assertion `json:"assert,omitempty"`
}

// Assertion is one [[score.assert]] entry.
type Assertion struct {
	Type   string `json:"type"` // one of AssertTypes
	Value  string `json:"value,omitempty"`
	Schema string `json:"schema,omitempty"` // file, relative to the pipeline
	Of     string `json:"of,omitempty"`     // expression; default output
	Name   string `json:"name,omitempty"`   // reward dimension it gives
	// Provider is the [providers] block a rubric's judge or a similar
	// check's embeddings come from; Model overrides the block's model.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Prompt is a rubric's user message template (default: the rubric
	// and the text); Scale its top rating (ratings 1..Scale map to 0..1).
	Prompt string `json:"prompt,omitempty"`
	Scale  int    `json:"scale,omitempty"`
	// Threshold is the score a rubric or similar check needs to pass.
	Threshold *float64 `json:"threshold,omitempty"`
	// Reference is a similar check's expression giving the text to
	// compare with (instead of Value).
	Reference string `json:"reference,omitempty"`
}

// Replay is the [replay] block.
type Replay struct {
	Dataset    string `json:"dataset,omitempty"`
	Sample     int    `json:"sample,omitempty"`
	StratifyBy string `json:"stratify_by,omitempty"`
	Workers    int    `json:"workers,omitempty"`
	Seed       int64  `json:"seed,omitempty"`
	OnMiss     string `json:"on_miss,omitempty"`
	// MaxLiveCostUSD caps the cost of calls sent live (on_miss = live)
	// in one replay; 0 means no cap.
	MaxLiveCostUSD float64 `json:"max_live_cost_usd,omitempty"`
	// MinFidelity is the least share of self-replays that must reproduce
	// their trace for a verdict not to fail; nil (a pipeline not made by
	// Load) means 1.
	MinFidelity *float64 `json:"min_fidelity,omitempty"`
}

// Evolve is the [evolve] block.
type Evolve struct {
	Metric   string   `json:"metric,omitempty"`
	Mutators []string `json:"mutators,omitempty"`
	Seed     int64    `json:"seed,omitempty"`
	// Adapter is "round" (one round of the mutators) or "offline" (ACE
	// epochs); Epochs the offline adapter's passes.
	Adapter string `json:"adapter,omitempty"`
	Epochs  int    `json:"epochs,omitempty"`
	// OnMiss overrides [replay] on_miss while evolving ("" keeps it).
	OnMiss string `json:"on_miss,omitempty"`
	// Online makes every scored run a learning step (experimental
	// strategies only); Delta names the run variable holding the
	// curator's operations.
	Online bool   `json:"online,omitempty"`
	Delta  string `json:"delta,omitempty"`
	// PruneHarmful and DedupThreshold are the playbook hygiene settings
	// (strategy.Hygiene).
	PruneHarmful   int     `json:"prune_harmful,omitempty"`
	DedupThreshold float64 `json:"dedup_threshold,omitempty"`
}

// Gate is one [[gates]] entry: the gate's name and the rest of its keys.
type Gate struct {
	Use    string
	Config map[string]any
	// Line is where the entry starts in the pipeline file.
	Line int
}

// Grant is one [plugins.NAME] block.
type Grant struct {
	AllowHTTP []string `json:"allow_http,omitempty"`
	Timeout   Duration `json:"timeout,omitempty"`
	Memory    string   `json:"memory,omitempty"`
	Pool      int      `json:"pool,omitempty"`
}

// Price is one [prices.MODEL] block, USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Store is the [store] block.
type Store struct {
	Dir    string   `json:"dir,omitempty"`
	Redact []string `json:"redact,omitempty"`
	FSync  bool     `json:"fsync,omitempty"`
}

// Duration is a duration written as a string ("2m", "7d").
type Duration time.Duration

// UnmarshalJSON parses the string form.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := schema.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the string form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
