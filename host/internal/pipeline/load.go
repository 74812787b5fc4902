package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/expr-lang/expr"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

// Resolver answers what the loader needs to know about installed plugins.
// The CLI backs it with the plugin registry.
type Resolver interface {
	// Plugin reports the kind and declared config of the plugin called
	// name, or ok=false when no such plugin is installed.
	Plugin(name string) (kind sdk.Kind, config []sdk.ConfigField, ok bool)
	// Names lists installed plugins of kind k.
	Names(k sdk.Kind) []string
	// LoadRoutine loads the routine file with the named navigator, and
	// with the decision files its business rule tasks call.
	LoadRoutine(ctx context.Context, navigator, file string, decisions []sdk.File) (*sdk.Routine, error)
}

// Options tune Load.
type Options struct {
	// Getenv looks up ${VAR}s; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// CheckStrategy validates the strategy file; nil skips the check.
	CheckStrategy func(path string) error
	// CheckRules validates a provider's rules file (rules = "…") for the
	// plugin the block uses; nil skips the check. Problems in the file
	// are reported at its own file:line, as a strategy's are.
	CheckRules func(use, path string) error
}

// Load reads, interpolates, decodes and validates the pipeline at path.
// Every problem is returned at once in an error matching sdk.ErrInvalid;
// no pipeline is returned when there is any.
func Load(ctx context.Context, path string, res Resolver, opts Options) (*Pipeline, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	data, err := readfile.Prefix(path, tomlpos.MaxSize+1)
	if err != nil {
		return nil, sdk.Invalid(sdk.Problem{File: path, Message: fmt.Sprintf("read pipeline: %v", errors.Unwrap(err))})
	}
	ix, err := tomlpos.Scan(path, data)
	if err != nil {
		return nil, err
	}
	l := &loader{ctx: ctx, res: res, opts: opts,
		c: &schema.Checker{File: path, Index: ix}}
	raw, ok := l.parse(data)
	if !ok {
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	if _, ok := raw[keyOverlay]; ok {
		return loadOverlay(l, path, raw)
	}
	p, ok := l.decode(path, raw, Spec)
	if !ok {
		return nil, sdk.Invalid(l.c.Problems()...)
	}
	if probs := l.finish(p); len(probs) > 0 {
		return nil, sdk.Invalid(probs...)
	}
	return p, nil
}

// finish validates a decoded pipeline and, when it has no problem, binds
// steps to task types.
func (l *loader) finish(p *Pipeline) []sdk.Problem {
	l.validate(p)
	if probs := l.c.Problems(); len(probs) > 0 {
		return probs
	}
	// Steps bound by task type also answer to their nodes' ids, which is
	// how the run looks them up.
	for node, key := range l.bind {
		p.Steps[node] = p.Steps[key]
	}
	return nil
}

type loader struct {
	ctx  context.Context
	res  Resolver
	opts Options
	c    *schema.Checker
	raw  map[string]any
	// bind maps node ids to the [steps] key of their task type.
	bind map[string]string
}

func (l *loader) add(path []string, format string, args ...any) { l.c.Add(path, format, args...) }

// parse decodes the TOML document data; a syntax error is a problem at
// its line.
func (l *loader) parse(data []byte) (map[string]any, bool) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		line := 0
		msg := strings.TrimPrefix(err.Error(), "toml: ")
		if errors.As(err, &pe) {
			line, msg = pe.Position.Line, pe.Message
		}
		l.c.Add(nil, "%s", msg)
		if line > 0 {
			probs := l.c.Problems()
			probs[len(probs)-1].Line = line
			probs[len(probs)-1].Element = ""
		}
		return nil, false
	}
	return raw, true
}

