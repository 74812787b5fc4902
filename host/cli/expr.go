package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/builtins"
	"github.com/sextant-dev/sextant/host/internal/routine"
)

func (a *app) exprCommand() *cobra.Command {
	var lang string
	var sets []string
	var asJSON bool
	c := &cobra.Command{
		Use:   "expr [--lang feel|expr] [--set k=v]... [--json] EXPR",
		Short: "Evaluate one expression and print its value",
		Long: `expr evaluates one expression, as a condition or mapping would be evaluated
in a routine, and prints its value. --lang feel (the default) is FEEL, the
language of BPMN conditions, Zeebe I/O mappings and timers; --lang expr is
expr-lang, the language of DAG and chain "when" clauses.

--set values are JSON when they parse, else strings; FEEL reads JSON numbers
as exact decimals. Without --json a FEEL value prints as FEEL text (strings
quoted, dates as @"2024-01-31"); with --json as JSON (dates, times and
durations as their FEEL string() form).

An expression that starts with "-" follows "--": sextant expr -- '-x + 1'.

Exit status: 0 evaluated, 1 evaluation failed, 2 syntax error (reported as
expr:LINE:COLUMN: message) or bad usage.`,
		Example: `  sextant expr --set amount=1500 --set status=open 'amount > 1000 and status in ["new","open"]'
  sextant expr --json 'date("2024-01-31") + duration("P1M")'
  sextant expr --lang expr --set vars='{"n": 3}' 'vars.n * 2'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			eval, numbers := builtins.EvalFEEL, routine.Exact
			switch lang {
			case "feel":
			case "expr":
				eval, numbers = builtins.EvalExprLang, routine.Native
			default:
				return usageErr(fmt.Errorf("--lang %q: want feel or expr", lang))
			}
			vars, err := routine.ParseSets(sets, numbers)
			if err != nil {
				return usageErr(fmt.Errorf("--set %w", err))
			}
			v, err := eval(args[0], vars)
			var se *builtins.ExprSyntaxError
			if errors.As(err, &se) {
				return withInvalid(err)
			} else if err != nil {
				return err
			}
			out, err := []byte(v.Text()+"\n"), error(nil)
			if asJSON {
				out, err = v.JSON()
			}
			if err == nil {
				_, err = a.stdout.Write(out)
			}
			return err
		},
	}
	c.Flags().StringVar(&lang, "lang", "feel", "expression language: feel or expr")
	c.Flags().StringArrayVar(&sets, "set", nil, "variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the value as JSON")
	return c
}
