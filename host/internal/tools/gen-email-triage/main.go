// Command gen regenerates pipelines/email-triage/dataset.jsonl: it runs
// synthetic e-mails through the email-triage pipeline on the scripted
// provider, answers confirmations as a simulated user would (seeded, so the
// dataset is reproducible byte for byte), and exports the recorded tasks.
//
//	go run ./host/internal/tools/gen-email-triage            # writes dataset.jsonl
//	go run ./host/internal/tools/gen-email-triage -n 300 -seed 1 -o /tmp/d.jsonl
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

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

type kind struct {
	truth    string
	subjects []string
	bodies   []string
	hard     bool
}

// The mail mix: what arrives, and what the user really wants done.
var kinds = []kind{
	{"archive", []string{"Weekly digest", "Your newsletter", "Product updates digest"},
		[]string{"Top stories this week. Unsubscribe at any time.", "Our monthly newsletter is here; unsubscribe below."}, false},
	{"flag_financial", []string{"Invoice %d overdue", "Payment reminder %d", "Wire transfer request %d"},
		[]string{"Please settle the attached invoice by wire transfer.", "Your payment of %d EUR is due today."}, true},
	{"reply", []string{"Quick sync", "Lunch on Friday?", "Review request"},
		[]string{"Are you free on Thursday afternoon?", "Could you look at the draft before noon?"}, true},
	{"archive", []string{"Notification %d", "Automatic reply"},
		[]string{"This is an automated message.", "I am out of office until Monday."}, false},
	{"archive", []string{"Fwd: contract %d"},
		[]string{"Contract attached for your records; no action needed."}, true},
}

func main() {
	n := flag.Int("n", 320, "number of tasks")
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
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tmp, err := os.MkdirTemp("", "sextant-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A fixed clock and sequential ids make the export reproducible.
	clock := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
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
	rng := rand.New(rand.NewPCG(seed, 0x5e7a47))
	for i := 0; i < n; i++ {
		k := kinds[rng.IntN(len(kinds))]
		num := 1000 + rng.IntN(9000)
		subject := k.subjects[rng.IntN(len(k.subjects))]
		body := k.bodies[rng.IntN(len(k.bodies))]
		if containsVerb(subject) {
			subject = fmt.Sprintf(subject, num)
		}
		if containsVerb(body) {
			body = fmt.Sprintf(body, num)
		}
		input := map[string]any{"from": fmt.Sprintf("sender%d@example.com", rng.IntN(50)), "subject": subject, "body": body}
		truth, _ := json.Marshal(map[string]string{"action": k.truth})
		difficulty := "easy"
		if k.hard {
			difficulty = "hard"
		}
		id := fmt.Sprintf("triage-%04d", i+1)
		res, err := r.Start(ctx, run.Input{ID: id, Execution: id + "-live", Input: input, Truth: truth, Tags: []string{"difficulty=" + difficulty, "source=gen"}})
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		for res.Status == store.StatusWaiting {
			// The simulated user approves what matches what they want, but
			// is busy a third of the time and declines without reading.
			answer := "no"
			if proposed(res) == k.truth && rng.IntN(3) != 0 {
				answer = "yes"
			}
			if res, err = r.Resume(ctx, id, map[string]any{"answer": answer}); err != nil {
				return fmt.Errorf("%s: resume: %w", id, err)
			}
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	counts, err := s.Export(ctx, f, store.ExportOptions{Query: store.Query{Pipeline: "email-triage"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %d tasks, %d spans, %d recordings\n", out, counts.Tasks, counts.Spans, counts.Recordings)
	return f.Close()
}

func proposed(res *run.Result) string {
	if c, ok := res.Output["classify"].(map[string]any); ok {
		a, _ := c["action"].(string)
		return a
	}
	return ""
}

func containsVerb(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '%' && s[i+1] == 'd' {
			return true
		}
	}
	return false
}

// pipelineDir finds pipelines/email-triage from the working directory.
func pipelineDir() (string, error) {
	for _, d := range []string{".", "pipelines/email-triage", "../.."} {
		p := filepath.Join(d, "pipelines", "email-triage")
		if d == "pipelines/email-triage" || d == "." {
			if _, err := os.Stat(filepath.Join(d, "email-triage.bpmn")); err == nil {
				return d, nil
			}
		}
		if _, err := os.Stat(filepath.Join(p, "email-triage.bpmn")); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("run from the repository root (cannot find pipelines/email-triage)")
}
