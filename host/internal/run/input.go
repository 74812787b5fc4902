package run

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/jsonpos"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/sdk"
)

// badInput is an input or truth file the caller gave wrong: missing, not
// a regular file, too large, not the JSON wanted (sdk.ErrInvalid: exit 2).
type badInput struct{ error }

func (e badInput) Unwrap() error        { return e.error }
func (e badInput) Is(target error) bool { return target == sdk.ErrInvalid }

// ReadInput reads a run's input, the JSON object in file (stdin for "-";
// at most readfile.MaxInput bytes); no file is an empty input. Mistakes
// match sdk.ErrInvalid and are positioned as FILE:LINE:COLUMN.
func ReadInput(file string, stdin io.Reader) (map[string]any, error) {
	input := map[string]any{}
	if file == "" {
		return input, nil
	}
	data, err := readfile.Named("--input", file, stdin, readfile.MaxInput)
	if err != nil {
		return nil, badInput{err}
	}
	name := file
	if file == "-" {
		name = "stdin"
	}
	if err := jsonpos.Decode("--input", name, data, &input, "a JSON object"); err != nil {
		return nil, badInput{err}
	}
	if input == nil { // null
		return nil, invalidf("%s: --input: want a JSON object, got null", name)
	}
	return input, nil
}

// ReadTruth reads a run's ground truth, arg: inline JSON when it starts
// like a JSON object, array or string, else the JSON file it names (stdin
// for "-"). No arg is no truth. Mistakes match sdk.ErrInvalid.
func ReadTruth(arg string, stdin io.Reader) (json.RawMessage, error) {
	if arg == "" {
		return nil, nil
	}
	b := []byte(arg)
	if t := strings.TrimSpace(arg); t == "" || !strings.ContainsAny(t[:1], `{["`) {
		var err error
		if b, err = readfile.Named("--truth", arg, stdin, readfile.MaxInput); err != nil {
			return nil, badInput{err}
		}
		var v any
		if err := jsonpos.Decode("--truth", arg, b, &v, "JSON"); err != nil {
			return nil, badInput{err}
		}
	} else if !json.Valid(b) {
		return nil, badInput{errors.New("--truth: not valid JSON")}
	}
	return json.RawMessage(strings.TrimSpace(string(b))), nil
}
