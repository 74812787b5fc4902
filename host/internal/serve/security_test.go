package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7777", true},
		{"127.1.2.3:0", true},
		{"localhost:7777", true},
		{"LOCALHOST:1", true},
		{"[::1]:7777", true},
		{"0.0.0.0:7777", false},
		{":7777", false},
		{"[::]:7777", false},
		{"192.168.1.10:7777", false},
		{"example.com:7777", false},
	} {
		got, err := serve.Loopback(tc.addr)
		if err != nil || got != tc.want {
			t.Errorf("Loopback(%q) = %v, %v; want %v", tc.addr, got, err, tc.want)
		}
	}
	if _, err := serve.Loopback("7777"); err == nil {
		t.Error("Loopback(7777): no error")
	}
}

// TestNonLoopbackNeedsToken: a server on every interface (0.0.0.0, which
// the sandbox can bind, reached here through 127.0.0.1) refuses to start
// without a token, and with one answers 401 JSON to every API and extra
// route without it.
func TestNonLoopbackNeedsToken(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), ".sextant"), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = serve.New(serve.Options{Store: st, Addr: "0.0.0.0:7777"})
	st.Close()
	if err == nil || !strings.Contains(err.Error(), "needs a token: set SEXTANT_SERVE_TOKEN") {
		t.Fatalf("New without a token on 0.0.0.0: %v", err)
	}

	proxied := 0
	extra := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxied++; w.WriteHeader(204) })
	e := newEnv(t, "0.0.0.0:0", func(o *serve.Options) {
		o.Token = "s3cret-token"
		o.Handlers = map[string]http.Handler{"POST /v1/chat/completions": extra}
	})
	// Every route the server has (API and extra), and one it has not.
	routes := []struct{ method, path string }{{"GET", "/api/v1/nope"}}
	fill := strings.NewReplacer("{id}", "x", "{hash}", "x", "{name}", "x", "{version}", "x")
	for _, p := range e.srv.Routes() {
		method, path, _ := strings.Cut(p, " ")
		routes = append(routes, struct{ method, path string }{method, fill.Replace(path)})
	}
	if len(routes) < 20 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		for _, auth := range []string{"Authorization:", "Authorization: Bearer wrong", "Authorization: s3cret-token", "Authorization: Bearer s3cret-token-and-more"} {
			a := e.do(rt.method, rt.path, map[string]any{}, auth).want(t, 401)
			if code := a.errorCode(t); code != "unauthorized" {
				t.Fatalf("%s %s with %q: code %s", rt.method, rt.path, auth, code)
			}
			if a.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s %s: no WWW-Authenticate", rt.method, rt.path)
			}
		}
	}
	if proxied != 0 {
		t.Fatalf("the extra handler ran %d times without the token", proxied)
	}
	// With the token: through.
	e.do("GET", "/api/v1/tasks", nil).want(t, 200)
	e.do("POST", "/v1/chat/completions", map[string]any{}).want(t, 204)
	e.do("POST", "/v1/chat/completions", map[string]any{}, "Authorization:", "X-Api-Key: s3cret-token").want(t, 204)
	if proxied != 2 {
		t.Fatalf("the extra handler ran %d times, want 2", proxied)
	}
	// The dashboard's files hold no data: served without a token.
	a := e.do("GET", "/", nil, "Authorization:").want(t, 200)
	if !strings.Contains(string(a.body), "<html") {
		t.Fatalf("dashboard: %s", a.body)
	}
	// The document says the API needs the bearer token.
	var doc struct {
		Security []map[string]any
		Paths    map[string]any
	}
	e.do("GET", "/api/v1/openapi.json", nil).want(t, 200).json(t, &doc)
	if len(doc.Security) != 1 || doc.Paths["/v1/chat/completions"] == nil {
		t.Fatalf("document: security %v, extra route %v", doc.Security, doc.Paths["/v1/chat/completions"])
	}
}

// TestLoopbackWithoutToken: on loopback no token is asked for.
func TestLoopbackWithoutToken(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	e.do("GET", "/api/v1/tasks", nil, "Authorization:").want(t, 200)
}

// TestCrossSite: a state-changing request a browser makes for another
// site is refused and writes nothing; the same-origin one goes through.
func TestCrossSite(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	ctx := context.Background()
	if err := e.store.CreateTask(ctx, &store.Task{ID: "t1", Pipeline: "p"}); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"value": 1}
	for _, hdr := range []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Site: same-site", "Origin: http://evil.example", "Origin: null"} {
		if code := e.do("POST", "/api/v1/tasks/t1/rewards", body, hdr).want(t, 403).errorCode(t); code != "forbidden" {
			t.Fatalf("%s: %s", hdr, code)
		}
	}
	// So is every other state-changing route.
	for _, p := range e.srv.Routes() {
		method, path, _ := strings.Cut(p, " ")
		if method != "POST" {
			continue
		}
		path = strings.NewReplacer("{id}", "t1", "{hash}", "x", "{name}", "x", "{version}", "x").Replace(path)
		if code := e.do(method, path, body, "Sec-Fetch-Site: cross-site", "Origin: http://evil.example").want(t, 403).errorCode(t); code != "forbidden" {
			t.Fatalf("%s: %s", p, code)
		}
	}
	// A form post (what a cross-site page can send without a preflight).
	e.do("POST", "/api/v1/tasks/t1/rewards", "value=1", "Content-Type: text/plain").want(t, 415)
	if rs, _ := e.store.Rewards(ctx, "t1"); len(rs) != 0 {
		t.Fatalf("cross-site requests wrote %d rewards", len(rs))
	}
	e.do("POST", "/api/v1/tasks/t1/rewards", body, "Sec-Fetch-Site: same-origin", "Origin: "+e.base).want(t, 201)
	// Reads are not state-changing.
	e.do("GET", "/api/v1/tasks", nil, "Sec-Fetch-Site: cross-site").want(t, 200)
}

