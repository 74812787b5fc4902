// Package score grades a finished task's output with a model, for the
// [[score.assert]] types rubric (an LLM judge rates the output on a
// scale) and similar (the cosine similarity of the output's embedding and
// a reference's). It builds the requests and reads the answers; the calls
// are its caller's (the run engine sends them through the pipeline's
// providers and records them with the task, so that a replay scores
// identically offline). It must not reach a provider itself.
package score

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/sdk"
)

// Caller sends a grader's calls: through a provider block of the
// pipeline, answered from a recording when there is one.
type Caller interface {
	Chat(ctx context.Context, provider string, req *sdk.ChatRequest) (*sdk.ChatResponse, error)
	Embed(ctx context.Context, provider string, req *sdk.EmbedRequest) (*sdk.EmbedResponse, error)
}

// Graded is one model-graded assertion's verdict on an output.
type Graded struct {
	// Assert is the assertion's index in [[score.assert]].
	Assert int    `json:"assert"`
	Type   string `json:"type"`
	Name   string `json:"name,omitempty"`
	// Score is a rubric's rating mapped to 0..1, a similarity's cosine.
	Score float64 `json:"score"`
	Pass  bool    `json:"pass"`
	// Reason is the judge's reason for its rating.
	Reason string `json:"reason,omitempty"`
	// Err says why there is no score: the call failed (Call is then set),
	// or its answer was not one (a rating off the scale).
	Err  string `json:"error,omitempty"`
	Call bool   `json:"call_failed,omitempty"`
}

// Model reports whether typ is graded by a model (rubric, similar).
func Model(typ string) bool { return typ == pipeline.AssertRubric || typ == pipeline.AssertSimilar }

// Any reports whether p has a model-graded assertion.
func Any(p *pipeline.Pipeline) bool {
	for _, a := range p.Score.Assert {
		if Model(a.Type) {
			return true
		}
	}
	return false
}

// Grade grades env's output (env holds output, truth, input, vars) by
// every model-graded assertion of p, in order. A failed call does not
// stop the others; its Graded says so, and the error returned joins every
// failed call's (the caller decides whether that fails the run).
func Grade(ctx context.Context, p *pipeline.Pipeline, c Caller, env map[string]any) ([]Graded, error) {
	var out []Graded
	var errs []error
	for i, a := range p.Score.Assert {
		if !Model(a.Type) {
			continue
		}
		g := Graded{Assert: i, Type: a.Type, Name: a.Name}
		var err error
		switch a.Type {
		case pipeline.AssertRubric:
			err = rubric(ctx, p, i, a, c, env, &g)
		case pipeline.AssertSimilar:
			err = similar(ctx, i, a, c, env, &g)
		}
		if err != nil {
			g.Pass, g.Err = false, err.Error()
			var ce *callError
			if errors.As(err, &ce) {
				g.Call = true
				errs = append(errs, fmt.Errorf("score.assert[%d] (%s): %w", i, a.Type, ce.err))
			}
		}
		out = append(out, g)
	}
	return out, errors.Join(errs...)
}

// callError marks a failed call, as against an answer that is not one.
type callError struct{ err error }

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// Step is the name a grader's chat request carries as sdk.ChatRequest.Step
// (a scripted provider's rules can match it): "score.assert[I]".
func Step(i int) string { return "score.assert[" + strconv.Itoa(i) + "]" }

func rubric(ctx context.Context, p *pipeline.Pipeline, i int, a pipeline.Assertion, c Caller, env map[string]any, g *Graded) error {
	subject, err := subject(a, env)
	if err != nil {
		return err
	}
	req, err := RubricRequest(a, i, subject, env)
	if err != nil {
		return err
	}
	resp, err := c.Chat(ctx, a.Provider, req)
	if err != nil {
		return &callError{err}
	}
	rating, reason, err := ParseRating(resp.Text, scaleOf(a))
	if err != nil {
		return err
	}
	g.Score, g.Reason = (rating-1)/float64(scaleOf(a)-1), reason
	g.Pass = a.Threshold != nil && g.Score >= *a.Threshold
	return nil
}

