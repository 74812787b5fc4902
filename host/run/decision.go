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

// check returns an error naming the plugin and every problem when d cannot
// be applied to s. call names the navigator call ("start", "next after
// \"classify\"", ...).
func (c decisions) check(call string, s sdk.State, d *sdk.Decision) error {
	if d == nil {
		return c.fail(call, []string{"returned no decision"})
	}
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	node := func(what, id string) {
		if c.nodes != nil && !c.nodes[id] {
			add("%s names node %q, which the routine does not have", what, id)
		}
	}

	have := make(map[string]bool, len(s.Tokens))
	for _, t := range s.Tokens {
		have[t.ID] = true
	}
	removed := make(map[string]bool, len(d.Remove))
	for _, id := range d.Remove {
		switch {
		case removed[id]:
			add("removes token %q twice", id)
		case !have[id]:
			add("removes token %q, which does not exist", id)
		}
		removed[id] = true
	}
	added := make(map[string]bool, len(d.Add))
	for _, t := range d.Add {
		what := fmt.Sprintf("token %q", t.ID)
		if t.ID == "" {
			add("adds a token with no id (at node %q)", t.Node)
			continue
		}
		if added[t.ID] {
			add("adds two tokens with id %q", t.ID)
		}
		added[t.ID] = true
		switch {
		case t.Node == "":
			add("%s has no node", what)
		case t.Status != sdk.Scope:
			// Scope tokens may also stand on elements the summary does
			// not list as nodes (a BPMN process, a called process); the
			// host runs nothing at them.
			node(what, t.Node)
		}
		switch t.Status {
		case sdk.Ready, sdk.Waiting, sdk.Parked, sdk.Scope:
		default:
			add("%s has unknown status %q", what, t.Status)
		}
		for _, tr := range t.Triggers {
			node(what+" trigger", tr)
		}
		if t.DelayMS < 0 {
			add("%s has a negative delay %dms", what, t.DelayMS)
		}
	}
	for _, w := range d.Waiting {
		node("waiting join", w)
	}
	if len(probs) > 0 {
		return c.fail(call, probs)
	}

	// What the state becomes: scopes and choices must refer to tokens in it,
	// and a completed instance has none left.
	next := d.Apply(s)
	live := make(map[string]bool, len(next.Tokens))
	for _, t := range next.Tokens {
		live[t.ID] = true
	}
	for _, t := range next.Tokens {
		if t.Scope != "" && !live[t.Scope] {
			add("token %q names scope %q, which does not exist", t.ID, t.Scope)
		}
	}
	if ch := d.Choice; ch != nil {
		switch {
		case !live[ch.Token]:
			add("asks a choice for token %q, which does not exist", ch.Token)
		case len(ch.Flows) == 0:
			add("asks a choice at %q with no flows to choose from", ch.Node)
		}
		node("choice", ch.Node)
		seen := map[string]bool{}
		for _, f := range ch.Flows {
			if f.ID == "" || seen[f.ID] {
				add("choice at %q offers flow %q twice or without an id", ch.Node, f.ID)
			}
			seen[f.ID] = true
			node(fmt.Sprintf("choice flow %q target", f.ID), f.Target)
		}
	}
	if d.Complete {
		if d.Fault != nil {
			add("completes and faults at once (at %q)", d.Fault.Node)
		}
		if d.Choice != nil {
			add("completes while asking a choice at %q", d.Choice.Node)
		}
		if len(next.Tokens) > 0 {
			add("completes while %d token(s) remain (%s)", len(next.Tokens), tokenList(next.Tokens))
		}
	}
	if len(probs) > 0 {
		return c.fail(call, probs)
	}
	return nil
}

func (c decisions) fail(call string, probs []string) error {
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
