// Package providertest provides helpers for testing sextant provider
// plugins: a real HTTP server playing a provider's API, one case table run
// against a provider over any transport, the comparison of outcomes across
// transports, and the build of a provider's plugin main.
//
// It imports only the SDK and the standard library. A provider's own tests
// run its suite in process; the host's tests add its transports (process
// and wasm) and check they give the same outcomes byte for byte.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Received is what the fake server got.
type Received struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
}

// Fake is a real HTTP server for a provider's API. The first path segment
// names the case, so that one server (one host:port, which a wasm grant can
// name) serves every case: base_url = URL/<case><Spec.Suffix>.
type Fake struct {
	*httptest.Server
	mu    sync.Mutex
	got   map[string][]Received
	serve map[string]http.HandlerFunc
}

// NewFake starts a fake server for cases; it stops when the test ends.
func NewFake(t *testing.T, cases []Case) *Fake {
	f := &Fake{got: map[string][]Received{}, serve: map[string]http.HandlerFunc{}}
	for _, c := range cases {
		if c.Serve != nil {
			f.serve[c.Name] = c.Serve
		}
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Close)
	return f
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request) {
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.got[name] = append(f.got[name], Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	h := f.serve[name]
	f.mu.Unlock()
	if h == nil {
		http.Error(w, "no such case", http.StatusTeapot)
		return
	}
	h(w, r)
}

// Received returns what the server got for the case called name.
func (f *Fake) Received(name string) []Received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[name]
}

// Reset forgets what the server got.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = map[string][]Received{}
}

// HostPort is the server's host:port, as a wasm grant names it.
func (f *Fake) HostPort() string { return strings.TrimPrefix(f.URL, "http://") }

// Case is one exchange with the fake server.
type Case struct {
	Name   string
	Req    sdk.ChatRequest
	Config map[string]any // merged over base_url and api_key
	// BaseURL replaces URL/<name><suffix> ({{FAKE}} stands for the server's URL).
	BaseURL  string
	Deadline time.Duration // default 10s
	Serve    http.HandlerFunc
	// Calls is the number of requests the server must see (default 1).
	Calls int
	Check func(t *testing.T, got Received)

	Want *sdk.ChatResponse
	// WantCode, WantMsg, WantRetry and MaxRetry describe the expected error:
	// code, exact message ({{URL}} is the case's base_url,
	// {{HOSTPORT}} its host:port) and retry-after range.
	WantCode            sdk.Code
	WantMsg             string
	WantRetry, MaxRetry time.Duration
	// NativeOnly: the case needs the plugin to see the caller's deadline,
	// which a wasm guest does not (the host's call deadline ends it there).
	NativeOnly bool
}

// Outcome is what a call came back with, comparable across transports.
type Outcome struct {
	Resp  *sdk.ChatResponse
	Code  sdk.Code
	Msg   string
	Retry time.Duration
}

// Spec says what differs between providers' suites.
type Spec struct {
	// Key is the API key every case sends; no error may contain it.
	Key string
	// Suffix follows URL/<case> in the default base_url ("/v1" or "").
	Suffix string
	// Endpoint is the path after URL/<case> the provider must POST to.
	Endpoint string
}

// BaseFor is the base_url the case is run with.
func (c *Case) BaseFor(f *Fake, s Spec) string {
	if c.BaseURL != "" {
		return strings.ReplaceAll(c.BaseURL, "{{FAKE}}", f.URL)
	}
	return f.URL + "/" + c.Name + s.Suffix
}

