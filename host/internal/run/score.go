package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/host/internal/score"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// AttrScore marks the spans of a run's model-graded score (the judge's and
// the embeddings' calls, and the "score" span above them): they are not
// part of the fidelity trace, so adding a rubric to a pipeline does not
// make its recorded tasks unfaithful.
const AttrScore = "sextant.score"

// grade runs the pipeline's model-graded assertions ([[score.assert]]
// rubric and similar) over a completed run's output. Their calls are made
// as a step's are — answered from the task's recordings, else sent
// through the provider chain and recorded with the task before the run
// is marked completed — so a replay of the task grades the same output
// identically without the provider, and one whose output changed asks
// anew (on_miss decides). It returns the verdicts and their spans,
// numbered: a "score" span with the calls under it.
//
// The calls' tokens and cost are on their spans, not the run's: the run's
// metrics measure the agent, not its grader.
func (e *exec) grade(ctx context.Context) ([]score.Graded, []store.Span, error) {
	p := e.r.cfg.Pipeline
	if p == nil || !score.Any(p) {
		return nil, nil, nil
	}
	var input map[string]any
	if len(e.task.Input) > 0 {
		if err := json.Unmarshal(e.task.Input, &input); err != nil {
			return nil, nil, fmt.Errorf("score: input: %w", err)
		}
	}
	var truth any
	if len(e.task.Truth) > 0 {
		if err := json.Unmarshal(e.task.Truth, &truth); err != nil {
			return nil, nil, fmt.Errorf("score: truth: %w", err)
		}
	}
	out := e.output()
	g := &grader{e: e}
	start := e.r.cfg.Clock()
	graded, err := score.Grade(ctx, p, g, map[string]any{"output": out, "truth": truth, "input": input, "vars": out})
	verdicts, _ := json.Marshal(graded)
	top := store.Span{Name: "score " + p.Name, Kind: store.SpanInternal, Start: start, End: e.r.cfg.Clock(),
		Attributes: store.Attributes{AttrScore: store.Bool(true), "sextant.score.graded": store.String(string(verdicts))},
		Status:     store.SpanStatus{Code: store.CodeOK}}
	if err != nil {
		top.Status = store.SpanStatus{Code: store.CodeError, Message: err.Error()}
	}
	spans := append([]store.Span{top}, g.res.Spans...)
	for i := range spans[1:] {
		if spans[i+1].Attributes == nil { // a provider call's, its attributes in Call
			spans[i+1].Attributes = store.Attributes{}
		}
		spans[i+1].Attributes[AttrScore] = store.Bool(true)
	}
	return graded, e.number(spans), err
}

// finishGrade grades a run about to complete (*runErr nil). A grade call
// that fails in a replay (ToolReplay set) fails the task's replay, naming
// the call: on_miss has already decided what a call without its recording
// does. In a live run the task still completes; its replays then find no
// recording and follow on_miss.
func (e *exec) finishGrade(ctx context.Context, runErr *error) ([]score.Graded, []store.Span) {
	if *runErr != nil {
		return nil, nil
	}
	graded, spans, err := e.grade(ctx)
	if err != nil {
		if e.r.cfg.ToolReplay != "" {
			*runErr = err
		} else {
			e.r.cfg.Logger.Warn("score call failed: the task is not graded", "task", e.task.ID, "err", err)
		}
	}
	return graded, spans
}

// grader makes a grade's calls through the run's providers, collecting
// their spans.
type grader struct {
	e   *exec
	res stepResult
}

var _ score.Caller = (*grader)(nil)

func (g *grader) Chat(ctx context.Context, provider string, req *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return g.e.chat(ctx, provider, req, &g.res)
}

func (g *grader) Embed(ctx context.Context, provider string, req *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	return g.e.embed(ctx, provider, req, &g.res)
}

// embed answers req from its recording when there is one, else through
// the provider (Providers.Embed), recording the answer: exec.chat for
// embeddings.
func (e *exec) embed(ctx context.Context, provider string, req *sdk.EmbedRequest, res *stepResult) (*sdk.EmbedResponse, error) {
	prov, ok := e.r.cfg.Providers.Get(provider)
	if !ok {
		return nil, fmt.Errorf("unknown provider %q", provider)
	}
	full := *req
	if full.Model == "" {
		full.Model = prov.Model
	}
	st := e.r.cfg.Journal
	hash, canonical, err := store.EmbedKey(st.Redactor(), &full)
	if err != nil {
		return nil, err
	}
	key := RecordingKey(e.task.ID, hash)
	start := e.r.cfg.Clock()
	attrs := store.Attributes{
		store.AttrGenAIOperationName: store.String("embeddings"),
		store.AttrGenAIRequestModel:  store.String(full.Model),
		store.AttrSextantProvider:    store.String(provider),
		"sextant.request_hash":       store.String(hash),
	}
	var resp *sdk.EmbedResponse
	recorded := false
	var latency time.Duration
	if rec, err := st.Recording(ctx, key); err == nil {
		var r sdk.EmbedResponse
		if err := json.Unmarshal(rec.Response, &r); err != nil {
			return nil, fmt.Errorf("recording %s: %w", short(hash), err)
		}
		resp, recorded, latency = &r, true, rec.Latency
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	} else {
		t0 := e.r.cfg.Clock()
		r, err := e.r.cfg.Providers.Embed(ctx, provider, &full)
		latency = e.r.cfg.Clock().Sub(t0)
		if err != nil {
			attrs[store.AttrErrorType] = store.String(ErrorType(err))
			res.Spans = append(res.Spans, store.Span{Name: "embeddings " + full.Model, Kind: store.SpanClient, Start: start, End: e.r.cfg.Clock(),
				Attributes: attrs, Status: store.SpanStatus{Code: store.CodeError, Message: err.Error()}})
			return nil, err
		}
		resp = r
		rec, err := store.EmbedRecording(hash, canonical, provider, e.task.ID, resp, latency)
		if err != nil {
			return nil, err
		}
		rec.Hash = key
		if err := st.PutRecording(ctx, rec); err != nil {
			return nil, err
		}
	}
	cost, _ := e.r.cfg.Prices.Cost(full.Model, resp.Usage.InputTokens, 0)
	attrs[store.AttrGenAIUsageInputTokens] = store.Int(int64(resp.Usage.InputTokens))
	attrs["sextant.recording"] = store.String(key)
	attrs["sextant.recorded"] = store.Bool(recorded)
	attrs["sextant.cost_usd"] = store.Float(cost)
	attrs["sextant.latency_ms"] = store.Int(latency.Milliseconds())
	res.Spans = append(res.Spans, store.Span{Name: "embeddings " + full.Model, Kind: store.SpanClient, Start: start,
		End: start.Add(latency), Attributes: attrs, Status: store.SpanStatus{Code: store.CodeOK}})
	res.Tokens += resp.Usage.InputTokens
	res.CostUSD += cost
	return resp, nil
}
