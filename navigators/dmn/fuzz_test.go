package dmn_test

import (
	"context"
	"testing"

	"github.com/sextant-dev/sextant/navigators/dmn"
)

// FuzzParse feeds arbitrary documents to Parse and evaluates every
// decision of what loads: bad input must give an error, never a panic or
// a hang.
func FuzzParse(f *testing.F) {
	f.Add([]byte(graph))
	f.Add([]byte(header + `<decision id="d" name="d"><decisionTable hitPolicy="ANY"><input><inputExpression><text>1</text></inputExpression></input><output/><rule><inputEntry><text>-</text></inputEntry><outputEntry><text>2</text></outputEntry></rule></decisionTable></decision></definitions>`))
	f.Add([]byte("<definitions"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := dmn.Parse("f.dmn", data)
		if err != nil {
			return
		}
		for _, d := range m.Decisions() {
			_, _ = m.Evaluate(context.Background(), d, map[string]any{"Level": "gold"})
		}
	})
}
