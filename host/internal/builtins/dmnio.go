package builtins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/readfile"
)

// ReadDMNInput reads the input data of a decision as sextant decide's
// --input gives it: inline JSON when arg starts with "{" or "[", else a
// file (stdin for "-"), at most DMNMaxSize bytes and only a regular file.
// An empty arg is no input.
func ReadDMNInput(arg string, stdin io.Reader) (map[string]any, error) {
	t := strings.TrimSpace(arg)
	if t == "" {
		return map[string]any{}, nil
	}
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return DecodeDMNInput("input", []byte(arg))
	}
	data, err := readfile.Named("--input", arg, stdin, DMNMaxSize)
	if err != nil {
		return nil, err
	}
	name := arg
	if arg == "-" {
		name = "stdin"
	}
	return DecodeDMNInput(name, data)
}

// WriteDMNResult writes a decision's result v: as FEEL prints it, or with
// asJSON as indented JSON (FEELJSON, so numbers stay exact).
func WriteDMNResult(w io.Writer, v any, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprintln(w, FormatFEEL(v))
		return err
	}
	out, err := FEELJSON(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}
