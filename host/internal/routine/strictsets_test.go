package routine

import (
	"errors"
	"strings"
	"testing"
)

func TestParseStrictSets(t *testing.T) {
	vars, err := ParseStrictSets([]string{"n=2", `c={"tier":"gold"}`, "s=plain words", `q="quoted"`})
	if err != nil || vars["n"] != int64(2) || vars["s"] != "plain words" || vars["q"] != "quoted" {
		t.Fatalf("%v, %v", vars, err)
	}
	if c, ok := vars["c"].(map[string]any); !ok || c["tier"] != "gold" {
		t.Fatalf("c = %#v", vars["c"])
	}
	for _, set := range []string{`c={"tier":gold}`, `a=[1,`, `s="open`, `x={} {}`} {
		var be *BadJSONError
		_, err := ParseStrictSets([]string{set})
		if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), strings.SplitN(set, "=", 2)[0]+": not valid JSON: ") {
			t.Errorf("%s: %v, want a *BadJSONError", set, err)
		}
	}
	if _, err := ParseStrictSets([]string{"novalue"}); err == nil || err.Error() != `"novalue": want NAME=VALUE` {
		t.Errorf("no =: %v", err)
	}
}
