package serve

import (
	"net/http"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// MetricRow aggregates the tasks of one day, pipeline and strategy
// version (the version the task ran under).
type MetricRow struct {
	Day      string `json:"day"` // YYYY-MM-DD, UTC
	Pipeline string `json:"pipeline"`
	Strategy string `json:"strategy,omitempty"`
	Tasks    int    `json:"tasks"`
	// Completed and Failed count task statuses; Success counts completed
	// tasks whose rewards, if any, average above 0 (as replay scores).
	Completed   int     `json:"completed"`
	Failed      int     `json:"failed"`
	Success     int     `json:"success"`
	SuccessRate float64 `json:"success_rate"`
	Rewarded    int     `json:"rewarded"`
	MeanReward  float64 `json:"mean_reward"`
	// Dimensions are the named reward dimensions (sextant feedback
	// --reward safety=1): per dimension, the tasks rewarded on it and the
	// mean of their mean rewards.
	Dimensions map[string]*DimensionRow `json:"dimensions,omitempty"`
	Tokens     int64                    `json:"tokens"`
	CostUSD    float64                  `json:"cost_usd"`
	// MeanLatencyMS is the mean wall time of the tasks' live executions
	// that ended.
	MeanLatencyMS float64 `json:"mean_latency_ms"`

	latencies int
}

// DimensionRow is one named reward dimension of a MetricRow.
type DimensionRow struct {
	Rewarded   int     `json:"rewarded"`
	MeanReward float64 `json:"mean_reward"`
}

func (s *Server) metrics(r *http.Request) (int, any, error) {
	ctx := r.Context()
	qv := r.URL.Query()
	since, err := queryTime(qv, "since")
	if err != nil {
		return 0, nil, err
	}
	limit, err := queryInt(qv, "limit", 2000, 1, 20000)
	if err != nil {
		return 0, nil, err
	}
	rows := map[[3]string]*MetricRow{}
	// Task summaries, not whole tasks: the store keeps what a row needs
	// (status, rewards, latencies, provider calls' usage) beside each task.
	err = s.opts.Store.EachSummary(ctx, store.Query{Pipeline: qv.Get("pipeline"), Since: since, Limit: limit}, func(t *store.TaskSummary) error {
		key := [3]string{t.Created.UTC().Format("2006-01-02"), t.Pipeline, t.Version}
		row := rows[key]
		if row == nil {
			row = &MetricRow{Day: key[0], Pipeline: key[1], Strategy: key[2]}
			rows[key] = row
		}
		row.Tasks++
		rewarded := t.Rewards > 0
		var mean float64
		if rewarded {
			mean = t.RewardSum / float64(t.Rewards)
		}
		switch t.Status {
		case store.StatusCompleted:
			row.Completed++
			if !rewarded || mean > 0 {
				row.Success++
			}
		case store.StatusFailed:
			row.Failed++
		}
		if rewarded {
			row.MeanReward += mean // a sum until the end
			row.Rewarded++
		}
		// Named dimensions are not in the summary: the task's rewards
		// are read (a seek and a handful of records).
		dims, err := s.opts.Store.DimensionStats(ctx, t.ID)
		if err != nil {
			return err
		}
		for name, d := range dims {
			if row.Dimensions == nil {
				row.Dimensions = map[string]*DimensionRow{}
			}
			dr := row.Dimensions[name]
			if dr == nil {
				dr = &DimensionRow{}
				row.Dimensions[name] = dr
			}
			dr.Rewarded++
			dr.MeanReward += d.Mean() // a sum until the end
		}
		for _, ex := range t.Executions {
			if ex.Mode != "" && ex.Mode != "live" {
				continue
			}
			if ex.Ended {
				row.MeanLatencyMS += float64(ex.Latency.Microseconds()) / 1000
				row.latencies++
			}
			// Provider calls carry usage and cost; the run's root span
			// repeats their totals, so only calls are summed.
			for _, c := range ex.Calls {
				row.Tokens += c.Tokens
				row.CostUSD += c.CostUSD
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	out := make([]MetricRow, 0, len(rows))
	for _, row := range rows {
		if row.Tasks > 0 {
			row.SuccessRate = float64(row.Success) / float64(row.Tasks)
		}
		if row.Rewarded > 0 {
			row.MeanReward /= float64(row.Rewarded)
		}
		for _, dr := range row.Dimensions {
			dr.MeanReward /= float64(dr.Rewarded)
		}
		if row.latencies > 0 {
			row.MeanLatencyMS /= float64(row.latencies)
		}
		out = append(out, *row)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		if a.Pipeline != b.Pipeline {
			return a.Pipeline < b.Pipeline
		}
		return a.Strategy < b.Strategy
	})
	return 200, map[string]any{"metrics": out}, nil
}
