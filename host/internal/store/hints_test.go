package store

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestHintScanParts: scanning two or four parts at once finds exactly
// what one pass over the input finds, wherever the hints fall (across
// the parts' borders too), for the built-in rules and for user patterns
// with long prefixes.
func TestHintScanParts(t *testing.T) {
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
		// Every hint at every place across each border of inputs of a
		// few lengths (odd and even parts; two parts below 1 024 bytes,
		// four from there).
		for _, n := range []int{256, 257, 300, 511, 1001, 1024, 1027, 1500, 4099} {
			parts := 2
			if n >= 1024 && n >= 32*r.hints.maxLen {
				parts = 4
			}
			for k := 1; k < parts; k++ {
				border := k * n / parts
				for _, h := range pieces {
					for p := max(border-len(h)-1, 0); p <= border+1 && p+len(h) <= n; p++ {
						in := []byte(strings.Repeat("#", n))
						copy(in[p:], h)
						if got, want := r.hints.scan(in), r.hints.scanFrom(in, r.hints.always); got != want {
							t.Fatalf("hint %q at %d of %d bytes: %d parts found %b, one pass %b", h, p, n, parts, got, want)
						}
					}
				}
			}
		}
		filler := []string{`{"name":"step s1","attributes":{`, `"sextant.request_hash":"`, "0123456789abcdef", " ", "\n", "é", "\xff"}
		for i := 0; i < 10000; i++ {
			var b strings.Builder
			n := rng.IntN(3000)
			every := 8 << rng.IntN(5) // from many hints to a few
			for b.Len() < n {
				if rng.IntN(every) == 0 {
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
				t.Fatalf("input %q (%d bytes): parts found %b, one pass %b", in, len(in), got, want)
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

func BenchmarkHintScanBatch(b *testing.B) {
	r := DefaultRedactor()
	var js []byte
	for i := range 64 {
		sp := benchSpan("task-1", "exec-1", i)
		js = append(js, '{')
		var err error
		if js, err = appendSpanBody(js, &sp); err != nil {
			b.Fatal(err)
		}
		js = append(js, '}', ',')
	}
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		r.hints.scan(js)
	}
}
