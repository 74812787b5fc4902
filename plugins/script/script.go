// Package script is sextant's offline provider: deterministic answers from
// a rules file, so that every example runs with no network and no API key,
// and tests and benchmarks get a provider whose every answer is known.
//
// The host reads the rules file named in the pipeline ([providers.NAME]
// rules = "responses.toml") and passes its text in the request's Config
// under "rules_toml", so the provider works unchanged as a builtin, a
// process plugin or a sandboxed wasm module with no filesystem.
//
// Rules file:
//
//	[[rule]]
//	step = "classify"                    # the routine node the call is for
//	match = '(?i)invoice'                # regexp over the prompt
//	when = 'input.priority == "high"'    # expression over input and vars
//	reply = '{"action":"archive","confidence":0.92}'
//	delay = "20ms"                       # optional simulated latency
//	input_tokens = 120                   # optional; default len(prompt)/4
//	output_tokens = 12                   # optional; default len(reply)/4
//
//	[default]
//	reply = "I don't know"
//
// The first rule whose conditions all hold answers; all conditions are
// optional. Replies are Go text/templates over .input, .vars and .match
// (the regexp's submatches).
//
// A rule can answer with tool calls instead of (or beside) a reply, so
// that a step offering tools runs offline. The conditions and templates
// then also see .rounds (how many rounds of tool calls the conversation
// holds since the last user message), .results (those rounds' tool
// results: name, content, is_error, and json, the content decoded when it
// is JSON) and .tools (the offered tools' names), which lets one rule call
// a tool and the next answer from its result:
//
//	[[rule]]
//	step = "research"
//	when = 'rounds == 0'
//	[[rule.tool_calls]]
//	name = "get_weather"
//	arguments = '{"city": "{{ .input.city }}"}'
//
//	[[rule]]
//	step = "research"
//	when = 'results[0].json.temperature > 30'
//	reply = 'It is hot: {{ (index .results 0).json.temperature }} degrees.'
//
//	[[rule]]
//	step = "research"
//	reply = 'It is {{ (index .results 0).content }}.'
package script

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Name is the provider's plugin name.
const Name = "script"

// ConfigRules is the Config key holding the rules file's text
// (sdk.ConfigRules, which the host fills from a block's rules file).
const ConfigRules = sdk.ConfigRules

// ConfigRulesFile is the Config key holding the rules file's name (for
// error positions; sdk.ConfigRulesFile).
const ConfigRulesFile = sdk.ConfigRulesFile

// Provider answers from rules. It caches parsed rule sets by content hash.
type Provider struct {
	mu    sync.Mutex
	cache map[[32]byte]*ruleSet
	// last is the rule set of the last call, by its file's name and text:
	// every call of a pipeline passes the same strings, which compare
	// equal without hashing the text again.
	last atomic.Pointer[lastRules]
	// Sleep waits for a rule's delay; tests and replays may replace it.
	Sleep func(context.Context, time.Duration) error
	// room is what answers are carved from (see answerRoom).
	room answerRoom
}

// answerRoom holds blocks of responses and pieces of text that answers
// are carved from, so that calls share allocations rather than take
// one each. Each response and text is handed out once and never again: a
// block or piece lives while anything holds a part of it, as if each
// had been allocated alone (a Builder never changes the bytes it has
// written). Calls run at once, hence mu.
type answerRoom struct {
	mu    sync.Mutex
	resps []sdk.ChatResponse
	text  strings.Builder
}

// Sizes of answerRoom's blocks of responses and pieces of text; a text
// longer than answerTextMax has an allocation of its own.
const (
	answerBlock   = 16
	answerPiece   = 1024
	answerTextMax = answerPiece / 8
)

// response is a new response, zero.
func (a *answerRoom) response() *sdk.ChatResponse {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.resps) == 0 {
		a.resps = make([]sdk.ChatResponse, answerBlock)
	}
	r := &a.resps[0]
	a.resps = a.resps[1:]
	return r
}

// room locks a and makes room for n bytes of text (at most
// answerTextMax): the caller writes them to the builder returned, then
// calls done with start.
func (a *answerRoom) room(n int) (b *strings.Builder, start int) {
	a.mu.Lock()
	if a.text.Cap()-a.text.Len() < n {
		a.text.Reset() // what was written stays in the texts that hold it
		a.text.Grow(answerPiece)
	}
	return &a.text, a.text.Len()
}

// done is the text written since room returned start; it unlocks a.
func (a *answerRoom) done(start int) string {
	s := a.text.String()[start:]
	a.mu.Unlock()
	return s
}

