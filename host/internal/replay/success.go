package replay

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Success is a pipeline's compiled [score] success expression: whether a
// finished task succeeded. A replay scores every result with it, and the
// online adapter tags a finished run's cited bullets with it, so both
// judge a task alike.
type Success struct{ prog *vm.Program }

// CompileSuccess compiles a [score] success expression; it returns nil
// (and no error) for "", a pipeline that sets none.
func CompileSuccess(src string) (*Success, error) {
	if src == "" {
		return nil, nil
	}
	prog, err := expr.Compile(src, expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("score.success: %w", err)
	}
	return &Success{prog: prog}, nil
}

// ScoreEnv is what [score] expressions see of a finished task: its output
// (also as vars), its ground truth and its input.
func ScoreEnv(output map[string]any, truth, input any) map[string]any {
	return map[string]any{"output": output, "truth": truth, "input": input, "vars": output}
}

// Of reports whether the task env describes (ScoreEnv) succeeded: the
// expression holds. An expression that fails to evaluate is a failure.
func (s *Success) Of(env map[string]any) bool {
	v, err := expr.Run(s.prog, env)
	return err == nil && v == true
}
