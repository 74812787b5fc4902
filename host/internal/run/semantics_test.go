package run

import (
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

// wireNav is a navigator as a wasm or process client looks to the host:
// the sdk.Navigator methods, not the builtin's optional interfaces.
type wireNav struct{ sdk.Navigator }

func TestEventSemanticsRule(t *testing.T) {
	own := bpmn.New()
	if got := eventSemantics(own, "bpmn"); got != sdk.EventSemantics(own) {
		t.Errorf("a builtin navigator that reads its events: got %T %p, want itself", got, got)
	}
	var registered sdk.EventSemantics
	for _, p := range sdk.Registered() {
		if p.Describe().Name == "bpmn" {
			registered = p.(sdk.EventSemantics)
		}
	}
	if got := eventSemantics(wireNav{own}, "bpmn"); got == nil || got != registered {
		t.Errorf("an installed navigator named bpmn: got %v, want the registered builtin bpmn", got)
	}
	if got := eventSemantics(wireNav{own}, "my-bpmn"); got == nil || got != registered {
		t.Errorf("an installed navigator of another name: got %v, want the one builtin that reads events", got)
	}
}

func TestNoEventSemantics(t *testing.T) {
	r := &Runner{}
	if _, err := r.timerDue("timeDuration PT1S", time.Now()); err == nil || !strings.Contains(err.Error(), "sdk.EventSemantics") {
		t.Errorf("timer without semantics: err %v, want one naming sdk.EventSemantics", err)
	}
	if _, ok := r.cycleNext("timeCycle R3/PT1S", time.Now(), 1); ok {
		t.Error("a cycle without semantics fires again")
	}
}
