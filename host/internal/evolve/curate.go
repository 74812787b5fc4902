package evolve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// Failure is one failed replay of the baseline, as the reflector reads it.
// Input, Output and Truth are text as the caller renders them (JSON, say).
type Failure struct {
	Task   string `json:"task"`
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
	Truth  string `json:"truth,omitempty"`
	Error  string `json:"error,omitempty"`
}

// The ChatRequest.Step of Curate's two provider calls; a scripted provider
// matches its rules on them.
const (
	StepReflector = "reflector"
	StepCurator   = "curator"
)

// DefaultMaxFailures is how many failures Curate shows the reflector when
// CurateOptions.MaxFailures is 0.
const DefaultMaxFailures = 20

// DefaultReflectorPrompt is the reflector's prompt, a text/template over
// PromptData. Fields are clipped with the template function clip (clip N
// s keeps the first N characters) so one huge input cannot crowd out the
// other failures.
const DefaultReflectorPrompt = `You are reviewing failed runs of an AI agent that follows the strategy "{{.Name}}" version {{.Version}}.

The agent's playbook (learned guidance shown to it with every task):
{{range .Playbook}}[{{.ID}}] ({{.Section}}) {{.Content}} (helpful {{.Helpful}}, harmful {{.Harmful}})
{{else}}(empty)
{{end}}
Failed tasks ({{len .Failures}}):
{{range .Failures}}
## task {{.Task}}
input: {{clip 1500 .Input}}
output: {{clip 1500 .Output}}
expected: {{clip 1500 .Truth}}
{{if .Error}}error: {{clip 500 .Error}}
{{end}}{{end}}
For each failure, say what went wrong and what general, reusable lesson would have prevented it. Say which playbook bullets helped or misled the agent, by id. Answer with short plain-text insights, one per line.
`

// DefaultCuratorPrompt is the curator's prompt, a text/template over
// PromptData with Insights set to the reflector's reply.
const DefaultCuratorPrompt = `You maintain the playbook of the AI agent strategy "{{.Name}}" version {{.Version}}: short, reusable bullets shown to the agent with every task.

Current playbook:
{{range .Playbook}}[{{.ID}}] ({{.Section}}) {{.Content}} (helpful {{.Helpful}}, harmful {{.Harmful}})
{{else}}(empty)
{{end}}
Insights from {{len .Failures}} failed runs:
{{.Insights}}

Propose the smallest set of playbook changes that acts on these insights. Reply with one JSON object and nothing else:
{"operations":[
  {"op":"ADD","section":"reasoning","content":"new bullet","reason":"why"},
  {"op":"UPDATE","id":"existing-id","content":"rewritten bullet","reason":"why"},
  {"op":"TAG","id":"existing-id","tag":"helpful|harmful|neutral","reason":"why"},
  {"op":"REMOVE","id":"existing-id","reason":"why"}
]}
ADD needs a section (letters, digits, '_' and '-') and content. UPDATE, TAG and REMOVE name an id from the playbook above. Do not add what a bullet already says.{{if .Budget}} The playbook must stay within {{.Budget}} tokens (it is about {{.Tokens}} now).{{end}}
If nothing should change, reply {"operations":[]}.
`

// PromptData is what the reflector and curator templates see.
type PromptData struct {
	Name, Version string
	Playbook      []strategy.Bullet
	// Failures are the failed replays shown, in task order, at most
	// MaxFailures of them.
	Failures []Failure
	// Insights is the reflector's reply; empty in the reflector's prompt.
	Insights string
	// Tokens is the playbook's estimated size; Budget is
	// evolution.max_playbook_tokens (0: none).
	Tokens, Budget int
}

// CurateOptions configure Curate. At is required.
type CurateOptions struct {
	// At is created_at of the candidate and the date of its change_log
	// entry.
	At time.Time
	// Model, Temperature and Config go into both ChatRequests; Config is
	// the provider's block (a script provider's rules_toml). Temperature
	// nil means 0: curation should be as repeatable as the provider
	// allows.
	Model       string
	Temperature *float64
	Config      map[string]any
	// ReflectorPrompt and CuratorPrompt are text/templates over
	// PromptData; "" means DefaultReflectorPrompt, DefaultCuratorPrompt.
	ReflectorPrompt, CuratorPrompt string
	// MaxFailures caps the failures shown to the reflector (the first by
	// task id); 0 means DefaultMaxFailures.
	MaxFailures int
}

// ErrRejected matches every error of a curator reply that Curate refused:
// malformed JSON, an unknown op, an id that is not in the playbook, a
// playbook over its token budget. errors.As gives the *RejectedError.
var ErrRejected = errors.New("curator reply rejected")

// RejectedError is a curator reply Curate refused, with every reason.
type RejectedError struct {
	Reasons []string
	// Reply is the curator's text as received.
	Reply string
}

func (e *RejectedError) Error() string {
	return ErrRejected.Error() + ": " + strings.Join(e.Reasons, "; ")
}

