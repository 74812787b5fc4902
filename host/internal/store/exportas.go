package store

import (
	"context"
	"fmt"
	"io"
)

// The formats sextant export writes.
const (
	FormatJSONL = "jsonl" // Export's JSONL, which Import reads back
	FormatOTLP  = "otlp"  // ExportOTLP's OTLP JSON
)

// ExportRequest is one sextant export: the tasks of Query in Format.
type ExportRequest struct {
	Format string
	// Query selects the tasks; one naming no status leaves out the
	// cancelled runs, which are no example to learn from.
	Query Query
	// Checkpoints is ExportOptions.Checkpoints (jsonl),
	// LegacyGenAISystem OTLPOptions.LegacyGenAISystem (otlp).
	Checkpoints, LegacyGenAISystem bool
}

// CheckExportFormat checks an export format before the store is opened.
func CheckExportFormat(format string) error {
	if format != FormatJSONL && format != FormatOTLP {
		return fmt.Errorf("%q is not %s or %s", format, FormatJSONL, FormatOTLP)
	}
	return nil
}

// ExportAs writes req's tasks to w in req.Format. The counts are those of
// a JSONL export; an OTLP export returns nil counts.
func (s *Store) ExportAs(ctx context.Context, w io.Writer, req ExportRequest) (*Counts, error) {
	if err := CheckExportFormat(req.Format); err != nil {
		return nil, err
	}
	q := req.Query
	if q.Status == "" && q.Match == nil {
		q.Match = func(t *Task) bool { return t.Status != StatusCancelled }
	}
	if req.Format == FormatOTLP {
		_, err := s.ExportOTLP(ctx, w, OTLPOptions{Query: q, LegacyGenAISystem: req.LegacyGenAISystem})
		return nil, err
	}
	n, err := s.Export(ctx, w, ExportOptions{Query: q, Checkpoints: req.Checkpoints})
	if err != nil {
		return nil, err
	}
	return &n, nil
}
