package strategy

import (
	"encoding/json"
	"fmt"
	pathpkg "path"
	"sort"
	"strings"
)

// ToolPrefix marks a constraint entry that matches tool calls rather than
// action names: "tool:payments.refund", "tool:files.write_*(path=/etc/*)".
const ToolPrefix = "tool:"

// ToolPattern selects tools, and optionally tool calls by their
// arguments. Its text is
//
//	SOURCE                 every tool of the [tools.SOURCE] source
//	SOURCE.TOOL            one tool
//	SOURCE.GLOB            the source's tools whose names match GLOB (path.Match: * ? [a-z])
//	…(KEY=GLOB, …)         only calls whose argument KEY (a.b for a nested key)
//	                       matches GLOB; strings match as they are, other
//	                       values as their JSON text; a missing key never matches
//
// An llm step's `tools` list and the "tool:" entries of a strategy's
// constraints share this syntax; a step's list takes no argument patterns.
type ToolPattern struct {
	Source string
	// Tool is a glob over the source's tool names; "" is every tool.
	Tool string
	Args []ArgPattern
}

// ArgPattern is one KEY=GLOB of a ToolPattern.
type ArgPattern struct {
	Key  string // dotted path into the arguments object
	Glob string
}

// ParseToolPattern parses the text of a ToolPattern (without "tool:").
func ParseToolPattern(s string) (ToolPattern, error) {
	var p ToolPattern
	s = strings.TrimSpace(s)
	head, args, hasArgs := strings.Cut(s, "(")
	if hasArgs {
		if !strings.HasSuffix(args, ")") {
			return p, fmt.Errorf("tool pattern %q: argument patterns must end with )", s)
		}
		args = strings.TrimSuffix(args, ")")
		for _, a := range strings.Split(args, ",") {
			k, g, ok := strings.Cut(strings.TrimSpace(a), "=")
			k, g = strings.TrimSpace(k), strings.TrimSpace(g)
			if !ok || k == "" {
				return p, fmt.Errorf("tool pattern %q: argument pattern %q is not KEY=GLOB", s, strings.TrimSpace(a))
			}
			if _, err := pathpkg.Match(g, ""); err != nil {
				return p, fmt.Errorf("tool pattern %q: argument %s: bad glob %q", s, k, g)
			}
			p.Args = append(p.Args, ArgPattern{Key: k, Glob: g})
		}
	}
	src, tool, _ := strings.Cut(strings.TrimSpace(head), ".")
	if src == "" {
		return p, fmt.Errorf("tool pattern %q: no source (want SOURCE, SOURCE.TOOL or SOURCE.GLOB)", s)
	}
	if strings.ContainsAny(src, "*?[]\\ ") {
		return p, fmt.Errorf("tool pattern %q: source %q must be a [tools] name, not a pattern", s, src)
	}
	if _, err := pathpkg.Match(tool, ""); err != nil {
		return p, fmt.Errorf("tool pattern %q: bad glob %q", s, tool)
	}
	if strings.Contains(head, ".") && tool == "" {
		return p, fmt.Errorf("tool pattern %q: no tool after the dot", s)
	}
	p.Source, p.Tool = src, tool
	return p, nil
}

// String writes the pattern back as it is parsed.
func (p ToolPattern) String() string {
	s := p.Source
	if p.Tool != "" {
		s += "." + p.Tool
	}
	if len(p.Args) > 0 {
		parts := make([]string, len(p.Args))
		for i, a := range p.Args {
			parts[i] = a.Key + "=" + a.Glob
		}
		s += "(" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// MatchTool reports whether the pattern selects the source's tool,
// whatever the arguments.
func (p ToolPattern) MatchTool(source, tool string) bool {
	if p.Source != source {
		return false
	}
	if p.Tool == "" {
		return true
	}
	ok, _ := pathpkg.Match(p.Tool, tool)
	return ok
}

// Match reports whether the pattern selects a call of the source's tool
// with the given arguments (a JSON object).
func (p ToolPattern) Match(source, tool string, args json.RawMessage) bool {
	if !p.MatchTool(source, tool) {
		return false
	}
	if len(p.Args) == 0 {
		return true
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return false
	}
	for _, a := range p.Args {
		v, ok := lookup(obj, a.Key)
		if !ok {
			return false
		}
		s, isStr := v.(string)
		if !isStr {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if m, _ := pathpkg.Match(a.Glob, s); !m {
			return false
		}
	}
	return true
}

func lookup(obj map[string]any, key string) (any, bool) {
	var cur any = obj
	for _, k := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// ToolCall is a call a model asked for, as the strategy judges it.
type ToolCall struct {
	Source string // the [tools] source
	Tool   string // the tool's name in its source
	// Arguments is the call's JSON object.
	Arguments json.RawMessage
}

// DecideTool applies the constraints to a tool call:
//
//   - matched by never_execute → blocked (the model is told, a violation is counted)
//   - matched by must_confirm_before or prefer_confirm_for → confirm (a
//     tool call has no confidence, so prefer_confirm_for always asks)
//   - otherwise → execute
//
// An entry matches a call when it is "tool:" followed by a ToolPattern
// that matches it, or when it names the tool as an action would
// (NormalizeAction of the tool's name, or of SOURCE.TOOL): a never_execute
// entry "delete_file" blocks a tool called delete_file.
func (s *Strategy) DecideTool(c ToolCall) Decision {
	if s == nil {
		return Decision{Execute, "no strategy"}
	}
	k := s.Constraints
	for _, l := range []struct {
		key     string
		entries []string
		out     Outcome
	}{{keyNever, k.NeverExecute, Blocked}, {keyMustConfirm, k.MustConfirmBefore, Confirm}, {keyPrefer, k.PreferConfirmFor, Confirm}} {
		for _, e := range l.entries {
			if matchToolEntry(e, c) {
				return Decision{l.out, fmt.Sprintf("%s.%s(%s) matches %q in constraints.%s", c.Source, c.Tool, compactArgs(c.Arguments), e, l.key)}
			}
		}
	}
	return Decision{Execute, fmt.Sprintf("%s.%s is not constrained", c.Source, c.Tool)}
}

func matchToolEntry(entry string, c ToolCall) bool {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(entry), ToolPrefix); ok {
		p, err := ParseToolPattern(rest)
		return err == nil && p.Match(c.Source, c.Tool, c.Arguments)
	}
	n := NormalizeAction(entry)
	return n != "" && (n == NormalizeAction(c.Tool) || n == NormalizeAction(c.Source+"."+c.Tool))
}

// compactArgs is the arguments as one line of JSON with sorted keys, cut
// short for a reason text.
func compactArgs(args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return string(args)
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// toolEntryProblems checks the "tool:" entries of the constraint lists.
func toolEntryProblems(entries []string) map[int]string {
	out := map[int]string{}
	for i, e := range entries {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(e), ToolPrefix); ok {
			if _, err := ParseToolPattern(rest); err != nil {
				out[i] = err.Error()
			}
		}
	}
	return out
}

// sortedInts returns m's keys in order.
func sortedInts(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
