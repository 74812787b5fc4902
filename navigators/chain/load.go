package chain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/navigators/internal/reads"
	"github.com/sextant-dev/sextant/navigators/internal/tomldoc"
	"github.com/sextant-dev/sextant/sdk"
)

// The routine schema: every key the loader reads, declared once. Unknown
// keys are reported against these lists.
const (
	keyName        = "name"
	keyDescription = "description"
	keyInputs      = "inputs"
	keyOutputs     = "outputs"
	keySteps       = "steps"
	keyID          = "id"
	keySkipIf      = "skip_if"
	keyChain       = "chain"
)

var (
	rootKeys = []string{keyName, keyDescription, keyInputs, keyOutputs, keySteps}
	stepKeys = []string{keyID, keyName, keyDescription, keyInputs, keyOutputs, keySkipIf, keyChain}
)

// maxDepth bounds the nesting of sub-chains.
const maxDepth = 32

// chain is one sequence of steps: the routine itself or a sub-chain.
type chain struct {
	steps   []*step
	inputs  []string
	outputs []string // declared, or the last step's
	parent  *step    // the sub-chain step, nil at the top
}

// step is one step of a chain: a leaf the host runs, or a sub-chain.
type step struct {
	id, name string
	line     int
	inputs   []string
	outputs  []string
	skipIf   *vm.Program
	sub      *chain // non-nil for a sub-chain
	owner    *chain
	index    int // position in owner.steps
	tbl      *tomldoc.Table
}

// routine is one loaded chain. It is immutable once loaded and shared by
// every instance.
type routine struct {
	summary sdk.Routine
	top     *chain
	byID    map[string]*step
}

// exprEnv is the shape of the environment conditions are compiled against.
var exprEnv = map[string]any{"input": map[string]any{}, "vars": map[string]any{}, "strategy": map[string]any{}}

