package script

import (
	"strings"
	"text/template"
	"text/template/parse"
)

// fastReply is a reply template made of text, plain fields of the input
// and the variables ({{ .input.topic }}, {{ .vars.s1 }}) and submatches
// ({{ index .match 1 }}) only, as most replies are. Rendering it is a few
// lookups, where text/template reflects on every value; when a value is
// not a string (a field that is missing or of another type, a submatch
// out of range) the reply renders through text/template, which decides
// what it prints or which error it is.
type fastReply struct {
	parts []fastPart
	size  int // the text's length
}

// fastPart is text; or a field's path under .input or .vars, when path is
// set; or the submatch at index, when match is set.
type fastPart struct {
	text  string
	path  []string
	match bool
	index int
}

// compileFast returns t's fast form, or nil if it has none.
func compileFast(t *template.Template) *fastReply {
	if t == nil || t.Tree == nil || t.Root == nil || len(t.Templates()) > 1 {
		return nil // {{define}}: other templates a {{template}} may call
	}
	f := &fastReply{}
	for _, n := range t.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			f.parts = append(f.parts, fastPart{text: string(n.Text)})
			f.size += len(n.Text)
		case *parse.ActionNode:
			p, ok := fastAction(n.Pipe)
			if !ok {
				return nil
			}
			f.parts = append(f.parts, p)
		default:
			return nil
		}
	}
	return f
}

// fastAction is the fast part of an action, if it is a plain field of
// .input or .vars or a submatch by a decimal index.
func fastAction(p *parse.PipeNode) (fastPart, bool) {
	if p == nil || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 {
		return fastPart{}, false
	}
	args := p.Cmds[0].Args
	switch {
	case len(args) == 1:
		field, ok := args[0].(*parse.FieldNode)
		if !ok || len(field.Ident) < 2 || field.Ident[0] != "input" && field.Ident[0] != "vars" {
			return fastPart{}, false
		}
		return fastPart{path: field.Ident}, true
	case len(args) == 3:
		// index is text/template's builtin: the provider adds no functions.
		fn, ok := args[0].(*parse.IdentifierNode)
		if !ok || fn.Ident != "index" {
			return fastPart{}, false
		}
		field, ok := args[1].(*parse.FieldNode)
		if !ok || len(field.Ident) != 1 || field.Ident[0] != "match" {
			return fastPart{}, false
		}
		// Decimal digits only: text/template reads 1.0 as a float and 010
		// as octal, which the slow path is left to.
		num, ok := args[2].(*parse.NumberNode)
		if !ok || !num.IsInt || !decimal(num.Text) || num.Int64 > 1<<20 {
			return fastPart{}, false
		}
		return fastPart{match: true, index: int(num.Int64)}, true
	}
	return fastPart{}, false
}

// decimal reports whether s is a decimal number without a leading zero.
func decimal(s string) bool {
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// render renders f over a request's variables (sdk.ChatRequest.Vars) and
// the rule's submatches, and false when a value is not a string reached
// through map[string]any values, or a submatch is out of range, or f is
// nil.
func (f *fastReply) render(vars map[string]any, m []string) (string, bool) {
	return f.renderIn(vars, m, nil)
}

// renderIn is render writing a short text into room, when given.
func (f *fastReply) renderIn(vars map[string]any, m []string, room *answerRoom) (string, bool) {
	if f == nil {
		return "", false
	}
	var vals [8]string
	if len(f.parts) > len(vals) {
		return "", false
	}
	size := f.size
	for i, p := range f.parts {
		switch {
		case p.match:
			if p.index >= len(m) {
				return "", false
			}
			vals[i] = m[p.index]
		case p.path != nil:
			s, ok := field(vars, p.path)
			if !ok {
				return "", false
			}
			vals[i] = s
		default:
			continue
		}
		size += len(vals[i])
	}
	if len(f.parts) == 1 && f.parts[0].path == nil && !f.parts[0].match {
		return f.parts[0].text, true // text only: nothing to build
	}
	if room != nil && size <= answerTextMax {
		b, start := room.room(size)
		f.write(b, vals[:])
		return room.done(start), true
	}
	var b strings.Builder
	b.Grow(size)
	f.write(&b, vals[:])
	return b.String(), true
}

// write writes the reply to b, vals[i] for a field's or submatch's part i.
func (f *fastReply) write(b *strings.Builder, vals []string) {
	for i, p := range f.parts {
		if p.path == nil && !p.match {
			b.WriteString(p.text)
		} else {
			b.WriteString(vals[i])
		}
	}
}

// field is the string at path in vars, if it is one.
func field(vars map[string]any, path []string) (string, bool) {
	var cur any = vars
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[k]; !ok {
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}
