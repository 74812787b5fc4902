package report

import (
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
)

func TestStepPrinter(t *testing.T) {
	var b strings.Builder
	p := StepPrinter(&b)
	p(run.StepEvent{Node: "classify", Kind: "llm", Duration: 1234567 * time.Microsecond, Tokens: 42, Status: run.StepOK, Result: "invoice"})
	p(run.StepEvent{Node: "ask", Kind: "human", Status: "waiting", Result: strings.Repeat("q", 120)})
	want := "  classify         llm      1.235s     42 tok  invoice\n" +
		"  ask              human        0s      0 tok  waiting: " + Clip(strings.Repeat("q", 120), 100) + "\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
