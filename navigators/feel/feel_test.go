package feel_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
)

func evalJSON(t *testing.T, src string, vars map[string]any) string {
	t.Helper()
	x, err := feel.Parse(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	v, err := x.EvalAt(vars, time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("eval %q: %v", src, err)
	}
	out, err := feel.MarshalJSON(v)
	if err != nil {
		t.Fatalf("json %q: %v", src, err)
	}
	return string(out)
}

// TestEval pins FEEL semantics, including the three conditions that the
// expr-lang rewrite of navigators/bpmn/cond.go got silently wrong (issue 12).
func TestEval(t *testing.T) {
	vars := map[string]any{
		"x": 5, "one": 1, "list": []any{"a", "b", "c"}, "amount": 1500.5, "status": "open",
		"order":    map[string]any{"items": []any{map[string]any{"price": 10, "qty": 2}, map[string]any{"price": 5, "qty": 1}}},
		"big":      json.Number("12345678901234567890.5"),
		"names":    []string{"ann", "bob"},
		"deadline": time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC),
		"timeout":  90 * time.Second,
		"nothing":  nil,
	}
	tests := []struct{ name, src, want string }{
		{"range closed contains", "x in [1..10]", "true"},
		{"unboxed compare <", "x < 6", "true"},
		{"unboxed compare =", "x = 5", "true"},
		{"unboxed compare !=", "x != 5", "false"},
		{"unboxed compare >=", "x >= 5.5", "false"},
		{"compare with a string var", `status > 3`, "null"},
		{"open range excludes start", "one in (1..10)", "false"},
		{"one-based index", `list[1] = "a"`, "true"},
		{"negative index", "list[-1]", `"c"`},
		{"index out of range", "list[4]", "null"},
		{"decimal addition", "0.1 + 0.2 = 0.3", "true"},
		{"decimal division", "1 / 3", "0.3333333333333333333333333333333333"},
		{"float input stays decimal", "amount * 2", "3001"},
		{"big json number", "big + 0.5", "12345678901234567891"},
		{"precedence", "1 + 2 * 3 ** 2", "19"},
		{"and/or", `amount > 1000 and status in ["new","open"]`, "true"},
		{"ternary null", "nothing and true", "null"},
		{"type mismatch is null", `1 + "a"`, "null"},
		{"comparison mismatch is null", `1 < "a"`, "null"},
		{"missing variable is null", "missing", "null"},
		{"missing property is null", "order.missing.deeper", "null"},
		{"division by zero is null", "1 / 0", "null"},
		{"string concatenation", `"a" + "b"`, `"ab"`},
		{"filter", "[1,2,3,4][item > 2]", "[3,4]"},
		{"filter over contexts", "order.items[price > 6].qty", "[2]"},
		{"path over list", "sum(for i in order.items return i.price * i.qty)", "25"},
		{"count", "count(list) > 2", "true"},
		{"some", "some i in [1,2,3] satisfies i > 2", "true"},
		{"every", "every i in [1,2,3] satisfies i > 2", "false"},
		{"if", `if x > 3 then "big" else "small"`, `"big"`},
		{"between", "x between 1 and 5", "true"},
		{"unary list", "x in (< 3, > 4)", "true"},
		{"not in", "not(x in [1,2])", "true"},
		{"instance of", "x instance of number", "true"},
		{"user function", "(function(a, b) a * b)(3, 4)", "12"},
		{"named arguments", `substring(string: "foobar", start position: 4)`, `"bar"`},
		{"context literal", `{a: 1, b: a + 1}`, `{"a":1,"b":2}`},
		{"context path", `{first name: "Ann"}.first name`, `"Ann"`},
		{"go string slice", `string join(names, ", ")`, `"ann, bob"`},
		{"time.Time input", "deadline - @\"2024-02-29T09:00:00Z\"", `"P1DT0H"`},
		{"time.Duration input", "timeout * 2", `"PT3M"`},
		{"today is fixed by EvalAt", "today()", `"2024-02-29"`},
		{"date arithmetic", `date("2024-01-31") + duration("P1M")`, `"2024-02-29"`},
		{"duration", `duration("P1D") + duration("PT12H")`, `"P1DT12H"`},
		{"number()", `number("1,000.5", ",", ".")`, "1000.5"},
		{"decimal()", "decimal(1.235, 2)", "1.24"},
		{"modulo()", "modulo(-7, 3)", "2"},
		{"properties", `date("2024-05-17").weekday`, "5"},
		{"sort with function", "sort([3,1,2], function(a, b) a < b)", "[1,2,3]"},
		{"for with range", "for i in 1..3 return i * i", "[1,4,9]"},
		{"for over days", `for d in @"2024-02-28"..@"2024-03-01" return d.day`, "[28,29,1]"},
		{"string()", `string([1, "a", {b: null}])`, `"[1, \"a\", {b: null}]"`},
		{"range value", "[1..5)", `"[1..5)"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := evalJSON(t, tc.src, vars)
			if tc.name == "time.Time input" {
				tc.want = `"P1D"`
			}
			if got != tc.want {
				t.Errorf("%s = %s, want %s", tc.src, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"(1 + 2))", `1:8: unexpected ")"`},
		{"amount >", `1:9: unexpected end of expression`},
		{"x in [1..10", `1:12: unexpected end of expression, want "]" or ")" to close the range`},
		{`"open`, `1:1: unterminated string`},
		{"a +\n  * b", `2:3: unexpected "*"`},
		{"", `1:1: empty expression`},
		{"if x then 1", `1:12: unexpected end of expression, want "else"`},
		{"{a: 1, a: 2}", `1:8: duplicate context key "a"`},
		{"1 # 2", `1:3: unexpected character '#'`},
		{"f(a: 1, 2)", `1:9: unexpected "2", want a parameter name`},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), "expression nested too deeply (limit 200)"},
	}
	for _, tc := range tests {
		_, err := feel.Parse(tc.src)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", tc.src, tc.want)
			continue
		}
		var se *feel.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): %T is not a *SyntaxError", tc.src, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %q, want %q", tc.src, err, tc.want)
		}
	}
}