var (
	_ sdk.Provider     = (*Provider)(nil)
	_ sdk.RulesChecker = (*Provider)(nil)
)

// New returns a script provider.
func New() *Provider { return &Provider{cache: map[[32]byte]*ruleSet{}, Sleep: sleep} }

func init() { sdk.Register(New()) }

// Describe implements sdk.Plugin.
func (*Provider) Describe() sdk.Info {
	return sdk.Info{Name: Name, Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion,
		Description: "deterministic offline provider answering from a rules file",
		Config: []sdk.ConfigField{
			{Name: "rules", Type: "string", Required: true, Doc: "rules file, relative to the pipeline (the host passes its text)"},
		}}
}

type rule struct {
	Step         string `toml:"step"`
	Match        string `toml:"match"`
	When         string `toml:"when"`
	Reply        string `toml:"reply"`
	Delay        string `toml:"delay"`
	InputTokens  int    `toml:"input_tokens"`
	OutputTokens int    `toml:"output_tokens"`
	// ToolCalls, when set, are the tool calls the rule answers with.
	ToolCalls []toolCall `toml:"tool_calls"`

	re    *regexp.Regexp
	when  *vm.Program
	tmpl  *template.Template
	fast  *fastReply // tmpl's fast form, nil if it has none
	delay time.Duration
}

// toolCall is one tool call a rule answers with.
type toolCall struct {
	Name      string `toml:"name"`
	Arguments string `toml:"arguments"`
	ID        string `toml:"id"`

	args *template.Template
}

type rulesFile struct {
	Rule    []rule `toml:"rule"`
	Default *rule  `toml:"default"`
}

type ruleSet struct{ rulesFile }

// lastRules is Provider.last.
type lastRules struct {
	file, text string
	rs         *ruleSet
}

// Chat implements sdk.Provider.
func (p *Provider) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	text, _ := r.Config[ConfigRules].(string)
	file, _ := r.Config[ConfigRulesFile].(string)
	if file == "" {
		file = "rules"
	}
	rs, err := p.rules(file, text)
	if err != nil {
		return nil, err
	}
	prompt := lastUser(r.Messages)
	env := &callEnv{r: r}
	for i := range rs.Rule {
		ru := &rs.Rule[i]
		if m, ok := ru.matches(r.Step, prompt, env); ok {
			where := "" // names the rule in errors, which only tool calls can make
			if len(ru.ToolCalls) > 0 {
				where = fmt.Sprintf("%s: rule[%d]", file, i)
			}
			return p.answer(ctx, ru, where, r, prompt, env, m)
		}
	}
	if rs.Default != nil {
		return p.answer(ctx, rs.Default, file+": default", r, prompt, env, nil)
	}
	return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: no rule in %s matches step %q (prompt %q)", file, r.Step, clip(prompt, 60))
}

// callEnv is what a call's conditions and templates see, made when
// first needed: most rules have no condition, and most replies are text
// and fields the fast form renders (see fastReply).
type callEnv struct {
	r   *sdk.ChatRequest
	env map[string]any
}

// vars are the variables conditions see: input, vars, step, rounds,
// results and tools.
func (c *callEnv) vars() map[string]any {
	if c.env == nil {
		r := c.r
		round, results := toolRounds(r.Messages)
		tools := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			tools[i] = t.Name
		}
		c.env = map[string]any{"input": r.Vars["input"], "vars": r.Vars["vars"], "step": r.Step,
			"rounds": round, "results": results, "tools": tools}
	}
	return c.env
}

// data is what templates see: input, vars, match, rounds, results and
// tools.
func (c *callEnv) data(m []string) map[string]any {
	env := c.vars()
	return map[string]any{"input": env["input"], "vars": env["vars"], "match": m,
		"rounds": env["rounds"], "results": env["results"], "tools": env["tools"]}
}

func (ru *rule) matches(step, prompt string, env *callEnv) ([]string, bool) {
	if ru.Step != "" && ru.Step != step {
		return nil, false
	}
	var m []string
	if ru.re != nil {
		if m = ru.re.FindStringSubmatch(prompt); m == nil {
			return nil, false
		}
	}
	if ru.when != nil {
		out, err := expr.Run(ru.when, env.vars())
		if b, ok := out.(bool); err != nil || !ok || !b {
			return nil, false
		}
	}
	return m, true
}

