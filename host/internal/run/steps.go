package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// stepIn is what a step sees of the run, taken when its batch starts: the
// step runs in its own goroutine while the run goes on (timers fire, other
// paths move), so it never reads the run's state itself.
type stepIn struct {
	env sdk.Env
	// answers are the answers given with a resume, for a human step or a
	// confirmation.
	answers map[string]any
}

// stepIn is what a step started now sees.
func (e *exec) stepIn() stepIn { return stepIn{env: e.st.Nav.Env, answers: e.answers} }

// step runs the step at token t. It returns the step's result, or a
// question when the step must wait for a person, or an error that ends
// the run (a provider that failed after its retries and fallbacks, a
// limit, a cancelled context).
func (e *exec) step(ctx context.Context, t sdk.Token, in stepIn) (*stepResult, string, error) {
	return e.stepInFrame(ctx, t, in, nil)
}

// stepInFrame is step in frame f (new, or nil for a frame of its own).
func (e *exec) stepInFrame(ctx context.Context, t sdk.Token, in stepIn, f *stepFrame) (*stepResult, string, error) {
	spec, ok := e.r.cfg.Pipeline.Steps[t.Node]
	start := e.r.cfg.Clock()
	if f == nil {
		f = new(stepFrame)
	}
	f.res = stepResult{Outcome: sdk.Outcome{Status: sdk.OK}}
	res := &f.res
	res.Spans = f.spans[1:1]
	if !ok {
		// A node the host does not act at (the pipeline loader already
		// refused nodes that need a step): it completes at once.
		res.Spans = []store.Span{e.stepSpan(t, "none", start, nil)}
		e.observeStep(ctx, t.Node, "none", start, res, "")
		return res, "", nil
	}
	var err error
	var wait string
	switch spec.Kind {
	case pipeline.KindLLM:
		wait, err = e.llmStep(ctx, t, spec, res, in, f)
	case pipeline.KindExpr:
		err = e.exprStep(t, spec, res, in.env)
	case pipeline.KindAction:
		wait, err = e.actionStep(ctx, t, spec, res, in)
	case pipeline.KindHuman:
		wait, err = e.humanStep(ctx, t, spec, res, in)
	default:
		err = fmt.Errorf("unknown step kind %q", spec.Kind)
	}
	if wait != "" {
		e.observeStep(ctx, t.Node, spec.Kind, start, res, wait)
		return nil, wait, nil
	}
	if isFatal(err) || ctx.Err() != nil {
		if ctx.Err() != nil && err == nil {
			err = ctx.Err()
		}
		if ctx.Err() == nil && len(res.Spans) > 0 {
			// The run ends here, but what the step did is part of the
			// record: the provider call that failed it, with its
			// error.type. (A cancelled step leaves nothing: a timer or a
			// resume takes over.)
			e.mu.Lock()
			spans := e.number(append([]store.Span{e.stepSpan(t, spec.Kind, start, err)}, res.Spans...))
			cerr := e.checkpointLocked(ctx, spans...)
			e.mu.Unlock()
			if cerr != nil {
				return nil, "", cerr
			}
		}
		return nil, "", fmt.Errorf("step %q: %w", t.Node, err)
	}
	span := e.stepSpan(t, spec.Kind, start, err)
	if err != nil {
		res.Outcome = sdk.Outcome{Status: sdk.Failed, Error: "step_failed"}
		res.Err = err.Error()
	}
	if n := len(res.Spans); n < len(f.spans) && (n == 0 || &res.Spans[0] == &f.spans[1]) {
		f.spans[0] = span
		res.Spans = f.spans[:1+n]
	} else {
		res.Spans = append([]store.Span{span}, res.Spans...)
	}
	e.observeStep(ctx, t.Node, spec.Kind, start, res, "")
	return res, "", nil
}

// stepFrame is a step's result with room for its first spans, its own
// and one provider call's, in one allocation: the step's span goes
// first, in front of the spans the step appends from spans[1].
type stepFrame struct {
	res   stepResult
	spans [2]store.Span
	// msgs is room for an LLM step's system and user messages.
	msgs [2]sdk.Message
	// ctx is the step's context, when the run made the frame (pump).
	ctx lazyCtx
	// call is room for an LLM step's first provider call (see
	// Providers.try), used once.
	call callFrame
}

