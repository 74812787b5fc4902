package run

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/sextant-dev/sextant/sdk"
)

// RulesHashes are the hex sha256 of each scripted provider's rules text,
// by provider block (nil when no block has rules). A task records them
// (store.Task.Rules) so that a replay can tell a rules file edited since
// the recording from a run that diverged.
func (p *Providers) RulesHashes() map[string]string {
	if p == nil {
		return nil
	}
	var out map[string]string
	for name, pr := range p.byName {
		text, ok := pr.Config[sdk.ConfigRules].(string)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		sum := sha256.Sum256([]byte(text))
		out[name] = hex.EncodeToString(sum[:])
	}
	return out
}
