// Command slow-provider is a provider for the crash-safety test: it
// answers after a delay and appends one line per call to a log file, so the
// test can count what the provider saw across a kill -9 and a resume.
//
// Config: log (file to append to), delay_ms (per call).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Slow answers "answer to <step>" after delay_ms.
type Slow struct{}

// Describe implements sdk.Plugin.
func (Slow) Describe() sdk.Info {
	return sdk.Info{Name: "slow-provider", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion,
		Description: "answers slowly and logs every call (crash tests)"}
}

// Chat implements sdk.Provider.
func (Slow) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	prompt := r.Messages[len(r.Messages)-1].Content
	sum := sha256.Sum256([]byte(prompt))
	if path, _ := r.Config["log"].(string); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		words := strings.Fields(prompt)
		last := ""
		if len(words) > 0 {
			last = words[len(words)-1]
		}
		// step, prompt hash, and the prompt's last word (the crash test
		// puts the task id there)
		fmt.Fprintf(f, "%s %s %s\n", r.Step, hex.EncodeToString(sum[:8]), last)
		f.Sync()
		f.Close()
	}
	delay, _ := r.Config["delay_ms"].(float64)
	if delay == 0 {
		if d, ok := r.Config["delay_ms"].(int64); ok {
			delay = float64(d)
		}
	}
	select {
	case <-time.After(time.Duration(delay) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	text := "answer to " + r.Step
	return &sdk.ChatResponse{Text: text, FinishReason: "stop", Usage: sdk.Usage{InputTokens: len(prompt) / 4, OutputTokens: len(text) / 4}}, nil
}

func init() { sdk.Register(Slow{}) }

func main() { sdk.Main() }
