package serve

import (
	"bytes"
	"errors"
	"net/http"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// ImportType is the media type of POST /api/v1/import's body: a JSONL
// export (sextant export), one record a line.
const ImportType = "application/x-ndjson"

// importName names the body in the positioned errors of an import
// ("body:12: span 3 of execution …") unless the query's name does.
const importName = "body"

// Imported is the answer of POST /api/v1/import: what was written.
type Imported struct {
	Tasks       int `json:"tasks"`
	Executions  int `json:"executions"`
	Spans       int `json:"spans"`
	Rewards     int `json:"rewards"`
	Recordings  int `json:"recordings"`
	Checkpoints int `json:"checkpoints"`
}

// importTasks reads a JSONL export into the store, all or nothing: the
// store checks every line before it writes one.
func (s *Server) importTasks(r *http.Request) (int, any, error) {
	b, c, held, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	// The store decodes one line at a time, but a line may be the whole
	// body.
	if err := boundBody(b, c, held); err != nil {
		return 0, nil, err
	}
	name := importName
	if q := r.URL.Query().Get("name"); q != "" {
		if len(q) > 512 || strings.ContainsAny(q, "\r\n") {
			return 0, nil, badRequest("name: at most 512 bytes on one line")
		}
		name = q
	}
	n, err := s.opts.Store.Import(r.Context(), bytes.NewReader(b), name)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrExists):
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	case strings.HasPrefix(err.Error(), name+":"):
		// A positioned error of the check, before anything was written.
		return 0, nil, badRequest("%v", err)
	default:
		return 0, nil, err
	}
	return http.StatusCreated, Imported{Tasks: n.Tasks, Executions: n.Executions, Spans: n.Spans,
		Rewards: n.Rewards, Recordings: n.Recordings, Checkpoints: n.Checkpoints}, nil
}
