package store

import "math/bits"

// Windowed rules: a built-in rule with a value function runs its
// expression only on windows of the input around the occurrences of its
// hints, found in one pass of the hint automaton, instead of on the whole
// input. Go's regexp runs an NFA over every byte it is given (tens of
// nanoseconds a byte once it must track groups); a window is a few dozen
// bytes, run by the backtracker, so a large input costs one automaton
// pass plus a little per hint.
//
// A window is exact, not a heuristic: every anchor holds one of its
// rule's hints and reaches at most windowFwd bytes past it (its
// repetitions after the hint are bounded), and before it only over
// identifier bytes, backslashes and at most windowBack other bytes. A
// window begins after a byte that is neither, so that ^ at its start
// means what it means at the start of the name it precedes.

const (
	windowBack = 16 // quote runs and separators before a name (\\\"password)
	windowFwd  = 64 // what an anchor holds after its hint: a closing quote run, blanks, ':'
)

// ruleHits are where a windowed rule is to run: its windows, or, for a
// rule with a confirm function, the ends of its hints' occurrences, which
// become windows when the rule runs (windowsOf), on the text as the
// rules before it left it.
type ruleHits struct {
	windows []span
	ends    []int
}

// hits returns the hits of each rule in mask in b.
func (r *Redactor) hits(b []byte, mask uint64) []ruleHits {
	regs := make([]ruleHits, len(r.rules))
	h := r.hints
	nclass := uint32(h.nclass)
	s := uint32(0)
	for i, c := range b {
		e := h.delta[s+uint32(h.class[c])]
		s = e &^ acceptBit
		if e&acceptBit == 0 {
			continue
		}
		for rules := h.out[s/nclass] & mask; rules != 0; rules &= rules - 1 {
			j := bits.TrailingZeros64(rules)
			if ru := &r.rules[j]; ru.confirm != nil {
				regs[j].ends = append(regs[j].ends, i+1)
			} else {
				regs[j].windows = addWindow(regs[j].windows, b, i+1-ru.maxHint, i+1)
			}
		}
	}
	return regs
}

// windowsOf returns the windows of b in which ru's expression is to run,
// in order and disjoint: its windows, or those of the occurrences its
// confirm function accepts.
func (ru *rule) windowsOf(b []byte, h *ruleHits) []span {
	if ru.confirm == nil {
		return h.windows
	}
	var ws []span
	for _, end := range h.ends {
		if ru.confirm(b, end) {
			ws = addWindow(ws, b, end-ru.maxHint, end)
		}
	}
	return ws
}

// remap moves the hits of a text to where they are once ed has been
// made (into nb). An occurrence whose last byte an edit replaced ends
// where the edit does, so that a window there still looks.
func (h *ruleHits) remap(ed []edit, nb []byte) {
	h.windows = remapWindows(h.windows, ed, nb)
	k, delta := 0, 0
	for i, p := range h.ends {
		for k < len(ed) && ed[k].hi <= p-1 {
			delta += len(ed[k].repl) - (ed[k].hi - ed[k].lo)
			k++
		}
		if k < len(ed) && ed[k].lo <= p-1 {
			h.ends[i] = ed[k].lo + delta + len(ed[k].repl)
		} else {
			h.ends[i] = p + delta
		}
	}
}

// addWindow adds the window around a hint that ends at end (and begins at
// or after start) to ws. It merges the window into the last one if they
// meet and the last is still short, so that each byte is looked at a
// bounded number of times: windows of hints that crowd an input (every
// few bytes, in an attack) become a series of short overlapping windows,
// which the backtracker runs, not one region as long as the input, which
// only the slower NFA could.
func addWindow(ws []span, b []byte, start, end int) []span {
	lo, merge := windowStart(ws, b, start)
	hi := min(len(b), end+windowFwd)
	if merge {
		ws[len(ws)-1].hi = max(ws[len(ws)-1].hi, hi)
		return ws
	}
	return append(ws, span{lo, hi})
}

// windowStart returns where a window for a name that ends after start
// begins, and whether that is inside the last window of ws, to be merged
// with it. A name is looked for at most maxNameBack bytes back: one
// longer is taken from there, as if it began there, which keeps any name
// it ends in (so the name is still secret).
func windowStart(ws []span, b []byte, start int) (lo int, merge bool) {
	n := len(ws)
	floor := max(0, start-maxNameBack)
	mergeable := n > 0 && ws[n-1].hi-ws[n-1].lo < maxWindow
	if mergeable {
		floor = max(floor, ws[n-1].hi)
	}
	lo = nameStart(b, max(start, floor), floor)
	lo = nameStart(b, max(lo-windowBack, floor), floor)
	return lo, mergeable && lo <= ws[n-1].hi
}

const (
	maxWindow   = 512 // beyond this a window is not merged into
	maxNameBack = 256 // the longest name looked for
)

// nameStart moves p back over identifier bytes and backslashes (an
// escape before a name: \npassword=…), not below floor.
func nameStart(b []byte, p, floor int) int {
	for p > floor && (isIdentByte(b[p-1]) || b[p-1] == '\\') {
		p--
	}
	return p
}

// isIdentByte: the bytes of a name (db_password, x-api-key, a.b) and of
// a URL scheme (svn+ssh).
func isIdentByte(c byte) bool {
	return isWordByte(c) || c == '.' || c == '-' || c == '+'
}

// replaceWindows runs a windowed rule on its windows of b, and returns
// the edits it made too.
func (ru *rule) replaceWindows(b []byte, ws []span) ([]byte, []edit) {
	var ed []edit
	last := 0
	for _, w := range ws {
		for _, m := range ru.re.FindAllSubmatchIndex(b[w.lo:w.hi], -1) {
			for k := range m {
				if m[k] >= 0 {
					m[k] += w.lo
				}
			}
			if m[0] < last {
				continue // inside a value already redacted
			}
			n := len(ed)
			if ed = ru.value(b, m, ed); len(ed) > n {
				last = ed[len(ed)-1].hi
			}
		}
	}
	return applyEdits(b, ed), ed
}

// remapWindows moves windows of a text to where they are once ed has
// been made (into nb), so the hint automaton need not run again: an edit
// puts [REDACTED] in, which holds no hint, so the hints of the new text
// are the old ones outside the edits. A window that began inside an
// edit, or after one that ends at an identifier, begins again where its
// name does.
func remapWindows(ws []span, ed []edit, nb []byte) []span {
	k, delta := 0, 0
	at := func(p int, end bool) int {
		for k < len(ed) && ed[k].hi <= p {
			delta += len(ed[k].repl) - (ed[k].hi - ed[k].lo)
			k++
		}
		if k < len(ed) && ed[k].lo < p { // inside edit k
			if end {
				return ed[k].lo + delta + len(ed[k].repl)
			}
			return ed[k].lo + delta
		}
		return p + delta
	}
	out := ws[:0]
	for _, w := range ws {
		lo, hi := at(w.lo, false), at(w.hi, true)
		lo, merge := windowStart(out, nb, lo)
		if merge {
			out[len(out)-1].hi = max(out[len(out)-1].hi, hi)
			continue
		}
		out = append(out, span{lo, hi})
	}
	return out
}
