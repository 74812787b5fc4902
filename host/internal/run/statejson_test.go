package run

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestStateEncoding: runState.encode writes exactly the bytes
// encoding/json writes for the same state, and fails where it fails.
func TestStateEncoding(t *testing.T) {
	at := time.Date(2026, 11, 26, 15, 4, 5, 123456789, time.FixedZone("X", 3600))
	odd := "a<b>&c\"d\\e\b\f\n\r\t\x00\x1f\x7f é \u2028 \u2029 \xff\xfe end"
	vars := map[string]any{
		"s": odd, odd: "key", "t": true, "f": false, "nil": nil,
		"floats": []any{0.0, math.Copysign(0, -1), 0.1, 1e-6, 1e-7, 9.999e-7, 1e20, 1e21, 1.5e300, -2.5e-300, 123456789.0, 3.0},
		"ints":   []any{0, -1, int64(math.MaxInt64), int64(math.MinInt64)},
		"nested": map[string]any{"b": map[string]any{"c": []any{map[string]any{}, []any{}, nil}}, "a": []string{"x", odd}},
		"nilmap": map[string]any(nil), "nilslice": []any(nil), "nilstrings": []string(nil),
		"typed": []int{1, 2}, "time": at, "num": json.Number("12.50"), "raw": json.RawMessage(` {"z": 1, "a": [ 2 ] } `),
		"f32": float32(0.1), "u8": uint8(7), "struct": struct{ A int }{1}, "status": sdk.OK,
	}
	full := &runState{
		Pipeline: "/p/" + odd,
		Nav: sdk.State{Routine: "r", Seq: 42, Data: map[string]any{"joins": map[string]any{"g": 2}},
			Tokens: []sdk.Token{
				{ID: "t1", Node: "n1", Status: sdk.Ready},
				{ID: "t2", Node: "n2", Status: sdk.Waiting, Scope: "t0", Triggers: []string{"e1", "e2"}, Attempt: 2, DelayMS: 1500,
					Attrs: map[string]any{"loopCounter": 3, "item": odd}},
			},
			Env: sdk.Env{Input: map[string]any{"topic": odd}, Vars: vars, Strategy: map[string]any{"x": 1.5}, Now: at}},
		Steps: 7, Complete: true, Tokens: 123, CostUSD: 0.000123, SpanSeq: 99, Violations: 1, Confirmations: 2, Approved: true,
		Done: map[string]*stepResult{"t9": {Outcome: sdk.Outcome{Status: sdk.OK, Output: map[string]any{"value": odd}},
			Spans:  []store.Span{{Name: "step x", Start: at, Attributes: store.Attributes{"k": store.String(odd)}}},
			Tokens: 3, CostUSD: 0.5, Err: odd, Cited: []string{"b1"}}},
		Waiting:  map[string]string{"t2": odd, "t1": "q"},
		Events:   []store.Wait{{Kind: store.WaitTimer, Node: "n", Event: "e", Token: "t2", Due: at}},
		Released: map[string]int{"t2": 1},
		Answers:  map[string]int{"h": 2},
		Actions:  []actionRecord{{Node: "a", Action: odd, Decision: "executed", Reason: "r"}},
		Trace:    []string{"step s1", "call 0123456789ab", odd},
		Cited:    []string{"b1", "b2"},
		Started:  at,
	}
	empty := &runState{}
	minimal := &runState{Pipeline: "p", Nav: sdk.State{Routine: "r", Env: sdk.Env{Input: map[string]any{}, Vars: map[string]any{}}},
		Done: map[string]*stepResult{}, Waiting: map[string]string{}, Answers: map[string]int{}, Started: time.Now()}
	for name, s := range map[string]*runState{"full": full, "empty": empty, "minimal": minimal} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", name, err)
		}
		var direct []byte
		if direct, err = appendState(nil, s); err != nil {
			t.Fatalf("%s: the direct path gave up: %v", name, err)
		}
		if !bytes.Equal(direct, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, direct, want)
		}
	}

	// What encoding/json refuses, encode refuses too, with its error.
	cyclic := map[string]any{}
	cyclic["me"] = cyclic
	for name, v := range map[string]any{"nan": math.NaN(), "inf": math.Inf(-1), "cycle": cyclic, "func": func() {},
		"far": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		s := *minimal
		s.Nav.Env.Vars = map[string]any{"v": v}
		_, want := json.Marshal(&s)
		_, err := s.encode()
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%s: encode error %v, encoding/json's %v", name, err, want)
		}
	}
	s := *minimal
	s.CostUSD = math.NaN()
	if _, err := s.encode(); err == nil {
		t.Error("a NaN cost encoded")
	}
}

// fillAll sets every field reachable from v to a value that is not its
// zero value, so that an encoder written field by field and compared with
// encoding/json misses no field (a field added to the struct later fails
// the comparison until the encoder writes it too).
func fillAll(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	}
	if v.Type() == reflect.TypeOf(json.RawMessage{}) {
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":[1,"x"]}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("v"))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillAll(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillAll(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k, depth+1)
		fillAll(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), depth+1)
			}
		}
	}
}

// TestStateEncodingEveryField: with every field of the run state set
// (those of sdk.State, Token and Env included), the direct encoding still
// equals encoding/json's: a field added to any of them fails here until
// appendState writes it.
func TestStateEncodingEveryField(t *testing.T) {
	var s runState
	fillAll(reflect.ValueOf(&s).Elem(), 0)
	want, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendState(nil, &s)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("every field set:\n got %s (%v)\nwant %s", got, err, want)
	}
}
