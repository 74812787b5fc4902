package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
)

// LiveMove is the body of POST /api/v1/pipelines/{name}/promote and
// /rollback.
type LiveMove struct {
	// Version is the version to make live; a rollback without one goes
	// to the version live before the current one.
	Version string `json:"version,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// By names who moves it (user@host); the CLI sends its own. Without
	// it the move records the API client ("api@ADDRESS").
	By string `json:"by,omitempty"`
	// Expect, when set, is the live version the client saw: another one
	// live now is a 409 and nothing changes.
	Expect string `json:"expect,omitempty"`
}

func (s *Server) livePipeline(r *http.Request) (*pipeline.Pipeline, error) {
	name := r.PathValue("name")
	p, ok := s.pipelines[name]
	if !ok {
		return nil, notFound("pipeline %q is not one of the server's (--pipelines)", name)
	}
	return p, nil
}

func (s *Server) getLive(r *http.Request) (int, any, error) {
	p, err := s.livePipeline(r)
	if err != nil {
		return 0, nil, err
	}
	l, err := evolve.GetLive(r.Context(), s.opts.Store, p)
	if err != nil {
		return 0, nil, err
	}
	return 200, l, nil
}

func (s *Server) moveLive(r *http.Request, action string) (int, any, error) {
	p, err := s.livePipeline(r)
	if err != nil {
		return 0, nil, err
	}
	var m LiveMove
	if err := decodeBody(r, &m); err != nil {
		return 0, nil, err
	}
	if len(m.By) > 200 || len(m.Reason) > 4096 {
		return 0, nil, badRequest("by: at most 200 bytes; reason: at most 4096 bytes")
	}
	if action == evolve.MovePromote && m.Version == "" {
		return 0, nil, badRequest("version: name the version to promote")
	}
	by := m.By
	if by == "" {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		by = "api@" + host
	}
	l, err := evolve.MoveLive(context.WithoutCancel(r.Context()), s.opts.Store, p, evolve.Move{Version: m.Version, Action: action,
		By: by, Reason: m.Reason, At: s.opts.Clock().UTC().Truncate(1e9), Expect: m.Expect})
	if errors.Is(err, evolve.ErrLiveMoved) {
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	return 200, l, nil
}

func (s *Server) promoteLive(r *http.Request) (int, any, error) {
	return s.moveLive(r, evolve.MovePromote)
}

func (s *Server) rollbackLive(r *http.Request) (int, any, error) {
	return s.moveLive(r, evolve.MoveRollback)
}

// Live reads a pipeline's live strategy version.
func (c *Client) Live(ctx context.Context, pipeline string) (*evolve.Live, error) {
	var out evolve.Live
	if err := c.do(ctx, http.MethodGet, "/api/v1/pipelines/"+url.PathEscape(pipeline)+"/live", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MoveLive promotes (rollback false) or rolls back a pipeline's live
// strategy version.
func (c *Client) MoveLive(ctx context.Context, pipeline string, rollback bool, m LiveMove) (*evolve.Live, error) {
	verb := "promote"
	if rollback {
		verb = "rollback"
	}
	var out evolve.Live
	if err := c.do(ctx, http.MethodPost, "/api/v1/pipelines/"+url.PathEscape(pipeline)+"/"+verb, m, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
