package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/plugins/anthropic"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/sdk"
)

// upstream is a fake OpenAI server on a real port: it answers each chat
// completion with a text derived from the last message, and counts calls.
type upstream struct {
	*httptest.Server
	calls atomic.Int64
	// fail, when set, answers every call with this status.
	fail atomic.Int64
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-upstream" {
			http.Error(w, `{"error":{"message":"bad path or key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		u.calls.Add(1)
		if s := u.fail.Load(); s != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(s))
			fmt.Fprint(w, `{"error":{"message":"upstream says no","type":"server_error"}}`)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Stream bool `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error","code":"bad"}}`, http.StatusBadRequest)
			return
		}
		last := textOf(req.Messages[len(req.Messages)-1].Content)
		if req.Stream {
			// A streamed call (the proxy passes a client's stream through):
			// server-sent events, one word each, usage at the end.
			w.Header().Set("Content-Type", "text/event-stream")
			chunk := func(v map[string]any) {
				v["id"], v["object"], v["created"], v["model"] = "chatcmpl-upstream", "chat.completion.chunk", 1, req.Model+"-2024-07-18"
				b, _ := json.Marshal(v)
				fmt.Fprintf(w, "data: %s\n\n", b)
				w.(http.Flusher).Flush()
			}
			for _, word := range strings.SplitAfter("You asked: "+last+" The answer is 4.", " ") {
				chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}, "finish_reason": nil}}})
			}
			chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
			chunk(map[string]any{"choices": []any{}, "usage": map[string]int{"prompt_tokens": 10 + len(last), "completion_tokens": 7, "total_tokens": 17 + len(last)}})
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-upstream", "object": "chat.completion", "created": 1, "model": req.Model + "-2024-07-18",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "You asked: " + last + " The answer is 4."}}},
			"usage": map[string]int{"prompt_tokens": 10 + len(last), "completion_tokens": 7, "total_tokens": 17 + len(last)},
		})
	}))
	t.Cleanup(u.Close)
	return u
}

// textOf is a message's content as text: a string, or its text parts
// joined.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func registry(t testing.TB) *plugin.Registry {
	t.Helper()
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	return plugin.NewRegistry(entries)
}

// provs are a server config's opened providers with the HTTP upstreams
// among them, as proxy.Open makes them.
type provs struct {
	*run.ProviderSet
	ups     map[string]proxy.Upstream
	secrets []string
}

// live is a recording proxy's config over st with these providers.
func (p *provs) live(st *store.Store) proxy.Config {
	return proxy.Config{Store: st, Providers: p.Providers, Prices: p.Prices, Upstreams: p.ups, Secrets: p.secrets}
}

func openProvs(t testing.TB, srv *pipeline.Server, reg *plugin.Registry) *provs {
	t.Helper()
	ps, err := run.OpenProviders(context.Background(), srv.Pipeline, reg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close(context.Background()) })
	ups, secrets := proxy.NewUpstreams(srv.Pipeline, ps.Providers)
	return &provs{ProviderSet: ps, ups: ups, secrets: secrets}
}

// serverConfig writes serve.toml with a default block on the upstream and
// opens its providers as `sextant serve --config` does.
func serverConfig(t testing.TB, up *upstream) (*pipeline.Server, *provs) {
	t.Helper()
	t.Setenv("PROXY_TEST_KEY", "sk-upstream")
	path := filepath.Join(t.TempDir(), "serve.toml")
	cfg := fmt.Sprintf(`[proxy]
name = "agent"

[providers.default]
use = "openai"
base_url = %q
api_key_env = "PROXY_TEST_KEY"
retries = 0

[prices.gpt-4o-mini]
input = 1.0
output = 2.0
`, up.URL+"/v1")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	srv, err := pipeline.LoadServer(context.Background(), path, reg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return srv, openProvs(t, srv, reg)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// serve starts the proxy on a real port.
func serve(t testing.TB, cfg proxy.Config) *httptest.Server {
	t.Helper()
	cfg.Logger = quiet()
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for path, h := range px.Handlers() {
		mux.Handle(path, h)
	}
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func post(t testing.TB, url, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
