package sdk

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"
)

// The MessagePack primitives of api 2 (see PROTOCOL.md, "api 2"). The
// generated codecs (wire2_gen.go) are built from them.
//
// Values follow encoding/json, so that api 1 and api 2 carry the same
// values: strings are coerced to valid UTF-8 as json.Marshal does (each
// invalid byte becomes U+FFFD), NaN and infinities are refused, a generic
// value (any, map[string]any) decodes to exactly what json.Unmarshal into
// an any gives — nil, bool, float64, string, []any, map[string]any — and
// a Go value json would marshal through its own rules (a time.Time, a
// struct, a []byte) is encoded as json would see it.

// encoder appends MessagePack to b; the first error sticks.
type encoder struct {
	b   []byte
	err error
	// unchecked writes strings without checking that they are valid
	// UTF-8: for a wasm guest's answers, which the host's decoder coerces
	// exactly as str would (toString), so checking here too is waste —
	// in a guest, a kilobyte's check costs as much as the rest of its
	// encoding.
	unchecked bool
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *encoder) null() { e.b = append(e.b, 0xc0) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 0xc3)
	} else {
		e.b = append(e.b, 0xc2)
	}
}

func (e *encoder) int(v int64) {
	switch {
	case v >= 0:
		e.uint(uint64(v))
	case v >= -32:
		e.b = append(e.b, byte(int8(v)))
	case v >= math.MinInt8:
		e.b = append(e.b, 0xd0, byte(int8(v)))
	case v >= math.MinInt16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xd1), uint16(int16(v)))
	case v >= math.MinInt32:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xd2), uint32(int32(v)))
	default:
		e.b = binary.BigEndian.AppendUint64(append(e.b, 0xd3), uint64(v))
	}
}

func (e *encoder) uint(v uint64) {
	switch {
	case v <= 0x7f:
		e.b = append(e.b, byte(v))
	case v <= math.MaxUint8:
		e.b = append(e.b, 0xcc, byte(v))
	case v <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xce), uint32(v))
	default:
		e.b = binary.BigEndian.AppendUint64(append(e.b, 0xcf), v)
	}
}

func (e *encoder) float(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		e.fail(fmt.Errorf("unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64)))
	}
	e.b = binary.BigEndian.AppendUint64(append(e.b, 0xcb), math.Float64bits(v))
}

func (e *encoder) str(s string) {
	if !e.unchecked && !utf8.ValidString(s) {
		s = validUTF8(s)
	}
	n := len(s)
	switch {
	case n < 32:
		e.b = append(e.b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		e.b = append(e.b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xda), uint16(n))
	default:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xdb), uint32(n))
	}
	e.b = append(e.b, s...)
}

// validUTF8 replaces each invalid byte of s with U+FFFD, as json.Marshal
// and json.Unmarshal do (strings.ToValidUTF8 would fold runs into one).
func validUTF8(s string) string {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

func (e *encoder) bin(v []byte) {
	if v == nil {
		e.null()
		return
	}
	n := len(v)
	switch {
	case n <= math.MaxUint8:
		e.b = append(e.b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xc5), uint16(n))
	default:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xc6), uint32(n))
	}
	e.b = append(e.b, v...)
}

// raw encodes a JSON value (a json.RawMessage field) as a str holding
// its JSON text, compacted as json.Marshal compacts it: the text crosses
// api 2 as it was written (key order, number spelling), which a
// MessagePack value could not keep. Nil is nil; text that is not JSON
// fails, as json.Marshal does.
func (e *encoder) raw(v json.RawMessage) {
	if v == nil {
		e.null()
		return
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		e.fail(fmt.Errorf("json.RawMessage: %w", err))
		return
	}
	n := buf.Len()
	switch {
	case n < 32:
		e.b = append(e.b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		e.b = append(e.b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xda), uint16(n))
	default:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xdb), uint32(n))
	}
	e.b = append(e.b, buf.Bytes()...)
}

func (e *encoder) arrayHeader(n int) {
	switch {
	case n < 16:
		e.b = append(e.b, 0x90|byte(n))
	case n <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xdc), uint16(n))
	default:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xdd), uint32(n))
	}
}

