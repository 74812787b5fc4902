package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
			inputs, err := a.readDecideInput(input)
			if err != nil {
				return withInvalid(err)
			}
			m, err := builtins.ParseDMNFile(args[0])
			if err != nil {
				return withInvalid(err)
			}
			v, err := m.Evaluate(cmd.Context(), decision, inputs)
			if err != nil {
				if builtins.DMNInvalid(err) {
					return withInvalid(err)
				}
				return err
			}
			return a.printDecideResult(v, asJSON)
		},
	}
	c.Flags().StringVar(&decision, "decision", "", "the decision or decision service to evaluate (name or id)")
	c.Flags().StringVar(&input, "input", "", `input data: a JSON object, or a file holding one ("-": standard input)`)
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// readDecideInput reads --input: inline JSON when it starts with "{" or
// "[", else a file (standard input for "-"), at most builtins.DMNMaxSize
// bytes and only a regular file.
func (a *app) readDecideInput(arg string) (map[string]any, error) {
	t := strings.TrimSpace(arg)
	if t == "" {
		return map[string]any{}, nil
	}
	name, data := "input", []byte(arg)
	if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		var err error
		if data, err = a.readNamed("--input", arg, builtins.DMNMaxSize); err != nil {
			return nil, err
		}
		if name = arg; arg == "-" {
			name = "stdin"
		}
	}
	return builtins.DecodeDMNInput(name, data)
}

func (a *app) printDecideResult(v any, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprintln(a.stdout, builtins.FormatFEEL(v))
		return err
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
