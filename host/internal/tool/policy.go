package tool

import (
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/sdk"
)

// Policy is what the run may do with one tool's calls.
type Policy struct {
	// ReplayLive lets a replay with on_miss = live execute the tool on a
	// miss; otherwise a replay never executes it.
	ReplayLive bool
	// Idempotent lets a resumed run execute again a call that started
	// before a crash and has no recorded result; otherwise the run waits
	// for a person.
	Idempotent bool
	// Confirm asks a person before every call.
	Confirm bool
}

// PolicyOf derives a tool's policy from its annotations, then applies the
// source's keys, which win:
//
//   - readOnlyHint → replay = "live" and idempotent (reading twice is harmless)
//   - idempotentHint → idempotent
//   - destructiveHint (stated true, on a tool that is not read-only) → confirm
//
// MCP's own default for an unstated destructiveHint is true; sextant asks
// a person only for tools that say they are destructive, so a source
// without annotations is not a wall of questions (RATIONALE.md, "Why a
// tool asks a person only when it says it is destructive").
func PolicyOf(cfg pipeline.ToolSource, spec sdk.ToolSpec) Policy {
	var p Policy
	if a := spec.Annotations; a != nil {
		ro := a.ReadOnly != nil && *a.ReadOnly
		p.ReplayLive = ro
		p.Idempotent = ro || a.Idempotent != nil && *a.Idempotent
		p.Confirm = !ro && a.Destructive != nil && *a.Destructive
	}
	switch cfg.Replay {
	case pipeline.ReplayLive:
		p.ReplayLive = true
	case pipeline.ReplayRecorded:
		p.ReplayLive = false
	}
	if cfg.Idempotent != nil {
		p.Idempotent = *cfg.Idempotent
	}
	if cfg.Confirm != nil {
		p.Confirm = *cfg.Confirm
	}
	return p
}