func (e *encoder) mapHeader(n int) {
	switch {
	case n < 16:
		e.b = append(e.b, 0x80|byte(n))
	case n <= math.MaxUint16:
		e.b = binary.BigEndian.AppendUint16(append(e.b, 0xde), uint16(n))
	default:
		e.b = binary.BigEndian.AppendUint32(append(e.b, 0xdf), uint32(n))
	}
}

func (e *encoder) anyMap(m map[string]any) {
	if m == nil {
		e.null()
		return
	}
	e.mapHeader(len(m))
	for k, v := range m {
		e.str(k)
		e.any(v)
	}
}

// any encodes a generic value as the value json.Unmarshal would give for
// json.Marshal(v): numbers become floats on the far side.
func (e *encoder) any(v any) {
	switch v := v.(type) {
	case nil:
		e.null()
	case string:
		e.str(v)
	case bool:
		e.bool(v)
	case float64:
		e.float(v)
	case int:
		e.int(int64(v))
	case int64:
		e.int(v)
	case int32:
		e.int(int64(v))
	case int16:
		e.int(int64(v))
	case int8:
		e.int(int64(v))
	case uint:
		e.uint(uint64(v))
	case uint64:
		e.uint(v)
	case uint32:
		e.uint(uint64(v))
	case uint16:
		e.uint(uint64(v))
	case uint8:
		e.uint(uint64(v))
	case float32:
		// json writes a float32 with 32-bit precision and reads it back
		// as the nearest float64 to that decimal.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			f = float64(v)
		}
		e.float(f)
	case map[string]any:
		e.anyMap(v)
	case []any:
		if v == nil {
			e.null()
			return
		}
		e.arrayHeader(len(v))
		for _, x := range v {
			e.any(x)
		}
	case []string:
		if v == nil {
			e.null()
			return
		}
		e.arrayHeader(len(v))
		for _, x := range v {
			e.str(x)
		}
	case map[string]string:
		if v == nil {
			e.null()
			return
		}
		e.mapHeader(len(v))
		for k, x := range v {
			e.str(k)
			e.str(x)
		}
	case map[string]float64:
		if v == nil {
			e.null()
			return
		}
		e.mapHeader(len(v))
		for k, x := range v {
			e.str(k)
			e.float(x)
		}
	case []map[string]any:
		if v == nil {
			e.null()
			return
		}
		e.arrayHeader(len(v))
		for _, x := range v {
			e.anyMap(x)
		}
	default:
		// Anything else (json.Number, time.Time, structs, []byte, named
		// types, pointers) is encoded as json sees it: the generic value
		// its JSON decodes to.
		b, err := json.Marshal(v)
		if err != nil {
			e.fail(err)
			e.null()
			return
		}
		var g any
		if err := json.Unmarshal(b, &g); err != nil {
			e.fail(err)
			e.null()
			return
		}
		e.any(g)
	}
}

// maxDepth bounds the nesting of generic values, as encoding/json does.
const maxDepth = 10000

// decoder reads MessagePack from b.
type decoder struct {
	b     []byte
	off   int
	depth int
	// in, when set, hands out again the strings, numbers and times this
	// decoder read before (see interner); nil: each is a new copy.
	in *interner
	// noOutput passes over the fields generated decoders read with
	// skippableMap (Outcome.Output), for a Navigator that never reads
	// them (OutputBlind).
	noOutput bool
	// pairs, when set, takes BoundState.Set as a list (pairsMap): a
	// binding assigns it into its variables without a map built between.
	pairs *[]kv
	// tokens, when set, is the backing array BoundState.Tokens is decoded
	// into (keptTokens), reused by the next call.
	tokens *[]Token
}

// kv is one variable of BoundState.Set, decoded by pairsMap.
type kv struct {
	k string
	v any
}

// maxKeptTokens bounds the tokens array a decoder keeps between calls.
const maxKeptTokens = 64