// decode interpolates, checks and decodes the document raw of the
// pipeline file path.
func (l *loader) decode(path string, raw map[string]any, spec *schema.Block) (*Pipeline, bool) {
	l.raw = raw
	l.interpolate(raw, nil)
	l.c.Check(raw, spec, nil)
	// Decode even when the schema found problems: encoding/json skips
	// values of the wrong type and goes on, so the reference checks below
	// still run and every problem is reported at once.
	schemaOK := len(l.c.Problems()) == 0
	// Defaults are applied once, here, from the declaration, to a copy:
	// l.raw stays what the user wrote, for the checks that ask that.
	eff := deepCopy(raw).(map[string]any)
	schema.ApplyDefaults(eff, spec)
	gates, _ := eff["gates"].([]map[string]any)
	delete(eff, "gates")
	b, err := json.Marshal(eff)
	if err != nil {
		if schemaOK { // else the schema's positioned problems say why
			l.add(nil, "decode: %v", err)
		}
		return nil, false
	}
	var p Pipeline
	if err := json.Unmarshal(b, &p); err != nil && schemaOK {
		l.add(nil, "decode: %v", err)
		return nil, false
	}
	for i, g := range gates {
		cfg := map[string]any{}
		for k, v := range g {
			if k != "use" {
				cfg[k] = v
			}
		}
		use, _ := g["use"].(string)
		p.Gates = append(p.Gates, Gate{Use: use, Config: cfg, Line: l.c.Index.Line("gates", strconv.Itoa(i))})
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	p.File, p.Dir = path, filepath.Dir(abs)
	return &p, true
}

// deepCopy copies decoded TOML: tables, arrays and arrays of tables.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = deepCopy(el)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, el := range x {
			out[i] = deepCopy(el).(map[string]any)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = deepCopy(el)
		}
		return out
	}
	return v
}

var varRE = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// interpolate replaces ${VAR} and ${VAR:-default} in every string value;
// $$ is a literal $. An unset variable without a default is a problem.
func (l *loader) interpolate(v any, path []string) any {
	switch x := v.(type) {
	case string:
		return varRE.ReplaceAllStringFunc(x, func(m string) string {
			if m == "$$" {
				return "$"
			}
			sub := varRE.FindStringSubmatch(m)
			if val, ok := l.opts.Getenv(sub[1]); ok && val != "" {
				return val
			}
			if sub[2] != "" {
				return sub[3]
			}
			l.add(path, "environment variable %s is not set (write ${%s:-default} to give a default)", sub[1], sub[1])
			return m
		})
	case map[string]any:
		for k, el := range x {
			x[k] = l.interpolate(el, append(append([]string(nil), path...), k))
		}
	case []any:
		for i, el := range x {
			x[i] = l.interpolate(el, append(append([]string(nil), path...), strconv.Itoa(i)))
		}
	case []map[string]any:
		for i, el := range x {
			l.interpolate(el, append(append([]string(nil), path...), strconv.Itoa(i)))
		}
	}
	return v
}

