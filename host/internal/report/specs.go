package report

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// CheckSpecs checks --report FORMAT=PATH specs before any work: known
// formats, and at most one written to stdout (PATH "-").
func CheckSpecs(specs []string) error {
	var toStdout []string
	for _, spec := range specs {
		_, path, err := ParseSpec(spec)
		if err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		if path == "-" {
			toStdout = append(toStdout, spec)
		}
	}
	if len(toStdout) > 1 {
		return fmt.Errorf("--report: %s all ask for stdout; only one report may go to stdout (-), write the others to files", strings.Join(toStdout, ", "))
	}
	return nil
}

// ToStdout reports whether one of specs writes stdout (PATH "-"), which
// then belongs to that report alone.
func ToStdout(specs []string) bool {
	for _, spec := range specs {
		if _, path, _ := ParseSpec(spec); path == "-" {
			return true
		}
	}
	return false
}

// WriteSpecs writes r once per spec (checked by CheckSpecs), in the spec's
// format, to its path or, for "-", to stdout.
func WriteSpecs(specs []string, stdout io.Writer, r *Report) error {
	for _, spec := range specs {
		format, path, err := ParseSpec(spec)
		if err != nil {
			return err
		}
		write, err := Lookup(format)
		if err != nil {
			return err
		}
		if path == "-" {
			if err := write(stdout, r); err != nil {
				return err
			}
			continue
		}
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := write(file, r); err != nil {
			file.Close()
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
	}
	return nil
}