func similar(ctx context.Context, _ int, a pipeline.Assertion, c Caller, env map[string]any, g *Graded) error {
	subject, err := subject(a, env)
	if err != nil {
		return err
	}
	ref := a.Value
	if a.Reference != "" {
		v, err := run(a.Reference, env)
		if err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		if ref, err = text(v); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	resp, err := c.Embed(ctx, a.Provider, &sdk.EmbedRequest{Model: a.Model, Input: []string{subject, ref}})
	if err != nil {
		return &callError{err}
	}
	if len(resp.Vectors) != 2 {
		return fmt.Errorf("the provider gave %d vectors for 2 inputs", len(resp.Vectors))
	}
	cos, err := Cosine(resp.Vectors[0], resp.Vectors[1])
	if err != nil {
		return err
	}
	g.Score, g.Pass = cos, a.Threshold != nil && cos >= *a.Threshold
	return nil
}

// scaleOf is the rubric's top rating (the pipeline's default fills it).
func scaleOf(a pipeline.Assertion) int {
	if a.Scale < 2 {
		return 5
	}
	return a.Scale
}

// subject is what the assertion grades: its of expression's value, else
// the output; a string as is, anything else as JSON.
func subject(a pipeline.Assertion, env map[string]any) (string, error) {
	v := env["output"]
	if a.Of != "" {
		var err error
		if v, err = run(a.Of, env); err != nil {
			return "", fmt.Errorf("of: %w", err)
		}
	}
	return text(v)
}

func text(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// programs are compiled expressions by source: a replay grades many
// tasks with the same few.
var programs sync.Map

func run(src string, env map[string]any) (any, error) {
	p, ok := programs.Load(src)
	if !ok {
		c, err := expr.Compile(src)
		if err != nil {
			return nil, err
		}
		p, _ = programs.LoadOrStore(src, c)
	}
	return expr.Run(p.(*vm.Program), env)
}

// The judge's instructions when the rubric gives no prompt of its own.
const (
	judgeSystem = "You grade a text against a rubric. Rate how well the text meets the rubric on a scale of 1 to %d: " +
		"1 means not at all, %d means fully. Answer with JSON only: {\"score\": <integer from 1 to %d>, \"reason\": \"<one sentence>\"}."
	judgeUser = "Rubric:\n{{ .rubric }}\n\nText:\n{{ .text }}"
)

var templates sync.Map // source → *template.Template

// RubricRequest is the judge's request for assertion i (a) grading text:
// the instructions as system message, the rubric's prompt (a template
// over output, truth, input, vars, text, rubric and scale; default: the
// rubric and the text) as user message, JSON asked for.
func RubricRequest(a pipeline.Assertion, i int, subject string, env map[string]any) (*sdk.ChatRequest, error) {
	scale := scaleOf(a)
	src := a.Prompt
	if src == "" {
		src = judgeUser
	}
	t, ok := templates.Load(src)
	if !ok {
		parsed, err := pipeline.ParseTemplate("prompt", src)
		if err != nil {
			return nil, fmt.Errorf("prompt: %w", err)
		}
		t, _ = templates.LoadOrStore(src, parsed)
	}
	data := map[string]any{"output": env["output"], "truth": env["truth"], "input": env["input"], "vars": env["vars"],
		"text": subject, "rubric": a.Value, "scale": scale}
	var b strings.Builder
	if err := t.(*template.Template).Execute(&b, data); err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	return &sdk.ChatRequest{Model: a.Model, JSON: true, Step: Step(i), Messages: []sdk.Message{
		{Role: "system", Content: fmt.Sprintf(judgeSystem, scale, scale, scale)},
		{Role: "user", Content: b.String()},
	}}, nil
}

// ParseRating reads a judge's answer: {"score": N, "reason": "…"} (a
// fenced block too), or a bare number. N must lie in 1..scale.
func ParseRating(answer string, scale int) (rating float64, reason string, err error) {
	s := strings.TrimSpace(answer)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	var v struct {
		Score  *float64 `json:"score"`
		Reason string   `json:"reason"`
	}
	switch {
	case json.Unmarshal([]byte(s), &v) == nil && v.Score != nil:
		rating, reason = *v.Score, v.Reason
	default:
		f, perr := strconv.ParseFloat(s, 64)
		if perr != nil {
			return 0, "", fmt.Errorf("the judge answered %q, not {\"score\": 1..%d}", clip(answer), scale)
		}
		rating = f
	}
	if math.IsNaN(rating) || rating < 1 || rating > float64(scale) {
		return 0, "", fmt.Errorf("the judge rated %v, off the scale 1..%d", rating, scale)
	}
	return rating, reason, nil
}

// Cosine is the cosine similarity of two vectors of the same length.
func Cosine(a, b []float64) (float64, error) {
	if len(a) != len(b) || len(a) == 0 {
		return 0, fmt.Errorf("vectors of lengths %d and %d cannot be compared", len(a), len(b))
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0, errors.New("a zero vector has no direction to compare")
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb)), nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
