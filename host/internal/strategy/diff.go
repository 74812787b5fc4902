package strategy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// Changes is what differs from a baseline strategy to a candidate.
// Metadata and the change log are not compared: they always differ between
// versions and say nothing about behaviour.
type Changes struct {
	Name     string // the candidate's name
	From, To string // baseline and candidate versions

	Parameters  []ParameterDiff  // sorted by name
	Constraints []ConstraintDiff // by list (never, must, prefer), then action
	// Limits are changes to [evolution] and to the bounds of parameters in
	// both, as "key: from -> to" lines.
	Limits []string
	// Playbook are the delta operations that turn the baseline playbook
	// into the candidate's: REMOVE, UPDATE and TAG in baseline order, then
	// ADD in candidate order.
	Playbook []Delta
	// Reordered is set when bullets present in both are in another order.
	Reordered bool
}

// ParameterDiff is one parameter that changed, appeared or disappeared.
type ParameterDiff struct {
	Name     string
	From, To float64
	Added    bool // only in the candidate (From is 0)
	Removed  bool // only in the baseline (To is 0)
}

// Delta is To - From.
func (p ParameterDiff) Delta() float64 { return p.To - p.From }

// ConstraintDiff is one action entering or leaving a constraint list.
type ConstraintDiff struct {
	List   string // never_execute, must_confirm_before or prefer_confirm_for
	Action string
	Added  bool // false: removed
}

func (c ConstraintDiff) String() string {
	sign := "-"
	if c.Added {
		sign = "+"
	}
	return fmt.Sprintf("%s: %s %s", c.List, sign, c.Action)
}

// Diff compares base and cand.
func Diff(base, cand *Strategy) Changes {
	ch := Changes{Name: cand.Metadata.Name, From: base.Metadata.Version, To: cand.Metadata.Version}

	for _, name := range unionKeys(base.Parameters, cand.Parameters) {
		from, inBase := base.Parameters[name]
		to, inCand := cand.Parameters[name]
		if inBase && inCand && from == to {
			continue
		}
		ch.Parameters = append(ch.Parameters, ParameterDiff{Name: name, From: from, To: to, Added: !inBase, Removed: !inCand})
	}

	for _, l := range []struct {
		key        string
		base, cand []string
	}{
		{keyNever, base.Constraints.NeverExecute, cand.Constraints.NeverExecute},
		{keyMustConfirm, base.Constraints.MustConfirmBefore, cand.Constraints.MustConfirmBefore},
		{keyPrefer, base.Constraints.PreferConfirmFor, cand.Constraints.PreferConfirmFor},
	} {
		for _, a := range sortedSet(l.base) {
			if !containsAction(l.cand, a) {
				ch.Constraints = append(ch.Constraints, ConstraintDiff{List: l.key, Action: a})
			}
		}
		for _, a := range sortedSet(l.cand) {
			if !containsAction(l.base, a) {
				ch.Constraints = append(ch.Constraints, ConstraintDiff{List: l.key, Action: a, Added: true})
			}
		}
	}

	be, ce := base.Evolution, cand.Evolution
	limit := func(key, from, to string) {
		if from != to {
			ch.Limits = append(ch.Limits, fmt.Sprintf("%s: %s -> %s", key, from, to))
		}
	}
	limit("evolution."+keyMaxDelta, fmtNum(be.MaxParameterDelta), fmtNum(ce.MaxParameterDelta))
	limit("evolution."+keyCooldown, FormatDuration(be.Cooldown), FormatDuration(ce.Cooldown))
	limit("evolution."+keyHumanReview, strconv.FormatBool(be.RequiresHumanReview), strconv.FormatBool(ce.RequiresHumanReview))
	limit("evolution."+keyBranchType, string(be.BranchType), string(ce.BranchType))
	limit("evolution."+keyMaxPBTokens, strconv.Itoa(be.MaxPlaybookTokens), strconv.Itoa(ce.MaxPlaybookTokens))
	for _, name := range unionKeys(base.ParameterBounds, cand.ParameterBounds) {
		_, inBase := base.Parameters[name]
		_, inCand := cand.Parameters[name]
		if !inBase || !inCand {
			continue // an appearing or vanishing parameter is reported as such
		}
		limit(keyParameterBounds+"."+name, base.Bounds(name).String(), cand.Bounds(name).String())
	}

	ch.Playbook, ch.Reordered = playbookOps(base.Playbook, cand.Playbook)
	return ch
}

