package serve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestDNSRebinding: a page on evil.example whose name rebinds to
// 127.0.0.1 reaches the server with Host (and Origin) evil.example; every
// route refuses it with 403 and runs nothing, while the loopback names
// and the configured public name are served.
func TestDNSRebinding(t *testing.T) {
	extra := atomic.Int32{}
	e := newEnv(t, "127.0.0.1:0", func(o *serve.Options) {
		o.AllowHosts = []string{"Sextant.Example.com"}
		o.Handlers = map[string]http.Handler{"POST /v1/chat/completions": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			extra.Add(1)
			w.WriteHeader(204)
		})}
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.base, "http://"))
	evil := "evil.example:" + port
	run := map[string]any{"pipeline": "email-triage", "input": readJSON(t, filepath.Join(e.pipelines, "email-triage", "inputs", "meeting.json"))}
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/tasks", nil},
		{"POST", "/api/v1/runs", run},
		{"POST", "/v1/chat/completions", map[string]any{}},
		{"GET", "/", nil},
		{"GET", "/api/v1/openapi.json", nil},
	} {
		for _, hdrs := range [][]string{
			{"Host: " + evil, "Origin: http://" + evil},
			{"Host: " + evil},
			{"Host: EVIL.example."},
			{"Host: 127.0.0.1.evil.example:" + port},
			{"Host: localhost.evil.example"},
		} {
			a := e.do(tc.method, tc.path, tc.body, hdrs...).want(t, 403)
			if code := a.errorCode(t); code != "forbidden" {
				t.Fatalf("%s %s %v: code %s", tc.method, tc.path, hdrs, code)
			}
			if !strings.Contains(string(a.body), "is not a name this server answers to") {
				t.Fatalf("%s %s %v: %s", tc.method, tc.path, hdrs, a.body)
			}
		}
	}
	if ts, _ := e.store.Tasks(context.Background(), store.Query{}); len(ts) != 0 || extra.Load() != 0 {
		t.Fatalf("rebound requests started %d tasks and reached the proxy %d times", len(ts), extra.Load())
	}
	// A loopback name's page (or the allowed name) may not be the Origin of
	// a request carrying another Host, nor another site the Origin of a
	// read.
	e.do("GET", "/api/v1/tasks", nil, "Host: localhost:"+port, "Origin: http://"+evil).want(t, 403)
	e.do("GET", "/api/v1/tasks", nil, "Origin: null").want(t, 403)

	// The names the server answers to, with their port or without.
	for _, host := range []string{"localhost:" + port, "LOCALHOST", "localhost.:" + port, "127.0.0.1:" + port, "[::1]:" + port, "sextant.example.com", "sextant.example.com:443", "SEXTANT.example.COM:" + port} {
		e.do("GET", "/api/v1/tasks", nil, "Host: "+host).want(t, 200)
		e.do("GET", "/api/v1/tasks", nil, "Host: "+host, "Origin: http://"+host).want(t, 200)
	}
	e.do("POST", "/api/v1/runs", run, "Host: sextant.example.com", "Origin: https://sextant.example.com", "Sec-Fetch-Site: same-origin").want(t, 200)
	e.do("POST", "/v1/chat/completions", map[string]any{}, "Host: localhost:"+port).want(t, 204)
	// Same-site but another origin stays refused for writes.
	e.do("POST", "/api/v1/runs", run, "Host: localhost:"+port, "Origin: http://sextant.example.com").want(t, 403)

	// Names that are not host names are refused at start.
	for _, bad := range []string{"", "http://sextant.example.com", "sextant.example.com:443", "a b", "-x.example", "x..example"} {
		st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(quiet()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = serve.New(serve.Options{Store: st, AllowHosts: []string{bad}})
		st.Close()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--allow-host %q", bad)) {
			t.Errorf("AllowHosts %q: %v", bad, err)
		}
	}
}

// rawConn dials the server from local (nil: any address) and fails the
// test unless it connects. The connection is closed at the test's end,
// before the server shuts down.
func rawConn(t *testing.T, addr string, local net.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedBy reads c until the server closes it and returns what it read;
// it fails the test when c is still open at deadline.
func closedBy(t *testing.T, c net.Conn, deadline time.Time) string {
	t.Helper()
	c.SetReadDeadline(deadline)
	b, err := io.ReadAll(c)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection %s still open after %v (read %q)", c.LocalAddr(), time.Until(deadline), b)
	}
	return string(b) // EOF or a reset: closed
}

