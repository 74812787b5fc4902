package run_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/score"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/embed-provider/local"
)

const embedPkg = "testdata/plugins/embed-provider"

// processProvider opens the provider plugin built from pkg over the
// process transport, as a kind-typed client.
func processProvider(t *testing.T, name, pkg string) sdk.Provider {
	t.Helper()
	c, err := process.Open(t.Context(), process.Config{Name: name, Command: []string{plugintest.Native(t, pkg)}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return providerOver(t, name, c)
}

// embedTransports are the embed-provider plugin over each wire transport.
func embedTransports(t *testing.T) map[string]sdk.Provider {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the embed-provider plugin")
	}
	return map[string]sdk.Provider{
		"process": processProvider(t, local.Name, embedPkg),
		"wasm":    wasmProvider(t, local.Name, embedPkg, 0),
	}
}

// TestEmbedOverTransports: a provider plugin whose Go type implements
// sdk.Embedder embeds over the process and wasm transports as it does in
// process — its Describe answer says so, the host's client is an
// sdk.Embedder, and the vectors are the in-process ones exactly — while
// a provider that does not embed is still refused.
func TestEmbedOverTransports(t *testing.T) {
	ctx := t.Context()
	in := &sdk.EmbedRequest{Input: []string{"the cat sat on the mat", "a dog"}, Model: "bow-16"}
	want, err := local.Local{}.Embed(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range embedTransports(t) {
		t.Run(name, func(t *testing.T) {
			if !p.Describe().Embed {
				t.Errorf("Describe answer %+v lacks embed", p.Describe())
			}
			if _, ok := p.(*plugin.EmbedderClient); !ok {
				t.Fatalf("client is %T, want *plugin.EmbedderClient", p)
			}
			ps := run.NewProviders(quietLogger(), &run.Provider{Name: "embed", Plugin: p, Model: "bow-16"})
			if !ps.CanEmbed("embed") {
				t.Fatal("CanEmbed = false")
			}
			got, err := ps.Embed(ctx, "embed", &sdk.EmbedRequest{Input: in.Input})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
			if cos, err := score.Cosine(got.Vectors[0], got.Vectors[0]); err != nil || cos < 0.999999 {
				t.Fatalf("cosine of a vector with itself: %v %v", cos, err)
			}
		})
	}
	t.Run("not-an-embedder", func(t *testing.T) {
		echo := processProvider(t, "echo-provider", "testdata/plugins/echo-provider")
		if _, ok := echo.(sdk.Embedder); ok || echo.Describe().Embed {
			t.Fatalf("echo-provider is %T (embed %v), want no embedder", echo, echo.Describe().Embed)
		}
		ps := run.NewProviders(quietLogger(), &run.Provider{Name: "echo", Plugin: echo})
		if ps.CanEmbed("echo") {
			t.Fatal("CanEmbed(echo) = true")
		}
		_, err := ps.Embed(ctx, "echo", in)
		if want := "providers.echo (plugin echo-provider) offers no embeddings"; err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %s", err, want)
		}
	})
}

// TestEmbedBadAnswers: whatever a plugin answers to provider.embed — the
// wrong number of vectors, vectors of different or excessive lengths,
// NaN, an infinity, garbage, an envelope over the limit — the call fails
// with an error naming the provider, the plugin and the fault, returns
// nothing, and the plugin goes on answering. The raw answers come from
// the process build (Embed itself cannot write them).
func TestEmbedBadAnswers(t *testing.T) {
	ts := embedTransports(t)
	const head = `provider "embed" (plugin "embed-provider"): `
	cases := []struct {
		name, transport string
		config          map[string]any
		want            string
	}{
		{"short-process", "process", map[string]any{"mode": "short"}, head + "failed after 1 attempt: provider.embed answer: vector 1 has 15 dimensions, vector 0 has 16"},
		{"short-wasm", "wasm", map[string]any{"mode": "short"}, head + "failed after 1 attempt: provider.embed answer: vector 1 has 15 dimensions, vector 0 has 16"},
		{"count-wasm", "wasm", map[string]any{"mode": "count"}, head + "failed after 1 attempt: provider.embed answer: 1 vectors for 2 inputs"},
		{"wide-wasm", "wasm", map[string]any{"mode": "wide"}, head + "failed after 1 attempt: provider.embed answer: vector 0 has 65537 dimensions, over the limit of 65536"},
		{"fail-process", "process", map[string]any{"mode": "fail"}, head + "unavailable after 1 attempt: the local model is not loaded"},
		{"nan", "process", map[string]any{"answer": `{"result":{"vectors":[[NaN],[1]]}}`}, head + `failed after 1 attempt: provider.embed: malformed response ("{\"result\":{\"vectors\":[[NaN],[1]]}}"): invalid character 'N' looking for beginning of value`},
		{"infinity", "process", map[string]any{"answer": `{"result":{"vectors":[[1e999],[1]]}}`}, head + `failed after 1 attempt: provider.embed: malformed result ("{\"vectors\":[[1e999],[1]]}"): json: cannot unmarshal number 1e999 into Go struct field EmbedResponse.vectors of type float64`},
		{"garbage", "process", map[string]any{"answer": "<html>not an envelope"}, head + `failed after 1 attempt: provider.embed: malformed response ("<html>not an envelope"): invalid character '<' looking for beginning of value`},
		{"shape", "process", map[string]any{"answer": `{"result":{"vectors":"many"}}`}, head + `failed after 1 attempt: provider.embed: malformed result ("{\"vectors\":\"many\"}"): json: cannot unmarshal string into Go struct field EmbedResponse.vectors of type [][]float64`},
		{"huge", "process", map[string]any{"answer_bytes": float64(sdk.MaxEmbedResponse)}, head + "failed after 1 attempt: provider.embed: answer of 16777224 bytes is over the 16777216-byte limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ts[c.transport]
			ps := run.NewProviders(quietLogger(), &run.Provider{Name: "embed", Plugin: p, Config: c.config})
			got, err := ps.Embed(t.Context(), "embed", &sdk.EmbedRequest{Input: []string{"one", "two"}})
			if err == nil || err.Error() != c.want {
				t.Errorf("err = %v\nwant  %s", err, c.want)
			}
			if got != nil {
				t.Errorf("answer %+v beside the error", got)
			}
			// The plugin is not harmed: a good call answers.
			good := run.NewProviders(quietLogger(), &run.Provider{Name: "embed", Plugin: p})
			if _, err := good.Embed(t.Context(), "embed", &sdk.EmbedRequest{Input: []string{"one"}}); err != nil {
				t.Fatalf("after %s: %v", c.name, err)
			}
		})
	}
}

// TestCheckEmbedding: the checks every provider's answer passes,
// builtins' too.
func TestCheckEmbedding(t *testing.T) {
	req := &sdk.EmbedRequest{Input: []string{"a", "b"}}
	nan := 0.0
	nan /= nan
	for _, c := range []struct {
		name string
		resp *sdk.EmbedResponse
		want string
	}{
		{"ok", &sdk.EmbedResponse{Vectors: [][]float64{{1, 0}, {0, 1}}}, ""},
		{"nil", nil, "no answer"},
		{"empty", &sdk.EmbedResponse{Vectors: [][]float64{{}, {}}}, "vector 0 is empty"},
		{"nan", &sdk.EmbedResponse{Vectors: [][]float64{{1, 0}, {0, nan}}}, "vector 1, dimension 1: NaN is not a finite number"},
		{"usage", &sdk.EmbedResponse{Vectors: [][]float64{{1}, {1}}, Usage: sdk.Usage{InputTokens: -1}}, "negative usage (-1 input, 0 output tokens)"},
	} {
		err := sdk.CheckEmbedding(req, c.resp)
		if got := errText(err); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}
