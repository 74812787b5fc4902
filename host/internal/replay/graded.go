package replay

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	scoring "github.com/sextant-dev/sextant/host/internal/score"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Rubric and similar assertions are graded by the run engine as a run
// completes (run.Result.Graded): the judge's and the embeddings' calls
// are then served from the task's recordings like any call, and a call
// without one follows on_miss — fail: the task's replay fails naming it;
// skip: the task is left out; live: the provider answers.

// checkProviders refuses, before anything is replayed, a similar
// assertion whose provider cannot embed: every task would fail alike.
func checkProviders(prep *run.Prepared) error {
	for i, a := range prep.Pipeline.Score.Assert {
		if a.Type == pipeline.AssertSimilar && prep.Providers != nil && !prep.Providers.CanEmbed(a.Provider) {
			return sdk.Invalid(sdk.Problem{File: prep.Pipeline.File, Message: fmt.Sprintf(
				"score.assert[%d].provider: providers.%s offers no embeddings (its plugin must embed, as openai does: `sextant plugins inspect` lists embed among its abilities)", i, a.Provider)})
		}
	}
	return nil
}

// graded is the verdict of assertion i among a run's, if it was graded.
func graded(gs []scoring.Graded, i int) (scoring.Graded, bool) {
	for _, g := range gs {
		if g.Assert == i {
			return g, true
		}
	}
	return scoring.Graded{}, false
}

// modelVerdict is a rubric or similar assertion's pass, and the score a
// named one gives as its reward dimension (ok false: none, the grade
// failed or the run did not complete).
func modelVerdict(rr *run.Result, i int) (pass bool, value float64, ok bool) {
	g, found := graded(rr.Graded, i)
	if !found || rr.Status != store.StatusCompleted || g.Err != "" {
		return false, 0, false
	}
	return g.Pass, g.Score, true
}

// Embed makes the recorded-only provider an embedder too: an embeddings
// call that reaches it has no recording.
func (m missing) Embed(_ context.Context, _ *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	_, err := m.Chat(context.Background(), nil)
	return nil, err
}

var _ sdk.Embedder = missing{}
