package jsonbound_test

import (
	"errors"
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
