package run

import (
	"cmp"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/sdk"
)

// fastTemplate is a parsed template made of text and plain field
// references ({{ .input.topic }}, {{ .vars.s1 }}) only, as most prompts
// are. Rendering it with string fields is a few map lookups, where
// text/template reflects on every field; anything else (a field that is
// not a string or is missing, a map of another type on the way) renders
// through text/template, which decides what it prints.
type fastTemplate struct {
	parts []fastPart
	size  int // the text's length
}

// fastPart is text, or a field's path when path is not nil.
type fastPart struct {
	text string
	path []string
}

// compileFast returns t's fast form, or nil if t is not only text and
// plain fields.
func compileFast(t *template.Template) *fastTemplate {
	if t.Tree == nil || t.Root == nil || len(t.Templates()) > 1 {
		return nil // {{define}}: other templates a {{template}} may call
	}
	f := &fastTemplate{}
	for _, n := range t.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			f.parts = append(f.parts, fastPart{text: string(n.Text)})
			f.size += len(n.Text)
		case *parse.ActionNode:
			p := n.Pipe
			if p == nil || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
				return nil
			}
			field, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(field.Ident) == 0 {
				return nil
			}
			f.parts = append(f.parts, fastPart{path: field.Ident})
		default:
			return nil
		}
	}
	return f
}

// render renders f over the data e.data(t, env) would make, and false
// when a field is not a string reached through map[string]any values.
func (f *fastTemplate) render(e *exec, t sdk.Token, env sdk.Env) (string, bool) {
	var vals [8]string
	if len(f.parts) > len(vals) {
		return "", false
	}
	size := f.size
	for i, p := range f.parts {
		if p.path == nil {
			continue
		}
		s, ok := e.field(t, env, p.path)
		if !ok {
			return "", false
		}
		vals[i] = s
		size += len(s)
	}
	if size > textArenaSize/8 {
		var b strings.Builder
		b.Grow(size)
		f.write(&b, vals[:])
		return b.String(), true
	}
	// A short text is carved from the run's arena: a run's prompts
	// share an allocation.
	a, start := e.text.room(size)
	f.write(a, vals[:])
	return e.text.done(start), true
}

// textArena holds short texts a run makes (prompts fastTemplate.render
// renders, recording keys, span ids, trace entries), in pieces of
// textArenaSize: a piece is only ever appended to, and a full one is left
// to the strings that hold its texts (a Builder never changes the bytes
// it has written, so a text stays as it was). A run's texts so take one
// allocation, not one each. Steps write at once, hence mu.
type textArena struct {
	mu sync.Mutex
	b  strings.Builder
	// piece is the size of its pieces, when not textArenaSize: a run's
	// is sized to its routine (Runner.textPiece).
	piece int
}

// room locks a and makes room for n bytes (a few hundred at most): the
// caller writes them to the builder returned, then calls done with start.
func (a *textArena) room(n int) (b *strings.Builder, start int) {
	a.mu.Lock()
	if a.b.Cap()-a.b.Len() < n {
		a.b.Reset() // what was written stays in the strings that hold it
		a.b.Grow(max(cmp.Or(a.piece, textArenaSize), n))
	}
	return &a.b, a.b.Len()
}

// done is the text written since room returned start; it unlocks a.
func (a *textArena) done(start int) string {
	s := a.b.String()[start:]
	a.mu.Unlock()
	return s
}

// textArenaSize is the size of a text arena's pieces, unless it says
// otherwise.
const textArenaSize = 2048

// textPiece is the size of the pieces of a run's text arena for a
// routine of steps: its first block of span ids, and for each LLM step
// its prompt, recording keys and trace entry.
func textPiece(steps map[string]pipeline.Step) int {
	n := 16 * spanIDsPerBlock
	for _, s := range steps {
		if s.Kind == "llm" {
			n += 256
		}
	}
	return min(n, 4096)
}

// write writes the template's text to b, vals[i] for part i's field.
func (f *fastTemplate) write(b *strings.Builder, vals []string) {
	for i, p := range f.parts {
		if p.path == nil {
			b.WriteString(p.text)
		} else {
			b.WriteString(vals[i])
		}
	}
}

// field is the string at path in e.data(t, env), if it is one.
func (e *exec) field(t sdk.Token, env sdk.Env, path []string) (string, bool) {
	var cur any
	switch path[0] {
	case "input":
		cur = env.Input
	case "vars":
		cur = env.Vars
	case "strategy":
		cur = env.Strategy
	case "token":
		cur = t.Attrs
	case "task":
		cur = e.task.ID
	default:
		return "", false
	}
	for _, k := range path[1:] {
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
