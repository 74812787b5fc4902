package suggest

import "testing"

func TestClosest(t *testing.T) {
	cands := []string{"default", "offline", "navigator", "kind"}
	tests := []struct{ in, want string }{
		{"defualt", "default"},
		{"defaults", "default"},
		{"navigatr", "navigator"},
		{"knid", "kind"},
		{"zzzzzz", ""},
		{"default", ""},
	}
	for _, tc := range tests {
		if got := Closest(tc.in, cands); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Hint("defualt", cands); got != ` (did you mean "default"?)` {
		t.Errorf("Hint = %q", got)
	}
}