func (p *Provider) answer(ctx context.Context, ru *rule, where string, r *sdk.ChatRequest, prompt string, env *callEnv, m []string) (*sdk.ChatResponse, error) {
	if ru.delay > 0 {
		if err := p.Sleep(ctx, ru.delay); err != nil {
			return nil, sdk.Errorf(sdk.CodeTimeout, "script provider: %v", err)
		}
	}
	text, ok := ru.fast.renderIn(r.Vars, m, &p.room)
	var data map[string]any
	if !ok {
		data = env.data(m)
		var b bytes.Buffer
		if err := ru.tmpl.Execute(&b, data); err != nil {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: reply template: %v", err)
		}
		text = b.String()
	}
	var calls []sdk.ToolCall
	if len(ru.ToolCalls) > 0 {
		if data == nil {
			data = env.data(m)
		}
		var err error
		if calls, err = ru.calls(where, r, data); err != nil {
			return nil, err
		}
	}
	finish, written := "stop", len(text)
	if len(calls) > 0 {
		finish = "tool_calls"
		for _, c := range calls {
			written += len(c.Name) + len(c.Arguments) // what the model wrote, for the default output tokens
		}
	}
	in, out := ru.InputTokens, ru.OutputTokens
	if in == 0 {
		in = (len(prompt) + 3) / 4
	}
	if out == 0 {
		out = (written + 3) / 4
	}
	resp := p.room.response()
	*resp = sdk.ChatResponse{Text: text, FinishReason: finish, Model: "script", ToolCalls: calls,
		Usage: sdk.Usage{InputTokens: in, OutputTokens: out}}
	return resp, nil
}

// calls renders the rule's tool calls. A call of a tool the request does
// not offer, or arguments that do not render to a JSON object, is an
// error naming the rule: the rules file and the step's tools disagree.
func (ru *rule) calls(where string, r *sdk.ChatRequest, data map[string]any) ([]sdk.ToolCall, error) {
	if len(ru.ToolCalls) == 0 {
		return nil, nil
	}
	round := 0 // of the whole conversation, so that ids stay unique in it
	for _, m := range r.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			round++
		}
	}
	out := make([]sdk.ToolCall, len(ru.ToolCalls))
	for i := range ru.ToolCalls {
		c := &ru.ToolCalls[i]
		offered := false
		names := make([]string, len(r.Tools))
		for j, t := range r.Tools {
			names[j] = t.Name
			offered = offered || t.Name == c.Name
		}
		if !offered {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: %s.tool_calls[%d]: step %q offers no tool %q (it offers %s)",
				where, i, r.Step, c.Name, offeredList(names))
		}
		var b bytes.Buffer
		if err := c.args.Execute(&b, data); err != nil {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: %s.tool_calls[%d].arguments: %v", where, i, err)
		}
		args := b.Bytes()
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: %s.tool_calls[%d].arguments: not a JSON object: %s", where, i, clip(string(args), 60))
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, args) // valid: it decoded
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", round, i) // unique in the conversation, the same on every run
		}
		out[i] = sdk.ToolCall{ID: id, Name: c.Name, Arguments: compact.Bytes()}
	}
	return out, nil
}

func offeredList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// toolRounds counts the rounds of tool calls since the last user message
// (assistant messages holding calls) and gathers their results, each
// with the name of the tool it answers.
func toolRounds(ms []sdk.Message) (round int, results []any) {
	start := 0
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			start = i + 1
			break
		}
	}
	names := map[string]string{}
	results = []any{}
	for _, m := range ms[start:] {
		switch m.Role {
		case "assistant":
			if len(m.ToolCalls) > 0 {
				round++
			}
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
			}
		case "tool":
			var v any
			if json.Unmarshal([]byte(m.Content), &v) != nil {
				v = nil // not JSON: .json is empty
			}
			results = append(results, map[string]any{"id": m.ToolCallID, "name": names[m.ToolCallID], "content": m.Content, "is_error": m.IsError, "json": v})
		}
	}
	return round, results
}

func (p *Provider) rules(file, text string) (*ruleSet, error) {
	if text == "" {
		return nil, sdk.Errorf(sdk.CodeInvalid, "script provider: no rules (set rules = \"responses.toml\" in the provider block)")
	}
	if l := p.last.Load(); l != nil && l.file == file && l.text == text {
		return l.rs, nil
	}
	key := sha256.Sum256([]byte(file + "\x00" + text))
	p.mu.Lock()
	defer p.mu.Unlock()
	rs, ok := p.cache[key]
	if !ok {
		var err error
		if rs, err = ParseRules(file, []byte(text)); err != nil {
			return nil, err
		}
		p.cache[key] = rs
	}
	p.last.Store(&lastRules{file: file, text: text, rs: rs})
	return rs, nil
}

