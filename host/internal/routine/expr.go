package routine

import (
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/builtins"
)

// Eval evaluates an expression over vars (sextant expr).
type Eval func(src string, vars map[string]any) (builtins.ExprValue, error)

// ExprLanguage is the evaluator of expression language lang, as a routine
// evaluates its conditions and mappings, and how [ParseSets] keeps the
// numbers of its variables: "feel" (FEEL, of BPMN conditions, Zeebe
// mappings and timers) reads them as exact decimals, "expr" (expr-lang,
// of DAG and chain "when" clauses) as int64 or float64.
func ExprLanguage(lang string) (Eval, Numbers, error) {
	switch lang {
	case "feel":
		return builtins.EvalFEEL, Exact, nil
	case "expr":
		return builtins.EvalExprLang, Native, nil
	}
	return nil, 0, fmt.Errorf("--lang %q: want feel or expr", lang)
}
