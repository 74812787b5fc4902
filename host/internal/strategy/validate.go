package strategy

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

var (
	// Parameter names are identifiers so that expressions can say
	// strategy.parameters.user_confirmation.
	paramNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// Sections name generated ids (section-00001), so they are slugs.
	sectionRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	bulletIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Validate checks a strategy built in code by the rules Load applies to a
// file. Problems carry key paths but no file or line.
func (s *Strategy) Validate() error {
	c := newChecker("", nil)
	c.validate(s)
	return c.err()
}

// validate checks meaning: required values, formats, bounds, consistency.
func (c *checker) validate(s *Strategy) {
	c.validateMetadata(s)
	c.validateParameters(s)
	c.validateConstraints(s)
	c.validateEvolution(s)
	c.validatePlaybook(s)
	c.validateChangeLog(s)
}

func (c *checker) validateMetadata(s *Strategy) {
	md := s.Metadata
	p := path{keyMetadata}
	if c.ix != nil && !c.ix.Has(keyMetadata) {
		c.addf(p, "missing table (name and version are required)")
		return
	}
	switch {
	case md.Name == "":
		c.missing(p.with(keyName), ` (a lowercase name such as "email-handler")`)
	case !sdk.ValidName(md.Name):
		c.addf(p.with(keyName), "invalid name %q (want lowercase words joined by - or _)", md.Name)
	}
	c.timeRange(p.with(keyCreatedAt), md.CreatedAt)
	v, vok := c.version(p.with(keyVersion), md.Version, true)
	if md.ParentVersion != "" {
		if pv, ok := c.version(p.with(keyParentVersion), md.ParentVersion, false); ok && vok && pv.Compare(v) >= 0 {
			c.addf(p.with(keyParentVersion), "%s is not older than version %s", md.ParentVersion, md.Version)
		}
	}
}

// timeRange rejects instants a TOML datetime cannot express in UTC, the
// form Encode writes.
func (c *checker) timeRange(p path, t time.Time) {
	if y := t.UTC().Year(); !t.IsZero() && (y < 0 || y > 9999) {
		c.addf(p, "%s is out of range (want years 0000 to 9999 in UTC)", t.UTC().Format(time.RFC3339))
	}
}

// version checks a semantic version; required says whether empty is a problem.
func (c *checker) version(p path, s string, required bool) (Version, bool) {
	if s == "" {
		if required {
			c.missing(p, " (a semantic version such as 1.0.0)")
		}
		return Version{}, false
	}
	v, err := ParseVersion(s)
	if err != nil {
		c.addf(p, "%v", err)
		return Version{}, false
	}
	return v, true
}

func (c *checker) validateParameters(s *Strategy) {
	for _, name := range sortedKeys(s.Parameters) {
		p := path{keyParameters, name}
		if !paramNameRE.MatchString(name) {
			c.addf(p, "invalid parameter name (want letters, digits and _, not starting with a digit)")
			continue
		}
		v := s.Parameters[name]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c.addf(p, "want a finite number, got %v", v)
			continue
		}
		if c.bad[path{keyParameterBounds, name}.key()] {
			continue // no usable bounds to check against
		}
		b, custom := s.ParameterBounds[name]
		if !custom {
			b = defaultBounds
		}
		if v < b.Lo || v > b.Hi {
			if custom {
				c.addf(p, "%s is outside its bounds %s", fmtNum(v), b)
			} else {
				c.addf(p, "%s is outside %s (set %s.%s = [lo, hi] to change the range)", fmtNum(v), b, keyParameterBounds, name)
			}
		}
	}
	names := sortedKeys(s.Parameters)
	for _, name := range sortedKeys(s.ParameterBounds) {
		p := path{keyParameterBounds, name}
		if _, ok := s.Parameters[name]; !ok {
			c.addf(p, "no parameter %q%s", name, suggest.Hint(name, names))
			continue
		}
		b := s.ParameterBounds[name]
		if !(b.Lo < b.Hi) || math.IsInf(b.Lo, 0) || math.IsInf(b.Hi, 0) {
			c.addf(p, "%s is not a range (want [lo, hi] with lo < hi)", b)
		}
	}
}

// String formats b as [lo, hi].
func (b Bounds) String() string { return "[" + fmtNum(b.Lo) + ", " + fmtNum(b.Hi) + "]" }

func (c *checker) validateConstraints(s *Strategy) {
	lists := []struct {
		key   string
		names []string
	}{
		{keyNever, s.Constraints.NeverExecute},
		{keyMustConfirm, s.Constraints.MustConfirmBefore},
		{keyPrefer, s.Constraints.PreferConfirmFor},
	}
	// Each action belongs to one list: never_execute wins over
	// must_confirm_before, which wins over prefer_confirm_for, so an action
	// in two lists is a mistake whichever way it was meant.
	seen := map[string]string{} // normalized action -> list
	for _, l := range lists {
		probs := toolEntryProblems(l.names)
		for _, i := range sortedInts(probs) {
			c.addf(path{keyConstraints, l.key}.with(i), "%s", probs[i])
		}
		for i, a := range l.names {
			p := path{keyConstraints, l.key}.with(i)
			n := NormalizeAction(a)
			switch first, dup := seen[n]; {
			case n == "":
				c.addf(p, "empty action name")
			case dup && first == l.key:
				c.addf(p, "%q is listed twice", a)
			case dup:
				c.addf(p, "%q is also in %s (an action belongs to one list)", a, first)
			default:
				seen[n] = l.key
			}
		}
	}
	if len(s.Constraints.PreferConfirmFor) > 0 {
		if _, ok := s.Parameters[paramUserConfirm]; !ok {
			c.addf(path{keyConstraints, keyPrefer}, "needs parameters.%s (the confidence below which to confirm)", paramUserConfirm)
		}
	}
}