// keptTokens returns n zeroed tokens: in the decoder's kept array when it
// has one (and n is small), else new.
func (d *decoder) keptTokens(n int) []Token {
	if d.tokens == nil || n > maxKeptTokens {
		return make([]Token, n)
	}
	if cap(*d.tokens) < n {
		*d.tokens = make([]Token, n, max(n, 4))
		return *d.tokens
	}
	s := (*d.tokens)[:n]
	clear(s)
	return s
}

// pairsMap reads BoundState.Set: as anyMap does, or, when the decoder
// has pairs, into them (in order, with anyMap's checks) and returns nil.
// The pairs are reset first, so a request whose set is nil or empty, or
// fails, leaves none.
func (d *decoder) pairsMap() (map[string]any, error) {
	if d.pairs == nil {
		return d.anyMap()
	}
	p := (*d.pairs)[:0]
	*d.pairs = p
	n, null, err := d.mapHeader()
	if err != nil || null {
		return nil, err
	}
	if d.depth++; d.depth > maxDepth {
		return nil, d.errorf("exceeded max depth %d", maxDepth)
	}
	for range n {
		k, err := d.str()
		if err != nil {
			d.depth--
			return nil, err
		}
		v, err := d.any()
		if err != nil {
			d.depth--
			return nil, atKey(k, err)
		}
		p = append(p, kv{k, v})
	}
	d.depth--
	*d.pairs = p
	return nil, nil
}

// interner remembers recent short strings (as strings and as the any
// holding them), float64 values as an any, and the last time a decoder
// read, so that a decoder that meets them again returns the same value
// instead of allocating a copy (and parsing a time again). In a wasm guest
// an allocation costs about 250 ns, a comparison of a few bytes next to
// nothing, and a navigator's requests repeat the same binding id, token
// ids, node names, variable names and values call after call. Strings are
// immutable and a time.Time is a value, so sharing them is invisible to
// the plugin. The tables are direct-mapped and bounded: a miss replaces
// the slot.
//
// The wasm guest keeps one for good (guest_wasip1.go); a decoder without
// one (the host's, a process plugin's) copies as before.
type interner struct {
	strs [internSlots]struct {
		s string
		v any // s as an any, made on first use
	}
	nums [internSlots]struct {
		bits uint64
		v    any
	}
	timeRaw string
	time    time.Time
	// maps are maps the last calls decoded and let go of (recycle), for
	// anyMap to fill again.
	maps []map[string]any
	// arena is where strings longer than maxInterned are copied to (long):
	// appended to, never written over, and replaced by a new chunk when
	// full, so that the strings cut from it stay as they were.
	arena []byte
	// trusted: the input is the host's, written by encoder.str, which
	// writes only valid UTF-8; its strings are not checked again (the
	// wasm guest's interner). A string read here is then one the host
	// checked, never one a plugin made up.
	trusted bool
}

const (
	internSlots = 256 // a power of 2
	maxInterned = 64  // longer strings are copied
)

// internSlot hashes b's length and three of its bytes: enough to tell
// apart the names and ids of a request, and inlined (in a wasm guest a
// call costs as much as the hash).
func internSlot(b []byte) int {
	n := len(b)
	if n == 0 {
		return 0
	}
	h := uint32(n)*0x9e3779b1 ^ uint32(b[0])*0x85ebca6b ^ uint32(b[n-1])*0xc2b2ae35 ^ uint32(b[n>>1])*0x27d4eb2f
	return int((h ^ h>>15) & (internSlots - 1))
}

// str returns b as a string, coerced to valid UTF-8 as toString does.
func (in *interner) str(b []byte) string {
	e := &in.strs[internSlot(b)]
	if e.s == string(b) {
		return e.s
	}
	s := in.string(b)
	if len(s) == len(b) { // valid as it came (coercing lengthens)
		e.s, e.v = s, nil
	}
	return s
}

// string is toString, or a plain copy when the input is trusted.
func (in *interner) string(b []byte) string {
	if in.trusted {
		return string(b)
	}
	return toString(b)
}

// The arena's chunks, and the longest string copied into one: a longer
// one gets an allocation of its own, and a string kept by the plugin holds
// at most a chunk of 16 KiB alive with it, however short.
const (
	arenaChunk     = 16 << 10
	maxArenaString = arenaChunk / 4
)

