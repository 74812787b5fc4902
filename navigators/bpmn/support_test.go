package bpmn

import (
	"context"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestElementsAgreeWithLoader loads each element of Elements in a process
// and checks the loader supports it or refuses it as the table says.
func TestElementsAgreeWithLoader(t *testing.T) {
	seen := map[string]bool{}
	for _, el := range Elements() {
		if seen[el.Tag] {
			t.Errorf("%s listed twice", el.Tag)
		}
		seen[el.Tag] = true
		t.Run(el.Tag, func(t *testing.T) {
			inner := "" // containers get content: an empty ad-hoc sub-process is accepted
			if strings.Contains(el.Tag, "ubProcess") || el.Tag == "transaction" {
				inner = `<task id="inner"/>`
			}
			doc := `<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
<process id="p" isExecutable="true"><` + el.Tag + ` id="x">` + inner + `</` + el.Tag + `></process></definitions>`
			_, err := New().Load(context.Background(), &sdk.LoadRequest{Name: "t.bpmn", Routine: []byte(doc)})
			msg := ""
			if err != nil {
				msg = err.Error()
				for _, p := range sdk.AsError(err).Problems {
					msg += "\n" + p.String()
				}
			}
			refused := strings.Contains(msg, "not supported") || strings.Contains(msg, "unsupported")
			if refused == el.Supported {
				t.Errorf("table says supported=%t; the loader said: %s", el.Supported, msg)
			}
		})
	}
	for tag := range taskTags {
		if !seen[tag] {
			t.Errorf("task %s not listed", tag)
		}
	}
}
