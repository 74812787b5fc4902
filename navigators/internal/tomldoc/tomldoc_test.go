package tomldoc

import (
	"reflect"
	"testing"
)

func TestLocate(t *testing.T) {
	src := `# comment
name = "x" # trailing
desc = """
multi
line"""

[tasks.fetch]
depends_on = [
  "a", # one
  'b',
]
"quoted.key" = 1
[tasks . "we ird"]
x.y = { a = 1,
  b = [1, 2] }
[[steps]]
id = 'one'
[[steps.chain]]
id = "inner"
[[steps]]
id = "two"
lit = '''
x
'''
after = 1
`
	got := locate(src)
	want := map[string]int{
		"name": 2, "desc": 3,
		"tasks": 7, "tasks.fetch": 7, "tasks.fetch.depends_on": 8,
		"tasks.fetch.depends_on.0": 9, "tasks.fetch.depends_on.1": 10,
		"tasks.fetch.quoted.key": 12,
		"tasks.we ird":           13, "tasks.we ird.x": 14, "tasks.we ird.x.y": 14,
		"tasks.we ird.x.y.a": 14, "tasks.we ird.x.y.b": 15, "tasks.we ird.x.y.b.0": 15, "tasks.we ird.x.y.b.1": 15,
		"steps": 16, "steps.0": 16, "steps.0.id": 17,
		"steps.0.chain": 18, "steps.0.chain.0": 18, "steps.0.chain.0.id": 19,
		"steps.1": 20, "steps.1.id": 21, "steps.1.lit": 22, "steps.1.after": 25,
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %d, want %d", k, got[k], v)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected %s: %d", k, v)
			}
		}
	}
	if _, _, err := Parse("x.toml", []byte(src)); err != nil {
		t.Fatal(err)
	}
}

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