// typeError matches BurntSushi/toml's error for a value of the wrong type.
var typeError = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// CheckRules implements sdk.RulesChecker: the host checks a pipeline's
// rules file when it loads the pipeline.
func (p *Provider) CheckRules(file string, data []byte) error {
	_, err := ParseRules(file, data)
	return err
}

// ParseRules parses and checks a rules file; every problem is reported,
// positioned at the line of the key it is about.
func ParseRules(file string, data []byte) (*ruleSet, error) {
	ix, err := tomlpos.Scan(file, data)
	if err != nil {
		return nil, err
	}
	var rf rulesFile
	md, err := toml.Decode(string(data), &rf)
	if err != nil {
		p := sdk.Problem{File: file, Message: strings.TrimPrefix(err.Error(), "toml: ")}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p.Line, p.Message = pe.Position.Line, pe.Message
		} else if m := typeError.FindStringSubmatch(err.Error()); m != nil {
			// A value of the wrong type: BurntSushi/toml says where only
			// in its message.
			p.Line, _ = strconv.Atoi(m[1])
			p.Element, p.Message = m[2], m[3]
		}
		return nil, sdk.Invalid(p)
	}
	var probs []sdk.Problem
	for _, k := range md.Undecoded() {
		probs = append(probs, sdk.Problem{File: file, Line: ix.Line(k...), Element: k.String(), Message: "unknown key"})
	}
	check := func(where string, at []string, ru *rule) {
		bad := func(key, format string, args ...any) {
			probs = append(probs, sdk.Problem{File: file, Line: ix.Line(append(at, key)...), Element: where,
				Message: fmt.Sprintf(format, args...)})
		}
		if ru.Match != "" {
			re, err := regexp.Compile(ru.Match)
			if err != nil {
				bad("match", "match: %v", err)
			}
			ru.re = re
		}
		if ru.When != "" {
			prog, err := expr.Compile(ru.When, expr.AsBool())
			if err != nil {
				bad("when", "when: %s", strings.ReplaceAll(err.Error(), "\n", " "))
			}
			ru.when = prog
		}
		t, err := template.New(where).Option("missingkey=zero").Parse(ru.Reply)
		if err != nil {
			bad("reply", "reply: %v", err)
		}
		ru.tmpl, ru.fast = t, compileFast(t)
		if ru.Delay != "" {
			d, err := time.ParseDuration(ru.Delay)
			if err != nil || d < 0 {
				bad("delay", "delay: %q is not a duration", ru.Delay)
			}
			ru.delay = d
		}
		if ru.InputTokens < 0 {
			bad("input_tokens", "token counts cannot be negative")
		} else if ru.OutputTokens < 0 {
			bad("output_tokens", "token counts cannot be negative")
		}
		ids := map[string]bool{}
		for i := range ru.ToolCalls {
			c := &ru.ToolCalls[i]
			callAt := slices.Concat(at, []string{"tool_calls", strconv.Itoa(i)})
			badCall := func(key, format string, args ...any) {
				probs = append(probs, sdk.Problem{File: file, Line: ix.Line(append(callAt, key)...), Element: fmt.Sprintf("%s.tool_calls[%d]", where, i),
					Message: fmt.Sprintf(format, args...)})
			}
			if !sdk.ValidToolName(c.Name) {
				badCall("name", "name: %q is not a tool name (want 1 to 64 letters, digits, _ or -)", c.Name)
			}
			t, err := template.New(where).Option("missingkey=zero").Parse(c.Arguments)
			if err != nil {
				badCall("arguments", "arguments: %v", err)
			}
			c.args = t
			if c.ID != "" && ids[c.ID] {
				badCall("id", "id: %q is used twice in the rule", c.ID)
			}
			ids[c.ID] = true
		}
	}
	for i := range rf.Rule {
		check(fmt.Sprintf("rule[%d]", i), []string{"rule", strconv.Itoa(i)}, &rf.Rule[i])
	}
	if rf.Default != nil {
		if rf.Default.Step != "" || rf.Default.Match != "" || rf.Default.When != "" {
			probs = append(probs, sdk.Problem{File: file, Line: ix.Line("default"), Element: "default", Message: "the default rule takes no conditions"})
		}
		check("default", []string{"default"}, rf.Default)
	}
	if len(rf.Rule) == 0 && rf.Default == nil {
		probs = append(probs, sdk.Problem{File: file, Message: "no [[rule]] and no [default]"})
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	if err := sdk.Invalid(probs...); err != nil {
		return nil, err
	}
	return &ruleSet{rf}, nil
}

func lastUser(ms []sdk.Message) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			return ms[i].Content
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
