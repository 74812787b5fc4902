package instrument

import "fmt"

// reader decodes the primitive encodings of the binary format. The first
// error sticks: later reads return zero values and the caller checks err
// once per entry.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = malformed("offset %d: %s", r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *reader) done() bool { return r.err != nil || r.pos >= len(r.b) }

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("%d bytes past the end", n)
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits {
			r.fail("integer too long")
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift+7 > bits && c>>(bits-shift) != 0 {
				r.fail("integer too large")
				return 0
			}
			return v
		}
	}
}

// sleb skips a signed LEB128 of at most bits bits (the value is never
// needed: only function indices are rewritten).
func (r *reader) sleb(bits uint) {
	for n := uint(0); ; n += 7 {
		if n >= bits {
			r.fail("integer too long")
			return
		}
		c := r.byte()
		if r.err != nil || c&0x80 == 0 {
			return
		}
	}
}

// sleb32 reads a signed LEB128 of at most 32 bits and returns its value.
func (r *reader) sleb32() int32 {
	var v int64
	for shift := uint(0); ; shift += 7 {
		if shift >= 35 {
			r.fail("integer too long")
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			if v < -1<<31 || v > 1<<31-1 {
				r.fail("integer too large")
				return 0
			}
			return int32(v)
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }
func (r *reader) s32()        { r.sleb(32) }
func (r *reader) s33()        { r.sleb(33) }
func (r *reader) s64()        { r.sleb(64) }

func (r *reader) name() string {
	n := r.u32()
	return string(r.bytes(int(min(n, 1<<30))))
}

// valType reads a value type of WebAssembly 2.0.
func (r *reader) valType() {
	switch c := r.byte(); c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
	default:
		r.fail("unsupported value type %#x", c)
	}
}

func (r *reader) refType() {
	switch c := r.byte(); c {
	case 0x70, 0x6f:
	default:
		r.fail("unsupported reference type %#x", c)
	}
}

func (r *reader) limits() {
	flags := r.byte()
	if flags > 7 {
		r.fail("limits flags %#x", flags)
		return
	}
	r.uleb(64)
	if flags&1 != 0 {
		r.uleb(64)
	}
}

// memarg reads align (with the multi-memory bit) and offset.
func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 {
		r.u32()
	}
	r.uleb(64)
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}
