package run_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestRulesCheckedByTheirProvider checks that a provider block's rules
// file is checked when the pipeline loads by the plugin the block uses
// (the builtin script provider, an sdk.RulesChecker), positioned in the
// file, and that a provider that checks none gets the text as it is.
func TestRulesCheckedByTheirProvider(t *testing.T) {
	const env = "SEXTANT_TEST_RULES_KEY"
	t.Setenv(env, "k")
	const bad = "[[rule]]\nstep = \"ask\"\nreply = 3\n"

	path := onePipeline(t, "script", env, `rules = "rules.toml"`, "")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rules.toml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run.Load(t.Context(), path, registryWith(t), quietLogger())
	if err == nil || !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "rules.toml:3") {
		t.Fatalf("Load with bad rules for script = %v, want an invalid problem at rules.toml:3", err)
	}

	kp := &keyProvider{name: "key-provider", credentials: true}
	path = onePipeline(t, kp.name, env, `rules = "rules.toml"`, "")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rules.toml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	prep, err := run.Prepare(t.Context(), path, registryWith(t, kp), quietLogger())
	if err != nil {
		t.Fatalf("Prepare with rules for a provider that checks none: %v", err)
	}
	defer prep.Close(t.Context())
	p, _ := prep.Providers.Get("default")
	if p.Config[sdk.ConfigRules] != bad || !strings.HasSuffix(p.Config[sdk.ConfigRulesFile].(string), "/rules.toml") {
		t.Errorf("Config = %v, want the rules text and file under sdk.ConfigRules and sdk.ConfigRulesFile", p.Config)
	}
}
