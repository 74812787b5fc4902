// Package termtext escapes text for a terminal: what a model, a tool, a
// plugin or an OTLP client wrote is shown, never obeyed as an escape
// sequence (a window title, a cleared screen, the clipboard), and a table
// cell stays in its column. It depends on nothing in sextant, so every
// package that writes text (report, plugin, strategy) can use it.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Cell is s as a table cell shows it: escaped as Escape escapes it,
// and a tab, newline, vertical tab or form feed — which would end the
// cell or the row, shifting the columns after it — written \t, \n,
// \x0b, \x0c. Cells are escaped before tabwriter measures them (an
// escape written after would widen a cell past its column), and once: a
// table is written to its writer as it is, through no escaping writer.
func Cell(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			return cellTabs.Replace(Escape(s))
		}
	}
	return s
}

// cellTabs writes the tabs and newlines Escape leaves.
var cellTabs = strings.NewReplacer("\t", `\t`, "\n", `\n`)

// Escape is s with its control characters other than newline and tab
// shown escaped: a C0 control or DEL as \x1b, a C1 control as \u009b. A
// byte that is not UTF-8 (0x9b alone is CSI to an 8-bit terminal) is
// shown as U+FFFD. It never escapes a backslash, so escaping twice
// changes nothing.
func Escape(s string) string {
	if !HasControl([]byte(s)) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// HasControl reports whether p holds a byte Escape escapes: a C0
// control other than newline and tab, DEL, or the lead byte 0xc2 of a C1
// control's UTF-8 encoding.
func HasControl(p []byte) bool {
	for _, c := range p {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c == 0xc2 {
			return true
		}
	}
	return false
}
