// Package echo is a provider that answers every chat with the last user
// message. The plugin benchmarks carry a 1 KiB request and response through
// it over every transport: linked in (builtin), as a wasm module and as a
// process plugin (../main.go).
package echo

import (
	"context"

	"github.com/sextant-dev/sextant/sdk"
)

// Echo answers with the last user message.
type Echo struct{}

var _ sdk.Provider = Echo{}

// Describe implements sdk.Plugin.
func (Echo) Describe() sdk.Info {
	return sdk.Info{Name: "echo-provider", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion,
		Description: "answers with the last user message"}
}

// Chat implements sdk.Provider.
func (Echo) Chat(_ context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	text := ""
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			text = r.Messages[i].Content
			break
		}
	}
	return &sdk.ChatResponse{Text: text, FinishReason: "stop", Model: r.Model,
		Usage: sdk.Usage{InputTokens: len(text) / 4, OutputTokens: len(text) / 4}}, nil
}
