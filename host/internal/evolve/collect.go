package evolve

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/replay"
)

// Collect runs the replay rc and keeps its results for JudgeReplay (a
// shard, discard set, keeps none but the count), writing each to out when
// it is not nil and telling onResult (when not nil) of each. out is
// committed when the replay ends well and removed otherwise: no partial
// results for sextant merge to judge.
func Collect(ctx context.Context, rc replay.Config, out *replay.ResultsFile, discard bool, onResult func(replay.Result)) (*Kept, error) {
	compared := len(rc.Strategies) > 1
	kept := &Kept{Discard: discard}
	err := replay.Run(ctx, rc, func(r replay.Result) error {
		if onResult != nil {
			onResult(r)
		}
		if out != nil {
			if err := out.Add(r); err != nil {
				return err
			}
		}
		kept.Add(r, compared)
		return nil
	})
	if out == nil {
		return kept, err
	}
	if err != nil {
		out.Abort()
		return nil, err
	}
	return kept, out.Commit()
}
