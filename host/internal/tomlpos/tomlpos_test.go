package tomlpos

import "testing"

const doc = `name = "x"   # line 1

[wasm]
file = "a.wasm"
sha256 = "00"

[[gates]]
use = "delta-bound"

[[gates]]
use = "no-regression"
config = { metric = "success_rate", nested = { deep = 1 } }

[gates.extra]
k = 1

[steps.classify]
prompt = """
multi
line"""
provider = "default"
list = [
  "a",
  "b",
]
`

func TestLine(t *testing.T) {
	ix := Build([]byte(doc))
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"name"}, 1},
		{[]string{"wasm"}, 3},
		{[]string{"wasm", "sha256"}, 5},
		{[]string{"gates", "0", "use"}, 8},
		{[]string{"gates", "1", "use"}, 11},
		{[]string{"gates", "use"}, 8},
		{[]string{"gates", "1", "config", "metric"}, 12},
		{[]string{"gates", "1", "config", "nested", "deep"}, 12},
		{[]string{"gates", "1", "extra", "k"}, 15},
		{[]string{"steps", "classify", "provider"}, 21},
		{[]string{"steps", "classify", "list", "1"}, 24},
		{[]string{"steps", "classify", "missing"}, 17},
		{[]string{"nothing"}, 0},
	}
	for _, tc := range tests {
		if got := ix.Line(tc.path...); got != tc.want {
			t.Errorf("Line(%v) = %d, want %d", tc.path, got, tc.want)
		}
	}
}

func TestBrokenDocument(t *testing.T) {
	ix := Build([]byte("a = 1\nb = = 2\n"))
	if got := ix.Line("a"); got != 1 {
		t.Errorf("Line(a) = %d, want 1", got)
	}
	if got := ix.Line("b"); got != 0 {
		t.Errorf("Line(b) = %d, want 0", got)
	}
}
