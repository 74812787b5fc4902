package tomldoc

import (
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestSuggest(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"trigger", ""},
		{"trigger_rul", ` (did you mean "trigger_rule"?)`},
		{"depnds_on", ` (did you mean "depends_on"?)`},
		{"retires", ` (did you mean "retries"?)`},
		{"zzz", ""},
	} {
		if got := Suggest(c.name, []string{"trigger_rule", "depends_on", "retries", "when"}); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestParseLimits: a routine nested too deeply is refused at its line
// before it is decoded.
func TestParseLimits(t *testing.T) {
	src := "name = \"x\"\n[tasks.a]\nx = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
	_, _, err := Parse("r.toml", []byte(src))
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != "r.toml:3: nesting deeper than 64 levels" {
		t.Errorf("err = %v", err)
	}
}

// TestLines: problems carry the line of the key, the array element or the
// array-of-tables element they are about.
func TestLines(t *testing.T) {
	src := "[[steps]]\nid = \"a\"\n[[steps]]\nid = \"b\"\ndepends_on = [\n  \"a\",\n  1,\n]\ncolour = 1\n"
	doc, root, err := Parse("r.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	steps, _ := root.Tables("steps")
	steps[1].Strings("depends_on")
	steps[1].String("id")
	steps[1].Strict([]string{"id", "depends_on", "color"})
	want := "r.toml:7: steps[1].depends_on: element 1: want a string, got integer 1\n" +
		"r.toml:9: steps[1].colour: unknown key (did you mean \"color\"?)"
	if err := doc.Err(); err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