// playbookOps lists the operations that turn a into b, and whether the
// bullets they share appear in a different order.
func playbookOps(a, b []Bullet) ([]Delta, bool) {
	inB := map[string]Bullet{}
	for _, x := range b {
		inB[x.ID] = x
	}
	inA := map[string]bool{}
	var ops []Delta
	var sharedA []string
	for _, x := range a {
		inA[x.ID] = true
		y, ok := inB[x.ID]
		if !ok {
			ops = append(ops, Delta{Op: OpRemove, ID: x.ID})
			continue
		}
		sharedA = append(sharedA, x.ID)
		if x.Content != y.Content || x.Section != y.Section {
			d := Delta{Op: OpUpdate, ID: x.ID}
			if x.Content != y.Content {
				d.Content = y.Content
			}
			if x.Section != y.Section {
				d.Section = y.Section
			}
			ops = append(ops, d)
		}
		ops = append(ops, tagOps(x.ID, x, y)...)
	}
	var sharedB []string
	for _, y := range b {
		if inA[y.ID] {
			sharedB = append(sharedB, y.ID)
			continue
		}
		ops = append(ops, Delta{Op: OpAdd, ID: y.ID, Section: y.Section, Content: y.Content})
		ops = append(ops, tagOps(y.ID, Bullet{}, y)...)
	}
	return ops, !slices.Equal(sharedA, sharedB)
}

func tagOps(id string, x, y Bullet) []Delta {
	var ops []Delta
	for _, t := range []struct {
		tag      Tag
		from, to int
	}{{TagHelpful, x.Helpful, y.Helpful}, {TagHarmful, x.Harmful, y.Harmful}, {TagNeutral, x.Neutral, y.Neutral}} {
		if t.from != t.to {
			ops = append(ops, Delta{Op: OpTag, ID: id, Tag: t.tag, Count: t.to - t.from})
		}
	}
	return ops
}

// Empty reports whether nothing that affects behaviour changed.
func (c Changes) Empty() bool {
	return len(c.Parameters) == 0 && len(c.Constraints) == 0 && len(c.Limits) == 0 && len(c.Playbook) == 0 && !c.Reordered
}

// SDK converts c to the shape gates read. A parameter only in the candidate
// is reported as moving from 0 and one only in the baseline as moving to 0,
// so a delta-bound gate weighs an appearing or vanishing parameter at its
// full value. Constraint, limit and order changes become the diff's
// human-readable Constraints lines. A TAG's Content says which counter
// moved and by how much ("helpful +2").
func (c Changes) SDK() sdk.StrategyDiff {
	var d sdk.StrategyDiff
	for _, p := range c.Parameters {
		d.Parameters = append(d.Parameters, sdk.ParameterChange{Name: p.Name, From: p.From, To: p.To})
	}
	for _, o := range c.Playbook {
		pc := sdk.PlaybookChange{Op: string(o.Op), ID: o.ID, Section: o.Section, Content: o.Content}
		if o.Op == OpTag {
			pc.Content = fmt.Sprintf("%s %+d", o.Tag, o.count())
		}
		d.Playbook = append(d.Playbook, pc)
	}
	for _, cd := range c.Constraints {
		d.Constraints = append(d.Constraints, cd.String())
	}
	d.Constraints = append(d.Constraints, c.Limits...)
	if c.Reordered {
		d.Constraints = append(d.Constraints, "playbook: bullets reordered")
	}
	return d
}

// String renders c for people, one change per line under a heading per
// kind, or "no changes".
func (c Changes) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> %s\n", c.Name, c.From, c.To)
	if c.Empty() {
		b.WriteString("  no changes\n")
		return b.String()
	}
	if len(c.Parameters) > 0 {
		b.WriteString("parameters:\n")
		width := 0
		for _, p := range c.Parameters {
			width = max(width, len(p.Name))
		}
		for _, p := range c.Parameters {
			switch {
			case p.Added:
				fmt.Fprintf(&b, "  %-*s (new) %s\n", width, p.Name, fmtNum(p.To))
			case p.Removed:
				fmt.Fprintf(&b, "  %-*s %s (removed)\n", width, p.Name, fmtNum(p.From))
			default:
				fmt.Fprintf(&b, "  %-*s %s -> %s (%s)\n", width, p.Name, fmtNum(p.From), fmtNum(p.To), signed(p.Delta()))
			}
		}
	}
	if len(c.Constraints) > 0 {
		b.WriteString("constraints:\n")
		for _, cd := range c.Constraints {
			fmt.Fprintf(&b, "  %s\n", cd)
		}
	}
	if len(c.Limits) > 0 {
		b.WriteString("limits:\n")
		for _, l := range c.Limits {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if len(c.Playbook) > 0 || c.Reordered {
		b.WriteString("playbook:\n")
		for _, o := range c.Playbook {
			fmt.Fprintf(&b, "  %s\n", o)
		}
		if c.Reordered {
			b.WriteString("  (bullets reordered)\n")
		}
	}
	return b.String()
}

// signed formats a parameter delta with its sign, rounded to hide float
// noise (0.75 - 0.7 is 0.05000000000000004).
func signed(f float64) string {
	s := strconv.FormatFloat(f, 'f', 6, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

func sortedSet(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}
