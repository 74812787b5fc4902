package jsonbound_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/jsonbound"
)

// TestScan counts values and depth outside strings, and stops at the
// byte that goes past a limit.
func TestScan(t *testing.T) {
	for _, c := range []struct {
		body   string
		lim    jsonbound.Limits
		values int64
		depth  int
		err    string
	}{
		{body: `{}`, values: 2, depth: 1},
		{body: `{"a":[1,2,3],"b":"x,[{\"]"}`, values: 6, depth: 2},
		{body: `[0,0,0,0]`, lim: jsonbound.Limits{Values: 4}, err: "byte 6: more than 4 JSON values"},
		{body: `[[[[1]]]]`, lim: jsonbound.Limits{Depth: 3}, err: "byte 3: arrays and objects nested deeper than 3"},
		{body: `[[[1]]]`, lim: jsonbound.Limits{Depth: 3, Values: 4}, values: 4, depth: 3},
		{body: `"unterminated \"`, values: 1},
	} {
		s, err := jsonbound.Scan([]byte(c.body), c.lim)
		if c.err != "" {
			var le *jsonbound.LimitError
			if !errors.As(err, &le) || err.Error() != c.err {
				t.Errorf("Scan(%s) = %v, want %q", c.body, err, c.err)
			}
			continue
		}
		if err != nil || s.Values != c.values || s.Depth != c.depth {
			t.Errorf("Scan(%s) = %+v, %v; want %d values, depth %d", c.body, s, err, c.values, c.depth)
		}
	}
	zeros := "[" + strings.Repeat("0,", 1<<20) + "0]"
	s, _ := jsonbound.Scan([]byte(zeros), jsonbound.Limits{})
	if got := s.Cost(len(zeros)); got < 40*int64(len(zeros)) {
		t.Errorf("cost of %d bytes of zeros = %d, want at least 40 times their bytes", len(zeros), got)
	}
}

// TestRead: a body is charged as its buffer grows — at most 4 KiB
// before its first byte, doubling (the last size its length, if sent)
// once a byte past the buffer has come; an empty one is charged nothing,
// even with the budget spent; past the limit it is an
// *http.MaxBytesError, past the budget ErrBusy (unread when its length
// alone could not fit), and what Read returns held is all it left
// charged.
func TestRead(t *testing.T) {
	body := strings.Repeat("x", 2000)
	b := &jsonbound.Budget{Limit: 1 << 20}
	var other int64 // what another request holds
	read := func(r io.Reader, length, limit int64) ([]byte, int64, error) {
		t.Helper()
		got, held, err := b.Read(r, length, limit)
		if used := b.Used() - other; used != held {
			t.Fatalf("Read returned held %d, left %d charged", held, used)
		}
		return got, held, err
	}
	for _, c := range []struct {
		body   string
		length int64
		held   int64
	}{
		{body, 2000, 2000}, // one buffer, its length
		{body, -1, 4096},   // unknown length: 4 KiB
		{strings.Repeat("y", 10_000), 10_000, 10_000}, // 4 KiB, 8 KiB, its length
		{strings.Repeat("y", 10_000), -1, 16384},      // 4, 8, 16 KiB
		{"", 0, 0},
		{"", -1, 0},
	} {
		got, held, err := read(io.MultiReader(strings.NewReader(c.body)), c.length, 1<<20)
		if err != nil || string(got) != c.body || held != c.held {
			t.Fatalf("%d bytes, length %d: read %d, held %d (want %d), %v", len(c.body), c.length, len(got), held, c.held, err)
		}
		b.Give(held)
	}
	var tooBig *http.MaxBytesError
	if _, held, err := read(strings.NewReader(body), int64(len(body)), 1000); !errors.As(err, &tooBig) || held != 0 {
		t.Fatalf("length past the limit: held %d, %v", held, err)
	}
	_, held, err := read(io.MultiReader(strings.NewReader(body)), -1, 1000)
	if !errors.As(err, &tooBig) {
		t.Fatalf("unknown length past the limit: held %d, %v", held, err)
	}
	b.Give(held)

	// Another request holds all but 1 000 bytes: an unknown length's
	// first buffer is refused, nothing held; a body whose length alone
	// is past what is left is refused unread; empty bodies need nothing.
	if other = b.Limit - 1000; !b.Take(other) {
		t.Fatal("take")
	}
	if _, held, err := read(io.MultiReader(strings.NewReader(body)), -1, 4096); !errors.Is(err, jsonbound.ErrBusy) || held != 0 {
		t.Fatalf("past the budget: held %d, %v", held, err)
	}
	unread := strings.NewReader(body)
	if _, held, err := read(unread, int64(len(body)), 4096); !errors.Is(err, jsonbound.ErrBusy) || held != 0 || unread.Len() != len(body) {
		t.Fatalf("known length past the budget: held %d, %d bytes read, %v", held, len(body)-unread.Len(), err)
	}
	for _, length := range []int64{0, -1} {
		if got, held, err := read(strings.NewReader(""), length, 4096); err != nil || len(got) != 0 || held != 0 {
			t.Fatalf("empty body (length %d) with the budget spent: %q held %d, %v", length, got, held, err)
		}
	}
}

// TestReadChargesWhatCame: a body that announces 8 MiB and sends 100 KB
// before it stalls holds, at each read, no more than what came and one
// growth step — not the 8 MiB it announced.
func TestReadChargesWhatCame(t *testing.T) {
	b := &jsonbound.Budget{Limit: 1 << 30}
	r := &trickle{b: b, t: t, left: 100_000}
	got, held, err := b.Read(r, 8<<20, 8<<20)
	if !errors.Is(err, errStalled) || len(got) != 100_000 || held != 128<<10 {
		t.Fatalf("read %d bytes, held %d, %v; want 100 000 bytes held in 128 KiB, and the stall", len(got), held, err)
	}
	if r.reads < 100 {
		t.Fatalf("%d reads, want one per 1 000 bytes", r.reads)
	}
}

var errStalled = errors.New("stalled")

// trickle gives 1 000 bytes a read until left runs out, then stalls
// (errStalled), checking at each read that b holds no more than the
// bytes given and one growth step (the 4 KiB first buffer, or as much
// again as was given).
type trickle struct {
	b     *jsonbound.Budget
	t     *testing.T
	given int
	left  int
	reads int
}

func (r *trickle) Read(p []byte) (int, error) {
	r.reads++
	if used := r.b.Used(); used > int64(max(2*r.given+2, 4096)) {
		r.t.Fatalf("after %d bytes, %d charged", r.given, used)
	}
	if r.left == 0 {
		return 0, errStalled
	}
	n := min(len(p), 1000, r.left)
	for i := range n {
		p[i] = 'x'
	}
	r.given += n
	r.left -= n
	return n, nil
}
