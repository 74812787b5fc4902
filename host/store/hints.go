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
func (h *hintSet) scan(b []byte) uint64 {
	found := h.always
	delta, class := h.delta, &h.class
	s := uint32(0)
	for _, c := range b {
		e := delta[s+uint32(class[c])]
		s = e &^ acceptBit
		if e&acceptBit != 0 {
			found |= h.out[s/uint32(h.nclass)]
		}
	}
	return found
}
