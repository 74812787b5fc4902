package strategy

import (
	"fmt"
	"math"
	"strings"
)

// Outcome is what the strategy says to do with an action (DESIGN §4.1).
type Outcome string

// The action outcomes.
const (
	Execute Outcome = "execute"
	Confirm Outcome = "confirm" // ask the user first
	Blocked Outcome = "blocked" // never run it; a violation if a routine tried
)

// Decision is an outcome and the reason for it, for the run record.
type Decision struct {
	Outcome Outcome
	Reason  string
}

// Decide applies the constraints to an action the agent wants to take with
// the given confidence (0..1):
//
//   - in never_execute → blocked
//   - in must_confirm_before → confirm
//   - in prefer_confirm_for → confirm when confidence < parameters.user_confirmation
//   - otherwise → execute
//
// Names match as NormalizeAction says, so "Forward-To-External-Addresses"
// is as blocked as "forward_to_external_addresses". An empty action name is
// blocked. A confidence that is not a number, or a strategy without
// user_confirmation, confirms a prefer_confirm_for action rather than
// executing it.
func (s *Strategy) Decide(action string, confidence float64) Decision {
	c := s.Constraints
	switch {
	case NormalizeAction(action) == "":
		return Decision{Blocked, "no action named"}
	case containsAction(c.NeverExecute, action):
		return Decision{Blocked, fmt.Sprintf("%q is in constraints.never_execute", action)}
	case containsAction(c.MustConfirmBefore, action):
		return Decision{Confirm, fmt.Sprintf("%q is in constraints.must_confirm_before", action)}
	case containsAction(c.PreferConfirmFor, action):
		threshold, ok := s.Parameters[paramUserConfirm]
		switch {
		case !ok:
			return Decision{Confirm, fmt.Sprintf("%q is in constraints.prefer_confirm_for and parameters.user_confirmation is not set", action)}
		case math.IsNaN(confidence):
			return Decision{Confirm, fmt.Sprintf("%q is in constraints.prefer_confirm_for and the confidence is not a number", action)}
		case confidence >= threshold:
			return Decision{Execute, fmt.Sprintf("%q is in constraints.prefer_confirm_for but confidence %s ≥ user_confirmation %s", action, fmtNum(confidence), fmtNum(threshold))}
		default:
			return Decision{Confirm, fmt.Sprintf("%q is in constraints.prefer_confirm_for and confidence %s < user_confirmation %s", action, fmtNum(confidence), fmtNum(threshold))}
		}
	}
	return Decision{Execute, fmt.Sprintf("%q is not constrained", action)}
}

// NormalizeAction is the form in which action names are compared: trimmed,
// lower case, with '-' and spaces read as '_'. Matching loosely errs on the
// side of safety: a model that writes "Delete-All" must not slip past a
// never_execute entry "delete_all".
func NormalizeAction(a string) string {
	a = strings.ToLower(strings.TrimSpace(a))
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' || r == '\t' {
			return '_'
		}
		return r
	}, a)
}
