package serve_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestServeStore: while the server runs, the store's info file names it
// (Discover finds it) and the API answers at the URL it announced; a
// cancelled context stops it cleanly and removes the file. An address in
// use is an error before anything is written.
func TestServeStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sextant")
	st, err := store.Open(context.Background(), dir, store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := serve.New(serve.Options{Store: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStore(ctx, "127.0.0.1:0", dir, pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "sextant serve: listening on http://127.0.0.1:") || !strings.HasSuffix(line, "(store "+dir+")\n") {
		t.Fatalf("announced %q %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	url := strings.Fields(line)[4]
	c, ok := serve.Discover(dir, os.Getpid())
	if !ok || c == nil {
		t.Fatal("Discover: no server found while it runs")
	}
	resp, err := http.Get(url + "/api/v1/tasks")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET tasks: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, serve.InfoFile)); !os.IsNotExist(err) {
		t.Errorf("info file left behind: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv2, err := serve.New(serve.Options{Store: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := srv2.ServeStore(context.Background(), l.Addr().String(), dir, &out); err == nil || !strings.HasPrefix(err.Error(), "serve: listen") || out.Len() > 0 {
		t.Errorf("address in use: %v, wrote %q", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, serve.InfoFile)); !os.IsNotExist(err) {
		t.Errorf("info file written for a server that never listened: %v", err)
	}
}

// TestCheckFlags: only loopback goes without a token; every refusal names
// its flag.
func TestCheckFlags(t *testing.T) {
	lim := serve.Limits{MaxConns: 8, MaxConnsPerIP: 2, MaxRuns: 1, ReadTimeout: 1, WriteTimeout: 1, IdleTimeout: 1}
	if err := serve.CheckLimitFlags(lim); err != nil {
		t.Fatalf("the test's limits: %v", err)
	}
	for _, c := range []struct{ addr, token, want string }{
		{"127.0.0.1:0", "", ""},
		{"0.0.0.0:7777", "s3cret", ""},
		{"0.0.0.0:7777", "", "--addr 0.0.0.0:7777 is not loopback: set " + serve.TokenEnv},
		{"nonsense", "", "--addr: "},
	} {
		err := serve.CheckFlags(c.addr, c.token, lim)
		if (c.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s token %q: %v, want %q", c.addr, c.token, err, c.want)
		}
	}
	lim.MaxConns = 0
	if err := serve.CheckFlags("127.0.0.1:0", "", lim); err == nil || !strings.HasPrefix(err.Error(), "--max-conns") {
		t.Errorf("zero --max-conns: %v", err)
	}
}
