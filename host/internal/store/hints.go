package store

// hintSet finds, in one pass over the input, which rules' hint strings
// occur in it (ASCII case-insensitively), so that a rule's regular
// expression runs only when it might match. It is an Aho-Corasick
// automaton compiled to a DFA over byte classes: a table lookup per input
// byte, instead of one substring search per hint.
type hintSet struct {
	class  [256]uint8 // byte → class; 0 is "no hint has this byte"
	nclass int
	delta  []uint32 // state*nclass + class → next*nclass, with acceptBit if next has output
	out    []uint64 // state → rules whose hint ends here
	always uint64   // rules without hints (or beyond 64) always run
	maxLen int      // the longest hint
}

// newHintSet builds the automaton; hints[i] are rule i's lower-case hints.
func newHintSet(hints [][][]byte) *hintSet {
	h := &hintSet{}
	// Byte classes: every byte used in a hint, with upper-case letters
	// folded onto lower-case.
	n := 1
	for _, hs := range hints {
		for _, hint := range hs {
			for _, c := range hint {
				if h.class[c] == 0 {
					h.class[c] = uint8(n)
					if c >= 'a' && c <= 'z' {
						h.class[c-'a'+'A'] = uint8(n)
					}
					n++
				}
			}
		}
	}
	h.nclass = n
	// Trie.
	type node struct {
		next map[uint8]int
		out  uint64
	}
	nodes := []node{{next: map[uint8]int{}}}
	for i, hs := range hints {
		if len(hs) == 0 || i >= 64 {
			if i < 64 {
				h.always |= 1 << i
			}
			continue
		}
		for _, hint := range hs {
			h.maxLen = max(h.maxLen, len(hint))
			s := 0
			for _, c := range hint {
				cl := h.class[c]
				nx, ok := nodes[s].next[cl]
				if !ok {
					nx = len(nodes)
					nodes = append(nodes, node{next: map[uint8]int{}})
					nodes[s].next[cl] = nx
				}
				s = nx
			}
			nodes[s].out |= 1 << i
		}
	}
	// Breadth-first: failure links folded into a full transition table.
	h.delta = make([]uint32, len(nodes)*n)
	h.out = make([]uint64, len(nodes))
	fail := make([]int, len(nodes))
	queue := []int{}
	for cl := 1; cl < n; cl++ {
		if nx, ok := nodes[0].next[uint8(cl)]; ok {
			h.delta[cl] = uint32(nx)
			queue = append(queue, nx)
		}
	}
	h.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		h.out[s] = nodes[s].out | h.out[fail[s]]
		for cl := 0; cl < n; cl++ {
			if nx, ok := nodes[s].next[uint8(cl)]; ok && cl != 0 {
				fail[nx] = int(h.delta[fail[s]*n+cl])
				h.delta[s*n+cl] = uint32(nx)
				queue = append(queue, nx)
			} else {
				h.delta[s*n+cl] = h.delta[fail[s]*n+cl]
			}
		}
	}
	// Pre-multiply the targets by the row length and mark the states
	// that end a hint, so the scan loop is one lookup and one test.
	for i, nx := range h.delta {
		e := nx * uint32(n)
		if h.out[nx] != 0 {
			e |= acceptBit
		}
		h.delta[i] = e
	}
	return h
}

const acceptBit = 1 << 31

// scan returns the set of rules to run on b.
//
// A scan is a chain of dependent table lookups, one per byte, so it runs
// at the latency of a load, not at the machine's throughput. Longer inputs
// are scanned as two or four parts at once, whose chains are independent:
// each part runs on until every hint that starts in it has ended (maxLen-1
// bytes into the next), the next starts afresh at its first byte, where
// any hint starting there begins. Together they find exactly the hints
// one pass finds (TestHintScanParts).
func (h *hintSet) scan(b []byte) uint64 {
	switch {
	case len(b) < 256 || len(b) < 8*h.maxLen:
		return h.scanFrom(b, h.always)
	case len(b) < 1024 || len(b) < 32*h.maxLen:
		return h.scan2(b)
	}
	return h.scan4(b)
}

// part is b's k-th of n parts, running on over maxLen-1 bytes of the
// next (see scan).
func (h *hintSet) part(b []byte, k, n int) []byte {
	lo, hi := k*len(b)/n, (k+1)*len(b)/n
	if k < n-1 {
		hi = min(hi+max(h.maxLen, 1)-1, len(b))
	}
	return b[lo:hi]
}

// scan2 scans b as two parts at once.
func (h *hintSet) scan2(b []byte) uint64 {
	x, y := h.part(b, 0, 2), h.part(b, 1, 2)
	n := min(len(x), len(y))
	found := h.always
	delta, class, nclass := h.delta, &h.class, uint32(h.nclass)
	s, t := uint32(0), uint32(0)
	for i := 0; i < n; i++ {
		e := delta[s+uint32(class[x[i]])]
		f := delta[t+uint32(class[y[i]])]
		s, t = e&^acceptBit, f&^acceptBit
		if (e|f)&acceptBit != 0 {
			if e&acceptBit != 0 {
				found |= h.out[s/nclass]
			}
			if f&acceptBit != 0 {
				found |= h.out[t/nclass]
			}
		}
	}
	found = h.scanAt(x[n:], s, found)
	return h.scanAt(y[n:], t, found)
}

// scan4 scans b as four parts at once.
func (h *hintSet) scan4(b []byte) uint64 {
	w, x, y, z := h.part(b, 0, 4), h.part(b, 1, 4), h.part(b, 2, 4), h.part(b, 3, 4)
	n := min(len(w), len(x), len(y), len(z))
	found := h.always
	delta, class := h.delta, &h.class
	var sw, sx, sy, sz uint32
	for i := range n {
		ew := delta[sw+uint32(class[w[i]])]
		ex := delta[sx+uint32(class[x[i]])]
		ey := delta[sy+uint32(class[y[i]])]
		ez := delta[sz+uint32(class[z[i]])]
		sw, sx, sy, sz = ew&^acceptBit, ex&^acceptBit, ey&^acceptBit, ez&^acceptBit
		if (ew|ex|ey|ez)&acceptBit != 0 {
			found |= h.accepted(ew) | h.accepted(ex) | h.accepted(ey) | h.accepted(ez)
		}
	}
	found = h.scanAt(w[n:], sw, found)
	found = h.scanAt(x[n:], sx, found)
	found = h.scanAt(y[n:], sy, found)
	return h.scanAt(z[n:], sz, found)
}

// accepted is the rules whose hints end at the transition e leads to.
func (h *hintSet) accepted(e uint32) uint64 {
	if e&acceptBit == 0 {
		return 0
	}
	return h.out[(e&^acceptBit)/uint32(h.nclass)]
}

// scanFrom is one pass over b from the start state.
func (h *hintSet) scanFrom(b []byte, found uint64) uint64 { return h.scanAt(b, 0, found) }

// scanAt goes on from state s over b, adding what it finds to found.
func (h *hintSet) scanAt(b []byte, s uint32, found uint64) uint64 {
	delta, class := h.delta, &h.class
	for _, c := range b {
		e := delta[s+uint32(class[c])]
		s = e &^ acceptBit
		if e&acceptBit != 0 {
			found |= h.out[s/uint32(h.nclass)]
		}
	}
	return found
}
