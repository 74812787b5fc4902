package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/routine"
)

func (a *app) exprCommand() *cobra.Command {
	var lang string
	var sets []string
	var asJSON bool
	c := &cobra.Command{
		Use:     "expr [--lang feel|expr] [--set k=v]... [--json] EXPR",
		Short:   "Evaluate one expression and print its value",
		Long:    help("expr"),
		Example: help("expr.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			eval, numbers, err := routine.ExprLanguage(lang)
			if err != nil {
				return usageErr(err)
			}
			vars, err := routine.ParseSets(sets, numbers)
			if err != nil {
				return usageErr(fmt.Errorf("--set %w", err))
			}
			v, err := eval(args[0], vars) // a syntax error is sdk.ErrInvalid: exit 2
			if err != nil {
				return err
			}
			return v.Write(a.stdout, asJSON)
		},
	}
	c.Flags().StringVar(&lang, "lang", "feel", "expression language: feel or expr")
	c.Flags().StringArrayVar(&sets, "set", nil, "variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the value as JSON")
	return c
}
