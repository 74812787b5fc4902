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
package script

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// ConfigRules is the Config key holding the rules file's text.
const ConfigRules = "rules_toml"

// ConfigRulesFile is the Config key holding the rules file's name (for
// error positions).
const ConfigRulesFile = "rules_file"

// Provider answers from rules. It caches parsed rule sets by content hash.
type Provider struct {
	mu    sync.Mutex
	cache map[[32]byte]*ruleSet
	// Sleep waits for a rule's delay; tests and replays may replace it.
	Sleep func(context.Context, time.Duration) error
}

var _ sdk.Provider = (*Provider)(nil)

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

	re    *regexp.Regexp
	when  *vm.Program
	tmpl  *template.Template
	delay time.Duration
}

type rulesFile struct {
	Rule    []rule `toml:"rule"`
	Default *rule  `toml:"default"`
}

type ruleSet struct{ rulesFile }

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
	env := map[string]any{"input": r.Vars["input"], "vars": r.Vars["vars"], "step": r.Step}
	for i := range rs.Rule {
		ru := &rs.Rule[i]
		if m, ok := ru.matches(r.Step, prompt, env); ok {
			return p.answer(ctx, ru, prompt, env, m)
		}
	}
	if rs.Default != nil {
		return p.answer(ctx, rs.Default, prompt, env, nil)
	}
	return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: no rule in %s matches step %q (prompt %q)", file, r.Step, clip(prompt, 60))
}

func (ru *rule) matches(step, prompt string, env map[string]any) ([]string, bool) {
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
		out, err := expr.Run(ru.when, env)
		if b, ok := out.(bool); err != nil || !ok || !b {
			return nil, false
		}
	}
	return m, true
}

func (p *Provider) answer(ctx context.Context, ru *rule, prompt string, env map[string]any, m []string) (*sdk.ChatResponse, error) {
	if ru.delay > 0 {
		if err := p.Sleep(ctx, ru.delay); err != nil {
			return nil, sdk.Errorf(sdk.CodeTimeout, "script provider: %v", err)
		}
	}
	data := map[string]any{"input": env["input"], "vars": env["vars"], "match": m}
	var b bytes.Buffer
	if err := ru.tmpl.Execute(&b, data); err != nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "script provider: reply template: %v", err)
	}
	text := b.String()
	in, out := ru.InputTokens, ru.OutputTokens
	if in == 0 {
		in = (len(prompt) + 3) / 4
	}
	if out == 0 {
		out = (len(text) + 3) / 4
	}
	return &sdk.ChatResponse{Text: text, FinishReason: "stop", Model: "script",
		Usage: sdk.Usage{InputTokens: in, OutputTokens: out}}, nil
}

func (p *Provider) rules(file, text string) (*ruleSet, error) {
	if text == "" {
		return nil, sdk.Errorf(sdk.CodeInvalid, "script provider: no rules (set rules = \"responses.toml\" in the provider block)")
	}
	key := sha256.Sum256([]byte(file + "\x00" + text))
	p.mu.Lock()
	defer p.mu.Unlock()
	if rs, ok := p.cache[key]; ok {
		return rs, nil
	}
	rs, err := ParseRules(file, []byte(text))
	if err != nil {
		return nil, err
	}
	p.cache[key] = rs
	return rs, nil
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
		ru.tmpl = t
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
