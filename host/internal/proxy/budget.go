package proxy

import (
	"errors"
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

// read reads r's body, at most MaxBody bytes, into memory charged to the
// budget before it is allocated (jsonbound.Budget.Read): charged as its
// bytes come, never the length it announces (refused unread when that
// alone is past what is left), and refused the moment its buffer's
// next size would take the budget past its limit (RATIONALE "Why OTLP
// ingest and the proxy bound what a body takes decoded, refuse rather
// than queue, and check usage"). It returns what the call holds
// charged, which the caller gives back, failed or not.
func (b *budget) read(w http.ResponseWriter, r *http.Request) ([]byte, int64, *failure) {
	body, held, err := b.Read(http.MaxBytesReader(w, r.Body, MaxBody), r.ContentLength, MaxBody)
	if errors.Is(err, jsonbound.ErrBusy) {
		return nil, held, b.refuse(w)
	}
	return body, held, bodyFailure(err)
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
	if err == nil {
		return nil // before tooBig, which escapes to the heap
	}
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		return tooLarge()
	}
	return badRequest("invalid_request", "", "read request body: %v", err)
}

// MaxDepth bounds how deep a request body's arrays and objects nest, as
// serve bounds an API body's: the proxy decodes a body whole to
// canonicalise it, and walks it again to encode it, each level a few
// stack frames.
const MaxDepth = 128

// decodeCost estimates what body holds once decoded: its bytes, and
// jsonbound.ValueCost for each value (a body of 8 MiB of zeros holds
// some 330 MB once decoded). A body nested past MaxDepth is a 413 naming
// the byte where it went past, before it is decoded.
func decodeCost(body []byte) (int64, *failure) {
	s, err := jsonbound.Scan(body, jsonbound.Limits{Depth: MaxDepth})
	if err != nil {
		return 0, &failure{status: http.StatusRequestEntityTooLarge, class: "invalid_request", code: "request_too_large",
			msg: "request body: " + err.Error()}
	}
	return s.Cost(len(body)), nil
}

// busyFailure is a call the budget refused.
func busyFailure() *failure {
	return &failure{status: http.StatusServiceUnavailable, class: "overloaded", code: "proxy_busy", retryAfter: time.Second,
		msg: "the proxy holds as many large requests as it may at once: send this one again shortly"}
}