// RunSuite runs every case against p and returns the outcomes by name.
func RunSuite(t *testing.T, s Spec, p sdk.Provider, f *Fake, cases []Case, wasm bool) map[string]Outcome {
	t.Helper()
	out := map[string]Outcome{}
	for _, c := range cases {
		if wasm && c.NativeOnly {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			f.Reset()
			base := c.BaseFor(f, s)
			cfg := map[string]any{"base_url": base, "api_key": s.Key}
			for k, v := range c.Config {
				if v == nil {
					delete(cfg, k)
				} else {
					cfg[k] = v
				}
			}
			req := c.Req
			req.Config = cfg
			d := c.Deadline
			if d == 0 {
				d = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			resp, err := p.Chat(ctx, &req)

			var o Outcome
			if err != nil {
				if strings.Contains(err.Error(), s.Key) {
					t.Errorf("the API key leaked into the error: %v", err)
				}
				var e *sdk.Error
				if !errors.As(err, &e) {
					t.Fatalf("error is not an *sdk.Error: %T %v", err, err)
				}
				o = Outcome{Code: e.Code, Msg: e.Message, Retry: e.RetryAfter}
			} else {
				o.Resp = resp
			}

			switch {
			case c.WantCode != "":
				if err == nil {
					t.Fatalf("got %+v, want a %s error", resp, c.WantCode)
				}
				want := strings.NewReplacer("{{URL}}", base, "{{HOSTPORT}}", strings.Split(strings.TrimPrefix(base, "http://"), "/")[0]).Replace(c.WantMsg)
				if o.Code != c.WantCode || o.Msg != want {
					t.Errorf("got error\n  %s: %q\nwant\n  %s: %q", o.Code, o.Msg, c.WantCode, want)
				}
				maxRetry := c.MaxRetry
				if maxRetry == 0 {
					maxRetry = c.WantRetry
				}
				if o.Retry < c.WantRetry || o.Retry > maxRetry {
					t.Errorf("retry-after %s, want %s..%s", o.Retry, c.WantRetry, maxRetry)
				}
				if o.Retry != c.WantRetry {
					o.Retry = -1 // a range: not compared across transports
				}
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			case !reflect.DeepEqual(resp, c.Want):
				t.Errorf("got  %+v\nwant %+v", resp, c.Want)
			}

			got := f.Received(c.Name)
			calls := c.Calls
			switch {
			case calls < 0:
				calls = 0
			case calls == 0:
				calls = 1
			}
			if (c.BaseURL == "" || c.Calls != 0) && len(got) != calls {
				t.Fatalf("server saw %d requests, want %d", len(got), calls)
			}
			if len(got) > 0 {
				r := got[0]
				if r.Method != http.MethodPost || r.Path != "/"+c.Name+s.Endpoint {
					t.Errorf("request line %s %s, want POST /%s%s", r.Method, r.Path, c.Name, s.Endpoint)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				if c.Check != nil {
					c.Check(t, r)
				}
			}
			out[c.Name] = o
		})
	}
	return out
}

// Run runs the suite as subtest label and returns its outcomes.
func Run(t *testing.T, label string, s Spec, p sdk.Provider, f *Fake, cs []Case, wasm bool) map[string]Outcome {
	t.Helper()
	var out map[string]Outcome
	t.Run(label, func(t *testing.T) { out = RunSuite(t, s, p, f, cs, wasm) })
	return out
}

// SameOutcomes fails the test where got differs from want (the in-process
// outcomes); cases missing from got were skipped on that transport.
func SameOutcomes(t *testing.T, want, got map[string]Outcome) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s differs from in-process:\n got  %+v\n want %+v", name, g, w)
		}
	}
}

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
)

// BuildPlugin builds the plugin main package pkg (an import path, e.g.
// "github.com/sextant-dev/sextant/plugins/openai/plugin") natively or as a
// wasip1 c-shared module named name, once per test process, and returns
// the artifact's path.
func BuildPlugin(t *testing.T, name, pkg string, wasm bool) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := pkg + "|" + map[bool]string{true: "wasm", false: "native"}[wasm]
	if p, ok := built[key]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "sextant-providertest-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, name)
	args := []string{"build", "-o", out}
	env := os.Environ()
	if wasm {
		out += ".wasm"
		args = []string{"build", "-o", out, "-buildmode=c-shared"}
		env = append(env, "GOOS=wasip1", "GOARCH=wasm")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s %s: %v\n%s", strings.Join(args, " "), pkg, err, b)
	}
	built[key] = out
	return out
}

// Cleanup removes what BuildPlugin built; call it from TestMain after m.Run.
func Cleanup() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir = ""
		built = map[string]string{}
	}
}

// Trickle starts a server answering every request with a 200 of content
// type ctype whose body it writes and flushes one byte at a time, as
// the slowest network would hand it over: a reader that splits events
// only where a read happened to end fails on it. It returns the
// server's URL and stops when the test ends.
func Trickle(t *testing.T, ctype, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(http.StatusOK)
		for i := range len(body) {
			if _, err := io.WriteString(w, body[i:i+1]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
