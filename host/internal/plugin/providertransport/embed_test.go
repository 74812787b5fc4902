package providertransport_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
)

// embedUpstream is a real HTTP server playing /v1/embeddings: under /ok
// the openaitest Upstream's bag-of-words vectors, under the other first
// path segments an answer wrong in the way the segment names.
func embedUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	bad := map[string]string{
		// one vector for the two inputs
		"count": `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}],"model":"m"}`,
		// a proxy's page cut into the JSON, with a 200 and a JSON content type
		"garbage": `{"object":"list","data":[{"index":0,"embedding":[0.6,0.8]},<html>502 Bad Gateway</html>`,
		// JSON has no NaN: an upstream that writes one writes garbage
		"nan": `{"object":"list","data":[{"index":0,"embedding":[NaN,1]},{"index":1,"embedding":[1,0]}],"model":"m"}`,
		// well-formed, each vector placed, but of two lengths: the plugin
		// passes it on and the host refuses it
		"ragged": `{"object":"list","data":[{"index":0,"embedding":[0.6,0.8]},{"index":1,"embedding":[1,0,0]}],"model":"m"}`,
	}
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seg, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if rest != "v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "no such endpoint", http.StatusNotFound)
			return
		}
		if seg == "ok" {
			up.ServeHTTP(w, r)
			return
		}
		body, ok := bad[seg]
		if !ok {
			http.Error(w, "no such case", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// openaiEmbedders are the openai plugin over the process and wasm
// transports, as the kind-typed clients the host makes of them; the wasm
// module is granted srv's host:port.
func openaiEmbedders(t *testing.T, srv *httptest.Server) map[string]sdk.Provider {
	t.Helper()
	ctx := context.Background()
	proc, err := process.Open(ctx, process.Config{Name: openai.Name, Command: []string{providertest.BuildPlugin(t, openai.Name, openaitest.PluginPkg, false)}})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := wasm.Open(ctx, wasm.Config{Name: openai.Name, Path: providertest.BuildPlugin(t, openai.Name, openaitest.PluginPkg, true),
		AllowHTTP: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		proc.Close(ctx)
		t.Fatal(err)
	}
	out := map[string]sdk.Provider{}
	for name, conn := range map[string]plugin.Conn{"process": proc, "wasm": mod} {
		t.Cleanup(func() { conn.Close(ctx) })
		info, err := plugin.Describe(ctx, openai.Name, conn)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plugin.NewKindClient(openai.Name, conn, info, sdk.KindProvider)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = p.(sdk.Provider)
	}
	return out
}

// embedBlock is a pipeline's provider block over p, pointed at the
// upstream case seg.
func embedBlock(p sdk.Provider, srv *httptest.Server, seg string) *run.Provider {
	return &run.Provider{Name: "embed", Plugin: p, Model: "text-embedding-3-small",
		Config: map[string]any{"base_url": srv.URL + "/" + seg + "/v1", "api_key": openaitest.TestKey}}
}

// TestOpenAIEmbedOverTransports: the openai plugin, built as a native
// binary and as a wasip1 module, embeds against a real HTTP upstream as it
// does linked in — the host's client is an sdk.Embedder, the vectors, model
// and usage are the in-process answer exactly — and an upstream's bad
// answer (too few vectors, garbage, a NaN, vectors of two lengths) fails
// the call with an error naming the provider, the plugin and the fault,
// returns nothing, never holds the key, and leaves the plugin answering.
func TestOpenAIEmbedOverTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the openai plugin")
	}
	srv := embedUpstream(t)
	ctx := t.Context()
	in := []string{"archive the newsletter", "reply to the meeting invite"}
	quiet := slog.New(slog.DiscardHandler)
	want, err := run.NewProviders(quiet, embedBlock(openai.New(), srv, "ok")).Embed(ctx, "embed", &sdk.EmbedRequest{Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Vectors) != 2 || want.Usage.InputTokens != 8 || want.Model != "text-embedding-3-small" {
		t.Fatalf("in process: %d vectors, usage %+v, model %q", len(want.Vectors), want.Usage, want.Model)
	}
	const head = `provider "embed" (plugin "openai"): `
	bad := []struct{ seg, want string }{
		{"count", head + "unavailable after 1 attempt: openai: malformed response (http 200, 93 bytes): no embedding for input 1"},
		{"garbage", head + "unavailable after 1 attempt: openai: malformed response (http 200, 87 bytes): invalid character '<' looking for beginning of value"},
		{"nan", head + "unavailable after 1 attempt: openai: malformed response (http 200, 100 bytes): invalid character 'N' looking for beginning of value"},
		{"ragged", head + "failed after 1 attempt: provider.embed answer: vector 1 has 3 dimensions, vector 0 has 2"},
	}
	for transport, p := range openaiEmbedders(t, srv) {
		t.Run(transport, func(t *testing.T) {
			if _, ok := p.(*plugin.EmbedderClient); !ok || !p.Describe().Embed {
				t.Fatalf("client %T, Describe embed %v; want an embedder", p, p.Describe().Embed)
			}
			good := run.NewProviders(quiet, embedBlock(p, srv, "ok"))
			got, err := good.Embed(ctx, "embed", &sdk.EmbedRequest{Input: in})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
			for _, c := range bad {
				t.Run(c.seg, func(t *testing.T) {
					ps := run.NewProviders(quiet, embedBlock(p, srv, c.seg))
					got, err := ps.Embed(ctx, "embed", &sdk.EmbedRequest{Input: []string{"one", "two"}})
					if err == nil || err.Error() != c.want {
						t.Errorf("err = %v\nwant  %s", err, c.want)
					}
					if got != nil {
						t.Errorf("answer %+v beside the error", got)
					}
					if err != nil && strings.Contains(err.Error(), openaitest.TestKey) {
						t.Errorf("the API key leaked into the error: %v", err)
					}
					if _, err := good.Embed(ctx, "embed", &sdk.EmbedRequest{Input: in}); err != nil {
						t.Fatalf("after %s: %v", c.seg, err)
					}
				})
			}
		})
	}
}