// parse loads and validates a chain document, reporting every problem.
func parse(file string, src []byte) (*routine, error) {
	doc, root, err := tomldoc.Parse(file, src)
	if err != nil {
		return nil, err
	}
	r := &routine{byID: map[string]*step{}}
	name, ok := root.String(keyName)
	if !ok && !root.Has(keyName) {
		doc.Add(0, "", "missing required key %q", keyName)
	} else if ok && strings.TrimSpace(name) == "" {
		root.Errorf(keyName, "must not be empty")
	}
	r.summary.ID = name
	root.String(keyDescription)
	r.top = &chain{inputs: names(root, keyInputs)}
	outputs, hasOutputs := root.Strings(keyOutputs)
	outputs = unique(root, keyOutputs, outputs)
	tables, ok := root.Tables(keySteps)
	if !ok && !root.Has(keySteps) {
		doc.Add(0, "", "no steps: add a [[steps]] table for each step")
	}
	root.Strict(rootKeys)
	if ok {
		r.parseSteps(root, keySteps, tables, r.top, 1)
	}

	if doc.Problems() == 0 {
		v := &validator{written: map[string]string{}}
		for _, in := range r.top.inputs {
			v.written[in] = "an input of the chain"
		}
		v.chain(r.top, root, hasOutputs, outputs, "")
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	r.summary.Nodes = nodes(r.top, nil)
	// What a chain reads of the variables: the inputs Start looks for
	// (in input or vars), and what its skip_if expressions name.
	var rs reads.Set
	for _, in := range r.top.inputs {
		rs.Name(in)
	}
	for _, e := range r.summary.Expressions {
		rs.Expr(e.Text)
	}
	r.summary.Reads = rs.Reads()
	return r, nil
}

// parseSteps reads the step tables of chain c.
func (r *routine) parseSteps(parent *tomldoc.Table, key string, tables []*tomldoc.Table, c *chain, depth int) {
	if len(tables) == 0 {
		parent.Errorf(key, "no steps")
		return
	}
	for _, tt := range tables {
		s := &step{line: tt.Line(), owner: c, index: len(c.steps), tbl: tt}
		c.steps = append(c.steps, s)
		if id, ok := tt.String(keyID); ok {
			switch prev, dup := r.byID[id]; {
			case strings.TrimSpace(id) == "":
				tt.Errorf(keyID, "must not be empty")
			case dup:
				tt.Errorf(keyID, "step id %q is already used at line %d", id, prev.line)
			default:
				s.id = id
				r.byID[id] = s
				tt.Name = tt.Name[:strings.LastIndexByte(tt.Name, '[')] + "." + id
			}
		} else if !tt.Has(keyID) {
			tt.Errorf("", "missing required key %q", keyID)
		}
		s.name, _ = tt.String(keyName)
		tt.String(keyDescription)
		s.inputs = names(tt, keyInputs)
		s.outputs = names(tt, keyOutputs)
		if src, ok := tt.String(keySkipIf); ok {
			s.skipIf = compile(tt, keySkipIf, src)
			r.summary.Expressions = append(r.summary.Expressions, sdk.Expression{Element: tt.Element(""), Line: tt.Line(keySkipIf), What: keySkipIf, Text: src})
		}
		if inner, ok := tt.Tables(keyChain); ok {
			if depth >= maxDepth {
				tt.Errorf(keyChain, "sub-chains nested more than %d deep", maxDepth)
			} else {
				s.sub = &chain{inputs: s.inputs, parent: s}
				r.parseSteps(tt, keyChain, inner, s.sub, depth+1)
			}
		}
		tt.Strict(stepKeys)
	}
}

// validator applies SequentialChain's checks.
type validator struct {
	// written maps every variable that exists at this point of the walk
	// to where it came from.
	written map[string]string
}

// chain checks c: tbl and key locate its declared outputs, declared tells
// whether they were declared. where names the sub-chain in messages.
func (v *validator) chain(c *chain, tbl *tomldoc.Table, declared bool, outputs []string, where string) {
	known := map[string]bool{}
	for _, in := range c.inputs {
		known[in] = true
	}
	for _, s := range c.steps {
		for n, in := range s.inputs {
			if !known[in] {
				scope := "the chain"
				if c.parent != nil {
					scope = fmt.Sprintf("sub-chain %q", c.parent.id)
				}
				s.tbl.ErrorfAt(keyInputs, n, "missing input %q: not an input of %s or an output of an earlier step%s",
					in, scope, tomldoc.Suggest(in, sorted(known)))
			}
		}
		if s.sub != nil {
			// The sub-chain's outputs are its inner steps' outputs, checked there.
			v.chain(s.sub, s.tbl, s.tbl.Has(keyOutputs), s.outputs, s.id)
			s.outputs = s.sub.outputs
		} else {
			for n, out := range s.outputs {
				if from, ok := v.written[out]; ok {
					s.tbl.ErrorfAt(keyOutputs, n, "output %q overwrites an existing variable (%s)", out, from)
					continue
				}
				v.written[out] = fmt.Sprintf("the output of step %q", s.id)
			}
		}
		for _, out := range s.outputs {
			known[out] = true
		}
	}
	if !declared {
		if n := len(c.steps); n > 0 {
			c.outputs = c.steps[n-1].outputs
		}
		return
	}
	c.outputs = outputs
	for n, out := range outputs {
		if !known[out] {
			what := "any step"
			if where != "" {
				what = fmt.Sprintf("any step of sub-chain %q", where)
			}
			tbl.ErrorfAt(keyOutputs, n, "output %q is not produced by %s%s", out, what, tomldoc.Suggest(out, sorted(known)))
		}
	}
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// names reads a list of variable names, which must be unique and not empty.
func names(tt *tomldoc.Table, key string) []string {
	list, _ := tt.Strings(key)
	return unique(tt, key, list)
}

func unique(tt *tomldoc.Table, key string, list []string) []string {
	seen := map[string]bool{}
	var out []string
	for n, s := range list {
		switch {
		case strings.TrimSpace(s) == "":
			tt.ErrorfAt(key, n, "element %d: empty name", n)
		case seen[s]:
			tt.ErrorfAt(key, n, "%q listed twice", s)
		default:
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func compile(tt *tomldoc.Table, key, src string) *vm.Program {
	p, err := expr.Compile(src, expr.Env(exprEnv), expr.AsBool())
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		tt.Errorf(key, "expression %q: %s", src, msg)
		return nil
	}
	return p
}

// nodes lists the steps depth first, in document order.
func nodes(c *chain, out []sdk.Node) []sdk.Node {
	for _, s := range c.steps {
		kind := "step"
		if s.sub != nil {
			kind = "chain"
		}
		out = append(out, sdk.Node{ID: s.id, Name: s.name, Kind: kind, Line: s.line, Step: s.sub == nil,
			Inputs: s.inputs, Outputs: s.outputs})
		if s.sub != nil {
			out = nodes(s.sub, out)
		}
	}
	return out
}
