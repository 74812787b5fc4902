package sdk_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

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
// limit) give the tokens the rule gives, in memory of exactly their size,
// (states past 64 tokens too), with or without reserved room (and with the added tokens written inside
// it, where the state would hold them or elsewhere), and leave the input
// and the decision's added tokens alone.
func TestApplyAgreesWithTheRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	id := func() string { return fmt.Sprintf("t%d", rng.IntN(12)) }
	// token sets each optional field or leaves it empty, at random.
	token := func(node string) sdk.Token {
		t := sdk.Token{ID: id(), Node: node, Status: sdk.Ready}
		if rng.IntN(2) == 0 {
			t.Scope, t.Status = id(), sdk.Waiting
		}
		if rng.IntN(2) == 0 {
			t.Triggers = []string{node + "-event"}
		}
		if rng.IntN(2) == 0 {
			t.Attempt, t.DelayMS = 1+rng.IntN(3), int64(rng.IntN(500))
		}
		if rng.IntN(2) == 0 {
			t.Attrs = map[string]any{"flow": node}
		}
		return t
	}
	for i := range 3000 {
		var s sdk.State
		size := rng.IntN(6)
		if i%10 == 9 {
			size = 60 + rng.IntN(12) // past the 64 tokens Apply marks as kept
		}
		for range size {
			s.Tokens = append(s.Tokens, token("s"))
		}
		d := &sdk.Decision{}
		for range rng.IntN(12) {
			d.Remove = append(d.Remove, id())
		}
		for j := range rng.IntN(5) {
			d.Add = append(d.Add, token(fmt.Sprintf("a%d", j)))
		}
		before := append([]sdk.Token(nil), s.Tokens...)
		want := applyByHand(d, s)
		switch i % 3 {
		case 1:
			// Room that is not zeroed: Apply must overwrite every field.
			room := make([]sdk.Token, rng.IntN(8))
			for k := range room {
				room[k] = token("stale")
			}
			d.ReserveApply(room)
		case 2:
			// The added tokens written inside the room: at its end after the
			// tokens the state keeps (in place), or anywhere else.
			room := make([]sdk.Token, len(d.Add)+rng.IntN(8))
			at := rng.IntN(len(room) - len(d.Add) + 1)
			inRoom := room[at : at+len(d.Add) : at+len(d.Add)]
			copy(inRoom, d.Add)
			d.Add = inRoom
			d.ReserveApply(room)
		}
		addBefore := append([]sdk.Token(nil), d.Add...)
		got := d.Apply(s).Tokens
		if len(d.Add)+len(addBefore) > 0 && !reflect.DeepEqual(d.Add, addBefore) {
			t.Fatalf("case %d: Apply changed d.Add: %v, was %v", i, d.Add, addBefore)
		}
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

// TestApplyKeepsAddedTokensInPlace: a navigator that wrote its added tokens
// at the end of the room, after the tokens the state keeps, gets a state
// built around them without a copy or an allocation; the state's added
// tokens are the decision's.
func TestApplyKeepsAddedTokensInPlace(t *testing.T) {
	s := sdk.State{Tokens: []sdk.Token{{ID: "t1", Node: "a"}, {ID: "t2", Node: "b"}}}
	room := make([]sdk.Token, 3)
	d := &sdk.Decision{Remove: []string{"t2"}, Add: room[1:3:3]}
	d.Add[0], d.Add[1] = sdk.Token{ID: "t3", Node: "c"}, sdk.Token{ID: "t4", Node: "d"}
	allocs := testing.AllocsPerRun(100, func() {
		d.ReserveApply(room)
		got := d.Apply(s).Tokens
		if len(got) != 3 || got[0].ID != "t1" || got[1].ID != "t3" || got[2].ID != "t4" || &got[1] != &d.Add[0] {
			t.Fatalf("tokens %v", got)
		}
	})
	if allocs != 0 {
		t.Fatalf("Apply allocates %.0f times, want 0", allocs)
	}
}

// TestDecisionSize: a navigator allocates a decision with every answer,
// and its bytes, not its count, set how often the host's collector runs;
// the room's count shares Complete's padding rather than adding a word.
func TestDecisionSize(t *testing.T) {
	if size := unsafe.Sizeof(sdk.Decision{}); size > 160 {
		t.Fatalf("sdk.Decision is %d bytes, want at most 160", size)
	}
}
