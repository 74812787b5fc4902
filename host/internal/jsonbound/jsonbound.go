// Package jsonbound measures what a JSON body will take once decoded,
// before it is: the values it holds and how deep they nest, counted in
// one pass over its bytes, so that a body can be refused or charged to a
// budget first. Small values cost far more decoded than written (a map
// or slice slot, an interface, a number or string header): 8 MiB of
// zeros, two bytes each, hold some 330 MB once decoded.
package jsonbound

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// ValueCost is about what one JSON value costs decoded into Go values.
const ValueCost = 80

// Shape is what Scan counted of a body.
type Shape struct {
	// Values estimates the values: one, and one more for each bracket
	// and comma outside strings.
	Values int64
	// Depth is how deep arrays and objects nest.
	Depth int
}

// Cost estimates what a body of n bytes with this shape holds decoded:
// its bytes, and ValueCost for each value.
func (s Shape) Cost(n int) int64 { return int64(n) + s.Values*ValueCost }

// Limits bound a body's shape; a zero field bounds nothing.
type Limits struct {
	Values int64
	Depth  int
}

// LimitError is a body past one of its Limits, at the byte where it
// went past.
type LimitError struct {
	// Offset is the byte offset in the body of the bracket or comma that
	// went past the limit.
	Offset int
	// Depth is true for the depth limit, false for the values limit.
	Depth bool
	// Limit is the limit it went past.
	Limit int64
}

func (e *LimitError) Error() string {
	if e.Depth {
		return fmt.Sprintf("byte %d: arrays and objects nested deeper than %d", e.Offset, e.Limit)
	}
	return fmt.Sprintf("byte %d: more than %d JSON values", e.Offset, e.Limit)
}

// Scan counts body's values and depth, stopping at the first byte past
// lim with a *LimitError. It reads only the brackets, commas and string
// quotes of a body: one that is not valid JSON is counted all the same,
// for the decoder after it to refuse.
func Scan(body []byte, lim Limits) (Shape, error) {
	s := Shape{Values: 1}
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			continue
		case '[', '{':
			depth++
			if depth > s.Depth {
				s.Depth = depth
				if lim.Depth > 0 && depth > lim.Depth {
					return s, &LimitError{Offset: i, Depth: true, Limit: int64(lim.Depth)}
				}
			}
		case ']', '}':
			depth--
			continue
		case ',':
		default:
			continue
		}
		s.Values++
		if lim.Values > 0 && s.Values > lim.Values {
			return s, &LimitError{Offset: i, Limit: lim.Values}
		}
	}
	return s, nil
}

// Budget bounds what the requests being served hold decoded, as
// estimated by Shape.Cost: a request whose cost would take it past Limit
// is refused at once rather than queued (its client would hear the
// refusal only once it gave up). A request larger than the whole Limit
// is taken when it is the only one. The zero Budget refuses nothing
// while empty and everything else; set Limit.
type Budget struct {
	// Limit is the most the requests taken hold together.
	Limit int64
	mu    sync.Mutex
	used  int64
}

// Take charges n, or reports false and charges nothing when the others
// taken and n are past the limit.
func (b *Budget) Take(n int64) bool { return b.Grow(0, n) }

// Grow takes what a request holds from held to n: refused, held still
// taken, when the others' share and n are past the limit.
func (b *Budget) Grow(held, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if others := b.used - held; others > 0 && others+n > b.Limit {
		return false
	}
	b.used += n - held
	return true
}

// Give returns n taken.
func (b *Budget) Give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// Used is what the requests taken hold now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// ErrBusy is a body Read refused because the budget is spent: it is
// left unread when its length alone could not fit, and its client should
// send it again shortly.
var ErrBusy = errors.New("decode budget spent")

// firstRead is the first buffer a body is read into: what a body may
// hold charged before its bytes come (a client that announces 8 MiB and
// stalls holds this, not 8 MiB, for as long as it stalls).
const firstRead = 4 << 10

// Read reads body, of length bytes (-1: unknown, as a chunked body is),
// into memory charged to b before it is allocated, and returns it with
// what it holds charged, which the caller gives back, failed or not. The
// charge follows the bytes as they come, never what a client announced:
// a buffer of at most firstRead is charged before the first byte, and it
// doubles (the last size the length sent, if any) only once a byte past
// it has come, each size charged first (with the old buffer while it is
// copied). So a body holds at most its bytes so far and one growth step,
// and many clients that announce large bodies and stall hold little. An
// empty body (length 0, or a chunked one that ends at once) is charged
// nothing. A body refused is ErrBusy: at once and unread when its length
// alone would take b past its limit, else the moment its next size
// would. A body longer than limit is an *http.MaxBytesError (pass body
// through http.MaxBytesReader too, for the server to close the
// connection).
func (b *Budget) Read(body io.Reader, length, limit int64) ([]byte, int64, error) {
	if length > limit {
		return nil, 0, &http.MaxBytesError{Limit: limit}
	}
	var buf []byte
	var held int64
	if length > 0 {
		if !b.fits(length) {
			return nil, 0, ErrBusy
		}
		held = min(length, firstRead)
		if !b.Take(held) {
			return nil, 0, ErrBusy
		}
		buf = make([]byte, 0, held)
	}
	var probe []byte // made only for a body that fills its buffer
	for {
		if len(buf) < cap(buf) {
			n, err := body.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err != nil {
				return buf, held, readErr(err)
			}
			continue
		}
		// A full buffer (or none yet) reads one byte aside first: a
		// body that ends here, as one whose length was sent does at
		// its length, needs no larger one, and one whose next byte has
		// not come is charged no more until it does.
		if probe == nil {
			probe = make([]byte, 1)
		}
		n, err := body.Read(probe)
		if n == 0 {
			if err != nil {
				return buf, held, readErr(err)
			}
			continue
		}
		size := int64(cap(buf))
		next := max(2*size, firstRead)
		if length > size {
			next = min(next, length)
		}
		next = min(next, limit)
		if next <= size {
			return nil, held, &http.MaxBytesError{Limit: limit}
		}
		if !b.Grow(held, held+next) {
			return nil, held, ErrBusy
		}
		grown := make([]byte, len(buf), next)
		copy(grown, buf)
		buf = append(grown, probe[0])
		b.Give(held)
		held = next
	}
}

// fits reports whether n more would keep b within its limit now (or b
// holds nothing): a body whose length alone is past what is left is
// refused before a byte of it is read, rather than once it has sent
// most of it.
func (b *Budget) fits(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used <= 0 || b.used+n <= b.Limit
}

// readErr is nil at a body's end, else err.
func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
