package routine

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/builtins"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// Result is one file's entry in routine validate's report.
type Result struct {
	File  string `json:"file"`
	OK    bool   `json:"ok"`
	Nodes int    `json:"nodes,omitempty"`
	// Reads is what the navigator says the routine reads of a run's
	// variables (absent: any of them).
	Reads    *sdk.Reads    `json:"reads,omitempty"`
	Problems []sdk.Problem `json:"problems,omitempty"`
	Warnings []sdk.Problem `json:"warnings,omitempty"`
	// Unchecked says why names were not checked against the sample input.
	Unchecked string `json:"unchecked,omitempty"`
}

// Check is the Result for the routine in file: loadErr's problems when it
// did not load (its message, when it carries none), else its node count,
// reads and the [Warnings] about it under pipeline p (nil: none) with the
// sample start input (nil: none).
func Check(file string, r *sdk.Routine, p *pipeline.Pipeline, input map[string]any, loadErr error) Result {
	if loadErr != nil {
		res := Result{File: file}
		var e *sdk.Error
		if errors.As(loadErr, &e) {
			res.Problems = e.Problems
		}
		if len(res.Problems) == 0 {
			res.Problems = []sdk.Problem{{File: file, Message: loadErr.Error()}}
		}
		return res
	}
	warns, unchecked := Warnings(r, file, p, input)
	return Result{File: file, OK: true, Nodes: len(r.Nodes), Reads: r.Reads, Warnings: warns, Unchecked: unchecked}
}

// Warnings are what routine validate warns about in routine r (loaded
// from file): functions its expressions call that the language lacks,
// and, when input (a sample start input) is given, names they read that
// nothing can write: not the input, not a node's declared outputs (a
// script's, a decision's, a mapping's), not a step's result under the
// pipeline p. A routine alone cannot tell a misspelt name from a start
// variable, hence the sample. unchecked says why names were not checked
// ("" when they were or no sample was given).
func Warnings(r *sdk.Routine, file string, p *pipeline.Pipeline, input map[string]any) (warns []sdk.Problem, unchecked string) {
	warn := func(e sdk.Expression, format string, args ...any) {
		warns = append(warns, sdk.Problem{File: file, Line: e.Line, Element: e.Element, Message: fmt.Sprintf(format, args...)})
	}
	for _, e := range r.Expressions {
		for _, fn := range e.Unknown {
			warn(e, "%s %q calls %s(), which is not a function%s", what(e), e.Text, fn, suggest.Hint(fn, builtins.FEELBuiltins()))
		}
	}
	if input == nil {
		return warns, ""
	}
	writes, open := Writes(r, p, input)
	if open != "" {
		return warns, open
	}
	known := make([]string, 0, len(writes))
	for name := range writes {
		known = append(known, name)
	}
	sort.Strings(known)
	for _, e := range r.Expressions {
		for _, name := range e.Names {
			if !writes[name] {
				warn(e, "%s %q reads %s, which neither the input nor a step, script, decision or mapping writes%s", what(e), e.Text, name, suggest.Hint(name, known))
			}
		}
	}
	return warns, ""
}

func what(e sdk.Expression) string {
	if e.What == "" {
		return "expression"
	}
	return e.What
}

// Writes are the variables a run of r under p may hold by name: the
// input's, each node's declared outputs, and each step's result. open
// names a step whose result may hold any name (then writes is
// incomplete).
func Writes(r *sdk.Routine, p *pipeline.Pipeline, input map[string]any) (writes map[string]bool, open string) {
	writes = map[string]bool{}
	for k := range input {
		writes[k] = true
	}
	for _, n := range r.Nodes {
		for _, o := range n.Outputs {
			writes[o] = true
		}
		if !n.Step {
			continue
		}
		writes[n.ID] = true // the step's own variable (vars.STEP)
		if p == nil {
			return writes, fmt.Sprintf("what step %q sets is not known without --pipeline", n.ID)
		}
		st, ok := p.Steps[n.ID]
		if !ok {
			continue // the pipeline loader refused it already
		}
		if open := stepWrites(n.ID, st, writes); open != "" {
			return writes, open
		}
	}
	return writes, ""
}

// stepWrites adds to writes the names step id's result sets, or says why
// it may set any.
func stepWrites(id string, st pipeline.Step, writes map[string]bool) (open string) {
	switch st.Kind {
	case pipeline.KindExpr:
		for k := range st.Set {
			writes[k] = true
		}
	case pipeline.KindAction:
		for _, k := range []string{"action", "decision", "reason", "confidence"} {
			writes[k] = true
		}
	case pipeline.KindLLM:
		if st.Output == "json" {
			return fmt.Sprintf("step %q (llm, output json) may set any variable", id)
		}
		// text: the host's {"value": …}, which writes no name
	case pipeline.KindHuman:
		return fmt.Sprintf("step %q (human) sets whatever the person answers", id)
	default:
		return fmt.Sprintf("step %q (kind %s) may set any variable", id, st.Kind)
	}
	return ""
}