// Is makes errors.Is(err, ErrRejected) hold.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Curate returns the ACE mutator (DESIGN §7): a reflector reads the
// failed replays and writes insights, a curator turns them into playbook
// delta operations, and the candidate is the baseline with those applied
// (strategy.Apply: duplicates of existing bullets are dropped).
//
// Both are calls to p, with ChatRequest.Step "reflector" and "curator"
// (the curator's with JSON set). The curator must reply with exactly
//
//	{"operations":[{"op":"ADD"|"UPDATE"|"TAG"|"REMOVE","id":"…","section":"…","content":"…","tag":"helpful|harmful|neutral","reason":"…"}]}
//
// (fields as each op needs them). The reply is parsed strictly: unknown
// fields, trailing data, a missing operations array, an unknown op, an
// UPDATE, TAG or REMOVE of an id not in the playbook, an ADD without
// content, and a result over evolution.max_playbook_tokens are all
// rejected, with every reason, as a *RejectedError — no candidate is
// made from a reply that is partly wrong. One surrounding Markdown code
// fence is tolerated, since models add one even in JSON mode.
//
// An empty operations array, or one whose ADDs all duplicate existing
// bullets, proposes nothing. So does an empty failures list (there is
// nothing to reflect on), without calling the provider.
//
// Each operation's change_log reason is the curator's reason followed by
// the evidence, the failed replays it came from:
//
//	reason = "Answer in the client's language (from 3 failed replays: t004, t017, t050)"
//
// Curate does not probe: the playbook change is judged by the replay,
// comparison and gates that follow, like every candidate.
func Curate(p sdk.Provider, failures []Failure, opts CurateOptions) (Mutator, error) {
	if p == nil {
		return nil, fmt.Errorf("%s: no provider", MutatorCurate)
	}
	if opts.At.IsZero() {
		return nil, fmt.Errorf("%s: options: missing time (At)", MutatorCurate)
	}
	if opts.MaxFailures < 0 {
		return nil, fmt.Errorf("%s: options: max failures %d is negative", MutatorCurate, opts.MaxFailures)
	}
	if opts.MaxFailures == 0 {
		opts.MaxFailures = DefaultMaxFailures
	}
	for i, f := range failures {
		if f.Task == "" {
			return nil, fmt.Errorf("%s: failure %d has no task id", MutatorCurate, i)
		}
	}
	c := &curate{p: p, opts: opts}
	var err error
	if c.reflector, err = parsePrompt(StepReflector, opts.ReflectorPrompt, DefaultReflectorPrompt); err != nil {
		return nil, err
	}
	if c.curator, err = parsePrompt(StepCurator, opts.CuratorPrompt, DefaultCuratorPrompt); err != nil {
		return nil, err
	}
	c.failures = sortFailures(failures)
	return c, nil
}

type curate struct {
	p                  sdk.Provider
	opts               CurateOptions
	reflector, curator *template.Template
	failures           []Failure
}

var _ Mutator = (*curate)(nil)

func (*curate) Name() string { return MutatorCurate }

var promptFuncs = template.FuncMap{"clip": clipRunes}

func parsePrompt(step, text, def string) (*template.Template, error) {
	if text == "" {
		text = def
	}
	t, err := template.New(step).Option("missingkey=error").Funcs(promptFuncs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %s prompt: %w", MutatorCurate, step, err)
	}
	return t, nil
}

// clipRunes keeps the first n characters of s, marking a cut with "…".
func clipRunes(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func sortFailures(fs []Failure) []Failure {
	// By task id, so the prompt does not depend on the order replay
	// workers finished in.
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b Failure) int { return strings.Compare(a.Task, b.Task) })
	return out
}

func (c *curate) Propose(ctx context.Context, base *strategy.Strategy, _ Probe) ([]*strategy.Strategy, error) {
	if len(c.failures) == 0 {
		return nil, nothingProposed(MutatorCurate, "no baseline replay failed: there is nothing to reflect on")
	}
	shown := c.failures[:min(len(c.failures), c.opts.MaxFailures)]
	data := PromptData{
		Name: base.Metadata.Name, Version: base.Metadata.Version,
		Playbook: base.Playbook, Failures: shown,
		Tokens: base.PlaybookTokens(), Budget: base.Evolution.MaxPlaybookTokens,
	}
	insights, err := c.call(ctx, c.reflector, StepReflector, data, false)
	if err != nil {
		return nil, err
	}
	data.Insights = insights
	reply, err := c.call(ctx, c.curator, StepCurator, data, true)
	if err != nil {
		return nil, err
	}
	ops, err := parseOperations(reply)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MutatorCurate, err)
	}
	if len(ops) == 0 {
		return nil, nothingProposed(MutatorCurate, "the curator proposed no playbook operation")
	}
	applied, err := base.Apply(ops...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MutatorCurate, &RejectedError{Reasons: opProblems(err), Reply: reply})
	}
	if len(applied.Ops) == 0 {
		return nil, nothingProposed(MutatorCurate, "every ADD the curator proposed repeats a bullet already in the playbook")
	}
	ev := failureEvidence(shown)
	for i := range ops {
		if ops[i].Reason == "" {
			ops[i].Reason = "from " + ev
		} else {
			ops[i].Reason += " (from " + ev + ")"
		}
	}
	cand, err := base.Revise(strategy.Revision{By: createdBy(MutatorCurate), At: c.opts.At, Playbook: ops})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MutatorCurate, err)
	}
	if tokens, over := cand.OverBudget(); over {
		return nil, fmt.Errorf("%s: %w", MutatorCurate, &RejectedError{Reply: reply, Reasons: []string{
			fmt.Sprintf("the playbook would be %d tokens, over evolution.max_playbook_tokens %d (it is %d now)", tokens, cand.Evolution.MaxPlaybookTokens, base.PlaybookTokens())}})
	}
	return []*strategy.Strategy{cand}, nil
}

