package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/builtins"
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
			switch lang {
			case "feel":
				vars, err := parseFEELSets(sets)
				if err != nil {
					return err
				}
				return a.evalFEEL(args[0], vars, asJSON)
			case "expr":
				vars, err := parseSets(sets)
				if err != nil {
					return err
				}
				return a.evalExprLang(args[0], vars, asJSON)
			}
			return usageErr(fmt.Errorf("--lang %q: want feel or expr", lang))
		},
	}
	c.Flags().StringVar(&lang, "lang", "feel", "expression language: feel or expr")
	c.Flags().StringArrayVar(&sets, "set", nil, "variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the value as JSON")
	return c
}

// parseFEELSets parses k=v pairs for FEEL: JSON values keep their numbers
// as json.Number, which FEEL reads exactly.
func parseFEELSets(sets []string) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr(fmt.Errorf("--set %q: want NAME=VALUE", s))
		}
		var val any
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&val); err == nil && !dec.More() {
			out[k] = val
		} else {
			out[k] = v
		}
	}
	return out, nil
}

func (a *app) evalFEEL(src string, vars map[string]any, asJSON bool) error {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	x, err := builtins.ParseFEEL(src, names...)
	if err != nil {
		return withInvalid(fmt.Errorf("expr:%w", err))
	}
	v, err := x.Eval(vars)
	if err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	if !asJSON {
		fmt.Fprintln(a.stdout, builtins.FormatFEEL(v))
		return nil
	}
	out, err := builtins.FEELJSON(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	buf.WriteByte('\n')
	_, err = a.stdout.Write(buf.Bytes())
	return err
}

func (a *app) evalExprLang(src string, vars map[string]any, asJSON bool) error {
	prog, err := expr.Compile(src, expr.Env(vars))
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return withInvalid(fmt.Errorf("expr:%d:%d: %s", fe.Line, fe.Column+1, fe.Message))
		}
		return withInvalid(fmt.Errorf("expr: %w", err))
	}
	v, err := expr.Run(prog, vars)
	if err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	if asJSON {
		return writeJSON(a.stdout, v)
	}
	switch x := v.(type) {
	case string:
		fmt.Fprintln(a.stdout, strconv.Quote(x))
	case nil:
		fmt.Fprintln(a.stdout, "nil")
	case bool, int, int64, float64:
		fmt.Fprintln(a.stdout, x)
	default:
		out, err := json.Marshal(x)
		if err != nil {
			fmt.Fprintf(a.stdout, "%v\n", x)
			return nil
		}
		fmt.Fprintln(a.stdout, string(out))
	}
	return nil
}
