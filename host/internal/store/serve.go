package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
)

// Besides snapshots, the writer's socket (sextant.sock) carries requests
// of kinds the writer registers with Handle: a process that cannot open
// the store for writing (it is held) asks the holder to do the work. A
// `sextant run --wait` serves message and signal deliveries this way.
// A request is one JSON line {"op", "body"}, its answer one JSON line
// {"body"} or {"error", "kind"}.

// maxRequest bounds one request read from the socket.
const maxRequest = 1 << 20

// Handler answers a request of one kind; its answer is encoded as JSON.
// An error that matches ErrInvalid reaches the asker as a RemoteError
// with Invalid set.
type Handler func(ctx context.Context, body json.RawMessage) (any, error)

// ErrNotServed marks a request the process holding the store does not
// serve (no handler for its kind, or no process serves the socket).
var ErrNotServed = errors.New("the process holding the store does not serve this request")

// ErrInvalid, matched by a handler's error, tells the asker that its
// request was refused as invalid (bad usage, nothing waits for it).
var ErrInvalid = errors.New("invalid request")

// RemoteError is an error the holder of the store answered with.
type RemoteError struct {
	Msg string
	// Invalid: the request was refused as invalid (exit 2 in the CLI).
	Invalid bool
	// NotServed: no handler for the request's kind.
	NotServed bool
}

func (e *RemoteError) Error() string { return e.Msg }

// Is makes a RemoteError match ErrInvalid or ErrNotServed as it says.
func (e *RemoteError) Is(target error) bool {
	return e.Invalid && target == ErrInvalid || e.NotServed && target == ErrNotServed
}

// handlers is a writer's registered request kinds.
type handlers struct {
	mu sync.Mutex
	m  map[string]Handler
}

// Handle serves requests of kind op on the store's socket with h, until
// Handle(op, nil) or Close. Only a writer serves requests.
func (s *Store) Handle(op string, h Handler) {
	s.hs.mu.Lock()
	defer s.hs.mu.Unlock()
	if s.hs.m == nil {
		s.hs.m = map[string]Handler{}
	}
	if h == nil {
		delete(s.hs.m, op)
		return
	}
	s.hs.m[op] = h
}

func (s *Store) serveOp(ctx context.Context, req snapRequest) snapResponse {
	s.hs.mu.Lock()
	h := s.hs.m[req.Op]
	s.hs.mu.Unlock()
	if h == nil {
		return snapResponse{Error: fmt.Sprintf("%s: %q requests", ErrNotServed, req.Op), Kind: "not-served"}
	}
	out, err := h(ctx, req.Body)
	if err != nil {
		resp := snapResponse{Error: err.Error()}
		if errors.Is(err, ErrInvalid) {
			resp.Kind = "invalid"
		}
		return resp
	}
	b, err := json.Marshal(out)
	if err != nil {
		return snapResponse{Error: fmt.Sprintf("encode answer: %v", err)}
	}
	return snapResponse{Body: b}
}

// Ask sends a request of kind op to the process holding the store in dir
// and decodes its answer into resp; ctx bounds the wait for the answer. It fails with ErrNotServed when no
// process serves the store's socket or the holder serves no such
// requests, with a *RemoteError when the holder answered one.
func Ask(ctx context.Context, dir, op string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", op, err)
	}
	dctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "unix", filepath.Join(dir, socketName))
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNotServed, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(snapRequest{Op: op, Body: body}); err != nil {
		return fmt.Errorf("send %s request: %w", op, err)
	}
	var r snapResponse
	if err := json.NewDecoder(io.LimitReader(conn, maxRequest)).Decode(&r); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("no answer to the %s request: %w", op, err)
	}
	if r.Error != "" {
		return &RemoteError{Msg: r.Error, Invalid: r.Kind == "invalid", NotServed: r.Kind == "not-served"}
	}
	if resp != nil && len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, resp); err != nil {
			return fmt.Errorf("decode the answer to the %s request: %w", op, err)
		}
	}
	return nil
}
