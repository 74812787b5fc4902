package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/hostname"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Server is a loaded server configuration file (serve.toml): the
// providers, prices, plugin grants and store settings of `sextant serve`,
// declared as a pipeline declares them, plus the [proxy] block.
type Server struct {
	// Pipeline holds the [providers], [prices], [plugins] and [store]
	// blocks (Name is the proxy's task label); the rest is empty.
	Pipeline *Pipeline
	Proxy    Proxy
	// AllowHosts are the names clients reach the server by, besides
	// localhost and IP addresses (allow_hosts), checked and in the form
	// hostname.Canon gives; --allow-host adds to them.
	AllowHosts []string
}

// Proxy is the [proxy] block of serve.toml.
type Proxy struct {
	// Name labels the tasks the proxy records (their pipeline name).
	Name string `json:"name"`
	// Replay answers every call from recordings, never calling upstream.
	Replay bool `json:"replay"`
	// RecordReplays stores each replayed call as a replay execution;
	// by default a replay stores nothing.
	RecordReplays bool `json:"record_replays"`
}

// ServerSpec is the declaration of serve.toml.
var ServerSpec = &schema.Block{Name: "server", Fields: []schema.Field{
	{Name: "allow_hosts", Type: schema.StringList, Doc: "names clients reach the server by, besides localhost and IP addresses (as --allow-host; the server answers to the names of both); other Host headers get 403"},
	{Name: "proxy", Type: schema.Table, Doc: "the recording proxy (/v1/chat/completions, /v1/responses, /v1/embeddings, /v1/messages)", Block: &schema.Block{Fields: []schema.Field{
		{Name: "name", Type: schema.String, Default: "proxy", Doc: "pipeline name of the tasks the proxy records"},
		{Name: "replay", Type: schema.Bool, Default: false, Doc: "answer every call from recordings and never call upstream (a miss is an error)"},
		{Name: "record_replays", Type: schema.Bool, Default: false, Doc: "store each replayed call as a replay execution of its task (by default a replay stores nothing)"},
	}}},
	{Name: "providers", Type: schema.TableMap, Block: providerBlock, Doc: "named providers; a request's model selects the block named like it, else [providers.default]"},
	{Name: "plugins", Type: schema.TableMap, Block: grantBlock, Doc: "capabilities granted to plugins"},
	{Name: "prices", Type: schema.TableMap, Block: priceBlock, Doc: "per-model prices, overriding the built-in table"},
	{Name: "store", Type: schema.Table, Doc: "how calls are recorded", Block: &schema.Block{Fields: []schema.Field{
		{Name: "redact", Type: schema.StringList, Doc: "regular expressions whose matches are redacted before storing"},
	}}},
}}

// LoadServer reads, interpolates, decodes and validates the server
// configuration at path, with the checks a pipeline's [providers],
// [prices], [plugins] and [store] blocks get. Every problem is returned at
// once in an error matching sdk.ErrInvalid, as `file:line: key: message`.
func LoadServer(ctx context.Context, path string, res Resolver, opts Options) (*Server, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	data, err := tomlpos.ReadFile(path)
	if err != nil {
		return nil, sdk.Invalid(sdk.Problem{File: path, Message: fmt.Sprintf("read server config: %v", errors.Unwrap(err))})
	}
	ix, err := tomlpos.Scan(path, data)
	if err != nil {
		return nil, err
	}
	l := &loader{ctx: ctx, res: res, opts: opts, c: &schema.Checker{File: path, Index: ix}}
	raw, ok := l.parse(data)
	if !ok {
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	p, ok := l.decode(path, raw, ServerSpec)
	if !ok {
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	l.providers(p)
	l.grants(p)
	srv := &Server{Pipeline: p, Proxy: Proxy{Name: "proxy"}}
	if raw, ok := l.raw["proxy"].(map[string]any); ok {
		if v, ok := raw["name"].(string); ok {
			if bad := badLabel(v); bad != "" {
				l.add([]string{"proxy", "name"}, "%q %s", v, bad)
			}
			srv.Proxy.Name = v
		}
		if v, ok := raw["replay"].(bool); ok {
			srv.Proxy.Replay = v
		}
		if v, ok := raw["record_replays"].(bool); ok {
			srv.Proxy.RecordReplays = v
		}
	}
	if raw, ok := l.raw["allow_hosts"].([]any); ok {
		for i, v := range raw {
			s, ok := v.(string)
			if !ok {
				continue // the schema check reported it
			}
			n, err := hostname.Check(s)
			if err != nil {
				l.add([]string{"allow_hosts", strconv.Itoa(i)}, "%q: %v", s, err)
				continue
			}
			srv.AllowHosts = append(srv.AllowHosts, n)
		}
	}
	if probs := l.c.Problems(); len(probs) > 0 {
		return nil, sdk.Invalid(probs...)
	}
	p.Name = srv.Proxy.Name
	return srv, nil
}

// badLabel says why s cannot name a task's pipeline, or "".
func badLabel(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > 256:
		return "is longer than 256 bytes"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return "has a control character or invalid UTF-8"
		}
	}
	return ""
}
