package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"

	// The first-party plugins the example pipelines use, as the CLI links them.
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	_ "github.com/sextant-dev/sextant/navigators/dag"
	_ "github.com/sextant-dev/sextant/plugins/records"
	_ "github.com/sextant-dev/sextant/plugins/script"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// copyDir copies the tree at src into dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".sextant" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// prepare opens a pipeline's plugins as the CLI does (its plugin search
// path and the builtins).
func prepare(ctx context.Context, path string) (*run.Prepared, error) {
	entries, err := plugin.Discover(plugin.SearchPath(nil, filepath.Dir(path)), sdk.Registered())
	if err != nil {
		return nil, err
	}
	return run.Prepare(ctx, path, plugin.NewRegistry(entries, plugin.WithLogger(quiet())), quiet())
}

// env is a server over a fresh store and a copy of the example
// pipelines, listening on a real socket.
type env struct {
	t         *testing.T
	dir       string
	pipelines string
	store     *store.Store
	srv       *serve.Server
	base      string
	token     string
	client    *http.Client
	// seen records every request made through do, for the route coverage
	// check.
	mu   sync.Mutex
	seen []*http.Request
}

type envOpt func(*serve.Options)

func newEnv(t *testing.T, listen string, opts ...envOpt) *env {
	t.Helper()
	dir := t.TempDir()
	pipes := filepath.Join(dir, "pipelines")
	copyDir(t, filepath.Join("..", "..", "..", "pipelines"), pipes)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, ".sextant"), store.NewConfig().WithLogger(quiet()).WithSyncCheckpoints(false))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	o := serve.Options{Store: st, Pipelines: pipes, Prepare: prepare, Addr: l.Addr().String(), Logger: quiet()}
	for _, f := range opts {
		f(&o)
	}
	srv, err := serve.New(o)
	if err != nil {
		l.Close()
		st.Close()
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		st.Close()
	})
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return &env{t: t, dir: dir, pipelines: pipes, store: st, srv: srv, base: "http://127.0.0.1:" + port, token: o.Token, client: &http.Client{}}
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body into v.
func (a answer) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// errorCode is the answer's JSON error code, failing unless it is one.
func (a answer) errorCode(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error (%v): %s", err, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return e.Error.Code
}

// do sends a request; body, when not nil, is sent as JSON (a string or
// []byte as is). headers are "Name: value" pairs ("Host: NAME" sets the
// Host header); the token is sent unless a header "Authorization:" is
// given (even empty).
func (e *env) do(method, path string, body any, headers ...string) answer {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	auth := false
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(k, "Authorization") {
			auth = true
		}
		if strings.EqualFold(k, "Host") {
			req.Host = strings.TrimSpace(v)
			continue
		}
		if v = strings.TrimSpace(v); v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if !auth && e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	e.mu.Lock()
	e.seen = append(e.seen, req)
	e.mu.Unlock()
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// want fails unless the answer has the status.
func (a answer) want(t testing.TB, status int) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	return a
}

// readJSON reads a JSON file of the repository's example pipelines.
func readJSON(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
