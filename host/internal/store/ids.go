package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"strings"
	"sync"
	"time"
)

// idGen makes ULIDs: 48 bits of milliseconds and 80 random bits in
// Crockford base32, 26 characters. Ids made by one process within the
// same millisecond increase, so key order is creation order.
type idGen struct {
	mu    sync.Mutex
	clock func() time.Time
	ms    uint64
	rnd   [10]byte
	// block holds the ids made last, idBlock at a time: an id is a part
	// of its string, which a Builder never writes again (a run makes two).
	block strings.Builder
}

// idBlock is how many ids share a block: an id kept alone keeps its
// block alive (idBlock*26 bytes).
const idBlock = 16

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewID returns a new task or execution id, ordered by the store's clock.
func (s *Store) NewID() string { return s.ids.next() }

func (g *idGen) next() string { return g.nextAt(g.clock()) }

func (g *idGen) nextAt(t time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := uint64(max(t.UnixMilli(), 0)) & (1<<48 - 1)
	if ms == g.ms && !incr(&g.rnd) {
		ms++ // 2^80 ids in a millisecond: borrow the next one
	}
	if ms != g.ms {
		_, _ = rand.Read(g.rnd[:])
		g.rnd[0] &= 0x7f // room to increment
		g.ms = ms
	}
	var raw [16]byte
	binary.BigEndian.PutUint16(raw[0:], uint16(ms>>32))
	binary.BigEndian.PutUint32(raw[2:], uint32(ms))
	copy(raw[6:], g.rnd[:])
	out := appendULID(raw)
	if g.block.Cap()-g.block.Len() < len(out) {
		g.block.Reset() // the ids made stay in the strings that hold them
		g.block.Grow(idBlock * len(out))
	}
	start := g.block.Len()
	g.block.Write(out[:])
	return g.block.String()[start:]
}

func incr(b *[10]byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}