// TestSlowClients: clients that hold connections without progress — a
// body that never ends, a header that never ends, a kept-alive connection
// left idle, a refused request's connection — are closed after the
// limits the test sets, while a client with the token is served
// throughout.
func TestSlowClients(t *testing.T) {
	const d = 300 * time.Millisecond
	e := newEnv(t, "0.0.0.0:0", func(o *serve.Options) {
		o.Token = "s3cret-token"
		o.Limits = serve.Limits{ReadHeaderTimeout: d, ReadTimeout: d, IdleTimeout: d}
	})
	if err := e.store.CreateTask(context.Background(), &store.Task{ID: "t1", Pipeline: "p"}); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(e.base, "http://")
	const n = 10
	var slowBody, slowBodyNoToken, slowHeader, idle, refused []net.Conn
	for range n {
		c := rawConn(t, addr, nil)
		fmt.Fprintf(c, "POST /api/v1/tasks/t1/rewards HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer s3cret-token\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"value\":", addr)
		slowBody = append(slowBody, c)

		c = rawConn(t, addr, nil)
		fmt.Fprintf(c, "POST /api/v1/tasks/t1/rewards HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"value\":", addr)
		slowBodyNoToken = append(slowBodyNoToken, c)

		c = rawConn(t, addr, nil)
		fmt.Fprintf(c, "GET /api/v1/tasks HTTP/1.1\r\nHost: %s\r\n", addr)
		slowHeader = append(slowHeader, c)

		// Kept alive after an answer: the dashboard's page needs no token.
		c = rawConn(t, addr, nil)
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("dashboard: %d, close %v", resp.StatusCode, resp.Close)
		}
		idle = append(idle, c)

		c = rawConn(t, addr, nil)
		fmt.Fprintf(c, "GET /api/v1/tasks HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		refused = append(refused, c)
	}
	// Served while the others hold their connections.
	e.do("GET", "/api/v1/tasks", nil).want(t, 200)
	e.do("POST", "/api/v1/tasks/t1/rewards", map[string]any{"value": 1}).want(t, 201)

	// Generous for a busy machine: each should go after 300 ms.
	deadline := time.Now().Add(30 * time.Second)
	for _, c := range slowBody {
		if got := closedBy(t, c, deadline); !strings.HasPrefix(got, "HTTP/1.1 408 ") {
			t.Fatalf("a body that never ends: %q, want a 408 and the connection closed", got)
		}
	}
	for _, c := range slowBodyNoToken {
		if got := closedBy(t, c, deadline); !strings.HasPrefix(got, "HTTP/1.1 401 ") {
			t.Fatalf("a body that never ends, without the token: %q, want a 401 and the connection closed", got)
		}
	}
	for _, c := range slowHeader {
		closedBy(t, c, deadline)
	}
	for _, c := range idle {
		if got := closedBy(t, c, deadline); got != "" {
			t.Fatalf("idle connection read %q", got)
		}
	}
	for _, c := range refused {
		if got := closedBy(t, c, deadline); !strings.HasPrefix(got, "HTTP/1.1 401 ") {
			t.Fatalf("a request without the token: %q, want a 401 and the connection closed", got)
		}
	}
	e.do("GET", "/api/v1/tasks", nil).want(t, 200)
	if rs, _ := e.store.Rewards(context.Background(), "t1"); len(rs) != 1 {
		t.Fatalf("%d rewards, want the served client's one", len(rs))
	}
}

// otherAddr is an address of this machine other than loopback, or nil.
func otherAddr() net.IP {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP
		}
	}
	return nil
}

// TestConnectionCaps: a client other than loopback holding its share of
// connections gets 503 and a closed connection for the next ones, while
// a client with the token on loopback is served.
func TestConnectionCaps(t *testing.T) {
	ip := otherAddr()
	if ip == nil {
		t.Skip("this machine has no address other than loopback to connect from")
	}
	const perIP = 4
	e := newEnv(t, "0.0.0.0:0", func(o *serve.Options) {
		o.Token = "s3cret-token"
		o.Limits = serve.Limits{MaxConns: 16, MaxConnsPerIP: perIP}
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.base, "http://"))
	remote := net.JoinHostPort(ip.String(), port)
	from := &net.TCPAddr{IP: ip}
	var held []net.Conn
	for range perIP {
		c := rawConn(t, remote, from)
		// A header that never ends holds the connection.
		fmt.Fprintf(c, "GET /api/v1/tasks HTTP/1.1\r\nHost: %s\r\n", remote)
		held = append(held, c)
	}
	// The server admits connections in the order they were made, so the
	// next ones find the share taken.
	deadline := time.Now().Add(30 * time.Second)
	for range 3 {
		c := rawConn(t, remote, from)
		if got := closedBy(t, c, deadline); !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "too many connections") {
			t.Fatalf("a connection past the per-client cap: %q, want a 503", got)
		}
	}
	e.do("GET", "/api/v1/tasks", nil).want(t, 200)
	// The held connections are served when they finish their request.
	c := held[0]
	fmt.Fprintf(c, "Authorization: Bearer s3cret-token\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a held connection: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestLongHandlerKeepsContext: the body deadline is lifted once the body
// is read, so a handler that runs longer than ReadTimeout afterwards (a
// run with wait=true, a streamed proxy answer) keeps its context and
// answers. (http.Server's own ReadTimeout would cancel it.)
func TestLongHandlerKeepsContext(t *testing.T) {
	const d = 100 * time.Millisecond
	e := newEnv(t, "127.0.0.1:0", func(o *serve.Options) {
		o.Limits = serve.Limits{ReadTimeout: d}
		o.Handlers = map[string]http.Handler{"POST /v1/slow": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				w.WriteHeader(400)
				return
			}
			select {
			case <-r.Context().Done():
				w.WriteHeader(500)
				fmt.Fprint(w, "context cancelled: ", context.Cause(r.Context()))
			case <-time.After(10 * d):
				w.WriteHeader(200)
			}
		})}
	})
	e.do("POST", "/v1/slow", map[string]any{"x": 1}).want(t, 200)
}
