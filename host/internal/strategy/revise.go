package strategy

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// Revision describes a new version derived from a strategy: who made it,
// when, and what it changes.
type Revision struct {
	// By and At become metadata.created_by and created_at and date the
	// change log entry. Both are required: the package never reads the clock.
	By string
	At time.Time
	// Description replaces metadata.description when not empty.
	Description string
	// BranchType replaces evolution.branch_type when not empty.
	BranchType BranchType
	// Parameters are set in order; each must already exist and stay within
	// its bounds. A parameter set to its current value is not logged.
	Parameters []Set
	// Playbook operations are applied after the parameters (see Apply).
	Playbook []Delta
}

// Set changes one parameter; Reason should quote the evidence.
type Set struct {
	Parameter string
	To        float64
	Reason    string
}

// Revise returns the next version of s: the minor version bumped (2.0.0 →
// 2.1.0), parent_version set to s's version, r's parameter changes and
// playbook operations applied, and a change_log entry appended that records
// them. The result is validated; s is not modified.
//
// Limits such as max_parameter_delta and cooldown are not enforced here:
// they are the gates' to judge, from Diff.
func (s *Strategy) Revise(r Revision) (*Strategy, error) {
	var probs []sdk.Problem
	fail := func(elem, format string, args ...any) {
		probs = append(probs, sdk.Problem{Element: elem, Message: escapeControls(fmt.Sprintf(format, args...))})
	}
	next, err := BumpMinor(s.Metadata.Version)
	if err != nil {
		fail("metadata.version", "%v", err)
	}
	if r.By == "" {
		fail("revision", "missing author (By)")
	}
	if r.At.IsZero() {
		fail("revision", "missing time (At)")
	}
	if r.BranchType != "" && !r.BranchType.Valid() {
		fail("revision", "unknown branch type %q (want production, experimental or archived)", r.BranchType)
	}
	out := s.Clone()
	entry := Entry{Version: next, Date: r.At.UTC()}
	for i, set := range r.Parameters {
		elem := "parameters." + strconv.Itoa(i)
		from, ok := out.Parameters[set.Parameter]
		switch b := out.Bounds(set.Parameter); {
		case !ok:
			fail(elem, "no parameter %q%s", set.Parameter, suggest.Hint(set.Parameter, sortedKeys(out.Parameters)))
		case math.IsNaN(set.To) || math.IsInf(set.To, 0):
			fail(elem, "%s: want a finite number, got %v", set.Parameter, set.To)
		case set.To < b.Lo || set.To > b.Hi:
			fail(elem, "%s: %s is outside %s", set.Parameter, fmtNum(set.To), b)
		case set.To != from:
			out.Parameters[set.Parameter] = set.To
			entry.Changes = append(entry.Changes, ParameterChange{Parameter: set.Parameter, From: from, To: set.To, Reason: set.Reason})
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("revise %s %s: %w", s.Metadata.Name, s.Metadata.Version, sdk.Invalid(probs...))
	}
	if len(r.Playbook) > 0 {
		applied, err := out.Apply(r.Playbook...)
		if err != nil {
			return nil, fmt.Errorf("revise %s %s: %w", s.Metadata.Name, s.Metadata.Version, err)
		}
		out = applied.Strategy
		entry.Playbook = applied.Ops
	}
	out.Metadata.Version = next
	out.Metadata.ParentVersion = s.Metadata.Version
	out.Metadata.CreatedAt = r.At.UTC()
	out.Metadata.CreatedBy = r.By
	if r.Description != "" {
		out.Metadata.Description = r.Description
	}
	if r.BranchType != "" {
		out.Evolution.BranchType = r.BranchType
	}
	entry.Date = out.Metadata.CreatedAt
	out.ChangeLog = append(out.ChangeLog, entry)
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("revise %s %s: result is invalid: %w", s.Metadata.Name, s.Metadata.Version, err)
	}
	return out, nil
}

// Renumber returns a copy of s, a revision of its parent, under version v:
// metadata.version and the change_log entry of the old version both become
// v. v must be a valid version above the parent's; s is not modified.
func (s *Strategy) Renumber(v string) (*Strategy, error) {
	nv, err := ParseVersion(v)
	if err != nil {
		return nil, fmt.Errorf("renumber %s %s: %w", s.Metadata.Name, s.Metadata.Version, err)
	}
	if s.Metadata.ParentVersion != "" {
		if pv, err := ParseVersion(s.Metadata.ParentVersion); err == nil && nv.Compare(pv) <= 0 {
			return nil, fmt.Errorf("renumber %s %s: %s is not above the parent %s", s.Metadata.Name, s.Metadata.Version, v, s.Metadata.ParentVersion)
		}
	}
	out := s.Clone()
	for i := range out.ChangeLog {
		if out.ChangeLog[i].Version == s.Metadata.Version {
			out.ChangeLog[i].Version = v
		}
	}
	out.Metadata.Version = v
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("renumber %s %s: %w", s.Metadata.Name, s.Metadata.Version, err)
	}
	return out, nil
}
