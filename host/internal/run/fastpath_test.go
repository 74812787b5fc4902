package run

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestParseJSONFastPath: parseJSON, which decodes a reply that is one JSON
// value at once, answers every reply (value and error) as the stream
// decoder alone does.
func TestParseJSONFastPath(t *testing.T) {
	replies := []string{
		`{"a": 1, "b": [true, null, "x"]}`, "  [1, 2.5, -3e2]\n", `"text"`, `42`, `null`, `true`,
		"```json\n{\"k\": \"v\"}\n```", "```\n[1]\n```", `{"a": 1} }`, `[1] ]`, `{"a": 1} {"b": 2}`, `1 2`,
		`{"a": 1`, `{"a": }`, ``, `   `, `nope`, `{"a": "\u00e9\ud83d\ude00"}`, "{\"a\": \"\xff\"}", `{"a": 1e400}`,
		`{"a":1,"a":2}`, `[` + "\t" + `]`, `{"deep": {"deeper": {"deepest": [[[]]]}}}`, `12abc`, `"unterminated`,
	}
	for i := 0; i < 64; i++ {
		replies = append(replies, fmt.Sprintf(`{"n%d": %d, "s": "%s"}%s`, i, i*i, string(rune('a'+i%26)), []string{"", " ", "\n}", " x"}[i%4]))
	}
	for _, r := range replies {
		v1, err1 := parseJSON(r)
		s := r
		if len(s) > 3 && s[:3] == "```" {
			continue // the fence is parseJSON's own; compared below
		}
		v2, err2 := decodeJSONStream(strings.TrimSpace(s))
		if !reflect.DeepEqual(v1, v2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Errorf("%q: parseJSON %#v %v, the stream decoder %#v %v", r, v1, err1, v2, err2)
		}
	}
	for r, want := range map[string]any{"```json\n{\"k\": \"v\"}\n```": map[string]any{"k": "v"}, "```\n[1]\n```": []any{1.0}} {
		if v, err := parseJSON(r); err != nil || !reflect.DeepEqual(v, want) {
			t.Errorf("%q: %#v %v", r, v, err)
		}
	}
}

// TestEncodeInputFastPath: encodeInput writes every input as json.Marshal
// does, and fails where it fails.
func TestEncodeInputFastPath(t *testing.T) {
	deep := map[string]any{}
	for m, i := deep, 0; i < 1100; i++ {
		next := map[string]any{}
		m["d"] = next
		m = next
	}
	inputs := []map[string]any{
		{}, nil, {"topic": "a"}, {"html": "<b>&</b>", "u": "é\u2028\u2029😀", "bad": "\xff\xfe", "ctl": "\x00\x1f\t\n\""},
		{"n": 1.5, "i": 3, "i64": int64(-9), "big": 1e21, "small": 1e-7, "neg0": 0.0, "f32": float32(0.1), "u8": uint8(7)},
		{"list": []any{1.0, "x", nil, true, map[string]any{"k": []string{"a", "b"}}}, "nil": nil, "nilmap": map[string]any(nil), "nillist": []any(nil)},
		{"struct": struct{ A int }{1}, "time": "2026-01-01T00:00:00Z", "raw": json.RawMessage(`{"x":1}`), "strs": map[string]string{"b": "1", "a": "2"}},
		{"nan": math.NaN()}, {"inf": math.Inf(1)}, {"deep": deep}, {"ch": make(chan int)},
	}
	for i := 0; i < 40; i++ {
		m := map[string]any{}
		for j := 0; j <= i; j++ {
			m[fmt.Sprintf("k%02d<%d>", (j*7)%41, j)] = []any{float64(j) / 3, fmt.Sprint(j), j%2 == 0}
		}
		inputs = append(inputs, m)
	}
	for _, in := range inputs {
		got, err := encodeInput(orEmpty(in))
		want, werr := json.Marshal(orEmpty(in))
		if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Errorf("encodeInput: %s %v\njson.Marshal: %s %v", got, err, want, werr)
		}
	}
}

// jsonCorpus are replies decodeJSON reads, and some it leaves to
// encoding/json.
var jsonCorpus = []string{
	`{"ok": true}`, `{"a": "b", "n": -1.5e3, "l": [1, null, false, {}], "e": []}`, " \t\n{\"x\":0}\r\n", `[]`, `{}`, `-0`, `0.5`,
	`1E+2`, `1e-2`, `"plain text"`, `{"a":{"b":{"c":[[1],[2,3]]}}}`, `{"a":1,"a":2}`, `{"a": 1e400}`, `{"a": "\u00e9"}`,
	`{"a": "tab	in"}`, "{\"a\": \"\x7f\"}", `{"a": "é"}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `[1,]`, `{"a":1,}`, `{a:1}`,
	`{"a" 1}`, `[1 2]`, `truex`, `[true]`, `nul`, `{"a":[`, `"x`, `[1]]`, `{"a":1}}`, strings.Repeat("[", 70) + strings.Repeat("]", 70),
}

// checkDecodeJSON fails t when decodeJSON reads s other than as
// json.Unmarshal does.
func checkDecodeJSON(t *testing.T, s string) {
	t.Helper()
	v, ok := decodeJSON(s)
	if !ok {
		return
	}
	var want any
	if err := json.Unmarshal([]byte(s), &want); err != nil {
		t.Fatalf("decodeJSON read %q as %#v, which Unmarshal refuses: %v", s, v, err)
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("%q: decodeJSON %#v, Unmarshal %#v", s, v, want)
	}
}

// TestDecodeJSON: decodeJSON reads a value exactly as json.Unmarshal does
// whenever it reads one, reads the plain replies models give, and
// allocates no more than the object it returns.
func TestDecodeJSON(t *testing.T) {
	for _, s := range jsonCorpus {
		checkDecodeJSON(t, s)
	}
	for _, s := range jsonCorpus[:11] {
		if _, ok := decodeJSON(s); !ok {
			t.Errorf("decodeJSON leaves %q to encoding/json", s)
		}
	}
	// The map and its one group.
	if n := testing.AllocsPerRun(100, func() { _, _ = parseJSON(`{"ok": true}`) }); n > 2 {
		t.Errorf("parseJSON of a small object allocates %v times", n)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range jsonCorpus {
		f.Add(s)
	}
	f.Fuzz(checkDecodeJSON)
}
