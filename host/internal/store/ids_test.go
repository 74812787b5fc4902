package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestDerivedIDsFixed: derived ids are part of what the store holds
// (layout 6 leaves them out of span entries, readers derive them again),
// so they never change: the first bytes of SHA-256 over "trace" or
// "span", the task and the execution, each followed by a zero byte
// (these values were computed outside Go), and for ids of any length
// the same as hashing with the general-purpose digest.
func TestDerivedIDsFixed(t *testing.T) {
	if got := TraceIDFor("t1", "t1-e1"); got != "b3e25a3f51949197d2fafda2f1c53d1f" {
		t.Fatalf("trace id %s", got)
	}
	if got := spanIDBase("t1", "t1-e1"); got != 0xabec79f795e2ec27 {
		t.Fatalf("span id base %x", got)
	}
	for seq, want := range map[uint64]string{1: "7beb5ea0d6ba6035", 2: "52af448468778daf", 1000: "11b9aaebbd4e4dda"} {
		if got := SpanIDFor("t1", "t1-e1", seq); got != want {
			t.Fatalf("span id of seq %d: %s, want %s", seq, got, want)
		}
	}
	long := strings.Repeat("x", 128)
	if got := TraceIDFor(long, long); got != "6fdaf9406c76a077f26bf323fcfce141" {
		t.Fatalf("trace id of the longest ids %s", got)
	}
	// What the ids were made with before they were hashed on the stack.
	slow := func(n int, parts ...string) string {
		h := sha256.New()
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		return hex.EncodeToString(h.Sum(nil)[:n])
	}
	for _, n := range []int{0, 1, 26, 127, 128, 129, 200, 400} { // past the stack buffer too
		task, exec := strings.Repeat("t", n), strings.Repeat("e", 1+n/2)
		if got, want := TraceIDFor(task, exec), slow(16, "trace", task, exec); got != want {
			t.Fatalf("trace id of %d-byte ids %s, want %s", n, got, want)
		}
		if got, want := spanIDBase(task, exec), slow(8, "span", task, exec); hex.EncodeToString(be64(got)) != want {
			t.Fatalf("span id base of %d-byte ids %x, want %s", n, got, want)
		}
	}
}

// TestHexDigits: the span id's digits computed in a register are
// hex.Encode's, for the words whose nibbles are all one digit, each digit
// in each place, and random ones.
func TestHexDigits(t *testing.T) {
	words := []uint64{0, ^uint64(0), 0x0123456789abcdef, 0xfedcba9876543210, 0x9999999999999999, 0xaaaaaaaaaaaaaaaa}
	for d := range uint64(16) {
		for place := range 16 {
			words = append(words, d<<(4*place), ^(d << (4 * place)))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		words = append(words, rng.Uint64())
	}
	for _, z := range words {
		var got [16]byte
		binary.LittleEndian.PutUint64(got[:8], hexDigits(uint32(z>>32)))
		binary.LittleEndian.PutUint64(got[8:], hexDigits(uint32(z)))
		if want := hex.EncodeToString(be64(z)); string(got[:]) != want {
			t.Fatalf("%#x: %s, want %s", z, got[:], want)
		}
	}
}

func be64(n uint64) []byte {
	return []byte{byte(n >> 56), byte(n >> 48), byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

// TestDerivedIDsAllocs: deriving ids, which every checkpoint's encoder
// does, hashes on the stack: a trace id is one string, a span id base
// none.
func TestDerivedIDsAllocs(t *testing.T) {
	task, exec := "01KH0Z6X20ABCDEFGHJKMNPQRS", "01KH0Z6X20ABCDEFGHJKMNPQRT"
	if n := testing.AllocsPerRun(100, func() { _ = TraceIDFor(task, exec) }); n > 1 {
		t.Fatalf("TraceIDFor: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = spanIDBase(task, exec) }); n > 0 {
		t.Fatalf("spanIDBase: %v allocations", n)
	}
	var e spanEncoder
	if n := testing.AllocsPerRun(100, func() { e.derived = false; e.deriveFor(task, exec) }); n > 0 {
		t.Fatalf("deriveFor: %v allocations", n)
	}
}

// TestNewIDsShareBlocks: ids made past several blocks (idBlock) are
// ULIDs in increasing order, each as it was made (a later id written into
// the block changes none), and a block of them takes one allocation.
func TestNewIDsShareBlocks(t *testing.T) {
	g := idGen{clock: func() time.Time { return time.UnixMilli(1_800_000_000_000) }}
	var ids, copies []string
	for range 5*idBlock + 3 {
		id := g.next()
		ids, copies = append(ids, id), append(copies, strings.Clone(id))
	}
	for i, id := range ids {
		if id != copies[i] || len(id) != 26 || strings.Trim(id, crockford) != "" {
			t.Fatalf("id %d is %q, made as %q", i, id, copies[i])
		}
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("id %d %q is not after %q", i, id, ids[i-1])
		}
	}
	if n := testing.AllocsPerRun(10*idBlock, func() { g.next() }); n > 2.0/idBlock {
		t.Errorf("%.2f allocations an id, want at most %.2f", n, 2.0/idBlock)
	}
}