// long returns b as a string (coerced to valid UTF-8 as toString does),
// copied into the arena when it fits: in a wasm guest allocating a
// kilobyte costs 1–2 µs, more than the rest of a chat call's decoding,
// while copying it costs ~50 ns and the arena allocates once per chunk.
func (in *interner) long(b []byte) string {
	if len(b) == 0 || len(b) > maxArenaString || (!in.trusted && !utf8.Valid(b)) {
		return in.string(b)
	}
	if len(b) > cap(in.arena)-len(in.arena) {
		in.arena = make([]byte, 0, arenaChunk)
	}
	start := len(in.arena)
	in.arena = append(in.arena, b...)
	return unsafe.String(&in.arena[start], len(b))
}

// strAny is str as an any.
func (in *interner) strAny(b []byte) any {
	e := &in.strs[internSlot(b)]
	if e.s == string(b) && e.v != nil {
		return e.v
	}
	s := in.str(b)
	if e.s == s {
		e.v = s
		return e.v
	}
	return s
}

// maxRecycled bounds the maps an interner keeps for reuse, and the size
// of a map it keeps (a map does not shrink).
const maxRecycled, maxRecycledLen = 4, 64

// recycle keeps m, which nothing references any more, for a later
// anyMap to reuse (after clearing it) instead of making one.
func (in *interner) recycle(m map[string]any) {
	if m != nil && len(m) <= maxRecycledLen && len(in.maps) < maxRecycled {
		in.maps = append(in.maps, m)
	}
}

// takeMap returns an empty recycled map, or nil.
func (in *interner) takeMap() map[string]any {
	if len(in.maps) == 0 {
		return nil
	}
	m := in.maps[len(in.maps)-1]
	in.maps[len(in.maps)-1] = nil
	in.maps = in.maps[:len(in.maps)-1]
	clear(m)
	return m
}

// num returns f as an any.
func (in *interner) num(f float64) any {
	bits := math.Float64bits(f)
	e := &in.nums[int((bits^bits>>29^bits>>47)&(internSlots-1))]
	if e.v == nil || e.bits != bits {
		e.bits, e.v = bits, f
	}
	return e.v
}

// DecodeError is a malformed api 2 message: where it went wrong (the byte
// offset and the field path) and what was found.
type DecodeError struct {
	// Offset is the byte offset in the message.
	Offset int
	// Path is the field path, e.g. "state.tokens[2].attrs".
	Path string
	// Msg says what is wrong.
	Msg string
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("at byte %d: %s: %s", e.Offset, e.Path, e.Msg)
}

func (d *decoder) errorf(format string, args ...any) error {
	return &DecodeError{Offset: d.off, Msg: fmt.Sprintf(format, args...)}
}

// truncated is kept out of line so that the hot reads that call it on
// their rare error path (peek, need) are inlined.
//
//go:noinline
func (d *decoder) truncated() error { return d.errorf("message truncated (%d bytes)", len(d.b)) }

// at prefixes the field name to err's path.
func at(field string, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		if de.Path == "" || de.Path[0] == '[' {
			de.Path = field + de.Path
		} else {
			de.Path = field + "." + de.Path
		}
	}
	return err
}

func atIndex(i int, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		if de.Path == "" || de.Path[0] == '[' {
			de.Path = "[" + strconv.Itoa(i) + "]" + de.Path
		} else {
			de.Path = "[" + strconv.Itoa(i) + "]." + de.Path
		}
	}
	return err
}

func atKey(k string, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		if de.Path == "" || de.Path[0] == '[' {
			de.Path = "[" + strconv.Quote(k) + "]" + de.Path
		} else {
			de.Path = "[" + strconv.Quote(k) + "]." + de.Path
		}
	}
	return err
}

