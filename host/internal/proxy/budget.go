package proxy

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/sextant-dev/sextant/host/internal/jsonbound"
)

// DefaultDecodeBudget is Config.DecodeBudget's default.
const DefaultDecodeBudget = 256 << 20

// budget bounds the memory the calls being served hold decoded: a call
// whose body would take the budget past its limit is refused at once
// (503, Retry-After), as serve refuses a connection past its cap, rather
// than a few large bodies of small numbers filling memory. A call larger
// than the whole limit is served when it is the only one.
type budget struct {
	jsonbound.Budget
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
		if !b.Grow(0, firstRead) {
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
		if !b.Grow(held, held+next) {
			return nil, held, b.refuse(w)
		}
		grown := make([]byte, len(buf), next)
		copy(grown, buf)
		buf = append(grown, probe[0])
		b.Give(held)
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
// jsonbound.ValueCost for each value (a body of 8 MiB of zeros holds
// some 330 MB once decoded).
func decodeCost(body []byte) int64 {
	s, _ := jsonbound.Scan(body, jsonbound.Limits{})
	return s.Cost(len(body))
}

// busyFailure is a call the budget refused.
func busyFailure() *failure {
	return &failure{status: http.StatusServiceUnavailable, class: "overloaded", code: "proxy_busy", retryAfter: time.Second,
		msg: "the proxy holds as many large requests as it may at once: send this one again shortly"}
}
