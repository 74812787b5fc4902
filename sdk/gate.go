package sdk

import "context"

// Gate reads a comparison of a baseline and a candidate strategy and answers
// whether the candidate may replace the baseline.
type Gate interface {
	Plugin
	// Check returns the gate's verdict. A gate must be deterministic: the
	// same comparison gives the same verdict.
	Check(ctx context.Context, c *Comparison) (*Verdict, error)
}

// Ruling is a gate's answer: pass, review or fail.
type Ruling string

// The gate rulings, in increasing order of severity.
const (
	Pass   Ruling = "pass"
	Review Ruling = "review"
	Fail   Ruling = "fail"
)

// Verdict is what a gate returns.
type Verdict struct {
	Ruling Ruling `json:"ruling"`
	// Reasons explain the decision, one sentence each, quoting the evidence.
	Reasons []string `json:"reasons,omitempty"`
	// Metrics are numbers the gate computed, shown in reports.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Comparison is everything a gate may judge: both strategies, their diff,
// paired metrics, per-task outcomes and replay fidelity.
type Comparison struct {
	// Config is the gate's block from the pipeline ([[gates]] keys other than use).
	Config    map[string]any `json:"config,omitempty"`
	Baseline  StrategyRef    `json:"baseline"`
	Candidate StrategyRef    `json:"candidate"`
	Diff      StrategyDiff   `json:"diff"`
	Metrics   []Metric       `json:"metrics,omitempty"`
	Tasks     []TaskOutcome  `json:"tasks,omitempty"`
	// Fidelity is the fraction of self-replays that reproduced their trace.
	Fidelity float64 `json:"fidelity"`
}

// StrategyRef identifies one strategy version and carries what gates read.
type StrategyRef struct {
	Name       string             `json:"name"`
	Version    string             `json:"version"`
	Hash       string             `json:"hash"`
	Parameters map[string]float64 `json:"parameters,omitempty"`
	// Document is the strategy file, decoded into generic values.
	Document map[string]any `json:"document,omitempty"`
}

// StrategyDiff lists what changed from baseline to candidate.
type StrategyDiff struct {
	Parameters  []ParameterChange `json:"parameters,omitempty"`
	Playbook    []PlaybookChange  `json:"playbook,omitempty"`
	Constraints []string          `json:"constraints,omitempty"` // human-readable constraint changes
}

// ParameterChange is one parameter moving from one value to another.
type ParameterChange struct {
	Name string  `json:"name"`
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

// PlaybookChange is one playbook delta operation.
type PlaybookChange struct {
	Op      string `json:"op"` // ADD | UPDATE | TAG | REMOVE
	ID      string `json:"id"`
	Section string `json:"section,omitempty"`
	Content string `json:"content,omitempty"`
}

// Metric is one paired comparison of a metric over the same tasks.
type Metric struct {
	Name string `json:"name"`
	// Kind is "binary" (pass/fail, McNemar) or "continuous" (paired bootstrap).
	Kind      string  `json:"kind"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Effect is Candidate - Baseline; CILow and CIHigh bound it.
	Effect     float64 `json:"effect"`
	CILow      float64 `json:"ci_low"`
	CIHigh     float64 `json:"ci_high"`
	Confidence float64 `json:"confidence"`
	P          float64 `json:"p"`
	N          int     `json:"n"`
	// HigherIsBetter says which direction is an improvement.
	HigherIsBetter bool `json:"higher_is_better"`
}

// TaskOutcome is one task's result under both strategies.
type TaskOutcome struct {
	Task      string     `json:"task"`
	Baseline  TaskResult `json:"baseline"`
	Candidate TaskResult `json:"candidate"`
}

// TaskResult is one task's result under one strategy.
type TaskResult struct {
	Success       bool    `json:"success"`
	Reward        float64 `json:"reward"`
	Violations    int     `json:"violations"`
	Confirmations int     `json:"confirmations"`
	Steps         int     `json:"steps"`
	Tokens        int     `json:"tokens"`
	CostUSD       float64 `json:"cost_usd"`
	Confidence    float64 `json:"confidence"`
	// Rewards are the task's mean rewards on named dimensions (feedback
	// with --reward NAME=X), compared as the metrics "reward.NAME".
	Rewards map[string]float64 `json:"rewards,omitempty"`
}