// Path resolves a path written in the pipeline against its directory,
// keeping it relative when the pipeline's path is (for readable messages).
func (p *Pipeline) Path(rel string) string {
	if rel == "" || filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(filepath.Dir(p.File), filepath.FromSlash(rel))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (l *loader) fileExists(p *Pipeline, rel string, path ...string) bool {
	if rel == "" {
		return false
	}
	if _, err := os.Stat(p.Path(rel)); err != nil {
		l.add(path, "%s: no such file", rel)
		return false
	}
	return true
}

// decisions reads the routine's decision files ([routine] decisions); a
// file that cannot be read is a problem at the key.
func (l *loader) decisions(p *Pipeline) ([]sdk.File, bool) {
	ok := true
	var out []sdk.File
	for _, rel := range p.Routine.Decisions {
		f, err := p.decision(rel)
		if err != nil {
			l.add([]string{"routine", "decisions"}, "%s: %v", rel, errors.Unwrap(err))
			ok = false
			continue
		}
		out = append(out, f)
	}
	return out, ok
}

// Decisions reads the routine's decision files ([routine] decisions), in
// order, named by their paths.
func (p *Pipeline) Decisions() ([]sdk.File, error) {
	var out []sdk.File
	for _, rel := range p.Routine.Decisions {
		f, err := p.decision(rel)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func (p *Pipeline) decision(rel string) (sdk.File, error) {
	data, err := readfile.Read(p.Path(rel), readfile.MaxRoutine)
	return sdk.File{Name: p.Path(rel), Data: data}, err
}

func (l *loader) validate(p *Pipeline) {
	// Routine and strategy files.
	routineOK := l.fileExists(p, p.Routine.File, "routine", "file")
	var params []string // nil: the strategy was not read
	if l.fileExists(p, p.Strategy.File, "strategy", "file") && l.opts.CheckStrategy != nil {
		if err := l.opts.CheckStrategy(p.Path(p.Strategy.File)); err != nil {
			l.fileProblems(err, p.Strategy.File, "strategy", "strategy", "file")
		} else if st, err := strategy.Load(p.Path(p.Strategy.File)); err == nil {
			params = sortedKeys(st.Parameters)
			if p.Evolve.Online && st.Evolution.BranchType != strategy.Experimental {
				l.add([]string{"evolve", "online"}, "strategy %s %s is on the %s branch: only experimental strategies learn online; %s strategies change only through gates (sextant evolve)",
					st.Metadata.Name, st.Metadata.Version, st.Evolution.BranchType, st.Evolution.BranchType)
			}
		}
	}
	navOK := l.plugin(p.Routine.Navigator, sdk.KindNavigator, "routine", "navigator")

	l.providers(p)
	l.tools(p)

	// Steps.
	for _, id := range sortedKeys(p.Steps) {
		l.step(p, id, p.Steps[id])
	}

	// Routine nodes vs steps.
	var routine *sdk.Routine
	decisions, decisionsOK := l.decisions(p)
	if routineOK && navOK && decisionsOK && l.res != nil {
		r, err := l.res.LoadRoutine(l.ctx, p.Routine.Navigator, p.Path(p.Routine.File), decisions)
		if err != nil {
			l.add([]string{"routine", "file"}, "%s", indent(err))
		} else {
			l.nodes(p, r)
			routine = r
		}
	}
	l.references(p, newRefScope(p, routine, params), routine)

	// Expressions.
	l.expression(p.Score.Success, "score", "success")
	l.expression(p.Score.Reward, "score", "reward")
	l.assertions(p)

	// Gates and grants.
	for i, g := range p.Gates {
		l.gate(i, g)
	}
	l.grants(p)
	if t := p.Evolve.DedupThreshold; t > 1 {
		l.add([]string{"evolve", "dedup_threshold"}, "%v is not a similarity: want 0 (never merge) to 1 (merge only identical word sets)", t)
	}
	if m := p.Replay.MinFidelity; m != nil && *m > 1 {
		l.add([]string{"replay", "min_fidelity"}, "%v is not a share of self-replays: want 0 to 1", *m)
	}
	if p.Replay.Dataset != "" {
		l.fileExists(p, p.Replay.Dataset, "replay", "dataset")
	}
	l.storeDir(p)
}

// fileProblems reports err, the problems of the file rel (a strategy,
// rules) that the pipeline names at path: a file's positioned problems
// at its own file:line, below one line at the pipeline's that names it.
func (l *loader) fileProblems(err error, rel, what string, path ...string) {
	var se *sdk.Error
	if errors.As(err, &se) && len(se.Problems) > 0 && se.Problems[0].File != "" {
		l.add(path, "%s: invalid %s (%s below)", rel, what, plural(len(se.Problems), "problem"))
		l.c.Append(se.Problems...)
		return
	}
	l.add(path, "%s", indent(err))
}

// storeDir checks that [store] dir, when it exists, is a directory: the
// store is created there on the first run.
func (l *loader) storeDir(p *Pipeline) {
	if p.Store.Dir == "" {
		return
	}
	if info, err := os.Stat(p.Path(p.Store.Dir)); err == nil && !info.IsDir() {
		l.add([]string{"store", "dir"}, "%s is a file, not a directory (the store is a directory of its own; name a new one)", p.Store.Dir)
	}
}

// providers checks the [providers] blocks: plugin, fallbacks, files,
// secrets.
func (l *loader) providers(p *Pipeline) {
	for _, name := range sortedKeys(p.Providers) {
		pr := p.Providers[name]
		l.plugin(pr.Use, sdk.KindProvider, "providers", name, "use")
		for i, fb := range pr.Fallback {
			if _, ok := p.Providers[fb]; !ok {
				l.add([]string{"providers", name, "fallback", strconv.Itoa(i)}, "unknown provider %q%s", fb, suggest.Hint(fb, sortedKeys(p.Providers)))
			} else if fb == name {
				l.add([]string{"providers", name, "fallback", strconv.Itoa(i)}, "a provider cannot fall back to itself")
			}
		}
		if pr.Rules != "" && l.fileExists(p, pr.Rules, "providers", name, "rules") && l.opts.CheckRules != nil {
			if err := l.opts.CheckRules(pr.Use, p.Path(pr.Rules)); err != nil {
				l.fileProblems(err, pr.Rules, "rules", "providers", name, "rules")
			}
		}
		if pr.BaseURL != "" && (pr.Use == "openai" || pr.Use == "anthropic") && !strings.Contains(pr.BaseURL, "${") { // an unset variable is reported already
			// The HTTP providers refuse any other at their first call: a
			// failed run, or every proxied call a 502, where this is one
			// positioned error before anything runs.
			if u, err := url.Parse(pr.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				l.add([]string{"providers", name, "base_url"}, "%q is not an http or https URL", pr.BaseURL)
			}
		}
		if raw, ok := l.raw["providers"].(map[string]any)[name].(map[string]any); ok {
			if _, ok := raw["api_key"]; ok {
				l.add([]string{"providers", name, "api_key"}, "API keys never live in files: name the variable that holds it with api_key_env")
			}
		}
	}
	if cyc := fallbackCycle(p.Providers); cyc != "" {
		l.add([]string{"providers"}, "fallback cycle %s", cyc)
	}

}

// grants checks the [plugins] grants and the [store] redaction patterns.
func (l *loader) grants(p *Pipeline) {
	for _, name := range sortedKeys(p.Plugins) {
		if l.res != nil {
			if _, _, ok := l.res.Plugin(name); !ok {
				l.add([]string{"plugins", name}, "no plugin %q is installed%s", name, suggest.Hint(name, l.res.Names("")))
			}
		}
		for i, h := range p.Plugins[name].AllowHTTP {
			if !hostPortRE.MatchString(h) {
				l.add([]string{"plugins", name, "allow_http", strconv.Itoa(i)}, "%q is not host:port", h)
			}
		}
	}
	for i, pat := range p.Store.Redact {
		if _, err := regexp.Compile(pat); err != nil {
			l.add([]string{"store", "redact", strconv.Itoa(i)}, "bad regular expression: %v", err)
		}
	}
}

var hostPortRE = regexp.MustCompile(`^[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?:\d{1,5}$`)

func indent(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "\n  ")
}

// plugin checks that name is an installed plugin of kind k.
func (l *loader) plugin(name string, k sdk.Kind, path ...string) bool {
	if l.res == nil || name == "" {
		return name != ""
	}
	kind, _, ok := l.res.Plugin(name)
	if !ok {
		l.add(path, "unknown %s %q%s", k, name, suggest.Hint(name, l.res.Names(k)))
		return false
	}
	if kind != k {
		l.add(path, "plugin %q is a %s, not a %s", name, kind, k)
		return false
	}
	return true
}

// stepFields lists the keys each step kind takes besides kind.
var stepFields = map[string][]string{
	KindLLM:    {"provider", "system", "prompt", "output", "temperature", "max_tokens", "tools", "tool_choice", "max_turns"},
	KindExpr:   {"set"},
	KindAction: {"action", "confidence"},
	KindHuman:  {"question", "options"},
}

func (l *loader) step(p *Pipeline, id string, s Step) {
	raw, _ := l.raw["steps"].(map[string]any)[id].(map[string]any)
	allowed := stepFields[s.Kind]
	for _, k := range sortedKeys(raw) {
		if k == "kind" {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			l.add([]string{"steps", id, k}, "%s steps do not take %s", s.Kind, k)
		}
	}
	switch s.Kind {
	case KindLLM:
		if s.Prompt == "" {
			l.add([]string{"steps", id, "prompt"}, "missing (llm steps need a prompt)")
		}
		if s.Provider == "" {
			if _, ok := p.Providers["default"]; !ok {
				l.add([]string{"steps", id, "provider"}, "missing, and there is no [providers.default]")
			}
		} else if _, ok := p.Providers[s.Provider]; !ok {
			l.add([]string{"steps", id, "provider"}, "unknown provider %q%s", s.Provider, suggest.Hint(s.Provider, sortedKeys(p.Providers)))
		}
		l.template(s.Prompt, "steps", id, "prompt")
		l.template(s.System, "steps", id, "system")
		l.stepTools(p, id, s, raw)
	case KindExpr:
		if len(s.Set) == 0 {
			l.add([]string{"steps", id, "set"}, "missing (expr steps assign variables: set = { name = \"expression\" })")
		}
		for _, k := range sortedKeys(s.Set) {
			l.expression(s.Set[k], "steps", id, "set", k)
		}
	case KindAction:
		if s.Action == "" {
			l.add([]string{"steps", id, "action"}, "missing (action steps name the action)")
		}
		l.template(s.Action, "steps", id, "action")
		l.expression(s.Confidence, "steps", id, "confidence")
	}
}

// nodes checks [steps] against the routine: every step names a node (by
// id) or a task type, and every node the host must act at has a step.
// [steps.X] binds the node whose id is X; when no node has that id, it
// binds every node whose task type is X. A node bound by its id is not
// bound by its type.
func (l *loader) nodes(p *Pipeline, r *sdk.Routine) {
	ids := make([]string, 0, len(r.Nodes))
	byID := map[string]sdk.Node{}
	types := map[string]bool{}
	for _, n := range r.Nodes {
		ids = append(ids, n.ID)
		byID[n.ID] = n
		if n.Type != "" {
			types[n.Type] = true
		}
	}
	for _, id := range sortedKeys(p.Steps) {
		if _, ok := byID[id]; !ok && !types[id] {
			what := "node"
			if len(types) > 0 {
				what = "node or task type"
			}
			l.add([]string{"steps", id}, "routine %s has no %s %q%s", p.Routine.File, what, id, suggest.Hint(id, append(ids, sortedKeys(types)...)))
		}
	}
	for _, n := range r.Nodes {
		if _, ok := p.Steps[n.ID]; ok || !n.Step {
			continue
		}
		if _, ok := p.Steps[n.Type]; ok && n.Type != "" {
			if _, isID := byID[n.Type]; !isID {
				if l.bind == nil {
					l.bind = map[string]string{}
				}
				l.bind[n.ID] = n.Type
				continue
			}
		}
		where := ""
		if n.Line > 0 {
			where = fmt.Sprintf(" (%s:%d)", p.Routine.File, n.Line)
		}
		also := ""
		if n.Type != "" {
			also = fmt.Sprintf(" or [steps.%s] for its task type", n.Type)
		}
		l.add([]string{"steps"}, "routine node %q%s has no [steps.%s]%s", n.ID, where, n.ID, also)
	}
}

// references checks what the pipeline's templates and expressions, and
// the routine's own expressions, refer to (see refScope).
func (l *loader) references(p *Pipeline, s refScope, r *sdk.Routine) {
	if s.params == nil && s.vars == nil {
		return
	}
	report := func(msgs []string, path ...string) {
		for _, m := range msgs {
			l.add(path, "%s", m)
		}
	}
	for _, id := range sortedKeys(p.Steps) {
		st := p.Steps[id]
		for _, t := range []struct{ key, src string }{{"system", st.System}, {"prompt", st.Prompt}, {"action", st.Action}, {"question", st.Question}} {
			if t.src != "" {
				report(s.check(templatePaths(t.src)), "steps", id, t.key)
			}
		}
		for _, k := range sortedKeys(st.Set) {
			report(s.check(exprPaths(st.Set[k])), "steps", id, "set", k)
		}
		report(s.check(exprPaths(st.Confidence)), "steps", id, "confidence")
	}
	// The score sees the run's variables as vars and output, plus
	// output.action (the action executed).
	report(s.check(exprPaths(p.Score.Success), "action"), "score", "success")
	report(s.check(exprPaths(p.Score.Reward), "action"), "score", "reward")
	if r == nil {
		return
	}
	for _, e := range r.Expressions {
		for _, m := range s.check(exprPaths(e.Text)) {
			what := e.What
			if what == "" {
				what = "expression"
			}
			l.c.Append(sdk.Problem{File: p.Path(p.Routine.File), Line: e.Line, Element: e.Element, Message: what + ": " + m})
		}
	}
}

func (l *loader) expression(src string, path ...string) {
	if strings.TrimSpace(src) == "" {
		return
	}
	if _, err := expr.Compile(src); err != nil {
		l.add(path, "bad expression: %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
}

func (l *loader) gate(i int, g Gate) {
	path := []string{"gates", strconv.Itoa(i)}
	fields, builtin := BuiltinGates[g.Use]
	if !builtin {
		if l.res == nil {
			return
		}
		kind, _, ok := l.res.Plugin(g.Use)
		if !ok {
			names := append(sortedKeys(BuiltinGates), l.res.Names(sdk.KindGate)...)
			l.add(append(path, "use"), "unknown gate %q%s", g.Use, suggest.Hint(g.Use, names))
			return
		}
		if kind != sdk.KindGate {
			l.add(append(path, "use"), "plugin %q is a %s, not a gate", g.Use, kind)
			return
		}
		l.pluginConfig(g.Use, g.Config, path...)
		return
	}
	c := &schema.Checker{File: l.c.File, Index: l.c.Index}
	c.Check(g.Config, &schema.Block{Fields: fields}, path)
	l.c.Append(c.Problems()...)
}

// pluginConfig checks a plugin's config block against the fields the
// plugin declares (path is where its keys are); a plugin that declares
// none takes whatever it is given.
func (l *loader) pluginConfig(name string, config map[string]any, path ...string) {
	if l.res == nil {
		return
	}
	_, cfg, _ := l.res.Plugin(name)
	if len(cfg) == 0 {
		return
	}
	fields := schema.FromConfig(cfg)
	c := &schema.Checker{File: l.c.File, Index: l.c.Index}
	c.Check(config, &schema.Block{Fields: fields}, path)
	l.c.Append(c.Problems()...)
}

// fallbackCycle returns "a → b → a" when fallbacks loop.
func fallbackCycle(ps map[string]Provider) string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found string
	var visit func(string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, fb := range ps[n].Fallback {
			if _, ok := ps[fb]; !ok || fb == n {
				continue
			}
			switch color[fb] {
			case grey:
				i := 0
				for stack[i] != fb {
					i++
				}
				found = strings.Join(append(append([]string(nil), stack[i:]...), fb), " → ")
				return true
			case white:
				if visit(fb) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range sortedKeys(ps) {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return ""
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