// call renders the step's prompt and asks the provider.
func (c *curate) call(ctx context.Context, t *template.Template, step string, data PromptData, asJSON bool) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("%s: %s prompt: %w", MutatorCurate, step, err)
	}
	temp := c.opts.Temperature
	if temp == nil {
		zero := 0.0
		temp = &zero
	}
	resp, err := c.p.Chat(ctx, &sdk.ChatRequest{
		Messages:    []sdk.Message{{Role: "user", Content: b.String()}},
		Model:       c.opts.Model,
		Temperature: temp,
		JSON:        asJSON,
		Step:        step,
		Config:      c.opts.Config,
	})
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", MutatorCurate, step, err)
	}
	if resp == nil || strings.TrimSpace(resp.Text) == "" {
		return "", fmt.Errorf("%s: %s: empty reply", MutatorCurate, step)
	}
	return resp.Text, nil
}

// curatorReply is the one shape a curator may answer with.
type curatorReply struct {
	Operations *[]curatorOp `json:"operations"`
}

type curatorOp struct {
	Op      string `json:"op"`
	ID      string `json:"id"`
	Section string `json:"section"`
	Content string `json:"content"`
	Tag     string `json:"tag"`
	Reason  string `json:"reason"`
}

var fenceRE = regexp.MustCompile("(?s)^```[A-Za-z]*\n(.*?)\n?```$")

// parseOperations decodes a curator reply strictly into delta operations.
// It checks the JSON's shape only; what the operations mean for the
// playbook is strategy.Apply's to judge.
func parseOperations(reply string) ([]strategy.Delta, error) {
	text := strings.TrimSpace(reply)
	if m := fenceRE.FindStringSubmatch(text); m != nil {
		text = strings.TrimSpace(m[1])
	}
	reject := func(format string, args ...any) error {
		return &RejectedError{Reasons: []string{fmt.Sprintf(format, args...)}, Reply: reply}
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var r curatorReply
	if err := dec.Decode(&r); err != nil {
		return nil, reject("not a JSON object of operations: %s (reply %q)", strings.TrimPrefix(err.Error(), "json: "), clipRunes(80, oneLine(reply)))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, reject("trailing data after the JSON object (reply %q)", clipRunes(80, oneLine(reply)))
	}
	if r.Operations == nil {
		return nil, reject(`no "operations" array (reply %q)`, clipRunes(80, oneLine(reply)))
	}
	ops := make([]strategy.Delta, len(*r.Operations))
	for i, o := range *r.Operations {
		ops[i] = strategy.Delta{Op: strategy.Op(o.Op), ID: o.ID, Section: o.Section, Content: o.Content, Tag: strategy.Tag(o.Tag), Reason: strings.TrimSpace(o.Reason)}
	}
	return ops, nil
}

// opProblems renders Apply's problems under the curator's names:
// "deltas.2" becomes "operations[2]".
func opProblems(err error) []string {
	var se *sdk.Error
	if !errors.As(err, &se) || len(se.Problems) == 0 {
		return []string{err.Error()}
	}
	out := make([]string, len(se.Problems))
	for i, p := range se.Problems {
		elem := p.Element
		if n, ok := strings.CutPrefix(elem, "deltas."); ok {
			if _, err := strconv.Atoi(n); err == nil {
				elem = "operations[" + n + "]"
			}
		}
		out[i] = elem + ": " + p.Message
	}
	return out
}

// failureEvidence names the failures a playbook change came from:
// "3 failed replays: t004, t017, t050" (the first maxListed ids).
func failureEvidence(fs []Failure) string {
	ids := make([]string, 0, min(len(fs), maxListed))
	for _, f := range fs[:min(len(fs), maxListed)] {
		ids = append(ids, f.Task)
	}
	s := plural(len(fs), "failed replay") + ": " + strings.Join(ids, ", ")
	if len(fs) > maxListed {
		s += ", …"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
