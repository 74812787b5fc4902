package score_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/score"
	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
	"github.com/sextant-dev/sextant/sdk"
)

// caller sends every call to the openai provider at base, the real HTTP
// way, and keeps the bodies the server got.
type caller struct {
	base string
	mu   sync.Mutex
	got  []map[string]any
}

func (c *caller) config() map[string]any { return map[string]any{"base_url": c.base} }

func (c *caller) Chat(ctx context.Context, _ string, req *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	r := *req
	r.Config = c.config()
	if r.Model == "" {
		r.Model = "gpt-4o-mini"
	}
	return openai.New().Chat(ctx, &r)
}

func (c *caller) Embed(ctx context.Context, _ string, req *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	r := *req
	r.Config = c.config()
	return openai.New().Embed(ctx, &r)
}

// upstream starts openaitest.Upstream with the judge's rules and returns
// a caller of it.
func upstream(t *testing.T, rules ...openaitest.Rule) *caller {
	t.Helper()
	c := &caller{}
	up := &openaitest.Upstream{Rules: rules, Default: 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		c.mu.Lock()
		c.got = append(c.got, body)
		c.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		up.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.base = srv.URL + "/v1"
	return c
}

func threshold(f float64) *float64 { return &f }

func pipe(as ...pipeline.Assertion) *pipeline.Pipeline {
	p := &pipeline.Pipeline{Name: "t"}
	p.Score.Assert = as
	return p
}

func TestGradeRubric(t *testing.T) {
	c := upstream(t, openaitest.Rule{Contains: "archive", Rating: 5}, openaitest.Rule{Contains: "reply", Rating: 3})
	rubric := pipeline.Assertion{Type: pipeline.AssertRubric, Provider: "judge", Value: "The action suits the mail.",
		Of: "output.action", Scale: 5, Threshold: threshold(0.75), Name: "fit"}
	cases := []struct {
		action string
		score  float64
		pass   bool
	}{
		{"archive", 1, true},  // rated 5 of 5
		{"reply", 0.5, false}, // rated 3: (3-1)/4 is under 0.75
		{"flag", 0, false},    // no rule: rated 1
	}
	for _, tc := range cases {
		t.Run(tc.action, func(t *testing.T) {
			gs, err := score.Grade(context.Background(), pipe(pipeline.Assertion{Type: "contains", Value: "x"}, rubric), c,
				map[string]any{"output": map[string]any{"action": tc.action}})
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != 1 || gs[0].Assert != 1 || gs[0].Name != "fit" || gs[0].Score != tc.score || gs[0].Pass != tc.pass || gs[0].Reason == "" {
				t.Fatalf("graded %+v, want score %v pass %v", gs, tc.score, tc.pass)
			}
		})
	}
	// The judge was asked in JSON mode, with the rubric, the text and the scale.
	body := c.got[0]
	msgs, _ := json.Marshal(body["messages"])
	for _, want := range []string{"The action suits the mail.", `Text:\narchive`, "1 to 5"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("judge messages %s lack %q", msgs, want)
		}
	}
	if rf, _ := json.Marshal(body["response_format"]); string(rf) != `{"type":"json_object"}` {
		t.Errorf("response_format %s", rf)
	}
}

func TestGradeRubricPrompt(t *testing.T) {
	c := upstream(t, openaitest.Rule{Contains: "expected archive, got archive", Rating: 4})
	a := pipeline.Assertion{Type: pipeline.AssertRubric, Provider: "judge", Scale: 4, Threshold: threshold(1),
		Prompt: "expected {{ .truth.action }}, got {{ .output.action }} (1..{{ .scale }})"}
	gs, err := score.Grade(context.Background(), pipe(a), c,
		map[string]any{"output": map[string]any{"action": "archive"}, "truth": map[string]any{"action": "archive"}})
	if err != nil || len(gs) != 1 || !gs[0].Pass || gs[0].Score != 1 {
		t.Fatalf("graded %+v, %v", gs, err)
	}
}

func TestGradeSimilar(t *testing.T) {
	c := upstream(t)
	cases := []struct {
		name, reply string
		pass        bool
	}{
		{"same-words", "Thanks, the meeting on Friday works for me", true},
		{"other-words", "Unsubscribe from the weekly digest", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := pipeline.Assertion{Type: pipeline.AssertSimilar, Provider: "embed", Model: "text-embedding-3-small",
				Of: "output.reply", Reference: "truth.reply", Threshold: threshold(0.8)}
			gs, err := score.Grade(context.Background(), pipe(a), c, map[string]any{
				"output": map[string]any{"reply": tc.reply},
				"truth":  map[string]any{"reply": "Friday works for me, thanks: the meeting"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != 1 || gs[0].Pass != tc.pass {
				t.Fatalf("graded %+v, want pass %v", gs, tc.pass)
			}
		})
	}
}

// TestGradeCallFails: a provider that cannot be reached fails the grade
// as a call (the run decides what that means).
func TestGradeCallFails(t *testing.T) {
	down := &caller{base: "http://127.0.0.1:1/v1"}
	p := pipe(pipeline.Assertion{Type: pipeline.AssertRubric, Provider: "judge", Value: "r", Scale: 5, Threshold: threshold(0.5)})
	gs, err := score.Grade(context.Background(), p, down, map[string]any{"output": "hi"})
	if err == nil || !strings.Contains(err.Error(), "score.assert[0] (rubric): ") {
		t.Fatalf("err %v", err)
	}
	if len(gs) != 1 || !gs[0].Call || gs[0].Pass || gs[0].Err == "" {
		t.Fatalf("graded %+v", gs)
	}
}

func TestParseRating(t *testing.T) {
	cases := []struct {
		in     string
		rating float64
		err    string
	}{
		{`{"score": 4, "reason": "good"}`, 4, ""},
		{"```json\n{\"score\": 2}\n```", 2, ""},
		{"3", 3, ""},
		{`{"score": 6}`, 0, "off the scale 1..5"},
		{`{"score": 0}`, 0, "off the scale 1..5"},
		{"great answer", 0, `the judge answered "great answer"`},
		{`{"rating": 4}`, 0, "not {\"score\": 1..5}"},
	}
	for _, c := range cases {
		got, _, err := score.ParseRating(c.in, 5)
		switch {
		case c.err == "" && (err != nil || got != c.rating):
			t.Errorf("%q: got %v, %v; want %v", c.in, got, err, c.rating)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %v, %v; want error %q", c.in, got, err, c.err)
		}
	}
}

func TestCosine(t *testing.T) {
	if c, err := score.Cosine([]float64{1, 0}, []float64{2, 0}); err != nil || c != 1 {
		t.Errorf("parallel: %v %v", c, err)
	}
	if c, err := score.Cosine([]float64{1, 1}, []float64{-1, -1}); err != nil || math.Abs(c+1) > 1e-12 {
		t.Errorf("opposite: %v %v", c, err)
	}
	if _, err := score.Cosine([]float64{1}, []float64{1, 2}); err == nil {
		t.Error("lengths differ: no error")
	}
	if _, err := score.Cosine([]float64{0, 0}, []float64{1, 2}); err == nil {
		t.Error("zero vector: no error")
	}
}
