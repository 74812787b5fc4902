package tomldoc

import "testing"

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