// typeName names the MessagePack type that byte c starts.
func typeName(c byte) string {
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		return "an integer"
	case c <= 0x8f || c == 0xde || c == 0xdf:
		return "a map"
	case c <= 0x9f || c == 0xdc || c == 0xdd:
		return "an array"
	case c <= 0xbf || (c >= 0xd9 && c <= 0xdb):
		return "a string"
	case c == 0xc0:
		return "nil"
	case c == 0xc2 || c == 0xc3:
		return "a bool"
	case c == 0xca || c == 0xcb:
		return "a float"
	case c >= 0xc4 && c <= 0xc6:
		return "binary"
	case c == 0xc1:
		return "the unused byte 0xc1"
	}
	return fmt.Sprintf("an extension (0x%02x)", c)
}

func (d *decoder) peek() (byte, error) {
	if d.off >= len(d.b) {
		return 0, d.truncated()
	}
	return d.b[d.off], nil
}

// null consumes a nil and reports whether there was one.
func (d *decoder) null() bool {
	if d.off < len(d.b) && d.b[d.off] == 0xc0 {
		d.off++
		return true
	}
	return false
}

// need returns the next n bytes.
func (d *decoder) need(n int) ([]byte, error) {
	off := d.off
	if uint(n) > uint(len(d.b)-off) { // n < 0 too
		return nil, d.truncated()
	}
	d.off = off + n
	return d.b[off:d.off], nil
}

func (d *decoder) uintN(n int) (uint64, error) {
	b, err := d.need(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	}
	return binary.BigEndian.Uint64(b), nil
}

// length reads the length that follows a str8/16/32, bin or array/map
// 16/32 marker and checks that the message can hold it (each element
// takes at least min bytes), so a short message cannot make the decoder
// allocate much.
func (d *decoder) length(size, min int) (int, error) {
	start := d.off - 1
	v, err := d.uintN(size)
	if err != nil {
		return 0, err
	}
	if v > uint64(len(d.b)-d.off)/uint64(min) {
		d.off = start
		return 0, d.errorf("length %d is more than the %d bytes left", v, len(d.b)-d.off-1-size)
	}
	return int(v), nil
}

func (d *decoder) bool() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, err
	}
	switch c {
	case 0xc2:
		d.off++
		return false, nil
	case 0xc3:
		d.off++
		return true, nil
	}
	return false, d.errorf("want a bool, got %s", typeName(c))
}

// number reads any integer or float; isInt says which it was.
func (d *decoder) number() (i int64, u uint64, f float64, kind byte, err error) {
	c, err := d.peek()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	start := d.off
	d.off++
	switch {
	case c <= 0x7f:
		return int64(c), 0, 0, 'i', nil
	case c >= 0xe0:
		return int64(int8(c)), 0, 0, 'i', nil
	case c >= 0xcc && c <= 0xcf:
		v, err := d.uintN(1 << (c - 0xcc))
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if v > math.MaxInt64 {
			return 0, v, 0, 'u', nil
		}
		return int64(v), 0, 0, 'i', nil
	case c >= 0xd0 && c <= 0xd3:
		n := 1 << (c - 0xd0)
		v, err := d.uintN(n)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		switch n {
		case 1:
			return int64(int8(v)), 0, 0, 'i', nil
		case 2:
			return int64(int16(v)), 0, 0, 'i', nil
		case 4:
			return int64(int32(v)), 0, 0, 'i', nil
		}
		return int64(v), 0, 0, 'i', nil
	case c == 0xca:
		v, err := d.uintN(4)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		return 0, 0, float64(math.Float32frombits(uint32(v))), 'f', nil
	case c == 0xcb:
		v, err := d.uintN(8)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		return 0, 0, math.Float64frombits(v), 'f', nil
	}
	d.off = start
	return 0, 0, 0, 0, d.errorf("want a number, got %s", typeName(c))
}

