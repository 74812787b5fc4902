package wasm

import (
	"log/slog"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestEmbedRawAnswers: a wasm provider that declares embed but answers
// provider.embed with bytes no sdk.Embedder could write (NaN, an
// infinity, garbage, the wrong shape, the wrong count or lengths, an
// envelope over the limit) fails the call with an error naming the
// provider, the plugin and the fault, returns nothing, and goes on
// answering. The module (testdata/plugins/embed-provider/raw) speaks the
// ABI by hand, so the answers reach the wasm transport and the host's
// decoder as written.
func TestEmbedRawAnswers(t *testing.T) {
	const name = "embed-raw"
	path := plugintest.Wasm(t, "testdata/plugins/embed-provider/raw")
	m, _ := open(t, name, path, Config{})
	info, err := plugin.Describe(t.Context(), name, m)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := plugin.NewKindClient(name, m, info, sdk.KindProvider)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := kc.(*plugin.EmbedderClient)
	if !ok {
		t.Fatalf("client is %T, want *plugin.EmbedderClient", kc)
	}
	quiet := slog.New(slog.DiscardHandler)
	in := &sdk.EmbedRequest{Input: []string{"one", "two"}}
	embed := func(config map[string]any) (*sdk.EmbedResponse, error) {
		return run.NewProviders(quiet, &run.Provider{Name: "embed", Plugin: p, Config: config}).Embed(t.Context(), "embed", in)
	}
	good, err := embed(nil)
	if err != nil || len(good.Vectors) != 2 || good.Vectors[1][1] != 1 {
		t.Fatalf("good answer: %+v, %v", good, err)
	}
	const head = `provider "embed" (plugin "embed-raw"): failed after 1 attempt: `
	for _, c := range []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"nan", map[string]any{"answer": `{"result":{"vectors":[[NaN],[1]]}}`}, head + `provider.embed: malformed response ("{\"result\":{\"vectors\":[[NaN],[1]]}}"): invalid character 'N' looking for beginning of value`},
		{"infinity", map[string]any{"answer": `{"result":{"vectors":[[1e999],[1]]}}`}, head + `provider.embed: malformed result ("{\"vectors\":[[1e999],[1]]}"): json: cannot unmarshal number 1e999 into Go struct field EmbedResponse.vectors of type float64`},
		{"garbage", map[string]any{"answer": "<html>not an envelope"}, head + `provider.embed: malformed response ("<html>not an envelope"): invalid character '<' looking for beginning of value`},
		{"shape", map[string]any{"answer": `{"result":{"vectors":"many"}}`}, head + `provider.embed: malformed result ("{\"vectors\":\"many\"}"): json: cannot unmarshal string into Go struct field EmbedResponse.vectors of type [][]float64`},
		{"count", map[string]any{"answer": `{"result":{"vectors":[[1,0]]}}`}, head + "provider.embed answer: 1 vectors for 2 inputs"},
		{"ragged", map[string]any{"answer": `{"result":{"vectors":[[1,0],[1]]}}`}, head + "provider.embed answer: vector 1 has 1 dimensions, vector 0 has 2"},
		{"huge", map[string]any{"answer_bytes": float64(sdk.MaxEmbedResponse)}, head + "response of 16777224 bytes exceeds the 16 MiB limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := embed(c.config)
			if err == nil || err.Error() != c.want {
				t.Errorf("err = %v\nwant  %s", err, c.want)
			}
			if got != nil {
				t.Errorf("answer %+v beside the error", got)
			}
			if _, err := embed(nil); err != nil {
				t.Fatalf("after %s: %v", c.name, err)
			}
		})
	}
}
