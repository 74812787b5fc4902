package sdk

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// internValues are generic values whose decoding an interner must not
// change: short and long strings, invalid UTF-8 (coerced, never kept),
// strings that share a slot, floats including -0, nested maps and arrays.
func internValues() []any {
	vals := []any{"", "a", "s1", "t1", "answer 1", strings.Repeat("x", maxInterned), strings.Repeat("y", maxInterned+1),
		"bad \xff utf8", "\xff", "\xc3", 0.0, math.Copysign(0, -1), 1.0, 2.0, 1250.5, -7.0, 1e300, true, false, nil,
		map[string]any{"s1": "answer 1", "a1": "answer 1", "n2": 2.0, "nested": map[string]any{"n2": 2.0, "list": []any{"t1", "t1", 3.0}}},
	}
	for i := range 600 { // more than internSlots: slots are replaced
		vals = append(vals, fmt.Sprintf("k%d", i), float64(i)/4)
	}
	return vals
}

// TestInternerAgrees: a decoder with an interner reads every value as one
// without, however often the values repeat and whatever they evict.
func TestInternerAgrees(t *testing.T) {
	vals := internValues()
	var in interner
	for round := range 3 {
		for i, v := range vals {
			var e encoder
			e.any(v)
			if e.err != nil {
				t.Fatal(e.err)
			}
			want, err := (&decoder{b: e.b}).any()
			if err != nil {
				t.Fatal(err)
			}
			got, err := (&decoder{b: e.b, in: &in}).any()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d value %d: interned %#v, want %#v", round, i, got, want)
			}
			if f, ok := want.(float64); ok && math.Float64bits(f) != math.Float64bits(got.(float64)) {
				t.Fatalf("round %d value %d: interned %v, want %v (sign of zero)", round, i, got, want)
			}
			d := &decoder{b: e.b, in: &in}
			if s, ok := want.(string); ok {
				if got, err := d.str(); err != nil || got != s {
					t.Fatalf("round %d value %d: str %q, %v; want %q", round, i, got, err, s)
				}
			}
		}
	}
}

// TestInternerTime: a repeated time is not parsed again, a different one
// is, and a malformed one fails as without an interner.
func TestInternerTime(t *testing.T) {
	var in interner
	t1 := time.Date(2026, 11, 26, 15, 20, 18, 177921979, time.UTC)
	t2 := t1.Add(time.Second).In(time.FixedZone("", 3600))
	for _, want := range []time.Time{t1, t1, t2, t1, t2, t2} {
		var e encoder
		e.time(want)
		got, err := (&decoder{b: e.b, in: &in}).time()
		if err != nil || !got.Equal(want) || got.String() != want.String() {
			t.Fatalf("time %v, %v; want %v", got, err, want)
		}
	}
	for _, bad := range []string{"", "2026-11-26", "not a time \xff"} {
		var e encoder
		e.str(bad)
		_, want := (&decoder{b: e.b}).time()
		_, got := (&decoder{b: e.b, in: &in}).time()
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Fatalf("time %q: error %v, want %v", bad, got, want)
		}
	}
}

// TestInternerAllocates: once seen, a short string, a number and a time
// decode without allocating.
func TestInternerAllocates(t *testing.T) {
	var in interner
	var e encoder
	e.any(map[string]any{"s1": "answer 1", "n2": 2.5})
	e.time(time.Date(2026, 11, 26, 15, 20, 18, 0, time.UTC))
	msg := e.b
	read := func() {
		d := decoder{b: msg, in: &in}
		n, _, _ := d.mapHeader()
		for range n {
			if _, err := d.str(); err != nil {
				t.Fatal(err)
			}
			if _, err := d.any(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.time(); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Fatalf("%v allocations per read, want 0", n)
	}
}

// TestArenaKeepsStrings: long strings copied into the interner's arena
// stay as they were decoded while later ones fill it and its next chunks;
// one too long for it, or not valid UTF-8, is copied on its own (and
// coerced) as without an interner.
func TestArenaKeepsStrings(t *testing.T) {
	var in interner
	var kept, want []string
	for i := range 200 {
		s := fmt.Sprintf("%d:%s", i, strings.Repeat(string(rune('a'+i%26)), 100+37*i%3000))
		if i%50 == 7 {
			s = strings.Repeat("z", maxArenaString+1)
		}
		if i%50 == 9 {
			s += "\xff"
		}
		var e encoder
		e.b = append(e.b, 0xdb, byte(len(s)>>24), byte(len(s)>>16), byte(len(s)>>8), byte(len(s))) // str32: e.str would coerce
		e.b = append(e.b, s...)
		got, err := (&decoder{b: e.b, in: &in}).str()
		if err != nil {
			t.Fatal(err)
		}
		w, _ := (&decoder{b: e.b}).str()
		if got != w {
			t.Fatalf("string %d: %q, want %q", i, got, w)
		}
		kept, want = append(kept, got), append(want, strings.Clone(w))
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("string %d changed after later decodes", i)
		}
	}
}
