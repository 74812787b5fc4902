package strategy

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sextant-dev/sextant/host/internal/termtext"
	"github.com/sextant-dev/sextant/sdk"
)

// WriteSummary writes s as `sextant strategy show` prints it: identity and
// content hash, each parameter with its bounds (sorted by name), the
// constraints, the evolution settings and the rendered playbook.
func (s *Strategy) WriteSummary(w io.Writer) error {
	m := s.Metadata
	fmt.Fprintf(w, "%s %s", m.Name, m.Version)
	if m.ParentVersion != "" {
		fmt.Fprintf(w, " (parent %s)", m.ParentVersion)
	}
	fmt.Fprintf(w, "\nhash %s\n", s.Hash())
	if m.Description != "" {
		fmt.Fprintln(w, m.Description)
	}
	fmt.Fprintln(w, "\nparameters:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, name := range sortedKeys(s.Parameters) {
		b := s.Bounds(name)
		fmt.Fprintf(tw, "  %s\t%g\t[%g, %g]\n", termtext.Cell(name), s.Parameters[name], b.Lo, b.Hi)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := s.Constraints
	fmt.Fprintln(w, "\nconstraints:")
	fmt.Fprintf(w, "  never_execute        %s\n", strings.Join(c.NeverExecute, ", "))
	fmt.Fprintf(w, "  must_confirm_before  %s\n", strings.Join(c.MustConfirmBefore, ", "))
	fmt.Fprintf(w, "  prefer_confirm_for   %s\n", strings.Join(c.PreferConfirmFor, ", "))
	e := s.Evolution
	fmt.Fprintf(w, "\nevolution: max_parameter_delta %g, cooldown %s, requires_human_review %v, branch %s\n",
		e.MaxParameterDelta, FormatDuration(e.Cooldown), e.RequiresHumanReview, e.BranchType)
	if len(s.Playbook) > 0 {
		fmt.Fprintf(w, "\nplaybook (%d bullets, ~%d tokens):\n", len(s.Playbook), s.PlaybookTokens())
		for _, line := range strings.Split(strings.TrimRight(s.RenderPlaybook(), "\n"), "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	return nil
}

// Checked is one file's entry in `sextant strategy validate --json`.
type Checked struct {
	File     string        `json:"file"`
	OK       bool          `json:"ok"`
	Name     string        `json:"name,omitempty"`
	Version  string        `json:"version,omitempty"`
	Hash     string        `json:"hash,omitempty"`
	Problems []sdk.Problem `json:"problems,omitempty"`
}

// Check loads the strategy file and says what it is: its name, version
// and hash when it is valid, else every problem (the load error's message
// when it carries none); err is the load error.
func Check(file string) (Checked, error) {
	s, err := Load(file)
	if err != nil {
		c := Checked{File: file, Problems: sdk.AsError(err).Problems}
		if len(c.Problems) == 0 {
			c.Problems = []sdk.Problem{{File: file, Message: err.Error()}}
		}
		return c, err
	}
	return Checked{File: file, OK: true, Name: s.Metadata.Name, Version: s.Metadata.Version, Hash: s.Hash()}, nil
}