// TestBodyLimit: a body over the limit is a 413 and writes nothing.
func TestBodyLimit(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0", func(o *serve.Options) { o.MaxBody = 1024 })
	ctx := context.Background()
	if err := e.store.CreateTask(ctx, &store.Task{ID: "t1", Pipeline: "p"}); err != nil {
		t.Fatal(err)
	}
	big := map[string]any{"value": 1, "note": strings.Repeat("x", 2000)}
	if code := e.do("POST", "/api/v1/tasks/t1/rewards", big).want(t, 413).errorCode(t); code != "too_large" {
		t.Fatal(code)
	}
	if rs, _ := e.store.Rewards(ctx, "t1"); len(rs) != 0 {
		t.Fatalf("an oversized request wrote %d rewards", len(rs))
	}
}

// TestOpenAPIRoutes: the document lists exactly the routes the server
// answers (every documented operation is routed to an API handler, and
// every API path the server routes is documented).
func TestOpenAPIRoutes(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0", func(o *serve.Options) {
		o.Handlers = map[string]http.Handler{"POST /v1/traces": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })}
	})
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Responses   map[string]any
		}
	}
	e.do("GET", "/api/v1/openapi.json", nil).want(t, 200).json(t, &doc)
	var ops []string
	for path, m := range doc.Paths {
		for method, op := range m {
			ops = append(ops, strings.ToUpper(method)+" "+path)
			if strings.HasPrefix(path, "/api/") && (op.OperationID == "" || len(op.Responses) == 0) {
				t.Errorf("%s %s: no operationId or responses", method, path)
			}
		}
	}
	sort.Strings(ops)
	if got := e.srv.Routes(); !slices.Equal(got, ops) {
		t.Fatalf("routes registered:\n%s\ndocumented:\n%s", strings.Join(got, "\n"), strings.Join(ops, "\n"))
	}
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		path = strings.NewReplacer("{id}", "x", "{hash}", "x", "{name}", "x", "{version}", "x").Replace(path)
		// A documented route never falls through to the "no route" 404
		// nor to a method mismatch.
		a := e.do(method, path, map[string]any{})
		if a.status == 404 || a.status == 405 {
			var e2 struct{ Error struct{ Message string } }
			a.json(t, &e2)
			if strings.HasPrefix(e2.Error.Message, "no route") || a.status == 405 {
				t.Errorf("%s is documented but not routed: %d %s", op, a.status, a.body)
			}
		}
	}
	// And the other way: routes the server has that the document lacks
	// would answer; probe the API's neighbours of each documented path.
	for _, probe := range []string{"/api/v1/task", "/api/v1/tasks/x/spans", "/api/v1/review", "/api/v1/strategies/x/versions", "/api/v2/tasks"} {
		a := e.do("GET", probe, nil).want(t, 404)
		if !strings.Contains(string(a.body), "no route") {
			t.Errorf("%s: routed but not documented: %s", probe, a.body)
		}
	}
	if len(ops) < 20 {
		t.Fatalf("only %d operations documented", len(ops))
	}
}