// fatalError ends the run instead of failing the step (limits, provider
// exhaustion are reported as the run's failure).
type fatalError struct{ err error }

// isFatal reports whether err is or wraps a *fatalError; a nil err costs
// nothing (the target of errors.As is allocated only past the check).
func isFatal(err error) bool {
	if err == nil {
		return false
	}
	var fatal *fatalError
	return errors.As(err, &fatal)
}

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

func (e *exec) stepSpan(t sdk.Token, kind string, start time.Time, err error) store.Span {
	name, ok := e.r.stepNames[t.Node]
	if !ok {
		name = "step " + t.Node
	}
	sp := store.Span{Name: name, Kind: store.SpanInternal, Start: start, End: e.r.cfg.Clock(),
		Attributes: e.stepAttributes(t, kind), Status: store.SpanStatus{Code: store.CodeOK}}
	if err != nil {
		sp.Status = store.SpanStatus{Code: store.CodeError, Message: err.Error()}
	}
	return sp
}

// stepAttrs are the attributes of a step span, and the token and kind
// they were made for.
type stepAttrs struct {
	token, kind string
	a           store.Attributes
}

// stepAttributes are the attributes of t's step span. They depend on the
// node, the token's id and the step's kind only, and a node's token has
// the same id in every run of a routine that does not branch, so the
// runner keeps the map made last for each node and gives it to every
// span it fits: such a map is shared between runs and spans, and nothing
// writes to a step span's attributes once made (the spans a step adds
// after it are the ones it annotates, see cite). See RATIONALE.md, "Why
// step spans share attribute maps, frames, prompts and chain walks come
// from blocks, and plain JSON is decoded by hand".
func (e *exec) stepAttributes(t sdk.Token, kind string) store.Attributes {
	slot := e.r.stepAttrs[t.Node]
	if slot != nil && t.Attempt == 0 {
		if c := slot.Load(); c != nil && c.token == t.ID && c.kind == kind {
			return c.a
		}
	}
	a := store.Attributes{
		"sextant.node":      store.String(t.Node),
		"sextant.step.kind": store.String(kind),
		"sextant.token_id":  store.String(t.ID),
	}
	if t.Attempt > 0 {
		a["sextant.attempt"] = store.Int(int64(t.Attempt))
	} else if slot != nil {
		slot.Store(&stepAttrs{token: t.ID, kind: kind, a: a})
	}
	return a
}

// data is what templates see: .input, .vars, .strategy, .token, .task
// (exprEnv's first five names too).
func (e *exec) data(t sdk.Token, env sdk.Env) map[string]any {
	return map[string]any{"input": env.Input, "vars": env.Vars, "strategy": env.Strategy, "token": t.Attrs, "task": e.task.ID}
}

// exprEnv is what expressions see: data, plus every run variable by its
// own name (as BPMN conditions see them), unless it would hide one of
// data's names.
func (e *exec) exprEnv(t sdk.Token, run sdk.Env) map[string]any {
	// Sized for every variable at once (data's five names and the vars):
	// growing a map key by key rehashes it as it goes.
	return e.exprEnvInto(make(map[string]any, 5+len(run.Vars)), t, run)
}

// exprEnvInto is exprEnv filling env, which is empty.
func (e *exec) exprEnvInto(env map[string]any, t sdk.Token, run sdk.Env) map[string]any {
	task := e.taskID
	if task == nil { // a step start did not run (stepwise runs steps itself)
		task = e.task.ID
	}
	env["input"], env["vars"], env["strategy"], env["token"], env["task"] = run.Input, run.Vars, run.Strategy, t.Attrs, task
	for k, v := range run.Vars {
		if _, taken := env[k]; !taken {
			env[k] = v
		}
	}
	return env
}