func (d *decoder) int64() (int64, error) {
	start := d.off
	i, u, f, k, err := d.number()
	switch {
	case err != nil:
		return 0, err
	case k == 'u':
		d.off = start
		return 0, d.errorf("integer %d overflows int64", u)
	case k == 'f':
		d.off = start
		return 0, d.errorf("want an integer, got the float %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return i, nil
}

// time writes t as encoding/json does: its RFC 3339 MarshalText string.
func (e *encoder) time(t time.Time) {
	b, err := t.MarshalText()
	if err != nil {
		e.fail(fmt.Errorf("encode time: %w", err))
		return
	}
	e.str(string(b))
}

// time reads what encoder.time wrote, as encoding/json reads a time.Time.
func (d *decoder) time() (time.Time, error) {
	start := d.off
	b, err := d.strBytes()
	if err != nil {
		return time.Time{}, err
	}
	if d.in != nil && d.in.timeRaw != "" && d.in.timeRaw == string(b) {
		return d.in.time, nil
	}
	s := toString(b)
	var t time.Time
	if err := t.UnmarshalText([]byte(s)); err != nil {
		d.off = start
		return time.Time{}, d.errorf("want an RFC 3339 time: %v", err)
	}
	if d.in != nil && len(s) == len(b) && len(s) <= maxInterned {
		d.in.timeRaw, d.in.time = s, t
	}
	return t, nil
}

func (d *decoder) uint64() (uint64, error) {
	start := d.off
	i, u, f, k, err := d.number()
	switch {
	case err != nil:
		return 0, err
	case k == 'u':
		return u, nil
	case k == 'f':
		d.off = start
		return 0, d.errorf("want an integer, got the float %s", strconv.FormatFloat(f, 'g', -1, 64))
	case i < 0:
		d.off = start
		return 0, d.errorf("want an unsigned integer, got %d", i)
	}
	return uint64(i), nil
}

func (d *decoder) int() (int, error) {
	start := d.off
	i, err := d.int64()
	if err == nil && int64(int(i)) != i {
		d.off = start
		return 0, d.errorf("integer %d overflows int", i)
	}
	return int(i), err
}

func (d *decoder) float() (float64, error) {
	start := d.off
	i, u, f, k, err := d.number()
	switch {
	case err != nil:
		return 0, err
	case k == 'i':
		return float64(i), nil
	case k == 'u':
		return float64(u), nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		d.off = start
		return 0, d.errorf("unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return f, nil
}

// strBytes reads a string's bytes without copying them. The common case,
// a whole short string (fixstr), is inlined: in a wasm guest a call costs
// as much as the read, and a request is mostly keys and short strings.
func (d *decoder) strBytes() ([]byte, error) {
	b := d.b[min(d.off, len(d.b)):]
	if len(b) > 0 && b[0]&0xe0 == 0xa0 {
		if n := int(b[0] & 0x1f); n < len(b) {
			d.off += 1 + n
			return b[1 : 1+n], nil
		}
	}
	return d.strBytesAny()
}

// strBytesAny is strBytes for every case.
func (d *decoder) strBytesAny() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	n := 0
	switch {
	case c >= 0xa0 && c <= 0xbf:
		d.off++
		n = int(c & 0x1f)
	case c >= 0xd9 && c <= 0xdb:
		d.off++
		if n, err = d.length(1<<(c-0xd9), 1); err != nil {
			return nil, err
		}
	default:
		return nil, d.errorf("want a string, got %s", typeName(c))
	}
	return d.need(n)
}

func (d *decoder) str() (string, error) {
	b, err := d.strBytes()
	if err != nil {
		return "", err
	}
	if in := d.in; in != nil {
		if len(b) <= maxInterned {
			if e := &in.strs[internSlot(b)]; e.s == string(b) { // in.str's hit, inlined
				return e.s, nil
			}
			return in.str(b), nil
		}
		return in.long(b), nil
	}
	return toString(b), nil
}

// toString copies b into a string, coerced to valid UTF-8.
func toString(b []byte) string {
	if !utf8.Valid(b) {
		return validUTF8(string(b))
	}
	return string(b)
}

// enum reads a string: the element of known it equals, without
// allocating, else a copy as str reads it. The generated decoders read a
// named string type with constants (a token's status, an event's type)
// this way, since in a wasm guest an allocation costs far more than a few
// comparisons.
func (d *decoder) enum(known []string) (string, error) {
	b, err := d.strBytes()
	if err != nil {
		return "", err
	}
	for _, s := range known {
		if string(b) == s {
			return s, nil
		}
	}
	return toString(b), nil
}

// method reads the method name of an envelope: one of the constants,
// without allocating, when it names one, else as str reads it.
func (d *decoder) method() (string, error) { return d.enum(methods[:]) }

// key reads a map key of a struct; the bytes are only valid until the
// next read.
func (d *decoder) key() ([]byte, error) { return d.strBytes() }

func (d *decoder) bin() ([]byte, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == 0xc0 {
		d.off++
		return nil, nil
	}
	if c < 0xc4 || c > 0xc6 {
		return nil, d.errorf("want binary, got %s", typeName(c))
	}
	d.off++
	n, err := d.length(1<<(c-0xc4), 1)
	if err != nil {
		return nil, err
	}
	b, err := d.need(n)
	if err != nil {
		return nil, err
	}
	return append([]byte{}, b...), nil
}

// raw reads a JSON value (a json.RawMessage field): a str holding JSON
// text, as encoder.raw writes it, copied out; nil is the text null, as
// json.Unmarshal gives a json.RawMessage for a JSON null. Any other
// value (a map, an array, a number) is taken as the JSON value it
// stands for and marshalled, so that a plugin author's MessagePack
// library may send the value itself.
func (d *decoder) raw() (json.RawMessage, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	if c == 0xc0 {
		d.off++
		return json.RawMessage("null"), nil
	}
	if (c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb) {
		start := d.off
		b, err := d.strBytes()
		if err != nil {
			return nil, err
		}
		if !json.Valid(b) {
			d.off = start
			return nil, d.errorf("want JSON text in a str, got %s", preview(b))
		}
		return append(json.RawMessage{}, b...), nil
	}
	in := d.in
	d.in = nil // the value is marshalled and dropped: nothing to intern
	v, err := d.any()
	d.in = in
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, d.errorf("json.RawMessage: %v", err)
	}
	return b, nil
}

// arrayHeader reads an array's length.
func (d *decoder) arrayHeader() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x90 && c <= 0x9f:
		d.off++
		n := int(c & 0x0f)
		if n > len(d.b)-d.off {
			d.off--
			return 0, d.errorf("length %d is more than the %d bytes left", n, len(d.b)-d.off-1)
		}
		return n, nil
	case c == 0xdc || c == 0xdd:
		d.off++
		return d.length(2<<(c-0xdc), 1)
	}
	return 0, d.errorf("want an array, got %s", typeName(c))
}

