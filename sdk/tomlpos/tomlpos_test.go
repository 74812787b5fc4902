package tomlpos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/sdk"
)

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

func scan(t *testing.T, src string) *Index {
	t.Helper()
	var m map[string]any
	if _, err := toml.Decode(src, &m); err != nil {
		t.Fatalf("test document is not valid TOML: %v", err)
	}
	ix, err := Scan("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestLine(t *testing.T) {
	ix := scan(t, doc)
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"name"}, 1},
		{[]string{"wasm"}, 3},
		{[]string{"wasm", "sha256"}, 5},
		{[]string{"gates"}, 7},
		{[]string{"gates", "0"}, 7},
		{[]string{"gates", "1"}, 10},
		{[]string{"gates", "0", "use"}, 8},
		{[]string{"gates", "1", "use"}, 11},
		{[]string{"gates", "use"}, 8},
		{[]string{"gates", "config"}, 12},
		{[]string{"gates", "1", "config", "metric"}, 12},
		{[]string{"gates", "1", "config", "nested", "deep"}, 12},
		{[]string{"gates", "1", "extra"}, 14},
		{[]string{"gates", "1", "extra", "k"}, 15},
		{[]string{"gates", "0", "extra"}, 7},
		{[]string{"steps"}, 17},
		{[]string{"steps", "classify", "provider"}, 21},
		{[]string{"steps", "classify", "list"}, 22},
		{[]string{"steps", "classify", "list", "1"}, 24},
		{[]string{"steps", "classify", "list", "01"}, 22},
		{[]string{"steps", "classify", "missing"}, 17},
		{[]string{"nothing"}, 0},
		{nil, 0},
	}
	for _, tc := range tests {
		if got := ix.Line(tc.path...); got != tc.want {
			t.Errorf("Line(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
}

// TestLocate covers the syntax a routine file uses: quoted and dotted keys,
// blanks inside headers, comments, multi-line strings and inline values
// spread over lines, nested arrays of tables.
func TestLocate(t *testing.T) {
	src := `# comment
name = "x" # trailing [ not an array
desc = """
multi [[ not arrays ]] { nor tables
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
x ] ''' # ]
"esc\"aped\u0041" = "\"]"
after = 1
`
	ix := scan(t, src)
	want := map[string]int{
		"name": 2, "desc": 3,
		"tasks": 7, "tasks.fetch": 7, "tasks.fetch.depends_on": 8,
		"tasks.fetch.depends_on.0": 9, "tasks.fetch.depends_on.1": 10,
		"tasks.fetch.quoted\x00key": 12,
		"tasks.we ird":              13, "tasks.we ird.x": 14, "tasks.we ird.x.y": 14,
		"tasks.we ird.x.y.a": 14, "tasks.we ird.x.y.b": 15, "tasks.we ird.x.y.b.0": 15, "tasks.we ird.x.y.b.1": 15,
		"steps": 16, "steps.0": 16, "steps.0.id": 17,
		"steps.0.chain": 18, "steps.0.chain.0": 18, "steps.0.chain.0.id": 19,
		"steps.1": 20, "steps.1.id": 21, "steps.1.lit": 22, "steps.1.esc\"apedA": 24, "steps.1.after": 25,
		"steps.chain.id": 19,
	}
	for k, line := range want {
		path := strings.Split(k, ".")
		for i := range path {
			path[i] = strings.ReplaceAll(path[i], "\x00", ".")
		}
		if got := ix.Line(path...); got != line {
			t.Errorf("Line(%q) = %d, want %d", path, got, line)
		}
	}
}

func TestBrokenDocument(t *testing.T) {
	ix, err := Scan("x.toml", []byte("a = 1\nb = = 2\n[[c\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ix.Line("a"); got != 1 {
		t.Errorf("Line(a) = %d, want 1", got)
	}
	if got := ix.Line("b"); got != 2 {
		t.Errorf("Line(b) = %d, want 2", got)
	}
}

func problem(t *testing.T, err error) sdk.Problem {
	t.Helper()
	var e *sdk.Error
	if !errors.As(err, &e) || !errors.Is(err, sdk.ErrInvalid) || len(e.Problems) != 1 {
		t.Fatalf("err = %v, want one sdk.ErrInvalid problem", err)
	}
	return e.Problems[0]
}

func TestDepthLimit(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	tests := []struct {
		name string
		src  string
		line int // 0: accepted
	}{
		{"arrays at the limit", "x = " + nest("[", "]", MaxDepth-1), 0},
		{"arrays over the limit", "a = 1\n\nx = " + nest("[", "]", MaxDepth), 3},
		{"arrays over the limit across lines", "x = " + strings.Repeat("[\n", MaxDepth) + strings.Repeat("]", MaxDepth), MaxDepth},
		{"inline tables over the limit", "x = " + nest("{a=", "}", MaxDepth), 1},
		{"inline tables at the limit", "x = " + strings.Repeat("{a=", MaxDepth-1) + "1" + strings.Repeat("}", MaxDepth-1), 0},
		{"dotted key over the limit", "\n" + strings.Repeat("a.", MaxDepth) + "a = 1", 2},
		{"header over the limit", "[" + strings.Repeat("a.", MaxDepth) + "a]", 1},
		{"header plus key over the limit", "[" + strings.Repeat("a.", MaxDepth-1) + "a]\nb = 1", 2},
		{"array of tables over the limit", "[[" + strings.Repeat("a.", MaxDepth) + "a]]", 1},
		{"brackets in strings do not count", `x = "` + strings.Repeat("[", 200) + `"` + "\n" +
			`y = '` + strings.Repeat("{a=[", 200) + `'` + "\n" +
			`z = """` + "\n" + strings.Repeat("[", 200) + `\"""` + "\n" + `"""` + "\n" +
			`w = '''` + strings.Repeat("[", 200) + "'''\n" +
			"# " + strings.Repeat("[", 200) + "\n" +
			`"` + strings.Repeat("[", 200) + `" = 1`, 0},
		{"unterminated string ends at the line", "x = \"[[\ny = " + nest("[", "]", MaxDepth), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Scan("x.toml", []byte(tc.src))
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if _, err := toml.Decode(tc.src, &m); err != nil {
					t.Fatalf("accepted document is not valid TOML: %v", err)
				}
				return
			}
			p := problem(t, err)
			want := fmt.Sprintf("x.toml:%d: nesting deeper than 64 levels", tc.line)
			if p.String() != want {
				t.Errorf("got %q, want %q", p.String(), want)
			}
		})
	}
}

// TestDeepNestingBounded: `x = [[[…]]]` 100 000 deep (200 KB), which once
// made the position tracker grow past 20 GB, is refused at its line, and
// refusing it allocates little.
func TestDeepNestingBounded(t *testing.T) {
	src := []byte("# deep\nx = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Scan("deep.toml", src)
	runtime.ReadMemStats(&after)
	if got, want := problem(t, err).String(), "deep.toml:2: nesting deeper than 64 levels"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("refusing a %d-byte document allocated %d bytes, want < 4 MiB", len(src), alloc)
	}
}

func TestSizeLimit(t *testing.T) {
	big := make([]byte, MaxSize+1)
	for i := range big {
		big[i] = '\n'
	}
	if _, err := Scan("x.toml", big[:MaxSize]); err != nil {
		t.Fatalf("a document of exactly MaxSize: %v", err)
	}
	_, err := Scan("x.toml", big)
	if got, want := problem(t, err).String(), "x.toml: over the size limit for a TOML file (16777217 bytes read, limit 16 MiB)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	path := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(path, make([]byte, MaxSize+4096), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != MaxSize+1 {
		t.Errorf("ReadFile read %d bytes, want MaxSize+1 = %d", len(data), MaxSize+1)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want os.ErrNotExist", err)
	}
}

