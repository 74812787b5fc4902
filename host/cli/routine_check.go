package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/builtins"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// routineWarnings are what routine validate warns about in routine r
// (loaded from file): functions its expressions call that the language
// lacks, and, when input (a sample start input) is given, names they read
// that nothing can write: not the input, not a node's declared outputs (a
// script's, a decision's, a mapping's), not a step's result under the
// pipeline p. A routine alone cannot tell a misspelt name from a start
// variable, hence the sample. unchecked says why names were not checked
// ("" when they were or no sample was given).
func routineWarnings(r *sdk.Routine, file string, p *pipeline.Pipeline, input map[string]any) (warns []sdk.Problem, unchecked string) {
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
	writes, open := routineWrites(r, p, input)
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

// routineWrites are the variables a run of r under p may hold by name:
// the input's, each node's declared outputs, and each step's result. open
// names a step whose result may hold any name (then writes is
// incomplete).
func routineWrites(r *sdk.Routine, p *pipeline.Pipeline, input map[string]any) (writes map[string]bool, open string) {
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
				return writes, fmt.Sprintf("step %q (llm, output json) may set any variable", n.ID)
			}
			// text: the host's {"value": …}, which writes no name
		case pipeline.KindHuman:
			return writes, fmt.Sprintf("step %q (human) sets whatever the person answers", n.ID)
		default:
			return writes, fmt.Sprintf("step %q (kind %s) may set any variable", n.ID, st.Kind)
		}
	}
	return writes, ""
}

// printWarnings writes warnings to w, one per line, as problems are
// written, with "warning: " before the message.
func printWarnings(w interface{ Write([]byte) (int, error) }, warns []sdk.Problem) {
	var b strings.Builder
	for _, p := range warns {
		p.Message = "warning: " + p.Message
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	fmt.Fprint(w, b.String())
}
