package run

import (
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestCredentialsRegistered: a key read for a provider block, also for a
// replay that never calls it, is removed from anything redacted, where
// it stands and whatever its form.
func TestCredentialsRegistered(t *testing.T) {
	for _, optional := range []bool{false, true} {
		key := "custom-Key-0042-" + map[bool]string{false: "run", true: "replay"}[optional]
		t.Setenv("SEXTANT_TEST_CRED_KEY", key)
		p := &pipeline.Pipeline{File: "p.toml", Providers: map[string]pipeline.Provider{"main": {APIKeyEnv: "SEXTANT_TEST_CRED_KEY"}}}
		if _, err := credentials(p, optional); err != nil {
			t.Fatal(err)
		}
		got := store.DefaultRedactor().RedactString("upstream said: unknown key " + key + ".")
		if strings.Contains(got, key) || got != "upstream said: unknown key [REDACTED]." {
			t.Fatalf("optional=%v: %s", optional, got)
		}
	}
}