// TestLinear: indexing twice the keys costs about twice the allocation (the
// tracker it replaces copied the document's prefix for every key).
func TestLinear(t *testing.T) {
	gen := func(n int) []byte {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "[[playbook]]\nid = \"b-%d\"\ncontent = \"some text\"\ntags = [1, 2]\n", i)
		}
		return []byte(b.String())
	}
	alloc := func(n int) uint64 {
		data := gen(n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ix, err := Scan("x.toml", data)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := ix.Line("playbook", fmt.Sprint(n-1), "tags", "1"); got != 4*n {
			t.Fatalf("last tag at line %d, want %d", got, 4*n)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(20_000), alloc(80_000)
	if ratio := float64(large) / float64(small); ratio > 6 {
		t.Errorf("4x the keys allocated %.1fx the bytes (%d vs %d), want about 4x", ratio, large, small)
	}
}

// FuzzScan: whatever the input, Scan returns (it only moves forward) and
// never panics; for documents the decoder accepts, every key the decoder
// reports has a line of its own.
func FuzzScan(f *testing.F) {
	for _, s := range []string{doc, "a = [[[", "[[a]]\n[a.b]\n", `"\`, "a = '''\n", "x = {a.b = [{c = 1}]}",
		"[a]\n[[a.b]]\n[[a.b]]\nc=1", "a = \"\"\"\\\n\"\"\"\"\"", "\"a\\u00\" = 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Scan("f.toml", data)
		if err != nil {
			return
		}
		var m map[string]any
		md, derr := toml.Decode(string(data), &m)
		if derr != nil {
			return
		}
		for _, k := range md.Keys() {
			if !ix.Has(k...) || ix.Line(k...) == 0 {
				t.Errorf("key %q: Has %v, line %d", k, ix.Has(k...), ix.Line(k...))
			}
		}
	})
}
