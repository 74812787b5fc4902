package instrument

import (
	"bytes"
	"sort"
)

// maxDataGap is the longest run of zeros that joins two data segments.
// The Go linker cuts its data at every run of zeros longer than a few
// bytes: a Go plugin has ~50 000 segments, each of which wazero decodes,
// evaluates and copies on its own when a module is compiled and each time
// it is instantiated. Joined across gaps of up to 64 bytes they are a few
// dozen, for ~15 % more data bytes (the zeros the gaps held implicitly).
const maxDataGap = 64

// dataSeg is one segment of the data section: raw is its encoding; active
// ones at a constant offset (the only ones joined) have at and init.
type dataSeg struct {
	raw    []byte
	joins  bool // active, memory 0, offset i32.const
	at     uint32
	init   []byte
	joined bool // init is a fresh copy that may be appended to
}

func (s *dataSeg) end() uint64 { return uint64(s.at) + uint64(len(s.init)) }

// dataSection joins consecutive active segments of the data section whose
// gap is short and written by no other segment, so that instantiating the
// module writes the same bytes in the same order. It returns body itself
// when nothing is joined, and leaves a module with a data count section
// alone (memory.init and data.drop name segments by index).
func (w *rewriter) dataSection(body []byte, dataCount bool) ([]byte, error) {
	if dataCount {
		return body, nil
	}
	r := &reader{b: body}
	n := r.u32()
	segs := make([]dataSeg, 0, min(n, uint32(len(body))))
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		s := dataSeg{}
		switch flags := r.u32(); flags {
		case 0:
			if r.pos < len(r.b) && r.b[r.pos] == 0x41 { // i32.const v end
				r.byte()
				v := r.sleb32()
				if r.byte() != 0x0b {
					r.fail("data segment %d: offset expression is not i32.const", i)
				}
				s.joins, s.at = true, uint32(v)
			} else {
				skipConstExpr(r)
			}
		case 1:
		case 2:
			r.u32()
			skipConstExpr(r)
		default:
			r.fail("data segment %d: unknown flags %d", i, flags)
		}
		s.init = r.bytes(int(r.u32()))
		s.raw = body[start:r.pos]
		segs = append(segs, s)
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, malformed("%d trailing bytes", len(body)-r.pos)
	}
	for _, s := range segs {
		if !s.joins && s.raw[0] != 1 { // an active segment at an unknown place
			return body, nil
		}
	}
	free := gapChecker(segs)
	out := make([]dataSeg, 0, len(segs))
	for _, s := range segs {
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.joins && s.joins && uint64(s.at) >= last.end() && uint64(s.at)-last.end() <= maxDataGap &&
				free(last.end(), uint64(s.at)) {
				if !last.joined {
					last.init, last.joined = bytes.Clone(last.init), true
				}
				last.init = append(last.init, make([]byte, uint64(s.at)-last.end())...)
				last.init = append(last.init, s.init...)
				last.raw = nil
				continue
			}
		}
		out = append(out, s)
	}
	if len(out) == len(segs) {
		return body, nil
	}
	b := appendU32(make([]byte, 0, len(body)+len(body)/4), uint32(len(out)))
	for _, s := range out {
		if s.raw != nil {
			b = append(b, s.raw...)
			continue
		}
		b = append(b, 0x00, 0x41)
		b = appendS32(b, int32(s.at))
		b = append(b, 0x0b)
		b = appendU32(b, uint32(len(s.init)))
		b = append(b, s.init...)
	}
	return b, nil
}

// gapChecker returns a function reporting whether no active segment of
// segs writes a byte of [from, to).
func gapChecker(segs []dataSeg) func(from, to uint64) bool {
	type span struct{ start, end uint64 }
	var spans []span
	for _, s := range segs {
		if s.joins && len(s.init) > 0 {
			spans = append(spans, span{uint64(s.at), s.end()})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	// maxEnd[i] is the furthest end of spans[:i+1].
	maxEnd := make([]uint64, len(spans))
	for i, s := range spans {
		maxEnd[i] = s.end
		if i > 0 {
			maxEnd[i] = max(maxEnd[i], maxEnd[i-1])
		}
	}
	return func(from, to uint64) bool {
		i := sort.Search(len(spans), func(i int) bool { return spans[i].start >= from })
		if i < len(spans) && spans[i].start < to {
			return false
		}
		return i == 0 || maxEnd[i-1] <= from
	}
}
