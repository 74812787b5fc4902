package store

import (
	"context"
	"fmt"
)

// TreeCalls is a task's tree with the recordings its runs made or used
// (sextant show --full --json).
type TreeCalls struct {
	*Tree
	Calls []*Recording `json:"calls"`
}

// TreeRecordings reads the recordings tree's runs made or used, in the
// tree's order.
func (s *Store) TreeRecordings(ctx context.Context, tree *Tree) ([]*Recording, error) {
	var calls []*Recording
	for _, h := range tree.Recordings {
		r, err := s.Recording(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("show %s: recording %s: %w", tree.Task.ID, h, err)
		}
		calls = append(calls, r)
	}
	return calls, nil
}
