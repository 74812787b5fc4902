package replay

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
)

// assertion is one compiled [[score.assert]] entry.
type assertion struct {
	typ, value, name string
	of               *vm.Program // nil: the output
	re               *regexp.Regexp
	schema           *jsonschema.Resolved
}

func compileAssertion(p *pipeline.Pipeline, a pipeline.Assertion) (*assertion, error) {
	c := &assertion{typ: a.Type, value: a.Value, name: a.Name}
	var err error
	if a.Of != "" {
		if c.of, err = expr.Compile(a.Of); err != nil {
			return nil, fmt.Errorf("of: %w", err)
		}
	}
	switch a.Type {
	case pipeline.AssertContains:
	case pipeline.AssertRegex:
		if c.re, err = regexp.Compile(a.Value); err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
	case pipeline.AssertJSONSchema:
		if c.schema, err = pipeline.LoadJSONSchema(p.Path(a.Schema)); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	case pipeline.AssertRubric, pipeline.AssertSimilar:
		// Graded by the run (graded.go); its "of" is the run's to read.
		c.of = nil
	default:
		// The loader refuses the others; a pipeline built in code
		// without it gets the same answer.
		return nil, fmt.Errorf("type: %s assertions are not supported yet", a.Type)
	}
	return c, nil
}

// check runs the assertion over a finished task's score environment. An
// "of" expression that fails, or output that is not what the check needs,
// fails the assertion.
func (a *assertion) check(env map[string]any) bool {
	var v any = env["output"]
	if a.of != nil {
		var err error
		if v, err = expr.Run(a.of, env); err != nil {
			return false
		}
	}
	switch a.typ {
	case pipeline.AssertContains:
		s, ok := text(v)
		return ok && strings.Contains(s, a.value)
	case pipeline.AssertRegex:
		s, ok := text(v)
		return ok && a.re.MatchString(s)
	case pipeline.AssertJSONSchema:
		// A string output is JSON text to parse; anything else is the
		// value itself, through JSON so numbers are what the validator
		// expects.
		var doc any
		if s, ok := v.(string); ok {
			if json.Unmarshal([]byte(s), &doc) != nil {
				return false
			}
		} else {
			b, err := json.Marshal(v)
			if err != nil || json.Unmarshal(b, &doc) != nil {
				return false
			}
		}
		return a.schema.Validate(doc) == nil
	}
	return false
}

// text is v as the text contains and regex look at: a string as is,
// anything else as JSON.
func text(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}
