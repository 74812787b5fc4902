// Command gen regenerates pipelines/support-agent/dataset.jsonl: it runs
// customer messages about the shop's orders through the support-agent
// pipeline (the scripted provider, the records tool plugin), answers the
// confirmations large refunds ask for as a busy team lead would (seeded,
// so the dataset is reproducible byte for byte), and exports the recorded
// tasks with their tool calls.
//
//	go run ./host/internal/tools/gen-support-agent            # writes dataset.jsonl
//	go run ./host/internal/tools/gen-support-agent -n 60 -seed 2 -o /tmp/d.jsonl
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	_ "github.com/sextant-dev/sextant/plugins/records"
	"github.com/sextant-dev/sextant/sdk"
)

// messages are what customers write, by their order's status; truths what
// they actually need done.
var (
	messages = map[string][]string{
		"lost":       {"My parcel never arrived.", "The tracking has not moved in two weeks. Where is my order?", "Nothing was delivered and it has been ages."},
		"damaged":    {"It arrived broken.", "The box was crushed and the item inside is damaged.", "Half of it arrived in pieces."},
		"in_transit": {"Where is my order?", "When will my parcel arrive?", "Has my order shipped yet?"},
		"delivered":  {"The tracking says delivered but I have nothing.", "I never got my parcel, yet it says delivered.", "Nothing in my mailbox, the app says delivered."},
		"unknown":    {"Where is my order?", "I want a refund for my order.", "My parcel is late."},
	}
	truths = map[string]string{"lost": "refund", "damaged": "replacement", "in_transit": "wait", "delivered": "escalate", "unknown": "ask_customer"}
)

type order struct {
	ID     string  `toml:"id"`
	Status string  `toml:"status"`
	Total  float64 `toml:"total"`
}

func main() {
	n := flag.Int("n", 100, "number of tasks")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "", "output file (default: dataset.jsonl beside pipeline.toml)")
	flag.Parse()
	if err := generate(*n, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(n int, seed uint64, out string) error {
	ctx := context.Background()
	dir, err := pipelineDir()
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(dir, "dataset.jsonl")
	}
	var data struct{ Record []order }
	if _, err := toml.DecodeFile(filepath.Join(dir, "data", "orders.toml"), &data); err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tmp, err := os.MkdirTemp("", "sextant-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A fixed clock and sequential ids make the export reproducible.
	clock := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	s, err := store.Open(ctx, tmp, store.NewConfig().WithSyncCheckpoints(false).WithLogger(quiet).WithClock(now))
	if err != nil {
		return err
	}
	defer s.Close()
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		return err
	}
	prep, err := run.Prepare(ctx, filepath.Join(dir, "pipeline.toml"), plugin.NewRegistry(entries), quiet)
	if err != nil {
		return err
	}
	defer prep.Close(ctx)
	r := prep.Runner(run.Config{Store: s, Logger: quiet, Clock: now})
	rng := rand.New(rand.NewPCG(seed, 0x5a9e47))
	for i := 0; i < n; i++ {
		o := order{ID: fmt.Sprintf("A%d", 2001+rng.IntN(900)), Status: "unknown"}
		if rng.IntN(10) != 0 { // one message in ten names an order that does not exist
			o = data.Record[rng.IntN(len(data.Record))]
		}
		msgs := messages[o.Status]
		input := map[string]any{"order": o.ID, "message": msgs[rng.IntN(len(msgs))]}
		truth, _ := json.Marshal(map[string]string{"action": truths[o.Status]})
		difficulty := "easy"
		if o.Status == "lost" && o.Total >= 100 {
			difficulty = "hard" // a person confirms the refund
		}
		id := fmt.Sprintf("support-%04d", i+1)
		res, err := r.Start(ctx, run.Input{ID: id, Execution: id + "-live", Input: input, Truth: truth,
			Tags: []string{"difficulty=" + difficulty, "status=" + o.Status, "source=gen"}})
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		for res.Status == store.StatusWaiting {
			// The team lead approves most large refunds, and declines
			// one in four unread when busy.
			answer := "yes"
			if rng.IntN(4) == 0 {
				answer = "no"
			}
			if res, err = r.Resume(ctx, id, map[string]any{"approve": answer}); err != nil {
				return fmt.Errorf("%s: resume: %w", id, err)
			}
		}
		if res.Status != store.StatusCompleted {
			return fmt.Errorf("%s: %s: %s", id, res.Status, res.Error)
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	counts, err := s.Export(ctx, f, store.ExportOptions{Query: store.Query{Pipeline: "support-agent"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %d tasks, %d spans, %d recordings\n", out, counts.Tasks, counts.Spans, counts.Recordings)
	return f.Close()
}

// pipelineDir finds pipelines/support-agent from the working directory.
func pipelineDir() (string, error) {
	for _, d := range []string{".", filepath.Join("pipelines", "support-agent")} {
		if _, err := os.Stat(filepath.Join(d, "agent.chain.toml")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("run from the repository root (cannot find pipelines/support-agent)")
}
