package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// CancelRequest is the body of POST /api/v1/tasks/{id}/cancel.
type CancelRequest struct {
	// By names who cancels (user@host); the CLI sends its own. Without
	// it the task records the API client ("api@ADDRESS").
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func (s *Server) cancelTask(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	var req CancelRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if len(req.By) > 256 || len(req.Reason) > 4096 {
		return 0, nil, badRequest("by: at most 256 bytes; reason: at most 4096 bytes")
	}
	by := req.By
	if by == "" {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		by = "api@" + host
	}
	ctx := context.WithoutCancel(r.Context())
	c := &run.Cancelled{By: by, Reason: req.Reason}
	if s.onCluster(ctx, id) {
		// The workers record it cancelled before Cancel returns.
		res, err := s.opts.Cluster.Cancel(ctx, id, *c)
		return 200, res, clusterErr(id, true, err)
	}
	if !run.Running(id) {
		// No run of it here now: the stored task is ended, once no
		// request of this server is about to run it (lockTask).
		unlock := s.lockTask(id)
		defer unlock()
	}
	res, err := run.Cancel(ctx, s.opts.Store, id, c)
	if err != nil {
		return 0, nil, operateErr(id, err)
	}
	return 200, res, nil
}

// operateErr maps an operator's refused change to the API: an unknown
// task is a 404, a task whose status does not allow it (ended, run
// elsewhere, acted on by another operator first) a 409.
func operateErr(id string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("task %q not found", id)
	case errors.Is(err, run.ErrNotCancellable), errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrOwned):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	}
	return err
}

// Cancel cancels a task (POST /api/v1/tasks/{id}/cancel).
func (c *Client) Cancel(ctx context.Context, task, by, reason string) (*run.Result, error) {
	var out run.Result
	if err := c.do(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(task)+"/cancel", CancelRequest{By: by, Reason: reason}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VarsRequest is the body of POST /api/v1/tasks/{id}/retry and
// /api/v1/tasks/{id}/vars: variables to assign.
type VarsRequest struct {
	Vars map[string]any `json:"vars,omitempty"`
}

func (s *Server) retryTask(r *http.Request) (int, any, error) {
	return s.operateVars(r, func(ctx context.Context, runner *run.Runner, id string, vars map[string]any) (*run.Result, error) {
		return runner.Retry(ctx, id, vars)
	})
}

func (s *Server) setVars(r *http.Request) (int, any, error) {
	return s.operateVars(r, func(ctx context.Context, runner *run.Runner, id string, vars map[string]any) (*run.Result, error) {
		if len(vars) == 0 {
			return nil, &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "vars: name the variables to set"}
		}
		return runner.Set(ctx, id, vars)
	})
}

// operateVars runs an operator's change with variables on a task no
// request of this server is running.
func (s *Server) operateVars(r *http.Request, do func(context.Context, *run.Runner, string, map[string]any) (*run.Result, error)) (int, any, error) {
	id := r.PathValue("id")
	var req VarsRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	ctx := context.WithoutCancel(r.Context())
	if run.Running(id) {
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "task " + id + " is running in this server"}
	}
	unlock := s.lockTask(id)
	defer unlock()
	runner, done, err := s.taskRunner(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	defer done()
	res, err := do(ctx, runner, id, req.Vars)
	if err != nil {
		return 0, nil, operateErr(id, err)
	}
	return 200, res, nil
}

// Retry continues a task stopped in an incident (POST /api/v1/tasks/{id}/retry).
func (c *Client) Retry(ctx context.Context, task string, vars map[string]any) (*run.Result, error) {
	var out run.Result
	if err := c.do(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(task)+"/retry", VarsRequest{Vars: vars}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Set assigns variables of a waiting task or one in an incident (POST
// /api/v1/tasks/{id}/vars).
func (c *Client) Set(ctx context.Context, task string, vars map[string]any) (*run.Result, error) {
	var out run.Result
	if err := c.do(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(task)+"/vars", VarsRequest{Vars: vars}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
