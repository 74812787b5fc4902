//go:build !wasip1

package main

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/rpc"
	"github.com/sextant-dev/sextant/testdata/plugins/embed-provider/local"
)

// serve answers as sdk.Main does, but for a provider.embed request whose
// config asks for a raw answer: then the bytes it names, which Embed
// could not produce (NaN, garbage, a huge envelope).
func serve() { rpc.Serve(raw{sdk.Serve(local.Local{})}) }

type raw struct{ h sdk.Handler }

func (r raw) Handle(ctx context.Context, req []byte) []byte {
	if sdk.EnvelopeMethod(req) != sdk.MethodEmbed {
		return r.h.Handle(ctx, req)
	}
	var env struct {
		Params struct {
			Config struct {
				Answer      string `json:"answer"`
				AnswerBytes int    `json:"answer_bytes"`
			} `json:"config"`
		} `json:"params"`
	}
	if json.Unmarshal(req, &env) != nil {
		return r.h.Handle(ctx, req)
	}
	c := env.Params.Config
	switch {
	case c.Answer != "":
		return []byte(c.Answer)
	case c.AnswerBytes > 0:
		// {"result":{"vectors":[[0,0,…,0],[0]]}}: well-formed, and over any limit asked.
		var b bytes.Buffer
		b.WriteString(`{"result":{"vectors":[[0`)
		for b.Len() < c.AnswerBytes {
			b.WriteString(",0")
		}
		b.WriteString(`],[0]]}}`)
		return b.Bytes()
	}
	return r.h.Handle(ctx, req)
}
