package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/sdk"
)

// newUpstream is a fake OpenAI server on a real port: each chat
// completion is answered with a text derived from its last message.
func newUpstream(t testing.TB) *httptest.Server {
	u := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1].Content
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-upstream", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "Upstream answers: " + last}}},
			"usage": map[string]int{"prompt_tokens": 10 + len(last), "completion_tokens": 5, "total_tokens": 15 + len(last)},
		})
	}))
	t.Cleanup(u.Close)
	return u
}

// openProxy opens the recording proxy over st as `sextant serve --config
// serve.toml [--replay]` does: a default provider block on the upstream
// at upURL ("" for no config: replay only).
func openProxy(t testing.TB, st *store.Store, upURL string, replay bool) *proxy.Proxy {
	t.Helper()
	// A replaying proxy stores its calls here (--record-replays): the
	// tests count them.
	o := proxy.OpenOptions{Store: st, Replay: replay, RecordReplays: replay, Logger: quiet()}
	if upURL != "" {
		t.Setenv("SERVE_TEST_UPSTREAM_KEY", "sk-test")
		o.Config = filepath.Join(t.TempDir(), "serve.toml")
		cfg := fmt.Sprintf("[providers.default]\nuse = \"openai\"\nbase_url = %q\napi_key_env = \"SERVE_TEST_UPSTREAM_KEY\"\nretries = 0\n", upURL+"/v1")
		if err := os.WriteFile(o.Config, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		entries, err := plugin.Discover(nil, sdk.Registered())
		if err != nil {
			t.Fatal(err)
		}
		o.Registry = plugin.NewRegistry(entries, plugin.WithLogger(quiet()))
	}
	px, closeProviders, err := proxy.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeProviders(context.Background()) })
	return px
}

// withProxy mounts the recording proxy (see openProxy) and the OTLP/HTTP
// receiver beside the API, as `sextant serve` does.
func withProxy(t testing.TB, upURL string, replay bool) envOpt {
	return func(o *serve.Options) {
		px := openProxy(t, o.Store, upURL, replay)
		recv, err := otlp.NewHandler(otlp.Config{Store: o.Store, Prices: run.DefaultPrices(), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		o.Handlers = px.Handlers()
		o.Handlers[otlp.Route] = recv
	}
}
