package proxy

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultDecodeBudget is Config.DecodeBudget's default.
const DefaultDecodeBudget = 256 << 20

// decodedValue is about what one JSON value of a request body costs
// decoded (a map or slice slot, an interface, a json.Number or string):
// a body of 8 MiB of zeros holds some 330 MB once decoded.
const decodedValue = 80

// budget bounds the memory the calls being served hold decoded: a call
// whose body would take the budget past its limit is refused at once
// (503, Retry-After), as serve refuses a connection past its cap, rather
// than a few large bodies of small numbers filling memory. A call larger
// than the whole limit is served when it is the only one.
type budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// grow takes the budget a call holds from held to n: refused, held
// still taken, when the other calls' share and n are past the limit.
func (b *budget) grow(held, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if others := b.used - held; others > 0 && others+n > b.limit {
		return false
	}
	b.used += n - held
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// firstRead is the buffer a body of unknown length is first read into.
const firstRead = 512

// read reads r's body, at most MaxBody bytes, into memory charged to the
// budget before it is allocated. held is what the call holds charged
// already (its Content-Length, taken before any byte is read); read
// returns what it holds charged after, which the caller gives back,
// failed or not. A body of unknown length (chunked) is read into a
// buffer that doubles, each size charged first (with the old buffer
// while it is copied), and is refused the moment the next size would
// take the budget past its limit: many chunked uploads together hold no
// more than the budget (RATIONALE "Why OTLP ingest and the proxy bound
// what a body takes decoded, refuse rather than queue, and check usage").
func (b *budget) read(w http.ResponseWriter, r *http.Request, held int64) ([]byte, int64, *failure) {
	src := http.MaxBytesReader(w, r.Body, MaxBody)
	size := held
	if size == 0 {
		if !b.grow(0, firstRead) {
			return nil, 0, b.refuse(w)
		}
		size, held = firstRead, firstRead
	}
	buf := make([]byte, 0, size)
	var probe []byte // made only for a body that fills its buffer
	for {
		if len(buf) < cap(buf) {
			n, err := src.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err != nil {
				return buf, held, bodyFailure(err)
			}
			continue
		}
		// A full buffer reads one byte aside first: a body that ends
		// here, as every body whose length was sent does, needs no
		// larger one.
		if probe == nil {
			probe = make([]byte, 1)
		}
		n, err := src.Read(probe)
		if n == 0 {
			if err != nil {
				return buf, held, bodyFailure(err)
			}
			continue
		}
		next := min(2*int64(cap(buf)), MaxBody)
		if next <= int64(cap(buf)) {
			return nil, held, tooLarge()
		}
		if !b.grow(held, held+next) {
			return nil, held, b.refuse(w)
		}
		grown := make([]byte, len(buf), next)
		copy(grown, buf)
		buf = append(grown, probe[0])
		b.give(held)
		held = next
	}
}

// refuse is busyFailure for a call whose body is left unread: the
// connection closes after the answer, as net/http would otherwise read
// what is left of a chunked body before answering, for as long as its
// client takes to send it.
func (b *budget) refuse(w http.ResponseWriter) *failure {
	w.Header().Set("Connection", "close")
	return busyFailure()
}

// bodyFailure is the failure a body read ending in err is: none at its
// end, 413 past MaxBody, else a 400.
func bodyFailure(err error) *failure {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &tooBig):
		return tooLarge()
	}
	return badRequest("invalid_request", "", "read request body: %v", err)
}

// decodeCost estimates what body holds once decoded: its bytes, and
// decodedValue for each value, counted as the brackets and commas
// outside strings.
func decodeCost(body []byte) int64 {
	values := int64(1)
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
		case ',', '[', '{':
			values++
		}
	}
	return int64(len(body)) + values*decodedValue
}

// busyFailure is a call the budget refused.
func busyFailure() *failure {
	return &failure{status: http.StatusServiceUnavailable, class: "overloaded", code: "proxy_busy", retryAfter: time.Second,
		msg: "the proxy holds as many large requests as it may at once: send this one again shortly"}
}
