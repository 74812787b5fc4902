package bpmn

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The namespaces the parser reads. Elements in any other namespace are
// extensions (bpmndi, vendor extensions) and are skipped unless named here.
const (
	nsBPMN    = "http://www.omg.org/spec/BPMN/20100524/MODEL"
	nsZeebe   = "http://camunda.org/schema/zeebe/1.0"
	nsCamunda = "http://camunda.org/schema/1.0/bpmn"
)

// maxDepth bounds element nesting so that a hostile document cannot exhaust
// the stack of the recursive interpretation that follows parsing.
const maxDepth = 200

// xelem is one XML element with the line its start tag begins on.
type xelem struct {
	space, local string
	attrs        []xml.Attr
	kids         []*xelem
	text         string
	line         int
}

// attr returns the value of the unqualified attribute name.
func (e *xelem) attr(name string) string {
	for _, a := range e.attrs {
		if a.Name.Local == name && a.Name.Space == "" {
			return a.Value
		}
	}
	return ""
}

// nsAttr returns the value of the attribute name in namespace space.
func (e *xelem) nsAttr(space, name string) string {
	for _, a := range e.attrs {
		if a.Name.Local == name && a.Name.Space == space {
			return a.Value
		}
	}
	return ""
}

// isBPMN reports whether e is the BPMN model element local.
func (e *xelem) isBPMN(local string) bool { return e.space == nsBPMN && e.local == local }

// kid returns the first child in the BPMN namespace named local.
func (e *xelem) kid(local string) *xelem {
	for _, k := range e.kids {
		if k.isBPMN(local) {
			return k
		}
	}
	return nil
}

var encodingRE = regexp.MustCompile(`^\s*<\?xml[^>]*\bencoding\s*=\s*["']([^"']*)["']`)

// parseXML reads a document into an element tree. Errors carry the line.
func parseXML(data []byte) (*xelem, int, error) {
	if m := encodingRE.FindSubmatch(data); m != nil {
		switch strings.ToLower(string(m[1])) {
		case "utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252":
		default:
			return nil, 1, fmt.Errorf("unsupported encoding %q (save the file as UTF-8)", m[1])
		}
	}
	data = toUTF8(data)
	lines := lineCounter{data: data, line: 1}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = func(charset string, r io.Reader) (io.Reader, error) {
		// toUTF8 has already converted single-byte encodings.
		switch strings.ToLower(charset) {
		case "utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252":
			return r, nil
		}
		return nil, fmt.Errorf("unsupported encoding %q (save the file as UTF-8)", charset)
	}
	var root *xelem
	var stack []*xelem
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return nil, se.Line, fmt.Errorf("%s", se.Msg)
			}
			return nil, lines.at(d.InputOffset()), err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			el := &xelem{space: t.Name.Space, local: t.Name.Local, attrs: t.Attr, line: lines.at(off)}
			if len(stack) >= maxDepth {
				return nil, el.line, fmt.Errorf("elements nested deeper than %d levels", maxDepth)
			}
			if len(stack) == 0 {
				if root != nil {
					return nil, el.line, fmt.Errorf("more than one root element")
				}
				root = el
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, el)
			}
			stack = append(stack, el)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				if len(p.text) < 1<<16 {
					p.text += string(t)
				}
			}
		}
	}
	if root == nil {
		return nil, 1, fmt.Errorf("no root element")
	}
	return root, 0, nil
}

// lineCounter maps increasing byte offsets to 1-based line numbers.
type lineCounter struct {
	data []byte
	off  int64
	line int
}

func (c *lineCounter) at(off int64) int {
	if off > int64(len(c.data)) {
		off = int64(len(c.data))
	}
	if off < c.off {
		// Offsets never go back in practice; recount to stay correct.
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.off = off
	// Point at the first non-space byte: the tag itself.
	line := c.line
	for i := off; i < int64(len(c.data)); i++ {
		switch c.data[i] {
		case '\n':
			line++
			continue
		case ' ', '\t', '\r':
			continue
		}
		break
	}
	return line
}

// toUTF8 converts a document declared as ISO-8859-1 or windows-1252 to
// UTF-8. Line breaks keep their positions, so line numbers stay valid.
func toUTF8(data []byte) []byte {
	end := bytes.Index(data, []byte("?>"))
	if !bytes.HasPrefix(bytes.TrimLeft(data, "\ufeff \t\r\n"), []byte("<?xml")) || end < 0 {
		return data
	}
	decl := strings.ToLower(string(data[:end]))
	if !strings.Contains(decl, "8859-1") && !strings.Contains(decl, "latin") && !strings.Contains(decl, "1252") {
		return data
	}
	if utf8.Valid(data) {
		return data
	}
	out := make([]byte, 0, len(data)+len(data)/8)
	for _, b := range data {
		out = utf8.AppendRune(out, rune(b))
	}
	return out
}
