package strategy

import (
	"fmt"
	"io"
	"strings"
)

// CheckFiles is [Check] over files, in order: one row per file, and the
// load errors of the files that are not valid.
func CheckFiles(files []string) (rows []Checked, errs []error) {
	rows = []Checked{}
	for _, f := range files {
		row, err := Check(f)
		if err != nil {
			errs = append(errs, err)
		}
		rows = append(rows, row)
	}
	return rows, errs
}

// WriteChecked prints an ok line for each valid file of rows; the
// problems of the others are their load errors, for the caller to print.
func WriteChecked(w io.Writer, rows []Checked) error {
	for _, row := range rows {
		if !row.OK {
			continue
		}
		if _, err := fmt.Fprintf(w, "%s: ok (%s %s, hash %s…)\n", row.File, row.Name, row.Version, row.Hash[:min(12, len(row.Hash))]); err != nil {
			return err
		}
	}
	return nil
}

// WriteText prints c for people (strategy diff): its String, or a line
// saying the candidate changes no behaviour.
func (c Changes) WriteText(w io.Writer) error {
	if c.Empty() {
		_, err := fmt.Fprintf(w, "no behavioural change from %s to %s\n", c.From, c.To)
		return err
	}
	s := c.String()
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, err := io.WriteString(w, s)
	return err
}
