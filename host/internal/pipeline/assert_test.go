package pipeline

import (
	"context"
	"strings"
	"testing"
)

// TestModelGradedAssertions: rubric and similar load with what they need,
// and every mistake is reported at its line, all at once.
func TestModelGradedAssertions(t *testing.T) {
	ok := good + `[providers.judge]
use = "openai"
model = "gpt-4o-mini"
[[score.assert]]
type = "rubric"
provider = "judge"
value = "Polite and to the point."
threshold = 0.5
prompt = "Rate {{ .text }} against {{ .rubric }} from 1 to {{ .scale }}"
[[score.assert]]
type = "similar"
provider = "judge"
model = "text-embedding-3-small"
reference = "truth.reply"
threshold = 0.8
`
	p, err := Load(context.Background(), setup(t, ok), staticResolver{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, s := p.Score.Assert[0], p.Score.Assert[1]
	if r.Scale != 5 || *r.Threshold != 0.5 || r.Provider != "judge" || s.Reference != "truth.reply" || *s.Threshold != 0.8 {
		t.Fatalf("loaded %+v and %+v (scale's default is 5)", r, s)
	}

	bad := good + `[[score.assert]]
type = "rubric"
provider = "judeg"
threshold = 1.5
scale = 1
prompt = "{{ .text"
[[score.assert]]
type = "similar"
value = "x"
reference = "truth."
threshold = -2
[[score.assert]]
type = "contains"
value = "x"
threshold = 0.5
scale = 3
[[score.assert]]
type = "rubric"
provider = "default"
value = "x"
treshold = 0.5
`
	_, err = Load(context.Background(), setup(t, bad), staticResolver{}, Options{})
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		`:43: score.assert[0].provider: unknown provider "judeg"`,
		`:44: score.assert[0].threshold: threshold 1.5 is off the score's range 0 to 1`,
		`:45: score.assert[0].scale: a scale of 1 leaves the judge no choice`,
		`:46: score.assert[0].prompt: bad template`,
		`:47: score.assert[1].provider: similar needs a provider: the [providers] block that embeds`,
		`:50: score.assert[1].reference: similar takes a value or a reference, not both`,
		`:50: score.assert[1].reference: bad expression`,
		`:51: score.assert[1].threshold: threshold -2 is off the cosine's range -1 to 1`,
		`:55: score.assert[2].threshold: contains does not take threshold (only rubric and similar do)`,
		`:56: score.assert[2].scale: contains does not take scale (only rubric does)`,
		`:61: score.assert[3].treshold: unknown key (did you mean "threshold"?)`,
		`:57: score.assert[3].threshold: rubric needs a threshold`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