func (c *checker) validateEvolution(s *Strategy) {
	ev := s.Evolution
	p := path{keyEvolution}
	if c.ix != nil && !c.ix.Has(keyEvolution) {
		c.addf(p, "missing table (max_parameter_delta and branch_type are required)")
		return
	}
	switch d := ev.MaxParameterDelta; {
	case math.IsNaN(d) || math.IsInf(d, 0):
		c.addf(p.with(keyMaxDelta), "want a finite number, got %v", d)
	case d < 0:
		c.addf(p.with(keyMaxDelta), "%s is negative", fmtNum(d))
	case d == 0 && c.ix != nil && !c.ix.Has(p.with(keyMaxDelta)...):
		c.addf(p.with(keyMaxDelta), "missing (the largest change one revision may make to a parameter, e.g. 0.1)")
	}
	switch {
	case ev.Cooldown < 0:
		c.addf(p.with(keyCooldown), "%s is negative", ev.Cooldown)
	case ev.Cooldown%time.Second != 0:
		c.addf(p.with(keyCooldown), "%s is not a whole number of seconds", ev.Cooldown)
	}
	switch {
	case ev.BranchType == "":
		c.missing(p.with(keyBranchType), " (want production, experimental or archived)")
	case !ev.BranchType.Valid():
		c.addf(p.with(keyBranchType), "unknown branch type %q%s", ev.BranchType, hintOrWant(string(ev.BranchType), branchTypes, "production, experimental or archived"))
	}
	if ev.MaxPlaybookTokens < 0 {
		c.addf(p.with(keyMaxPBTokens), "%d is negative", ev.MaxPlaybookTokens)
	}
}

func (c *checker) validatePlaybook(s *Strategy) {
	first := map[string]int{}
	for i, b := range s.Playbook {
		p := path{keyPlaybook}.with(i)
		switch prev, dup := first[b.ID]; {
		case b.ID == "":
			c.missing(p.with(keyID), ` (e.g. "reasoning-00001")`)
		case !bulletIDRE.MatchString(b.ID):
			c.addf(p.with(keyID), "invalid id %q (want letters, digits, '.', '_' and '-')", b.ID)
		case dup:
			c.addf(p.with(keyID), "duplicate id %q (first at %s)", b.ID, c.where(path{keyPlaybook}.with(prev, keyID)))
		default:
			first[b.ID] = i
		}
		c.section(p.with(keySection), b.Section)
		c.content(p.with(keyContent), b.Content)
		for _, ctr := range []struct {
			key string
			n   int
		}{{keyHelpful, b.Helpful}, {keyHarmful, b.Harmful}, {keyNeutral, b.Neutral}} {
			if ctr.n < 0 {
				c.addf(p.with(ctr.key), "negative counter %d", ctr.n)
			}
		}
	}
}

// hintOrWant suggests the near miss for name, or else lists what is valid.
func hintOrWant(name string, candidates []string, want string) string {
	if h := suggest.Hint(name, candidates); h != "" {
		return h
	}
	return " (want " + want + ")"
}

// where names the position of another key, for "first at" messages.
func (c *checker) where(p path) string {
	if l := c.ix.Line(p...); l > 0 {
		return fmt.Sprintf("line %d", l)
	}
	return p.String()
}

func (c *checker) section(p path, sec string) {
	switch {
	case sec == "":
		c.missing(p, ` (e.g. "reasoning")`)
	case !sectionRE.MatchString(sec):
		c.addf(p, "invalid section %q (want letters, digits, '_' and '-')", sec)
	}
}

func (c *checker) content(p path, text string) {
	switch {
	case strings.TrimSpace(text) == "":
		c.missing(p, "")
	case !utf8.ValidString(text):
		c.addf(p, "not valid UTF-8")
	}
}

func (c *checker) validateChangeLog(s *Strategy) {
	first := map[string]int{}
	for i, e := range s.ChangeLog {
		p := path{keyChangeLog}.with(i)
		if _, ok := c.version(p.with(keyVersion), e.Version, true); ok {
			if prev, dup := first[e.Version]; dup {
				c.addf(p.with(keyVersion), "duplicate version %s (first at %s)", e.Version, c.where(path{keyChangeLog}.with(prev, keyVersion)))
			} else {
				first[e.Version] = i
			}
		}
		c.timeRange(p.with(keyDate), e.Date)
		for j, ch := range e.Changes {
			cp := p.with(keyChanges, j)
			if ch.Parameter == "" {
				c.missing(cp.with(keyParameter), "")
			}
			for _, v := range []struct {
				key string
				n   float64
			}{{keyFrom, ch.From}, {keyTo, ch.To}} {
				if math.IsNaN(v.n) || math.IsInf(v.n, 0) {
					c.addf(cp.with(v.key), "want a finite number, got %v", v.n)
				}
			}
		}
		for j, d := range e.Playbook {
			dp := p.with(keyPlaybook, j)
			if msg := d.shapeProblem(); msg != "" {
				c.addf(dp, "%s", msg)
			}
		}
	}
}

// fmtNum formats a number for messages: shortest form, no exponent for
// ordinary values.
func fmtNum(f float64) string {
	return formatFloat(f, false)
}

func containsAction(list []string, action string) bool {
	n := NormalizeAction(action)
	return n != "" && slices.ContainsFunc(list, func(a string) bool { return NormalizeAction(a) == n })
}