// TestProxyAuth: on an address other than loopback the recording proxy's
// routes need the token as their clients send an API key — OpenAI's as
// Authorization: Bearer, Anthropic's as x-api-key — and refuse a request
// without it with a 401 in the provider's own error shape (which the
// providers' SDKs report as a wrong key), recording nothing.
func TestProxyAuth(t *testing.T) {
	up := newUpstream(t)
	e := newEnv(t, "0.0.0.0:0", withProxy(t, up.URL, false), func(o *serve.Options) { o.Token = "s3cret-token" })
	ctx := context.Background()
	chat := map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	msgs := map[string]any{"model": "gpt-4o-mini", "max_tokens": 50, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	for _, tc := range []struct {
		name, path string
		body       any
		headers    []string
	}{
		{"openai without a key", "/v1/chat/completions", chat, []string{"Authorization:"}},
		{"openai with a wrong key", "/v1/chat/completions", chat, []string{"Authorization: Bearer sk-wrong"}},
		{"anthropic without a key", "/v1/messages", msgs, []string{"Authorization:", "X-Api-Key:", "Anthropic-Version: 2023-06-01"}},
		{"anthropic with a wrong key", "/v1/messages", msgs, []string{"Authorization:", "X-Api-Key: sk-ant-wrong", "Anthropic-Version: 2023-06-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.do("POST", tc.path, tc.body, tc.headers...).want(t, 401)
			var openai struct {
				Error struct{ Message, Type, Code string }
			}
			var anthropic struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if tc.path == "/v1/chat/completions" {
				a.json(t, &openai)
				if openai.Error.Type != "authentication_error" || openai.Error.Code != "invalid_api_key" || !strings.Contains(openai.Error.Message, "SEXTANT_SERVE_TOKEN") {
					t.Fatalf("not OpenAI's 401 shape: %s", a.body)
				}
			} else {
				a.json(t, &anthropic)
				if anthropic.Type != "error" || anthropic.Error.Type != "authentication_error" || !strings.Contains(anthropic.Error.Message, "x-api-key") {
					t.Fatalf("not Anthropic's 401 shape: %s", a.body)
				}
			}
		})
	}
	if ts, err := e.store.Tasks(ctx, store.Query{}); err != nil || len(ts) != 0 {
		t.Fatalf("refused calls recorded %d tasks (%v)", len(ts), err)
	}
	// With the token where each route's clients send their key.
	a := e.do("POST", "/v1/chat/completions", chat, "Authorization: Bearer s3cret-token").want(t, 200)
	if a.header.Get("X-Sextant-Recorded") != "false" {
		t.Fatalf("openai with the token: %s", a.body)
	}
	e.do("POST", "/v1/messages", msgs, "Authorization:", "X-Api-Key: s3cret-token", "Anthropic-Version: 2023-06-01").want(t, 200)
	if ts, err := e.store.Tasks(ctx, store.Query{}); err != nil || len(ts) != 2 {
		t.Fatalf("%d tasks recorded (%v), want 2", len(ts), err)
	}
	// The OTLP receiver takes the token as exporters send headers
	// (OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer TOKEN); without it,
	// the API's 401.
	if code := e.do("POST", "/v1/traces", map[string]any{"resourceSpans": []any{}}, "Authorization:").want(t, 401).errorCode(t); code != "unauthorized" {
		t.Fatal(code)
	}
	traceID, _ := exportSpans(t, e.base+"/v1/traces", otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer s3cret-token"}))
	if tree, err := e.store.Tree(ctx, "otel-"+traceID); err != nil || len(tree.Executions) != 1 || len(tree.Executions[0].Spans) != 3 {
		t.Fatalf("spans exported with the token: %v", err)
	}
}

// TestProxyAuthNpmClient: the official openai npm client pointed at a
// server on a shared address reports a missing or wrong token as it
// reports a wrong OpenAI key (AuthenticationError, 401,
// invalid_api_key), and gets its answer with the token as its API key.
func TestProxyAuthNpmClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the official openai npm client cannot run here")
	}
	dir, err := filepath.Abs(filepath.Join("..", "proxy", "testdata", "npm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	up := newUpstream(t)
	e := newEnv(t, "0.0.0.0:0", withProxy(t, up.URL, false), func(o *serve.Options) { o.Token = "s3cret-token" })
	call := func(key string) map[string]any {
		t.Helper()
		cmd := exec.Command(node, "client.mjs", e.base+"/v1", "one")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SEXTANT_TEST_API_KEY="+key)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node client.mjs one: %v\n%s", err, stderr.String())
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return v
	}
	got := call("sk-wrong")
	if got["name"] != "AuthenticationError" || got["status"] != float64(401) || got["code"] != "invalid_api_key" {
		t.Fatalf("the client saw %v, want an AuthenticationError (401, invalid_api_key)", got)
	}
	if ts, _ := e.store.Tasks(context.Background(), store.Query{}); len(ts) != 0 {
		t.Fatalf("a refused call recorded %d tasks", len(ts))
	}
	if got := call("s3cret-token"); got["text"] != "Upstream answers: What is 2+2?" {
		t.Fatalf("with the token the client saw %v", got)
	}
}

// TestHeaderLimit: a request whose headers (or query) pass
// serve.MaxHeaderBytes (net/http allows 4 KiB over it) is a 431 and is not
// served; one of 8 KiB is.
func TestHeaderLimit(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	for _, c := range []struct {
		header, query int
		want          int
	}{
		{8 << 10, 0, http.StatusOK},
		{2 * serve.MaxHeaderBytes, 0, http.StatusRequestHeaderFieldsTooLarge},
		{0, 2 * serve.MaxHeaderBytes, http.StatusRequestHeaderFieldsTooLarge},
	} {
		url := e.base + "/api/v1/tasks"
		if c.query > 0 {
			url += "?status=" + strings.Repeat("x", c.query)
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.header > 0 {
			req.Header.Set("X-Pad", strings.Repeat("x", c.header))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("a header of %d bytes, a query of %d: %d, want %d", c.header, c.query, resp.StatusCode, c.want)
		}
	}
}