// mapHeader reads a map's length; null is true (and n 0) for a nil.
func (d *decoder) mapHeader() (n int, null bool, err error) {
	c, err := d.peek()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c == 0xc0:
		d.off++
		return 0, true, nil
	case c >= 0x80 && c <= 0x8f:
		d.off++
		n := int(c & 0x0f)
		if 2*n > len(d.b)-d.off {
			d.off--
			return 0, false, d.errorf("length %d is more than the %d bytes left", n, len(d.b)-d.off-1)
		}
		return n, false, nil
	case c == 0xde || c == 0xdf:
		d.off++
		n, err := d.length(2<<(c-0xde), 2)
		return n, false, err
	}
	return 0, false, d.errorf("want a map, got %s", typeName(c))
}

// any reads a generic value as json.Unmarshal into an any would give it.
func (d *decoder) any() (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case c == 0xc0:
		d.off++
		return nil, nil
	case c == 0xc2 || c == 0xc3:
		return d.bool()
	case c <= 0x7f || c >= 0xe0 || (c >= 0xca && c <= 0xd3):
		f, err := d.float()
		if err != nil || d.in == nil {
			return f, err
		}
		return d.in.num(f), nil
	case (c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb):
		if d.in == nil {
			return d.str()
		}
		b, err := d.strBytes()
		if err != nil {
			return nil, err
		}
		if len(b) > maxInterned {
			return d.in.long(b), nil
		}
		if e := &d.in.strs[internSlot(b)]; e.v != nil && e.s == string(b) { // strAny's hit, inlined
			return e.v, nil
		}
		return d.in.strAny(b), nil
	case (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd:
		if d.depth++; d.depth > maxDepth {
			return nil, d.errorf("exceeded max depth %d", maxDepth)
		}
		n, err := d.arrayHeader()
		if err != nil {
			d.depth--
			return nil, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = d.any(); err != nil {
				d.depth--
				return nil, atIndex(i, err)
			}
		}
		d.depth--
		return a, nil
	case (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf:
		return d.anyMap()
	}
	return nil, d.errorf("want a JSON value (nil, bool, number, string, array, map), got %s", typeName(c))
}

// anyMap reads a map[string]any (nil for a nil).
func (d *decoder) anyMap() (map[string]any, error) {
	n, null, err := d.mapHeader()
	if err != nil || null {
		return nil, err
	}
	if d.depth++; d.depth > maxDepth {
		return nil, d.errorf("exceeded max depth %d", maxDepth)
	}
	var m map[string]any
	if d.in != nil {
		m = d.in.takeMap()
	}
	if m == nil {
		m = make(map[string]any, n)
	}
	for range n {
		k, err := d.str()
		if err != nil {
			d.depth--
			return nil, err
		}
		if m[k], err = d.any(); err != nil {
			d.depth--
			return nil, atKey(k, err)
		}
	}
	d.depth--
	return m, nil
}

// skippableMap reads a map[string]any as anyMap does, or, when the
// decoder has noOutput set, checks it as anyMap would (the same errors)
// and returns nil without building it.
func (d *decoder) skippableMap() (map[string]any, error) {
	if !d.noOutput {
		return d.anyMap()
	}
	return nil, d.skipMap()
}

// skipMap passes over a map[string]any with anyMap's checks.
func (d *decoder) skipMap() error {
	n, null, err := d.mapHeader()
	if err != nil || null {
		return err
	}
	if d.depth++; d.depth > maxDepth {
		return d.errorf("exceeded max depth %d", maxDepth)
	}
	for range n {
		k, err := d.strBytes()
		if err != nil {
			d.depth--
			return err
		}
		if err := d.skipValue(); err != nil {
			d.depth--
			return atKey(toString(k), err)
		}
	}
	d.depth--
	return nil
}

// skipValue passes over one value with any's checks, building nothing.
func (d *decoder) skipValue() error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	switch {
	case c == 0xc0:
		d.off++
		return nil
	case c == 0xc2 || c == 0xc3:
		_, err := d.bool()
		return err
	case c <= 0x7f || c >= 0xe0 || (c >= 0xca && c <= 0xd3):
		_, err := d.float()
		return err
	case (c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb):
		_, err := d.strBytes()
		return err
	case (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd:
		if d.depth++; d.depth > maxDepth {
			return d.errorf("exceeded max depth %d", maxDepth)
		}
		n, err := d.arrayHeader()
		if err != nil {
			d.depth--
			return err
		}
		for i := range n {
			if err := d.skipValue(); err != nil {
				d.depth--
				return atIndex(i, err)
			}
		}
		d.depth--
		return nil
	case (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf:
		return d.skipMap()
	}
	return d.errorf("want a JSON value (nil, bool, number, string, array, map), got %s", typeName(c))
}

// skip passes over one value of any type (an unknown field).
func (d *decoder) skip() error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		d.off++
		return nil
	case (c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb):
		_, err := d.strBytes()
		return err
	case c >= 0xc4 && c <= 0xc6:
		_, err := d.bin()
		return err
	case c >= 0xca && c <= 0xd3:
		_, _, _, _, err := d.number()
		return err
	case (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd,
		(c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf:
		if d.depth++; d.depth > maxDepth {
			return d.errorf("exceeded max depth %d", maxDepth)
		}
		var n int
		if c <= 0x8f || c == 0xde || c == 0xdf {
			m, _, err := d.mapHeader()
			if err != nil {
				d.depth--
				return err
			}
			n = 2 * m
		} else if n, err = d.arrayHeader(); err != nil {
			d.depth--
			return err
		}
		for range n {
			if err := d.skip(); err != nil {
				d.depth--
				return err
			}
		}
		d.depth--
		return nil
	}
	return d.errorf("unexpected %s", typeName(c))
}
