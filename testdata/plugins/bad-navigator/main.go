// Command bad-navigator is a navigator that answers with malformed
// decisions on request, for the host's decision checks. Its routine file
// is one line, `mode = "NAME"`, that picks the fault:
//
//	ok              start → work → end, as a navigator should
//	unknown-node    a ready token on a node the routine lacks
//	duplicate-id    two tokens with one id
//	remove-unknown  removes a token that does not exist, and completes
//	complete-early  completes while its ready token remains
//
// Built both as a native process plugin and as a wasip1 module.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sync"

	"github.com/sextant-dev/sextant/sdk"
)

// Bad is the misbehaving navigator.
type Bad struct {
	mu    sync.Mutex
	modes map[string]string // routine hash → mode
}

var _ sdk.Navigator = (*Bad)(nil)

// Describe implements sdk.Plugin.
func (*Bad) Describe() sdk.Info {
	return sdk.Info{Name: "bad-navigator", Kind: sdk.KindNavigator, Version: "0.0.1", API: sdk.APIVersion,
		Description: "answers with malformed decisions (host decision-check tests)"}
}

var modeRE = regexp.MustCompile(`mode\s*=\s*"([a-z-]+)"`)

// Load implements sdk.Navigator.
func (b *Bad) Load(_ context.Context, r *sdk.LoadRequest) (*sdk.Routine, error) {
	m := modeRE.FindSubmatch(r.Routine)
	if m == nil {
		return nil, sdk.Invalid(sdk.Problem{File: r.Name, Line: 1, Message: `want mode = "NAME"`})
	}
	sum := sha256.Sum256(r.Routine)
	hash := hex.EncodeToString(sum[:])
	b.mu.Lock()
	if b.modes == nil {
		b.modes = map[string]string{}
	}
	b.modes[hash] = string(m[1])
	b.mu.Unlock()
	return &sdk.Routine{Hash: hash, ID: "bad", Starts: []string{"start"}, Nodes: []sdk.Node{
		{ID: "start", Kind: "startEvent"},
		{ID: "work", Kind: "task", Step: true},
		{ID: "end", Kind: "endEvent"},
	}}, nil
}

func (b *Bad) mode(hash string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.modes[hash]
	if !ok {
		return "", sdk.Errorf(sdk.CodeInvalid, "routine %s is not loaded", hash)
	}
	return m, nil
}

// Start implements sdk.Navigator.
func (b *Bad) Start(_ context.Context, r *sdk.StartRequest) (*sdk.Decision, error) {
	mode, err := b.mode(r.State.Routine)
	if err != nil {
		return nil, err
	}
	work := sdk.Token{ID: "t1", Node: "work", Status: sdk.Ready}
	switch mode {
	case "unknown-node":
		return &sdk.Decision{Add: []sdk.Token{{ID: "t1", Node: "ghost", Status: sdk.Ready}}, Seq: 1}, nil
	case "duplicate-id":
		return &sdk.Decision{Add: []sdk.Token{work, {ID: "t1", Node: "end", Status: sdk.Ready}}, Seq: 1}, nil
	case "remove-unknown":
		return &sdk.Decision{Remove: []string{"t7"}, Complete: true}, nil
	case "complete-early":
		return &sdk.Decision{Add: []sdk.Token{work}, Seq: 1, Complete: true}, nil
	}
	return &sdk.Decision{Add: []sdk.Token{work}, Seq: 1,
		Trace: []sdk.Event{{Type: sdk.Enter, Node: "start"}, {Type: sdk.Exit, Node: "start"}, {Type: sdk.Enter, Node: "work"}}}, nil
}

// Next implements sdk.Navigator.
func (b *Bad) Next(_ context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	if _, err := b.mode(r.State.Routine); err != nil {
		return nil, err
	}
	return &sdk.Decision{Remove: []string{r.Token}, Complete: true,
		Trace: []sdk.Event{{Type: sdk.Exit, Node: "work"}, {Type: sdk.Enter, Node: "end"}, {Type: sdk.Exit, Node: "end"}}}, nil
}

// Boundary implements sdk.Navigator.
func (b *Bad) Boundary(_ context.Context, r *sdk.BoundaryRequest) (*sdk.Decision, error) {
	return nil, sdk.Errorf(sdk.CodeInvalid, "no event %q in this routine", r.Event)
}

// IO implements sdk.Navigator.
func (b *Bad) IO(_ context.Context, r *sdk.IORequest) (*sdk.NodeIO, error) {
	return &sdk.NodeIO{}, nil
}

func init() { sdk.Register(&Bad{}) }

func main() { sdk.Main() }
