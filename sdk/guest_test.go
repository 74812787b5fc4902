package sdk_test

import (
	"context"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// rawProvider answers with text as it is, valid UTF-8 or not.
type rawProvider struct{ text string }

func (rawProvider) Describe() sdk.Info {
	return sdk.Info{Name: "raw", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion}
}

func (p rawProvider) Chat(_ context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return &sdk.ChatResponse{Text: p.text + "|" + r.Messages[0].Content, Model: r.Model}, nil
}

// TestGuestStringsChecked: a wasm guest neither checks the UTF-8 of the
// host's strings nor of its own answers (sdk.ServeGuest), so the host's
// decoder must: a guest's invalid bytes reach the host as U+FFFD, exactly
// as a process plugin's (sdk.Serve, which checks as it encodes) do.
func TestGuestStringsChecked(t *testing.T) {
	ctx := context.Background()
	req := &sdk.ChatRequest{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "caf\xe9 ok"}}}
	var want string
	for i, c := range []*sdk.Client{sdktest.Wire(rawProvider{"bad \xff\xfe end"}), sdktest.Guest(rawProvider{"bad \xff\xfe end"})} {
		resp, err := c.Chat(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = resp.Text
			if want != "bad \uFFFD\uFFFD end|caf\uFFFD ok" {
				t.Fatalf("serve: %q", want)
			}
			continue
		}
		if resp.Text != want {
			t.Fatalf("guest answered %q, serve %q", resp.Text, want)
		}
	}
}
