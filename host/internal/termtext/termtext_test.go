package termtext

import "testing"

// TestEscape: control characters are shown escaped, tabs and newlines
// too in a cell, bytes that are not UTF-8 as U+FFFD; escaped text is
// escaped again to itself, so text passing two escaping writers is shown
// escaped once.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, text, cell string }{
		{"plain é ©", "plain é ©", "plain é ©"},
		{"a\tb\nc", "a\tb\nc", `a\tb\nc`},
		{"\x1b]0;t\x07", `\x1b]0;t\x07`, `\x1b]0;t\x07`},
		{"\u009b2J\x7f", `\u009b2J\x7f`, `\u009b2J\x7f`},
		{"\v\f\r", `\x0b\x0c\x0d`, `\x0b\x0c\x0d`},
		{"x\xffy", "x\uFFFDy", "x\uFFFDy"},
		{`already \x1b`, `already \x1b`, `already \x1b`},
	} {
		if got := Escape(c.in); got != c.text {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := Escape(Escape(c.in)); got != c.text {
			t.Errorf("Escape twice (%q) = %q, want %q", c.in, got, c.text)
		}
		if got := Cell(c.in); got != c.cell {
			t.Errorf("Cell(%q) = %q, want %q", c.in, got, c.cell)
		}
		if got := Cell(Cell(c.in)); got != c.cell {
			t.Errorf("Cell twice (%q) = %q, want %q", c.in, got, c.cell)
		}
	}
}
