package store

import "bytes"

// A burst's spans mostly repeat each other but for their seq and times:
// the same parent, name and kind before the times, the same attributes
// and status after. The redactor's hint scan, a table lookup per byte,
// need not read a repeat whole. hintScan reads a batch with each segment
// that equals one scanned before cut to its first and last maxLen bytes
// (joined by a byte no hint holds), adding the hints found in it before:
//
//   - a hint within the segment was found then;
//   - one that starts before it ends in its first maxLen-1 bytes, read
//     after the same text as in the batch;
//   - one that ends after it starts in its last maxLen-1 bytes, read
//     from the joining byte, which leaves the scan at its start state,
//     and the scan's state past the segment is the batch's (it depends on
//     the last maxLen bytes read only), so what follows reads as in the
//     batch;
//   - no hint crosses the joining byte.
//
// So it finds the hints a scan of the batch finds (TestSpanScanCuts), and
// the rules run on the batch itself. Should every byte be in a hint (no
// joining byte), the ends are joined as they are: a hint across the join
// only runs a rule that finds nothing.

// scanMemo is a segment of a span body seen twice running and the hints
// found in it, by hints.
type scanMemo struct {
	hints *hintSet
	text  []byte
	found uint64
}

// maxScanMemo is the longest segment a scanMemo keeps.
const maxScanMemo = 1 << 10

// hintScan returns the rules r's hint scan finds in b[lo:], where the
// span bodies of a batch are, their segments (before and after their
// times, in turn) at e.segs, offsets in b.
func (e *spanEncoder) hintScan(h *hintSet, b []byte, lo int) uint64 {
	n := h.maxLen
	if n == 0 {
		return h.scan(b[lo:])
	}
	if e.sepFor != h {
		e.sepFor, e.sep = h, -1
		for c := range 256 {
			if h.class[c] == 0 {
				e.sep = c
				break
			}
		}
	}
	var found uint64
	var prev [2][]byte // the segments of the span before
	cut := e.scanText[:0]
	pos := lo
	for i, sg := range e.segs {
		x := b[sg[0]:sg[1]]
		m := &e.memo[i%2]
		hit := m.hints == h && bytes.Equal(x, m.text)
		if !hit && len(x) > 2*n+1 && len(x) <= maxScanMemo && bytes.Equal(x, prev[i%2]) {
			m.hints, m.text, m.found = h, append(m.text[:0], x...), h.scanFrom(x, h.always)
			hit = true
		}
		prev[i%2] = x
		if !hit {
			continue
		}
		cut = append(cut, b[pos:sg[0]+n]...)
		if e.sep >= 0 {
			cut = append(cut, byte(e.sep))
		}
		pos = sg[1] - n
		found |= m.found
	}
	if pos == lo {
		return h.scan(b[lo:])
	}
	cut = append(cut, b[pos:]...)
	e.scanText = cut
	return found | h.scan(cut)
}
