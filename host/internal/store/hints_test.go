package store

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestHintScanHalves: scanning two halves at once finds exactly what one
// pass over the input finds, wherever the hints fall (across the middle
// too), for the built-in rules and for user patterns with long prefixes.
func TestHintScanHalves(t *testing.T) {
	long := "a-very-long-literal-prefix-of-a-user-pattern-that-is-longer-than-most-inputs-" + strings.Repeat("x", 40)
	user, err := NewRedactor(`corp-secret-[0-9]+`, long+`[0-9]+`, `(?i)case-insensitive-[a-z]+`)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range []*Redactor{DefaultRedactor(), user} {
		var pieces []string
		for _, ru := range r.rules {
			for _, h := range ru.hints {
				pieces = append(pieces, string(h), strings.ToUpper(string(h)))
			}
		}
		// Every hint at every place across the middle of inputs of a few
		// lengths (odd and even halves).
		for _, n := range []int{256, 257, 300, 511, 1001} {
			mid := n / 2
			for _, h := range pieces {
				for p := max(mid-len(h)-1, 0); p <= mid+1 && p+len(h) <= n; p++ {
					in := []byte(strings.Repeat("#", n))
					copy(in[p:], h)
					if got, want := r.hints.scan(in), r.hints.scanFrom(in, r.hints.always); got != want {
						t.Fatalf("hint %q at %d of %d bytes: halves found %b, one pass %b", h, p, n, got, want)
					}
				}
			}
		}
		filler := []string{`{"name":"step s1","attributes":{`, `"sextant.request_hash":"`, "0123456789abcdef", " ", "\n", "é", "\xff"}
		for i := 0; i < 20000; i++ {
			var b strings.Builder
			n := rng.IntN(1200)
			for b.Len() < n {
				if rng.IntN(8) == 0 {
					p := pieces[rng.IntN(len(pieces))]
					if rng.IntN(4) == 0 { // a hint cut short
						p = p[:rng.IntN(len(p))]
					}
					b.WriteString(p)
				} else {
					b.WriteString(filler[rng.IntN(len(filler))])
				}
			}
			in := []byte(b.String())
			if got, want := r.hints.scan(in), r.hints.scanFrom(in, r.hints.always); got != want {
				t.Fatalf("input %q (%d bytes): halves found %b, one pass %b", in, len(in), got, want)
			}
		}
	}
}

func BenchmarkHintScan(b *testing.B) {
	r := DefaultRedactor()
	sp := benchSpan("task-1", "exec-1", 3)
	js, err := appendSpanBody([]byte{'{'}, &sp)
	if err != nil {
		b.Fatal(err)
	}
	js = append(js, '}')
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		r.hints.scan(js)
	}
}

func BenchmarkHintScanOnePass(b *testing.B) {
	r := DefaultRedactor()
	sp := benchSpan("task-1", "exec-1", 3)
	js, err := appendSpanBody([]byte{'{'}, &sp)
	if err != nil {
		b.Fatal(err)
	}
	js = append(js, '}')
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		r.hints.scanFrom(js, 0)
	}
}
