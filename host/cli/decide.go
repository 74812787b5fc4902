package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/builtins"
)

func (a *app) decideCommand() *cobra.Command {
	var decision, input string
	var asJSON bool
	c := &cobra.Command{
		Use:     "decide MODEL.dmn --decision NAME [--input JSON|FILE] [--json]",
		Short:   "Evaluate one decision of a DMN model and print its result",
		Long:    help("decide"),
		Example: help("decide.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if decision == "" {
				return usageErr(errors.New("--decision NAME is required"))
			}
			v, err := builtins.DecideFile(cmd.Context(), args[0], decision, input, a.stdin)
			if err != nil {
				return err
			}
			return builtins.WriteDMNResult(a.stdout, v, asJSON)
		},
	}
	c.Flags().StringVar(&decision, "decision", "", "the decision or decision service to evaluate (name or id)")
	c.Flags().StringVar(&input, "input", "", `input data: a JSON object, or a file holding one ("-": standard input)`)
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
