package proxy

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCanonical: the canonical form is the body as encoding/json writes
// it with sorted keys and no HTML escaping, the ignored fields dropped;
// key order and spacing do not change it, a value does.
func TestCanonical(t *testing.T) {
	body := `{"stream":true,"user":"u","model":"m","z":[1,2.50,{"b":null,"a":true}],"s":"q\"uote\\ <tag> & \u00e9 \n\t\u0001 日本",
 "metadata":{"k":"v"},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	r := httptest.NewRequest("POST", RouteChatCompletions, nil)
	c, f := parseRaw(routeChat, r, []byte(body))
	if f != nil {
		t.Fatal(f.msg)
	}
	delete(c.fields, "stream")
	delete(c.fields, "user")
	delete(c.fields, "metadata")
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c.fields); err != nil {
		t.Fatal(err)
	}
	if got := string(c.canon); got != strings.TrimSuffix(want.String(), "\n") {
		t.Errorf("canonical\n%s\nwant\n%s", got, want.String())
	}
	reordered := `{ "tools":[{"function":{"parameters":{"type":"object"},"name":"f"},"type":"function"}], "s":"q\"uote\\ <tag> & \u00e9 \n\t\u0001 日本",
 "z":[1,2.50,{"a":true,"b":null}], "model":"m", "user":"other" }`
	c2, f := parseRaw(routeChat, r, []byte(reordered))
	if f != nil {
		t.Fatal(f.msg)
	}
	if c2.other != c.hash || c2.hash != c.other {
		t.Errorf("reordered, unstreamed: keys %s/%s, want the streamed call's %s/%s swapped", c2.hash, c2.other, c.hash, c.other)
	}
	c3, _ := parseRaw(routeChat, r, []byte(strings.Replace(reordered, "2.50", "2.5", 1)))
	if c3.hash == c2.hash {
		t.Errorf("another number, the same key")
	}
}

// TestWithModel: only the top-level model's value changes.
func TestWithModel(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":{"model":"x"}, "model" : "old" ,"b":1}`: `{"a":{"model":"x"}, "model" : "new" ,"b":1}`,
		`{"b":1}`:        `{"model":"new","b":1}`,
		` { } `:          ` {"model":"new" } `,
		`{"model":null}`: `{"model":"new"}`,
	} {
		got, err := withModel([]byte(in), "new")
		if err != nil || string(got) != want {
			t.Errorf("withModel(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