func (e *exec) render(name, src string, t sdk.Token, env sdk.Env) (string, error) {
	if src == "" {
		return "", nil
	}
	tmpl, fast, err := e.r.template(name, src)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if fast != nil {
		// "<no value>" in a field's string is for text/template to strip.
		if out, ok := fast.render(e, t, env); ok && !strings.Contains(out, "<no value>") {
			return out, nil
		}
	}
	var b bytes.Buffer
	data := e.data(t, env)
	if err := tmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	out := b.String()
	if strings.Contains(out, "<no value>") {
		// Something printed a value that is not there. A key the data
		// lacks (a misspelt or missing input field) is an error naming it;
		// a key that is there with a null value prints as nothing.
		if strict, err := tmpl.Clone(); err == nil {
			if err := strict.Option("missingkey=error").Execute(io.Discard, data); err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return strings.ReplaceAll(out, "<no value>", ""), nil
}

// llmStep runs an LLM step in frame f: its request's messages go in
// f.msgs, and its first provider call in f.call.
func (e *exec) llmStep(ctx context.Context, t sdk.Token, spec pipeline.Step, res *stepResult, in stepIn, f *stepFrame) (string, error) {
	msgs := f.msgs[:0]
	prompt, err := e.render("prompt", spec.Prompt, t, in.env)
	if err != nil {
		return "", err
	}
	system, err := e.render("system", spec.System, t, in.env)
	if err != nil {
		return "", err
	}
	if system != "" {
		msgs = append(msgs, sdk.Message{Role: "system", Content: system})
	}
	msgs = append(msgs, sdk.Message{Role: "user", Content: prompt})
	provider := spec.Provider
	if provider == "" {
		provider = "default"
	}
	env := in.env
	req := &sdk.ChatRequest{Messages: msgs, Step: t.Node, JSON: spec.Output == "json", Temperature: spec.Temperature,
		MaxTokens: spec.MaxTokens, Vars: e.chatVars(env)}
	var resp *sdk.ChatResponse
	if len(spec.Tools) > 0 {
		var wait string
		resp, wait, err = e.toolLoop(ctx, t, spec, provider, req, res, in)
		if wait != "" {
			return wait, nil
		}
	} else {
		resp, err = e.chatIn(ctx, provider, req, res, &f.call)
	}
	if err != nil {
		return "", err
	}
	e.cite(spec, resp.Text, res)
	if spec.Output != "json" {
		if e.pooled && e.r.outputBlind {
			m := textOutputs.Get().(map[string]any)
			m["value"] = resp.Text
			res.Outcome.Output, res.reusable = m, true
		} else {
			res.Outcome.Output = map[string]any{"value": resp.Text}
		}
		return "", nil
	}
	v, perr := parseJSON(resp.Text)
	if perr != nil {
		// One repair retry: show the model its answer and the parse error.
		repair := *req
		repair.Messages = append(append([]sdk.Message(nil), req.Messages...),
			sdk.Message{Role: "assistant", Content: resp.Text},
			sdk.Message{Role: "user", Content: fmt.Sprintf("That reply was not valid JSON (%v). Reply with the JSON object only.", perr)})
		if len(repair.Tools) > 0 {
			repair.ToolChoice = "none" // the repair asks for the answer, not for more calls
		}
		resp2, err := e.chat(ctx, provider, &repair, res)
		if err != nil {
			return "", err
		}
		if v, perr = parseJSON(resp2.Text); perr != nil {
			return "", fmt.Errorf("reply is not JSON after one repair retry: %v", perr)
		}
	}
	if m, ok := v.(map[string]any); ok {
		res.Outcome.Output = m
	} else {
		res.Outcome.Output = map[string]any{"value": v}
	}
	return "", nil
}

// textOutputs are the maps of LLM steps' text outputs ({"value": text})
// a run whose navigator never reads outputs reuses: see releaseOutput.
var textOutputs = sync.Pool{New: func() any { return make(map[string]any, 1) }}

// releaseOutput gives res's output map back to textOutputs once res has
// been handed over and checkpointed, when the map is one of theirs.
// Nothing else can hold it then: the navigator never reads outputs
// (sdk.OutputBlind) and holds nothing past its call, assignOutput took
// the map's value rather than the map (a string output is vars[node]
// itself), the checkpoint encoded the state without it (res left the
// run's Done first), OnStep saw a line rendered from it, and an
// incident, which keeps the outcome, skips this. See RATIONALE.md, "Why a
// step's output is written into the run's vars map only when nothing else
// can read it".
func releaseOutput(res *stepResult) {
	if !res.reusable {
		return
	}
	m := res.Outcome.Output
	res.Outcome.Output, res.reusable = nil, false
	clear(m)
	textOutputs.Put(m)
}

// chatVars is a chat request's Vars for env: {"input": env.Input,
// "vars": env.Vars}. Such a map is never changed once made, so the run
// gives the same one to every call that sees the same input and vars maps
// (vars are one map from step to step while assignOutput writes in place).
func (e *exec) chatVars(env sdk.Env) map[string]any {
	if c := e.lastChatVars.Load(); c != nil && sameMap(c.input, env.Input) && sameMap(c.vars, env.Vars) {
		return c.m
	}
	c := e.takeChatVars()
	*c = chatVars{input: env.Input, vars: env.Vars}
	if e.pooled {
		// A run Start made: the last such map goes back to chatVarMaps
		// once the run returns (see release).
		c.m, c.pooled = chatVarMaps.Get().(map[string]any), true
		c.m["input"], c.m["vars"] = env.Input, env.Vars
	} else {
		c.m = map[string]any{"input": env.Input, "vars": env.Vars}
	}
	e.lastChatVars.Store(c)
	return c.m
}

// takeChatVars is a new chatVars: the first time the exec's room for one
// (Start's), then one of its own, since steps running at once may still
// read the one before.
func (e *exec) takeChatVars() *chatVars {
	if c := e.chatVarsRoom.Swap(nil); c != nil {
		return c
	}
	return new(chatVars)
}

// chatVars is a chat request's Vars and the maps it holds; pooled when
// the Vars are chatVarMaps'.
type chatVars struct {
	input, vars, m map[string]any
	pooled         bool
}

// cite records the playbook bullets a reply cites (strategy.Cited) on the
// step's result and on its provider call's span (sextant.playbook.cited),
// for a step whose prompt or system prompt shows the playbook: feedback on
// the task then tags exactly the bullets the generation used.
func (e *exec) cite(spec pipeline.Step, reply string, res *stepResult) {
	if e.r.cfg.Strategy == nil || !strings.Contains(spec.Prompt, "playbook") && !strings.Contains(spec.System, "playbook") {
		return
	}
	ids := e.r.cfg.Strategy.Cited(reply)
	if len(ids) == 0 {
		return
	}
	res.Cited = ids
	if n := len(res.Spans); n > 0 && res.Spans[n-1].Call != nil {
		res.Spans[n-1].Call.Cited = slices.Clone(ids)
	}
}

// AttrCited is the provider-call span attribute listing the playbook
// bullets the reply cited.
const AttrCited = store.AttrCited

// parseJSON accepts a JSON value, optionally inside a ``` fence.
func parseJSON(text string) (any, error) {
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	if v, ok := decodeJSON(s); ok {
		return v, nil
	}
	var v any
	// A reply that is one JSON value is decoded at once; anything else
	// goes through the stream decoder, whose errors the repair prompt
	// shows the model (and which takes a value followed by a stray
	// closing bracket).
	if json.Unmarshal([]byte(s), &v) == nil {
		return v, nil
	}
	return decodeJSONStream(s)
}

// decodeJSONStream is parseJSON's general path: the first JSON value of
// s, with nothing but white space or a closing bracket after it.
func decodeJSONStream(s string) (any, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

// chat answers req from its recording when there is one, else through the
// provider chain, recording the answer before the step goes on: a call
// answered before a crash is never billed twice.
func (e *exec) chat(ctx context.Context, provider string, req *sdk.ChatRequest, res *stepResult) (*sdk.ChatResponse, error) {
	return e.chatIn(ctx, provider, req, res, nil)
}

// chatIn is chat making its first provider call in frame (see
// Providers.try), unless frame is nil.
func (e *exec) chatIn(ctx context.Context, provider string, req *sdk.ChatRequest, res *stepResult, frame *callFrame) (*sdk.ChatResponse, error) {
	prov, ok := e.r.cfg.Providers.Get(provider)
	if !ok {
		return nil, &fatalError{fmt.Errorf("unknown provider %q", provider)}
	}
	full := *req
	if full.Model == "" {
		full.Model = prov.Model
	}
	if full.Temperature == nil {
		full.Temperature = prov.Temperature
	}
	if full.MaxTokens == 0 {
		full.MaxTokens = prov.MaxTokens
	}
	st := e.r.cfg.Journal
	cr, _ := st.(chatRecorder)
	var dst []byte
	if cr != nil { // it keeps no canonical request: the buffer serves the next call
		cb := canonicalBufs.Get().(*[]byte)
		dst = *cb
		defer func() {
			if cap(dst) <= 64<<10 {
				*cb = dst[:0]
			}
			canonicalBufs.Put(cb)
		}()
	}
	digest, canonical, err := store.ChatKeyDigest(dst, st.Redactor(), &full)
	if err != nil {
		return nil, &fatalError{err}
	}
	dst = canonical
	hash, key := recordingKeys(e.task.ID, digest, &e.text)
	start := e.r.cfg.Clock()
	var resp *sdk.ChatResponse
	used, recorded := provider, false
	var latency time.Duration
	if rec, err := findRecording(ctx, st, cr, key); err != nil {
		return nil, &fatalError{err}
	} else if rec != nil {
		var r sdk.ChatResponse
		if err := json.Unmarshal(rec.Response, &r); err != nil {
			return nil, &fatalError{fmt.Errorf("recording %s: %w", short(hash), err)}
		}
		resp, used, recorded, latency = &r, rec.Provider, true, rec.Latency
	} else {
		t0 := e.r.cfg.Clock()
		var tries [2]Attempt // dropped: room enough for most calls
		r, who, _, err := e.r.cfg.Providers.chatInto(ctx, provider, &full, tries[:0], frame)
		latency = e.r.cfg.Clock().Sub(t0)
		if err != nil {
			a := callRoom(frame)
			e.r.cfg.Providers.SetCallAttributes(a, provider, &full, nil)
			a.ErrorType = ErrorType(err)
			// The request's hash names the call a replay asked for and
			// found no recording of (its divergence's "got").
			a.RequestHash = hash
			sp := store.Span{Name: store.ChatSpanName(full.Model), Kind: store.SpanClient, Start: start, End: e.r.cfg.Clock(),
				Call: a, Status: store.SpanStatus{Code: store.CodeError, Message: err.Error()}}
			res.Spans = append(res.Spans, sp)
			return nil, &fatalError{err}
		}
		failpoint.Hit(failpoint.ChatAnswered)
		resp, used = r, who
		keepToolCalls(resp)
		// Usage is checked before the answer is recorded: an answer that
		// cannot be accounted is never replayed either.
		if err := checkUsage(used, resp.Usage, 0); err != nil {
			a := callRoom(frame)
			e.r.cfg.Providers.SetCallAttributes(a, used, &full, nil)
			a.ErrorType = ErrorType(err)
			res.Spans = append(res.Spans, store.Span{Name: store.ChatSpanName(full.Model), Kind: store.SpanClient, Start: start, End: e.r.cfg.Clock(),
				Call: a, Status: store.SpanStatus{Code: store.CodeError, Message: err.Error()}})
			return nil, &fatalError{err}
		}
		if err := putChatRecording(ctx, st, cr, key, canonical, used, e.task.ID, resp, latency); err != nil {
			return nil, &fatalError{err}
		}
		failpoint.Hit(failpoint.ChatRecorded)
	}
	model := resp.Model
	if model == "" {
		model = full.Model
	}
	e.logCall(ctx, used, model, resp.Usage, latency, recorded, hash)
	cost, priced := e.r.cfg.Prices.Cost(model, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	if err := checkUsage(used, resp.Usage, cost); err != nil {
		return nil, &fatalError{err}
	}
	if !priced {
		if _, seen := e.r.unpriced.LoadOrStore(model, true); !seen {
			e.r.cfg.Logger.Warn("model has no price; its calls cost 0 (add [prices.MODEL] to the pipeline)", "model", model)
		}
	}
	a := callRoom(frame)
	e.r.cfg.Providers.SetCallAttributes(a, used, &full, resp)
	a.RequestHash, a.Recording, a.Recorded = hash, key, recorded
	a.CostUSD, a.LatencyMS = cost, latency.Milliseconds()
	res.Spans = append(res.Spans, store.Span{Name: store.ChatSpanName(full.Model), Kind: store.SpanClient, Start: start,
		End: start.Add(latency), Call: a, Status: store.SpanStatus{Code: store.CodeOK}})
	res.Tokens += resp.Usage.InputTokens + resp.Usage.OutputTokens
	res.CostUSD += cost
	return resp, nil
}

// chatRecorder is a Journal that reads and writes a provider call's
// recording without making a miss's error or the recording
// (*store.Store does): every live call misses, then writes one.
type chatRecorder interface {
	FindRecording(ctx context.Context, key string) (*store.Recording, error)
	PutChatRecording(ctx context.Context, key string, canonical []byte, provider, task string, resp *sdk.ChatResponse, latency time.Duration) error
}

// canonicalBufs hold the buffers a live call's canonical request is
// written into (store.ChatKeyDigest) when its Journal is a chatRecorder,
// which copies it into the recording.
var canonicalBufs = sync.Pool{New: func() any { return new([]byte) }}

// findRecording is the recording stored under key, or nil.
func findRecording(ctx context.Context, st Journal, cr chatRecorder, key string) (*store.Recording, error) {
	if cr != nil {
		return cr.FindRecording(ctx, key)
	}
	rec, err := st.Recording(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return rec, err
}

// putChatRecording records a live call's answer under key.
func putChatRecording(ctx context.Context, st Journal, cr chatRecorder, key string, canonical []byte, provider, task string, resp *sdk.ChatResponse, latency time.Duration) error {
	if cr != nil {
		return cr.PutChatRecording(ctx, key, canonical, provider, task, resp, latency)
	}
	rec, err := store.ChatRecording(key, canonical, provider, task, resp, latency)
	if err != nil {
		return err
	}
	return st.PutRecording(ctx, rec)
}

func (e *exec) exprStep(t sdk.Token, spec pipeline.Step, res *stepResult, run sdk.Env) error {
	out := make(map[string]any, len(spec.Set))
	names := make([]string, 0, len(spec.Set))
	pooled := true
	for k, src := range spec.Set {
		names = append(names, k)
		// $env, the whole environment, is the one way an expression's
		// value can hold the environment map itself.
		pooled = pooled && !strings.Contains(src, "$")
	}
	sortStrings(names)
	var env map[string]any
	if pooled {
		env = e.exprEnvInto(exprEnvs.Get().(map[string]any), t, run)
		defer func() {
			clear(env)
			exprEnvs.Put(env)
		}()
	} else {
		env = e.exprEnv(t, run)
	}
	for _, k := range names {
		v, err := e.r.eval(spec.Set[k], env)
		if err != nil {
			return fmt.Errorf("set %s: %v", k, oneLine(err))
		}
		out[k] = v
	}
	res.Outcome.Output = out
	return nil
}

// exprEnvs are the maps expression steps build their environment in
// (exprEnvInto), reused: no value an expression returns holds the map
// unless it names $env, and then the step makes a map of its own. A
// cleared map keeps its room for the next step's variables.
var exprEnvs = sync.Pool{New: func() any { return map[string]any{} }}

func (e *exec) actionStep(ctx context.Context, t sdk.Token, spec pipeline.Step, res *stepResult, in stepIn) (string, error) {
	action, err := e.render("action", spec.Action, t, in.env)
	if err != nil {
		return "", err
	}
	action = strings.TrimSpace(action)
	conf := 1.0
	if spec.Confidence != "" {
		v, err := e.r.eval(spec.Confidence, e.exprEnv(t, in.env))
		if err != nil {
			return "", fmt.Errorf("confidence: %v", oneLine(err))
		}
		f, ok := toFloat(v)
		if !ok {
			return "", fmt.Errorf("confidence: want a number, got %v", v)
		}
		conf = f
	}
	d := e.r.cfg.Strategy.Decide(action, conf)
	rec := actionRecord{Node: t.Node, Action: action, Reason: d.Reason}
	switch d.Outcome {
	case strategy.Blocked:
		rec.Decision = "blocked"
		e.mu.Lock()
		e.st.Violations++
		e.mu.Unlock()
	case strategy.Confirm:
		e.mu.Lock()
		already, n := e.st.Approved, e.st.Answers[t.Node]+1
		e.mu.Unlock()
		answers := in.answers
		if answers == nil && !already && e.r.cfg.Answer != nil {
			if a, ok := e.r.cfg.Answer(ctx, e.task.ID, t.Node, n); ok {
				answers = a
			}
		}
		switch {
		case already:
			rec.Decision, rec.Reason = "executed", d.Reason+"; confirmed by the user earlier in this run"
		case answers != nil:
			question := fmt.Sprintf("confirm action %q?", action)
			if err := e.recordAnswer(ctx, t.Node, question, answers); err != nil {
				return "", err
			}
			if approved(answers) {
				rec.Decision, rec.Reason = "executed", d.Reason+"; confirmed by the user"
			} else {
				rec.Decision, rec.Reason = "declined", d.Reason+"; the user declined"
			}
		default:
			e.mu.Lock()
			e.st.Confirmations++
			e.mu.Unlock()
			return fmt.Sprintf("confirm action %q? (%s) — resume with --set confirm=yes|no", action, d.Reason), nil
		}
	default:
		rec.Decision = "executed"
	}
	e.mu.Lock()
	e.st.Actions = append(e.st.Actions, rec)
	e.mu.Unlock()
	res.Outcome.Output = map[string]any{"action": action, "decision": rec.Decision, "reason": rec.Reason, "confidence": conf}
	return "", nil
}

func approved(answers map[string]any) bool {
	for _, k := range []string{"confirm", "answer", "approve"} {
		switch v := answers[k].(type) {
		case string:
			s := strings.ToLower(v)
			return s == "yes" || s == "y" || s == "approve" || s == "true"
		case bool:
			return v
		}
	}
	return false
}

func (e *exec) humanStep(ctx context.Context, t sdk.Token, spec pipeline.Step, res *stepResult, in stepIn) (string, error) {
	question, err := e.render("question", spec.Question, t, in.env)
	if err != nil {
		return "", err
	}
	if question == "" {
		question = fmt.Sprintf("answer for %s", t.Node)
	}
	answers := in.answers
	e.mu.Lock()
	n := e.st.Answers[t.Node] + 1
	e.mu.Unlock()
	if answers == nil && e.r.cfg.Answer != nil {
		if a, ok := e.r.cfg.Answer(ctx, e.task.ID, t.Node, n); ok {
			answers = a
		}
	}
	if answers == nil {
		return question + " — resume with --set answer=…", nil
	}
	if len(spec.Options) > 0 {
		if a, ok := answers["answer"].(string); ok && !contains(spec.Options, a) {
			return "", &fatalError{sdk.Errorf(sdk.CodeInvalid, "answer %q is not one of %s", a, strings.Join(spec.Options, ", "))}
		}
	}
	if err := e.recordAnswer(ctx, t.Node, question, answers); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.st.Confirmations++ // a person was asked (and answered)
	if approved(answers) {
		e.st.Approved = true
	}
	e.mu.Unlock()
	out := make(map[string]any, len(answers))
	for k, v := range answers {
		out[k] = v
	}
	res.Outcome.Output = out
	return "", nil
}

// recordAnswer keeps a person's answer at node as a recording (HumanKey),
// so a replay can give the same answer. Steps call it (it takes e.mu).
func (e *exec) recordAnswer(ctx context.Context, node, question string, answers map[string]any) error {
	e.mu.Lock()
	e.st.answered(node, 1)
	n := e.st.Answers[node]
	e.mu.Unlock()
	return e.putAnswer(ctx, node, n, question, answers)
}

// putAnswer records the n-th answer at node.
func (e *exec) putAnswer(ctx context.Context, node string, n int, question string, answers map[string]any) error {
	answer, err := json.Marshal(answers)
	if err != nil {
		return &fatalError{err}
	}
	rec, err := store.NewHumanRecording(e.task.ID, node, n, question, answer)
	if err != nil {
		return &fatalError{err}
	}
	if err := e.r.cfg.Journal.PutRecording(ctx, rec); err != nil {
		return &fatalError{err}
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

func sortStrings(s []string) { sort.Strings(s) }

// template returns the parsed template for src, and its fast form when it
// has one (see fastTemplate), parsing it once per runner.
func (r *Runner) template(name, src string) (*template.Template, *fastTemplate, error) {
	key := templateKey{name, src}
	if t, ok := r.compiled.templates.Load(key); ok {
		c := t.(*cachedTemplate)
		return c.t, c.fast, nil
	}
	t, err := template.New(name).Funcs(pipeline.TemplateFuncs).
		Funcs(template.FuncMap{"playbook": r.cfg.Strategy.RenderPlaybook}).
		Option("missingkey=zero").Parse(src)
	if err != nil {
		return nil, nil, err
	}
	c := &cachedTemplate{t: t, fast: compileFast(t)}
	r.compiled.templates.Store(key, c)
	return c.t, c.fast, nil
}

// templateKey names a template in Compiled.templates.
type templateKey struct{ name, src string }

// cachedTemplate is a parsed template and its fast form (nil if none).
type cachedTemplate struct {
	t    *template.Template
	fast *fastTemplate
}

// eval runs an expression, compiling it once per runner.
func (r *Runner) eval(src string, env map[string]any) (any, error) {
	var p *vm.Program
	if c, ok := r.compiled.programs.Load(src); ok {
		p = c.(*vm.Program)
	} else {
		var err error
		// Compiled for a map[string]any environment, names left free
		// (AllowUndefinedVariables checks them as compiling with no
		// environment does): a name is then read straight from the map,
		// where without it expr reads it through reflection, an
		// allocation per name.
		if p, err = expr.Compile(src, expr.Env(map[string]any{}), expr.AllowUndefinedVariables()); err != nil {
			return nil, err
		}
		r.compiled.programs.Store(src, p)
	}
	m := vms.Get().(*vm.VM)
	v, err := m.Run(p, env)
	// What the run left on the stack and in variables is dropped, so a
	// pooled VM holds no value of a finished expression.
	clear(m.Stack[:cap(m.Stack)])
	clear(m.Variables)
	vms.Put(m)
	return v, err
}

// vms are the expression VMs eval runs programs on, reused: Run resets
// a VM's stack, scopes and counters before it starts, and a VM made for
// each run (expr.Run) costs an allocation for its stack every time.
var vms = sync.Pool{New: func() any { return new(vm.VM) }}

// RecordingKey is the key a task's provider call is recorded under: the
// canonical request hash (store.ChatKey) scoped to the task. Each task keeps
// its own evidence, so two tasks that asked the same question and got
// different answers each replay their own, and a live run never answers
// from another task's recording.
func RecordingKey(task, requestHash string) string {
	sum := recordingKeySum(task, requestHash)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

func recordingKeySum[S string | []byte](task string, requestHash S) [sha256.Size]byte {
	const domain = "sextant.recording.v1\x00"
	var in [256]byte // on the stack for the ids and hashes of a run
	b := append(append(append(append(in[:0], domain...), task...), 0), requestHash...)
	return sha256.Sum256(b)
}

// recordingKeys are the request hash of digest (store.ChatKey's hash)
// and its RecordingKey for task, made as one string in arena (nil: a
// string of their own): a call needs both.
func recordingKeys(task string, digest [sha256.Size]byte, arena *textArena) (hash, key string) {
	const n = 2 * sha256.Size
	var out [2 * n]byte
	hex.Encode(out[:n], digest[:])
	sum := recordingKeySum(task, out[:n])
	hex.Encode(out[n:], sum[:])
	var both string
	if arena == nil {
		both = string(out[:])
	} else {
		b, start := arena.room(len(out))
		b.Write(out[:])
		both = arena.done(start)
	}
	return both[:n], both[n:]
}
