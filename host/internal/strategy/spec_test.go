package strategy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// TestSpecMatchesDecoder holds the documented keys (Spec, from which
// docs/reference/strategy.md and strategy.schema.json are generated) to
// the keys the decoder accepts, table by table.
func TestSpecMatchesDecoder(t *testing.T) {
	names := func(b *schema.Block) []string {
		var out []string
		for _, f := range b.Fields {
			out = append(out, f.Name)
		}
		return out
	}
	sub := func(b *schema.Block, name string) *schema.Block {
		f, ok := b.Lookup(name)
		if !ok || f.Block == nil {
			t.Fatalf("Spec: no table %q", name)
		}
		return f.Block
	}
	entry := sub(Spec, keyChangeLog)
	for _, tt := range []struct {
		name    string
		spec    *schema.Block
		decoder []string
	}{
		{"top", Spec, topKeys},
		{keyMetadata, sub(Spec, keyMetadata), metadataKeys},
		{keyConstraints, sub(Spec, keyConstraints), constraintKeys},
		{keyEvolution, sub(Spec, keyEvolution), evolutionKeys},
		{keyPlaybook, sub(Spec, keyPlaybook), bulletKeys},
		{keyChangeLog, entry, entryKeys},
		{"change_log.changes", sub(entry, keyChanges), changeKeys},
		{"change_log.playbook", sub(entry, keyPlaybook), deltaKeys},
	} {
		if got := names(tt.spec); !slices.Equal(got, tt.decoder) {
			t.Errorf("%s: Spec declares %q, the decoder reads %q", tt.name, got, tt.decoder)
		}
	}
}

// TestSpecAcceptsStrategies checks the shipped strategies against Spec: a
// key or type the reference gets wrong fails here.
func TestSpecAcceptsStrategies(t *testing.T) {
	files, _ := filepath.Glob("../../../pipelines/*/strategies/*.toml")
	more, _ := filepath.Glob("../../../pipelines/*/candidates/*.toml")
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no strategies found")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, data); err != nil {
			continue // a deliberately broken example
		}
		ix, err := tomlpos.Scan(f, data)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if _, err := toml.Decode(string(data), &doc); err != nil {
			t.Fatal(err)
		}
		c := &schema.Checker{File: f, Index: ix}
		c.Check(doc, Spec, nil)
		for _, p := range c.Problems() {
			t.Errorf("%s", p)
		}
	}
}
