package sdk_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// applyByHand is the host's rule for a decision, written the plain way:
// remove, then replace by id or append, in order.
func applyByHand(d *sdk.Decision, s sdk.State) []sdk.Token {
	var out []sdk.Token
	if len(d.Remove) > 0 {
		out = []sdk.Token{}
	}
	for _, t := range s.Tokens {
		drop := false
		for _, id := range d.Remove {
			drop = drop || id == t.ID
		}
		if !drop {
			out = append(out, t)
		}
	}
	for _, t := range d.Add {
		i := 0
		for i < len(out) && out[i].ID != t.ID {
			i++
		}
		if i < len(out) {
			out[i] = t
		} else {
			out = append(out, t)
		}
	}
	return out
}

// TestApplyAgreesWithTheRule: random states and decisions (ids that repeat,
// adds that replace kept tokens and each other, removes past the scanning
// limit) give the tokens the rule gives, in memory of exactly their size, with or without reserved room, and
// leave the input alone.
func TestApplyAgreesWithTheRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	id := func() string { return fmt.Sprintf("t%d", rng.IntN(12)) }
	for i := range 3000 {
		var s sdk.State
		for range rng.IntN(6) {
			s.Tokens = append(s.Tokens, sdk.Token{ID: id(), Node: "s"})
		}
		d := &sdk.Decision{}
		for range rng.IntN(12) {
			d.Remove = append(d.Remove, id())
		}
		for j := range rng.IntN(5) {
			d.Add = append(d.Add, sdk.Token{ID: id(), Node: fmt.Sprintf("a%d", j)})
		}
		before := append([]sdk.Token(nil), s.Tokens...)
		want := applyByHand(d, s)
		if i%2 == 1 {
			d.ReserveApply(make([]sdk.Token, rng.IntN(8)))
		}
		got := d.Apply(s).Tokens
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: state %v, remove %v, add %v:\n got %v\nwant %v", i, s.Tokens, d.Remove, d.Add, got, want)
		}
		if cap(got) != len(got) {
			t.Fatalf("case %d: %d tokens in room for %d: Apply did not count them first", i, len(got), cap(got))
		}
		if !reflect.DeepEqual(s.Tokens, before) {
			t.Fatalf("case %d: Apply changed its input", i)
		}
	}
}

// TestApplyUsesReservedRoomOnce: the first Apply builds the state in the
// room, without allocating; a second Apply, and a copy of the decision,
// get memory of their own, so no two states share tokens.
func TestApplyUsesReservedRoomOnce(t *testing.T) {
	s := sdk.State{Tokens: []sdk.Token{{ID: "t1", Node: "a"}, {ID: "t2", Node: "b"}}}
	room := make([]sdk.Token, 2)
	d := &sdk.Decision{Remove: []string{"t1"}, Add: []sdk.Token{{ID: "t3", Node: "c"}}}
	d.ReserveApply(room)
	cp := *d
	first := d.Apply(s)
	if &first.Tokens[0] != &room[0] || len(first.Tokens) != 2 || cap(first.Tokens) != 2 {
		t.Fatalf("first Apply did not build in the room: %v", first.Tokens)
	}
	second := d.Apply(s)
	fromCopy := cp.Apply(s)
	for _, o := range [][]sdk.Token{second.Tokens, fromCopy.Tokens} {
		if &o[0] == &room[0] || !reflect.DeepEqual(o, first.Tokens) {
			t.Fatalf("a later Apply shares the room or differs: %v", o)
		}
	}
	second.Tokens[0].Node = "changed"
	if first.Tokens[0].Node != "b" {
		t.Fatal("two applied states share tokens")
	}

	small := &sdk.Decision{Add: []sdk.Token{{ID: "t3"}}}
	small.ReserveApply(make([]sdk.Token, 1))
	if got := small.Apply(s).Tokens; len(got) != 3 {
		t.Fatalf("room too small: %v", got)
	}

	allocs := testing.AllocsPerRun(100, func() {
		d.ReserveApply(room)
		if st := d.Apply(s); len(st.Tokens) != 2 {
			t.Fatal(st.Tokens)
		}
	})
	if allocs != 0 {
		t.Fatalf("Apply with room allocates %.0f times, want 0", allocs)
	}
}
