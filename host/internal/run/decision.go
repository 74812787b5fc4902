package run

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// ErrDecision marks a navigator decision the host refused to apply: one
// that names nodes the routine lacks, gives two tokens one id, removes
// tokens that do not exist, or completes while tokens remain. A navigator
// is a plugin, and plugins can be wrong; the host never turns such an
// answer into a "completed" run.
var ErrDecision = errors.New("invalid navigator decision")

// decisions checks every navigator decision against the routine the
// navigator loaded. The zero value (no routine) checks only what needs no
// routine: token ids, removes, completion.
type decisions struct {
	// plugin names the navigator in errors.
	plugin string
	// nodes is the routine's node set; nil when unknown.
	nodes map[string]bool
}

func newDecisions(plugin string, r *sdk.Routine) decisions {
	d := decisions{plugin: plugin}
	if r != nil {
		d.nodes = make(map[string]bool, len(r.Nodes)+1)
		d.nodes[r.ID] = true
		for _, n := range r.Nodes {
			d.nodes[n.ID] = true
		}
	}
	return d
}

// navCall names a navigator call in errors: what was asked, and at which
// node (or trigger). It is formatted only when a decision is refused.
type navCall struct{ what, node string }

func (n navCall) String() string {
	if n.node == "" {
		return n.what
	}
	return fmt.Sprintf("%s %q", n.what, n.node)
}

// tokenIDs answers "is there a token with this id" over a token list: a
// linear scan for the few tokens most instances hold, a map (built on
// first use) beyond that. It allocates nothing for small lists.
type tokenIDs struct {
	tokens []sdk.Token
	m      map[string]bool
}

const scanLimit = 16

func (s *tokenIDs) has(id string) bool {
	if len(s.tokens) <= scanLimit {
		for i := range s.tokens {
			if s.tokens[i].ID == id {
				return true
			}
		}
		return false
	}
	if s.m == nil {
		s.m = make(map[string]bool, len(s.tokens))
		for i := range s.tokens {
			s.m[s.tokens[i].ID] = true
		}
	}
	return s.m[id]
}

// seenBefore reports whether ids[i] occurs in ids[:i]; seen backs long
// lists.
func seenBefore(ids []string, i int, seen map[string]bool) bool {
	if seen != nil {
		return seen[ids[i]]
	}
	for _, x := range ids[:i] {
		if x == ids[i] {
			return true
		}
	}
	return false
}

// apply returns d applied to s, or an error naming the plugin and every
// problem when d cannot be applied. Beyond Decision.Apply it allocates
// only for problems and for long token lists: it runs on every navigator
// call.
func (c decisions) apply(call navCall, s sdk.State, d *sdk.Decision) (sdk.State, error) {
	if d == nil {
		return s, c.fail(call, []string{"returned no decision"})
	}
	p := &problems{nodes: c.nodes}

	have := tokenIDs{tokens: s.Tokens}
	var removed map[string]bool
	if len(d.Remove) > scanLimit {
		removed = make(map[string]bool, len(d.Remove))
	}
	for i, id := range d.Remove {
		switch {
		case seenBefore(d.Remove, i, removed):
			p.add("removes token %q twice", id)
		case !have.has(id):
			p.add("removes token %q, which does not exist", id)
		}
		if removed != nil {
			removed[id] = true
		}
	}
	var addSeen map[string]bool
	if len(d.Add) > scanLimit {
		addSeen = make(map[string]bool, len(d.Add))
	}
	for i, t := range d.Add {
		if t.ID == "" {
			p.add("adds a token with no id (at node %q)", t.Node)
			continue
		}
		dup := false
		if addSeen != nil {
			dup, addSeen[t.ID] = addSeen[t.ID], true
		} else {
			for _, u := range d.Add[:i] {
				dup = dup || u.ID == t.ID
			}
		}
		if dup {
			p.add("adds two tokens with id %q", t.ID)
		}
		switch {
		case t.Node == "":
			p.add("token %q has no node", t.ID)
		case t.Status != sdk.Scope:
			// Scope tokens may also stand on elements the summary does
			// not list as nodes (a BPMN process, a called process); the
			// host runs nothing at them.
			p.node("token", t.ID, "", t.Node)
		}
		switch t.Status {
		case sdk.Ready, sdk.Waiting, sdk.Parked, sdk.Scope:
		default:
			p.add("token %q has unknown status %q", t.ID, t.Status)
		}
		for _, tr := range t.Triggers {
			p.node("token", t.ID, " trigger", tr)
		}
		if t.DelayMS < 0 {
			p.add("token %q has a negative delay %dms", t.ID, t.DelayMS)
		}
	}
	for _, w := range d.Waiting {
		p.node("waiting join", "", "", w)
	}
	if len(p.list) > 0 {
		return s, c.fail(call, p.list)
	}

	// What the state becomes: scopes and choices must refer to tokens in it,
	// and a completed instance has none left.
	next := d.Apply(s)
	live := tokenIDs{tokens: next.Tokens}
	for _, t := range next.Tokens {
		if t.Scope != "" && !live.has(t.Scope) {
			p.add("token %q names scope %q, which does not exist", t.ID, t.Scope)
		}
	}
	if ch := d.Choice; ch != nil {
		switch {
		case !live.has(ch.Token):
			p.add("asks a choice for token %q, which does not exist", ch.Token)
		case len(ch.Flows) == 0:
			p.add("asks a choice at %q with no flows to choose from", ch.Node)
		}
		p.node("choice", "", "", ch.Node)
		for i, f := range ch.Flows {
			dup := false
			for _, g := range ch.Flows[:i] {
				dup = dup || g.ID == f.ID
			}
			if f.ID == "" || dup {
				p.add("choice at %q offers flow %q twice or without an id", ch.Node, f.ID)
			}
			p.node("choice flow", f.ID, " target", f.Target)
		}
	}
	if d.Complete {
		if d.Fault != nil {
			p.add("completes and faults at once (at %q)", d.Fault.Node)
		}
		if d.Choice != nil {
			p.add("completes while asking a choice at %q", d.Choice.Node)
		}
		if len(next.Tokens) > 0 {
			p.add("completes while %d token(s) remain (%s)", len(next.Tokens), tokenList(next.Tokens))
		}
	}
	if len(p.list) > 0 {
		return s, c.fail(call, p.list)
	}
	return next, nil
}

// problems collects what is wrong with one decision.
type problems struct {
	nodes map[string]bool
	list  []string
}

func (p *problems) add(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// node reports id when the routine has no such node; the subject is
// `kind "name"suffix`, or kind alone when name is "".
func (p *problems) node(kind, name, suffix, id string) {
	if p.nodes == nil || p.nodes[id] {
		return
	}
	subject := kind
	if name != "" {
		subject = fmt.Sprintf("%s %q", kind, name)
	}
	p.add("%s%s names node %q, which the routine does not have", subject, suffix, id)
}

func (c decisions) fail(call navCall, probs []string) error {
	return fmt.Errorf("navigator %q: %s: %w: %s", c.plugin, call, ErrDecision, strings.Join(probs, "; "))
}

func tokenList(ts []sdk.Token) string {
	const show = 5
	parts := make([]string, 0, min(len(ts), show+1))
	for i, t := range ts {
		if i == show {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s@%s:%s", t.ID, t.Node, t.Status))
	}
	return strings.Join(parts, ", ")
}
