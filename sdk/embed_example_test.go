package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// Letters is a provider that embeds: each text's vector counts its
// letters a to c. Chat is the one method every provider has.
type Letters struct{}

func (Letters) Describe() sdk.Info {
	return sdk.Info{Name: "letters", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion}
}

func (Letters) Chat(context.Context, *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return &sdk.ChatResponse{Text: "ok"}, nil
}

func (Letters) Embed(_ context.Context, r *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	out := &sdk.EmbedResponse{Model: "letters-3"}
	for _, s := range r.Input {
		out.Vectors = append(out.Vectors, []float64{
			float64(strings.Count(s, "a")), float64(strings.Count(s, "b")), float64(strings.Count(s, "c"))})
	}
	return out, nil
}

// A provider plugin embeds by implementing one more method, Embed: Serve
// then declares it (Info.Embed) and answers provider.embed, and the
// host's client of the plugin is an sdk.Embedder, over every transport.
func ExampleEmbedder() {
	ctx := context.Background()
	c := sdktest.Wire(Letters{})
	fmt.Println(c.Describe().Embed)
	req := &sdk.EmbedRequest{Input: []string{"abc", "aab"}}
	resp, _ := c.Embed(ctx, req)
	fmt.Println(resp.Vectors, resp.Model, sdk.CheckEmbedding(req, resp))

	// A provider without Embed says nothing of it and refuses the method.
	plain := sdktest.Wire(rawProvider{})
	_, err := plain.Embed(ctx, req)
	fmt.Println(plain.Describe().Embed, errors.Is(err, sdk.ErrUnknownMethod))
	// Output:
	// true
	// [[1 1 1] [2 1 0]] letters-3 <nil>
	// false true
}

// TestEmbedClients: the kind-typed client of a provider is an Embedder
// exactly when its Describe answer says it embeds, and the guest side
// (ServeGuest, what a wasm module runs) answers provider.embed as Serve
// does.
func TestEmbedClients(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		p     sdk.Plugin
		embed bool
	}{{Letters{}, true}, {rawProvider{}, false}} {
		sdktest.Check(t, c.p)
		for _, h := range []sdk.Handler{sdk.Serve(c.p), sdk.ServeGuest(c.p)} {
			rt := &loopRT{h: h}
			p, err := sdk.NewProviderClient(ctx, c.p.Describe().Name, rt)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := p.(sdk.Embedder)
			if ok != c.embed || p.Describe().Embed != c.embed {
				t.Fatalf("%s: client %T, Info.Embed %v; want embedder %v", c.p.Describe().Name, p, p.Describe().Embed, c.embed)
			}
			if !ok {
				continue
			}
			resp, err := e.Embed(ctx, &sdk.EmbedRequest{Input: []string{"cab"}})
			if err != nil || len(resp.Vectors) != 1 || resp.Vectors[0][2] != 1 {
				t.Fatalf("embed: %+v %v", resp, err)
			}
		}
	}
}
