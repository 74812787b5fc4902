package run

import (
	"fmt"
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
