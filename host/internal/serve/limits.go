package serve

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerIP     = 64
	DefaultMaxRuns           = 32
)

// Limits bound what one client, and all clients together, can hold of the
// server: connections and the time a connection may stay without
// progress. A zero field takes its default; a negative one is an error.
//
// # Notes
//
//   - The timeouts never cut a slow handler short: a run started with
//     wait=true or a streamed proxy answer may take minutes. They bound
//     the client — how long it takes to send its request, to take each
//     write of the answer, and to come back on a kept-alive connection.
//   - The connection caps are enforced when a connection is accepted: one
//     past a cap is answered 503 and closed at once.
type Limits struct {
	// ReadHeaderTimeout is how long a client may take to send a request's
	// headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client may take to send a request's body,
	// counted from when the headers arrived. A body still incomplete then
	// fails the request and closes the connection.
	ReadTimeout time.Duration
	// WriteTimeout is how long one write of an answer may wait for the
	// client to take it: a client that stops reading is disconnected, a
	// long stream read steadily is not.
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// MaxConns bounds the open connections. Clients other than loopback
	// together hold at most MaxConns − MaxConns/8 (and at least one slot
	// is kept), so that the local CLI and dashboard always find room.
	MaxConns int
	// MaxConnsPerIP bounds the connections one client other than loopback
	// holds; an IPv6 client is counted by its /64 (one host's share).
	// Loopback clients have no per-IP cap: every local process shares
	// one address, and the reserve of MaxConns is theirs.
	MaxConnsPerIP int
	// MaxRuns bounds the runs started with wait=false that go on at once
	// in this server. One past it is answered 503 with Retry-After, and
	// nothing is started: each run holds its plugins (processes, wasm
	// instances) and provider calls until it returns, and nothing else
	// would bound how many a client starts.
	MaxRuns int
}

// withDefaults fills zero fields and refuses negative ones.
func (l Limits) withDefaults() (Limits, error) {
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ReadHeaderTimeout", &l.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"ReadTimeout", &l.ReadTimeout, DefaultReadTimeout},
		{"WriteTimeout", &l.WriteTimeout, DefaultWriteTimeout},
		{"IdleTimeout", &l.IdleTimeout, DefaultIdleTimeout},
	}
	for _, d := range durs {
		switch {
		case *d.v < 0:
			return l, fmt.Errorf("serve: limits: %s %v is negative", d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	ints := []struct {
		name     string
		v        *int
		def, min int
	}{
		{"MaxConns", &l.MaxConns, DefaultMaxConns, 2},
		{"MaxConnsPerIP", &l.MaxConnsPerIP, DefaultMaxConnsPerIP, 1},
		{"MaxRuns", &l.MaxRuns, DefaultMaxRuns, 1},
	}
	for _, n := range ints {
		switch {
		case *n.v == 0:
			*n.v = n.def
		case *n.v < n.min:
			return l, fmt.Errorf("serve: limits: %s %d is below %d", n.name, *n.v, n.min)
		}
	}
	return l, nil
}

// remoteMax is how many connections clients other than loopback may hold
// together: MaxConns less the loopback reserve.
func (l Limits) remoteMax() int {
	reserve := max(1, l.MaxConns/8)
	return l.MaxConns - reserve
}

// limitListener enforces Limits' connection caps and write timeout on the
// connections it accepts.
type limitListener struct {
	net.Listener
	lim Limits
	log *slog.Logger

	mu     sync.Mutex
	total  int            // open connections
	remote int            // of which from clients other than loopback
	perIP  map[string]int // open connections by client key

	refused  atomic.Int64 // connections refused since the last warning
	lastWarn atomic.Int64 // unix nanos of the last warning
}

func newLimitListener(l net.Listener, lim Limits, log *slog.Logger) *limitListener {
	return &limitListener{Listener: l, lim: lim, log: log, perIP: map[string]int{}}
}

// busyAnswer is what a connection past a cap gets before it is closed.
const busyAnswer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 36\r\n\r\ntoo many connections: try again later"

// Accept returns the next connection within the caps; connections past a
// cap are answered 503 and closed without reaching the server.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, local := clientKey(c.RemoteAddr())
		if why := l.admit(key, local); why != "" {
			l.refuse(c, why)
			continue
		}
		return &limitConn{Conn: c, l: l, key: key, local: local}, nil
	}
}

// admit counts a new connection from key, or says which cap it is past.
func (l *limitListener) admit(key string, local bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.total >= l.lim.MaxConns:
		return fmt.Sprintf("%d connections open (MaxConns)", l.total)
	case !local && l.remote >= l.lim.remoteMax():
		return fmt.Sprintf("%d connections open from clients other than loopback (MaxConns less the loopback reserve)", l.remote)
	case !local && l.perIP[key] >= l.lim.MaxConnsPerIP:
		return fmt.Sprintf("%d connections open from %s (MaxConnsPerIP)", l.perIP[key], key)
	}
	l.total++
	if !local {
		l.remote++
		l.perIP[key]++
	}
	return ""
}

func (l *limitListener) release(key string, local bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if !local {
		l.remote--
		if l.perIP[key]--; l.perIP[key] <= 0 {
			delete(l.perIP, key)
		}
	}
}

// refuse answers a connection past a cap and closes it. The answer is one
// small write into an empty socket buffer, so it does not block the
// accept loop; a warning is logged at most every 10 seconds.
func (l *limitListener) refuse(c net.Conn, why string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, busyAnswer)
	_ = c.Close()
	n := l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if now-last >= int64(10*time.Second) && l.lastWarn.CompareAndSwap(last, now) {
		l.refused.Add(-n)
		l.log.Warn("connections refused", "refused", n, "from", c.RemoteAddr().String(), "why", why)
	}
}

// clientKey is the key a connection is counted under: its IP address, an
// IPv6 address by its /64. local reports a loopback client.
func clientKey(a net.Addr) (key string, local bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		// Not an IP transport (a unix socket): one local client.
		return a.Network(), true
	}
	ip := ap.Addr().Unmap()
	if ip.IsLoopback() {
		return ip.String(), true
	}
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String(), false
	}
	return ip.String(), false
}

// limitConn is an accepted connection: it is uncounted when closed and
// gives each write WriteTimeout.
type limitConn struct {
	net.Conn
	l     *limitListener
	key   string
	local bool
	once  sync.Once
}

// Write gives the client WriteTimeout to take p.
func (c *limitConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.l.lim.WriteTimeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// Close closes the connection and frees its slot.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key, c.local) })
	return err
}

// deadlineBody is a request body that must arrive within ReadTimeout: the
// connection's read deadline is set when the handler starts and lifted at
// the body's end, so that a handler running long afterwards keeps its
// context (net/http cancels it when a read deadline passes while it
// watches the idle connection).
type deadlineBody struct {
	io.ReadCloser
	w    http.ResponseWriter
	rc   *http.ResponseController
	done bool
}

// bodyDeadline wraps r.Body so that it must arrive within d.
func bodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, w: w, rc: rc}
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.done:
	case err == io.EOF:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		// What is left of the body would be read as the next request.
		b.w.Header().Set("Connection", "close")
		err = fmt.Errorf("request body not received within the read timeout: %w", err)
	}
	return n, err
}
