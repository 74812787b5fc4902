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

// TestRead: a body of known length is charged it before it is read, one
// of unknown length as its buffer doubles; past the limit it is an
// *http.MaxBytesError, past the budget ErrBusy, and what Read returns
// held is all it left charged.
func TestRead(t *testing.T) {
	body := strings.Repeat("x", 2000)
	b := &jsonbound.Budget{Limit: 1 << 20}
	got, held, err := b.Read(strings.NewReader(body), int64(len(body)), 4096)
	if err != nil || string(got) != body || held != int64(len(body)) || b.Used() != held {
		t.Fatalf("known length: %d bytes, held %d, used %d, %v", len(got), held, b.Used(), err)
	}
	b.Give(held)
	// Unknown length: 512, 1024, 2048.
	got, held, err = b.Read(io.MultiReader(strings.NewReader(body)), -1, 4096)
	if err != nil || string(got) != body || held != 2048 || b.Used() != held {
		t.Fatalf("unknown length: %d bytes, held %d, used %d, %v", len(got), held, b.Used(), err)
	}
	b.Give(held)
	var tooBig *http.MaxBytesError
	if _, held, err = b.Read(strings.NewReader(body), int64(len(body)), 1000); !errors.As(err, &tooBig) || held != 0 {
		t.Fatalf("length past the limit: held %d, %v", held, err)
	}
	if _, held, err = b.Read(io.MultiReader(strings.NewReader(body)), -1, 1000); !errors.As(err, &tooBig) {
		t.Fatalf("unknown length past the limit: held %d, %v", held, err)
	}
	b.Give(held)
	// Another request holds all but 1 000 bytes: the buffer's growth
	// to 1 024 is refused, the 512 before it still held.
	if !b.Take(b.Limit - 1000) {
		t.Fatal("take")
	}
	if _, held, err = b.Read(io.MultiReader(strings.NewReader(body)), -1, 4096); !errors.Is(err, jsonbound.ErrBusy) || held != 512 {
		t.Fatalf("past the budget: held %d, %v", held, err)
	}
	b.Give(held)
	if _, held, err = b.Read(strings.NewReader(body), int64(len(body)), 4096); !errors.Is(err, jsonbound.ErrBusy) || held != 0 {
		t.Fatalf("known length past the budget: held %d, %v", held, err)
	}
	if used := b.Used(); used != b.Limit-1000 {
		t.Fatalf("used %d after refusals, want the other request's %d", used, b.Limit-1000)
	}
}