// appendULID is a ULID's digits: 128 bits as 26 base32 digits, the
// first holding the top 3 bits.
func appendULID(raw [16]byte) (out [26]byte) {
	hi := binary.BigEndian.Uint64(raw[:8])
	lo := binary.BigEndian.Uint64(raw[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return out
}

// TraceIDFor is the OpenTelemetry trace id of an execution when the
// writer did not choose one: 32 hex digits derived from the task and
// execution ids, so a re-export gives the same trace.
func TraceIDFor(task, exec string) string {
	h := traceIDHex(task, exec)
	return string(h[:])
}

// traceIDHex is TraceIDFor's digits, in an array: an encoder compares a
// span's trace id with them without making a string.
func traceIDHex(task, exec string) (h [32]byte) {
	sum := derivedSum("trace", task, exec)
	id := sum[:16]
	if isZero(id) {
		id[15] = 1 // all-zero ids are invalid in OpenTelemetry
	}
	hex.Encode(h[:], id)
	return h
}

// SpanIDFor is the span id of a span when the writer did not choose one:
// 16 hex digits derived from its execution and sequence number. Within
// one execution, different sequence numbers always give different ids.
func SpanIDFor(task, exec string, seq uint64) string {
	return spanIDFrom(spanIDBase(task, exec), seq)
}

// SpanIDs derives the span ids of one execution exactly as SpanIDFor
// does, hashing the task and execution ids once instead of per span.
type SpanIDs struct{ base uint64 }

// NewSpanIDs returns the span ids of an execution.
func NewSpanIDs(task, exec string) SpanIDs { return SpanIDs{base: spanIDBase(task, exec)} }

// ID is SpanIDFor(task, exec, seq).
func (g SpanIDs) ID(seq uint64) string { return spanIDFrom(g.base, seq) }

// AppendID appends ID(seq) to b: a caller can derive many ids into one
// buffer, and make one string of them all.
func (g SpanIDs) AppendID(b []byte, seq uint64) []byte { return appendSpanID(b, g.base, seq) }

func spanIDBase(task, exec string) uint64 {
	sum := derivedSum("span", task, exec)
	if base := binary.BigEndian.Uint64(sum[:8]); base != 0 {
		return base
	}
	return 1 // as for a trace id, the last byte of an all-zero id is 1
}

// spanIDFrom mixes the sequence number into the execution's base with
// splitmix64's finaliser, a bijection, so distinct seqs never collide.
func spanIDFrom(base, seq uint64) string {
	return string(appendSpanID(make([]byte, 0, 16), base, seq))
}

// appendSpanID appends spanIDFrom(base, seq): 16 hex digits, never all
// zeros.
func appendSpanID(b []byte, base, seq uint64) []byte {
	z := base ^ seq
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	if z == 0 {
		z = 1
	}
	b = binary.LittleEndian.AppendUint64(b, hexDigits(uint32(z>>32)))
	return binary.LittleEndian.AppendUint64(b, hexDigits(uint32(z)))
}

// hexDigits is the 8 lower-case hex digits of v, most significant first,
// as the bytes of a little-endian word: computed in a register, where
// hex.Encode looks each digit up (a span id is derived for every span
// written, and again to tell whether a span's id is the derived one).
func hexDigits(v uint32) uint64 {
	// Spread the nibbles into bytes, nibble i into byte i, then reverse
	// the bytes: the most significant digit first.
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	x = bits.ReverseBytes64(x)
	// A nibble of 10 or more carries into bit 4 when 6 is added to it:
	// those digits are letters, 'a'-'0'-10 past the digits.
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}

// isDerivedSpanID reports whether id is spanIDFrom(base, seq), without
// building a string.
func isDerivedSpanID(id string, base, seq uint64) bool {
	if len(id) != 16 {
		return false
	}
	var b [16]byte
	return string(appendSpanID(b[:0], base, seq)) == id
}

// derivedSeqs returns the seqs whose derived span id under base is id:
// spanIDFrom inverted, its finaliser step by step. There is one, or two
// for the id of 1 (which a mix of 0 also gives), or none if id is no
// span id.
func derivedSeqs(id string, base uint64) []uint64 {
	var raw [8]byte
	if len(id) != 16 {
		return nil
	}
	if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
		return nil
	}
	z := binary.BigEndian.Uint64(raw[:])
	if z == 0 {
		return nil
	}
	out := []uint64{unmix(z) ^ base}
	if z == 1 {
		out = append(out, unmix(0)^base)
	}
	return out
}

// unmix inverts the finaliser of appendSpanID.
func unmix(z uint64) uint64 {
	z ^= z>>31 ^ z>>62
	z *= inverse(0x94d049bb133111eb)
	z ^= z>>27 ^ z>>54
	z *= inverse(0xbf58476d1ce4e5b9)
	return z ^ z>>30 ^ z>>60
}

// inverse is c's multiplicative inverse modulo 2^64 (c odd), by Newton's
// iteration, each step doubling the bits that are right.
func inverse(c uint64) uint64 {
	x := c // right in 3 bits for any odd c
	for range 5 {
		x *= 2 - c*x
	}
	return x
}

// derivedSum is the SHA-256 of what, task and exec, each followed by a
// zero byte, whose first bytes the derived ids are. It hashes on the
// stack (two ids of the longest valid length fit): ids are derived for
// every checkpoint's spans.
func derivedSum(what, task, exec string) [sha256.Size]byte {
	var buf [280]byte
	b := append(buf[:0], what...)
	b = append(b, 0)
	b = append(b, task...)
	b = append(b, 0)
	b = append(b, exec...)
	b = append(b, 0)
	return sha256.Sum256(b)
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// validHexID checks an OpenTelemetry id: n bytes as 2n lower-case hex
// digits, not all zero.
func validHexID(what, id string, n int) error {
	if len(id) != 2*n {
		return invalidf("%s %q must be %d hex digits", what, id, 2*n)
	}
	allZero := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return invalidf("%s %q must be %d lower-case hex digits", what, id, 2*n)
		}
		if c != '0' {
			allZero = false
		}
	}
	if allZero {
		return invalidf("%s is all zeros", what)
	}
	return nil
}
