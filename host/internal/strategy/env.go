package strategy

import (
	"maps"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Env returns s as generic values for templates and expressions
// (`strategy.parameters.user_confirmation`, `strategy.metadata.version`):
// the file's tables and keys under their TOML names, plus "hash" and
// "playbook_text" (the compact rendering). parameter_bounds holds every
// parameter's effective [lo, hi], defaults included. Values are JSON-ready: strings,
// float64 parameters, ints for counters and budgets, bools, []any, and
// map[string]any; times are RFC 3339 strings in UTC and the cooldown is its
// file form ("7d") with cooldown_seconds beside it.
//
// The map is new on every call; changing it does not change s.
func (s *Strategy) Env() map[string]any {
	md := s.Metadata
	params := map[string]any{}
	for k, v := range s.Parameters {
		params[k] = v
	}
	bounds := map[string]any{}
	for k := range s.Parameters {
		b := s.Bounds(k)
		bounds[k] = []any{b.Lo, b.Hi}
	}
	playbook := make([]any, len(s.Playbook))
	for i, b := range s.Playbook {
		playbook[i] = map[string]any{
			keyID: b.ID, keySection: b.Section, keyContent: b.Content,
			keyHelpful: b.Helpful, keyHarmful: b.Harmful, keyNeutral: b.Neutral,
		}
	}
	log := make([]any, len(s.ChangeLog))
	for i, e := range s.ChangeLog {
		changes := make([]any, len(e.Changes))
		for j, c := range e.Changes {
			changes[j] = map[string]any{keyParameter: c.Parameter, keyFrom: c.From, keyTo: c.To, keyReason: c.Reason}
		}
		ops := make([]any, len(e.Playbook))
		for j, d := range e.Playbook {
			ops[j] = map[string]any{
				keyOp: string(d.Op), keyID: d.ID, keySection: d.Section, keyContent: d.Content,
				keyTag: string(d.Tag), keyCount: d.Count, keyReason: d.Reason,
			}
		}
		log[i] = map[string]any{keyVersion: e.Version, keyDate: envTime(e.Date), keyChanges: changes, keyPlaybook: ops}
	}
	ev := s.Evolution
	return map[string]any{
		keyMetadata: map[string]any{
			keyName: md.Name, keyVersion: md.Version, keyParentVersion: md.ParentVersion,
			keyCreatedAt: envTime(md.CreatedAt), keyCreatedBy: md.CreatedBy, keyDescription: md.Description,
		},
		keyParameters:      params,
		keyParameterBounds: bounds,
		keyConstraints: map[string]any{
			keyMustConfirm: envStrings(s.Constraints.MustConfirmBefore),
			keyNever:       envStrings(s.Constraints.NeverExecute),
			keyPrefer:      envStrings(s.Constraints.PreferConfirmFor),
		},
		keyEvolution: map[string]any{
			keyMaxDelta: ev.MaxParameterDelta, keyCooldown: FormatDuration(ev.Cooldown),
			"cooldown_seconds": int64(ev.Cooldown / time.Second),
			keyHumanReview:     ev.RequiresHumanReview, keyBranchType: string(ev.BranchType),
			keyMaxPBTokens: ev.MaxPlaybookTokens,
		},
		keyPlaybook:     playbook,
		keyChangeLog:    log,
		"hash":          s.Hash(),
		"playbook_text": s.RenderPlaybook(),
	}
}

func envStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func envTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatTime(t)
}

// Ref returns the gate-facing identity of s: name, version, content hash,
// parameters and the Env document.
func (s *Strategy) Ref() sdk.StrategyRef {
	return sdk.StrategyRef{
		Name:       s.Metadata.Name,
		Version:    s.Metadata.Version,
		Hash:       s.Hash(),
		Parameters: maps.Clone(s.Parameters),
		Document:   s.Env(),
	}
}
