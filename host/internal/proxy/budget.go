package proxy

import (
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
