package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/builtins"
	"github.com/sextant-dev/sextant/host/internal/jsonpos"
)

func (a *app) decideCommand() *cobra.Command {
	var decision, input string
	var asJSON bool
	c := &cobra.Command{
		Use:   "decide MODEL.dmn --decision NAME [--input JSON|FILE] [--json]",
		Short: "Evaluate one decision of a DMN model and print its result",
		Long:  help("decide"),
		Example: `  sextant decide loan.dmn --decision Approval --input '{"Age": 42, "Risk": "Low"}'
  sextant decide loan.dmn --decision Approval --input applicant.json --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if decision == "" {
				return usageErr(errors.New("--decision NAME is required"))
			}
			inputs, err := readDecideInput(input, a.stdin)
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

// readDecideInput reads --input: inline JSON when it starts with "{" or "[",
// else a file (or standard input for "-"). Errors are positioned in the
// JSON by line and column.
func readDecideInput(arg string, stdin io.Reader) (map[string]any, error) {
	if strings.TrimSpace(arg) == "" {
		return map[string]any{}, nil
	}
	name, data := "input", []byte(arg)
	if t := strings.TrimSpace(arg); !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		var err error
		name = arg
		if arg == "-" {
			name = "stdin"
			data, err = io.ReadAll(io.LimitReader(stdin, builtins.DMNMaxSize+1))
		} else {
			data, err = os.ReadFile(arg)
		}
		if err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
	}
	if len(data) > builtins.DMNMaxSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, builtins.DMNMaxSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonpos.Error(name, data, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, jsonpos.Error(name, data, dec.InputOffset(), errors.New("more than one JSON value"))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s:1:1: want a JSON object of inputs by name", name)
	}
	return m, nil
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
