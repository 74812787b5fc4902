// Command http-probe is a gate that exercises the host functions, for the
// wasm transport tests: it logs through the host, fetches Config["url"]
// through the host's http function and reports the status and body.
package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sextant-dev/sextant/sdk"
)

// Probe fetches a URL through the host.
type Probe struct{}

var _ sdk.Gate = Probe{}

// Describe implements sdk.Plugin.
func (Probe) Describe() sdk.Info {
	return sdk.Info{Name: "http-probe", Kind: sdk.KindGate, Version: "0.0.1", API: sdk.APIVersion,
		Description: "fetches config.url through the host (host function tests)",
		Config: []sdk.ConfigField{{Name: "url", Type: "string", Required: true, Doc: "URL to GET"},
			{Name: "credential", Type: "string", Doc: "credential the host puts into X-Probe-Key"}}}
}

// Check implements sdk.Gate.
func (Probe) Check(_ context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	url, _ := c.Config["url"].(string)
	sdk.Log(slog.LevelWarn, "probing "+url)
	req := &sdk.HTTPRequest{Method: "GET", URL: url, Header: map[string][]string{"X-Probe": {"1"}}}
	if name, _ := c.Config["credential"].(string); name != "" {
		req.Credentials = []sdk.HeaderCredential{{Header: "X-Probe-Key", Name: name, Prefix: "key "}}
	}
	resp, err := sdk.HTTP(req)
	if err != nil {
		return nil, sdk.Errorf(sdk.CodeUnavailable, "%v", err)
	}
	return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{fmt.Sprintf("status %d", resp.Status), string(resp.Body)}}, nil
}

func init() { sdk.Register(Probe{}) }

func main() { sdk.Main() }
