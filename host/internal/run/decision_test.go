package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/navigators/dag"
	"github.com/sextant-dev/sextant/sdk"
)

func TestDecisionsCheck(t *testing.T) {
	r := &sdk.Routine{Nodes: []sdk.Node{{ID: "start"}, {ID: "work"}, {ID: "gw"}, {ID: "end"}}}
	c := newDecisions("nav", r)
	state := sdk.State{Tokens: []sdk.Token{{ID: "t1", Node: "work", Status: sdk.Ready}, {ID: "s", Node: "gw", Status: sdk.Scope}}}
	for _, tt := range []struct {
		name string
		d    *sdk.Decision
		want string // "" = accepted
	}{
		{"ok", &sdk.Decision{Remove: []string{"t1"}, Add: []sdk.Token{{ID: "t2", Node: "end", Status: sdk.Ready, Scope: "s"}}}, ""},
		{"replace in place", &sdk.Decision{Add: []sdk.Token{{ID: "t1", Node: "end", Status: sdk.Waiting, Triggers: []string{"gw"}}}}, ""},
		{"complete", &sdk.Decision{Remove: []string{"t1", "s"}, Complete: true}, ""},
		{"nil", nil, `navigator "nav": next: invalid navigator decision: returned no decision`},
		{"unknown node", &sdk.Decision{Add: []sdk.Token{{ID: "t2", Node: "ghost", Status: sdk.Ready}}},
			`navigator "nav": next: invalid navigator decision: token "t2" names node "ghost", which the routine does not have`},
		{"duplicate id", &sdk.Decision{Add: []sdk.Token{{ID: "t2", Node: "end", Status: sdk.Ready}, {ID: "t2", Node: "work", Status: sdk.Ready}}},
			`navigator "nav": next: invalid navigator decision: adds two tokens with id "t2"`},
		{"no id", &sdk.Decision{Add: []sdk.Token{{Node: "end", Status: sdk.Ready}}},
			`navigator "nav": next: invalid navigator decision: adds a token with no id (at node "end")`},
		{"bad status", &sdk.Decision{Add: []sdk.Token{{ID: "t2", Node: "end", Status: "running"}}},
			`navigator "nav": next: invalid navigator decision: token "t2" has unknown status "running"`},
		{"unknown trigger", &sdk.Decision{Add: []sdk.Token{{ID: "t2", Node: "end", Status: sdk.Waiting, Triggers: []string{"late"}}}},
			`navigator "nav": next: invalid navigator decision: token "t2" trigger names node "late", which the routine does not have`},
		{"remove unknown and complete", &sdk.Decision{Remove: []string{"t1", "s", "t9"}, Complete: true},
			`navigator "nav": next: invalid navigator decision: removes token "t9", which does not exist`},
		{"remove twice", &sdk.Decision{Remove: []string{"t1", "t1"}},
			`navigator "nav": next: invalid navigator decision: removes token "t1" twice`},
		{"complete with tokens", &sdk.Decision{Complete: true},
			`navigator "nav": next: invalid navigator decision: completes while 2 token(s) remain (t1@work:ready, s@gw:scope)`},
		{"complete and fault", &sdk.Decision{Remove: []string{"t1", "s"}, Complete: true, Fault: &sdk.Fault{Node: "work", Message: "x"}},
			`navigator "nav": next: invalid navigator decision: completes and faults at once (at "work")`},
		{"dangling scope", &sdk.Decision{Remove: []string{"s"}},
			`navigator "nav": next: invalid navigator decision: token "t1" names scope "s", which does not exist`},
		{"choice without flows", &sdk.Decision{Choice: &sdk.Choice{Token: "t1", Node: "gw"}},
			`navigator "nav": next: invalid navigator decision: asks a choice at "gw" with no flows to choose from`},
		{"choice for a missing token", &sdk.Decision{Choice: &sdk.Choice{Token: "t7", Node: "gw", Flows: []sdk.Flow{{ID: "f", Target: "end"}}}},
			`navigator "nav": next: invalid navigator decision: asks a choice for token "t7", which does not exist`},
		{"unknown waiting join", &sdk.Decision{Waiting: []string{"join"}},
			`navigator "nav": next: invalid navigator decision: waiting join names node "join", which the routine does not have`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := state
			st.Tokens[0].Scope = "s"
			_, err := c.apply(navCall{what: "next"}, st, tt.d)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrDecision) {
					t.Errorf("error does not match ErrDecision: %v", err)
				}
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestDecisionsFirstParty walks every routine fixture of the first-party
// navigators with decision checks on: none of their decisions is refused.
func TestDecisionsFirstParty(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, n := range []struct {
		nav  sdk.Navigator
		glob string
	}{
		{bpmn.New(), "navigators/bpmn/testdata/routines/*.bpmn"},
		{dag.New(), "navigators/dag/testdata/*.toml"},
		{chain.New(), "navigators/chain/testdata/*.toml"},
		{bpmn.New(), "pipelines/*/*.bpmn"},
		{dag.New(), "pipelines/*/*.dag.toml"},
		{chain.New(), "pipelines/*/*.chain.toml"},
	} {
		files, err := filepath.Glob(filepath.Join(root, n.glob))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixtures for %s (%v)", n.glob, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := n.nav.Load(context.Background(), &sdk.LoadRequest{Name: filepath.Base(f), Routine: data})
			if err != nil {
				continue // an invalid-routine fixture
			}
			for _, opts := range []SimOptions{
				{},
				{Vars: map[string]any{"amount": 500, "urls": []any{"a", "b"}, "topics": []any{"x"}}, Input: map[string]any{"question": "why?"}},
			} {
				opts.Routine = r
				if _, err := Simulate(context.Background(), n.nav, r.Hash, opts); err != nil && errors.Is(err, ErrDecision) {
					t.Errorf("%s: %v", strings.TrimPrefix(f, root), err)
				}
			}
		}
	}
}

// TestDecisionsManyTokens covers the map-backed id sets (more tokens than a
// linear scan serves).
func TestDecisionsManyTokens(t *testing.T) {
	c := newDecisions("nav", &sdk.Routine{Nodes: []sdk.Node{{ID: "work"}}})
	var st sdk.State
	for i := range 40 {
		st.Tokens = append(st.Tokens, sdk.Token{ID: fmt.Sprintf("t%d", i), Node: "work", Status: sdk.Ready})
	}
	var remove []string
	for i := range 40 {
		remove = append(remove, fmt.Sprintf("t%d", i))
	}
	if _, err := c.apply(navCall{what: "next"}, st, &sdk.Decision{Remove: remove, Complete: true}); err != nil {
		t.Fatal(err)
	}
	_, err := c.apply(navCall{"next after step", "work"}, st, &sdk.Decision{Remove: append(remove, "t99", "t3")})
	want := `navigator "nav": next after step "work": invalid navigator decision: removes token "t99", which does not exist; removes token "t3" twice`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	var add []sdk.Token
	for i := range 20 {
		add = append(add, sdk.Token{ID: fmt.Sprintf("n%d", i%19), Node: "work", Status: sdk.Ready})
	}
	_, err = c.apply(navCall{what: "start"}, sdk.State{}, &sdk.Decision{Add: add})
	want = `navigator "nav": start: invalid navigator decision: adds two tokens with id "n0"`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}
