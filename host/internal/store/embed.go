package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// RecordEmbed is an embeddings call: request is an sdk.EmbedRequest (its
// Config left out), response the sdk.EmbedResponse.
const RecordEmbed RecordingKind = "embed"

// EmbedKey is the canonical request hash of an embeddings call: the
// request's JSON without Config, redacted as ChatKey redacts, in a domain
// of its own so no chat request can share its hash.
func EmbedKey(red *Redactor, req *sdk.EmbedRequest) (hash string, canonical []byte, err error) {
	if req == nil {
		return "", nil, fmt.Errorf("embed key: nil request")
	}
	if red == nil {
		red = DefaultRedactor()
	}
	r := *req
	r.Config = nil
	js, err := json.Marshal(&r)
	if err != nil {
		return "", nil, fmt.Errorf("embed key: %w", err)
	}
	if js, err = red.redactJSON(js); err != nil {
		return "", nil, fmt.Errorf("embed key: %w", err)
	}
	return keyHash("sextant.embed.v1", js), js, nil
}

// EmbedRecording builds the recording of an embeddings call.
func EmbedRecording(hash string, canonical []byte, provider, task string, resp *sdk.EmbedResponse, latency time.Duration) (*Recording, error) {
	if resp == nil {
		return nil, fmt.Errorf("embed recording: nil response")
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("embed recording: %w", err)
	}
	return &Recording{Hash: hash, Kind: RecordEmbed, Provider: provider, Task: task,
		Request: canonical, Response: out, Usage: resp.Usage, Latency: latency}, nil
}