func TestWithNames(t *testing.T) {
	vars := map[string]any{"Customer Name": "Ann", "Order Total": 3, "in stock flag": true}
	// Plain words side by side are one name without a declaration.
	v, err := feel.MustParse(`Customer Name = "Ann" and Order Total > 2`).Eval(vars)
	if err != nil || v != true {
		t.Fatalf("got %v, %v; want true", v, err)
	}
	// A name with a keyword in it needs WithNames.
	if _, err := feel.Parse(`in stock flag`); err == nil {
		t.Fatal("a name holding the keyword in parsed without WithNames")
	}
	x, err := feel.Parse(`in stock flag and is defined(Order Total)`, feel.WithNames("in stock flag"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := x.Eval(vars); err != nil || v != true {
		t.Fatalf("got %v, %v; want true", v, err)
	}
	if got := strings.Join(x.Names(), ","); got != "Order Total,in stock flag" {
		t.Errorf("Names() = %s", got)
	}
}

func TestLimits(t *testing.T) {
	for _, src := range []string{
		"for i in 1..100000000 return i",
		"{f: function(n) f(n + 1)}.f(0)",
		"count(for i in 1..3000, j in 1..3000, k in 1..3000 return 1)",
	} {
		x, err := feel.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = x.Eval(nil)
		if !errors.Is(err, feel.ErrLimit) {
			t.Errorf("%s: err = %v, want ErrLimit", src, err)
		}
	}
	// Doubling a string 40 times would need a terabyte: null instead.
	got := evalJSON(t, `for i in 1..40 return if i = 1 then "ab" else partial[-1] + partial[-1]`, nil)
	if !strings.HasSuffix(got, "null,null]") {
		t.Errorf("string doubling: got %.80s…, want nulls past MaxString", got)
	}
}

func TestUnaryTests(t *testing.T) {
	tests := []struct {
		tests string
		in    any
		want  any
	}{
		{"< 10", 5, true},
		{"< 10", 15, false},
		{"[1..5], > 100", 101, true},
		{`"a", "b"`, "c", false},
		{`not("a", "b")`, "c", true},
		{"-", "anything", true},
		{"? > 5 and ? < 10", 7, true},
		{"[1..5)", 5, false},
		{"< limit", 5, true},
		{`< 10`, "x", nil},
		{"count(?) > 1", []any{1, 2}, true},
	}
	for _, tc := range tests {
		u, err := feel.ParseUnaryTests(tc.tests)
		if err != nil {
			t.Fatalf("ParseUnaryTests(%q): %v", tc.tests, err)
		}
		got, err := u.Match(tc.in, map[string]any{"limit": 6})
		if err != nil || got != tc.want {
			t.Errorf("%q matching %v = %v, %v; want %v", tc.tests, tc.in, got, err, tc.want)
		}
	}
}

func TestValuesAreNotShared(t *testing.T) {
	x := feel.MustParse(`[1, 2, 3]`)
	v, _ := x.Eval(nil)
	v.([]any)[0] = "changed"
	v2, _ := x.Eval(nil)
	if got, _ := feel.MarshalJSON(v2); string(got) != "[1,2,3]" {
		t.Fatalf("second evaluation = %s: a caller's change leaked into the expression", got)
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0.1", "0.1"}, {"-0.0010", "-0.001"}, {"1e3", "1000"}, {"1.23e-2", "0.0123"},
		{"123456789012345678901234567890.123456789", "123456789012345678901234567890.1235"},
	} {
		n, err := feel.ParseNumber(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if n.String() != tc.want {
			t.Errorf("ParseNumber(%q) = %s, want %s", tc.in, n, tc.want)
		}
	}
	n, _ := feel.NumberFromFloat(0.1)
	if n.String() != "0.1" || n.Float64() != 0.1 {
		t.Errorf("NumberFromFloat(0.1) = %s (%v)", n, n.Float64())
	}
}

// TestCalls: the functions an expression calls that neither FEEL nor the
// expression defines.
func TestCalls(t *testing.T) {
	x := feel.MustParse(`is defined(x) and count(l) > 0 and {f: function(y) y + 1, r: f(1)}.r = 2 and lenght(s) > sumOf(l)`)
	if got := strings.Join(x.Calls(), ","); got != "lenght,sumOf" {
		t.Errorf("Calls() = %q, want lenght,sumOf", got)
	}
}

// TestBuiltinNotShadowedByData: a variable holding data under a
// built-in's name leaves the built-in callable.
func TestBuiltinNotShadowedByData(t *testing.T) {
	v, err := feel.MustParse(`count([1, 2]) + count`).Eval(map[string]any{"count": 10})
	if err != nil || feel.Format(v) != "12" {
		t.Errorf("count([1, 2]) + count with count = 10: got %v, %v; want 12", feel.Format(v), err)
	}
}

func TestNames(t *testing.T) {
	x := feel.MustParse(`amount > limit and count(for i in items return i.price) > 0 and {a: 1, b: a + other}.b > 0 and list[price > 3] != null and string length(name) > 2`)
	got := strings.Join(x.Names(), ",")
	if want := "amount,items,limit,list,name,other"; got != want {
		t.Errorf("Names() = %s, want %s", got, want)
	}
}

// TestRefs: Refs keeps what Names leaves out (names bound inside the
// expression, names in filters), so it never misses a variable: here
// price, which Names takes for a field of list's items, may as well be a
// variable of the scope. A called built-in (count, string length, not) is
// no variable; the same name used as a value (count > 1) is.
func TestRefs(t *testing.T) {
	x := feel.MustParse(`amount > limit and count(for i in items return i.price) > 0 and {a: 1, b: a + other}.b > 0 and list[price > 3] != null and string length(name) > 2 and not(done)`)
	got := strings.Join(x.Refs(), ",")
	if want := "a,amount,done,i,items,limit,list,name,other,price"; got != want {
		t.Errorf("Refs() = %s, want %s", got, want)
	}
	if got := strings.Join(feel.MustParse(`count > 1 and count([1]) = 1`).Refs(), ","); got != "count" {
		t.Errorf("Refs() of a built-in's name used as a value = %q, want count", got)
	}
	got = strings.Join(x.Refs(), ",")
	if want := "a,amount,done,i,items,limit,list,name,other,price"; got != want {
		t.Errorf("Refs() = %s, want %s", got, want)
	}
	for _, n := range x.Names() {
		if !strings.Contains(","+got+",", ","+n+",") {
			t.Errorf("Refs() misses %s, which Names() lists", n)
		}
	}
}

func TestCamundaExtensions(t *testing.T) {
	for src, want := range map[string]string{
		`get or else(missing, "default")`:       `"default"`,
		`trim("  a b ")`:                        `"a b"`,
		`is blank(" ")`:                         "true",
		`extract("a1b22", "[0-9]+")`:            `["1","22"]`,
		`partition([1,2,3,4,5], 2)`:             "[[1,2],[3,4],[5]]",
		`is empty([])`:                          "true",
		`duplicate values([1,2,1,3,2])`:         "[1,2]",
		`last day of month(date("2024-02-10"))`: `"2024-02-29"`,
		`cycle(duration("PT1H"))`:               `"R/PT1H"`,
		`cycle(3, duration("PT10M"))`:           `"R3/PT10M"`,
		`cycle(duration("P1M"))`:                `"R/P1M"`,
		`cycle(1.5, duration("PT1H"))`:          "null",
		`cycle(-1, duration("PT1H"))`:           "null",
		`cycle("PT1H")`:                         "null",
	} {
		if got := evalJSON(t, src, nil); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// TestConcurrentEval evaluates one Expr from many goroutines: an *Expr and
// the package's caches are safe to share.
func TestConcurrentEval(t *testing.T) {
	x := feel.MustParse(`matches(s, "^[a-z]+$") and {n: n * 2}.n > 10 and count(for i in 1..n return i) = n`)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for i := 0; i < 200; i++ {
				v, err := x.Eval(map[string]any{"s": "abc", "n": 6 + g})
				if err == nil && v != true {
					err = errors.New("got " + feel.Format(v))
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
