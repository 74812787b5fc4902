package dmn

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Limits on the XML a model is read from. encoding/xml never expands
// external or user-defined entities; a document type declaration is
// refused outright, so neither XXE nor entity expansion can happen.
const (
	// MaxSize bounds the size of a model file in bytes.
	MaxSize = 16 << 20
	// MaxElementDepth bounds the nesting of XML elements.
	MaxElementDepth = 128
	// maxElements bounds the number of elements of one file.
	maxElements = 1 << 20
)

// elem is one XML element of a model: its local name, attributes by local
// name, children, character data and the line it starts on.
type elem struct {
	space, name string
	attrs       []xml.Attr
	kids        []*elem
	text        string
	line        int
}

func (e *elem) attr(name string) string {
	for _, a := range e.attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// child returns the first child with the local name.
func (e *elem) child(name string) *elem {
	for _, k := range e.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

func (e *elem) children(name string) []*elem {
	var out []*elem
	for _, k := range e.kids {
		if k.name == name {
			out = append(out, k)
		}
	}
	return out
}

// textOf returns the character data of the named child (the <text> of a
// literal expression or unary tests), and whether the child exists.
func (e *elem) textOf(name string) (string, bool) {
	c := e.child(name)
	if c == nil {
		return "", false
	}
	return c.text, true
}

// readXML reads a document into an element tree, within the limits.
func readXML(file string, data []byte) (*elem, error) {
	if len(data) > MaxSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("model is larger than %d bytes", MaxSize)}
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var root *elem
	var stack []*elem
	var text strings.Builder
	count := 0
	for {
		line, _ := d.InputPos()
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return nil, &Error{File: file, Line: se.Line, Msg: "not well-formed XML: " + se.Msg}
			}
			return nil, &Error{File: file, Line: line, Msg: "not well-formed XML: " + err.Error()}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			count++
			if count > maxElements {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("more than %d elements", maxElements)}
			}
			if len(stack) >= MaxElementDepth {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("elements nested deeper than %d", MaxElementDepth)}
			}
			if len(stack) > 0 {
				stack[len(stack)-1].text += text.String()
			}
			text.Reset()
			el := &elem{space: t.Name.Space, name: t.Name.Local, attrs: t.Attr, line: line}
			if len(stack) == 0 {
				if root != nil {
					return nil, &Error{File: file, Line: line, Msg: "more than one root element"}
				}
				root = el
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, el)
			}
			stack = append(stack, el)
		case xml.EndElement:
			el := stack[len(stack)-1]
			el.text += text.String()
			text.Reset()
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				if text.Len()+len(t) > MaxSize {
					return nil, &Error{File: file, Line: line, Msg: "text too large"}
				}
				text.Write(t)
			}
		case xml.Directive:
			return nil, &Error{File: file, Line: line, Msg: "document type declarations are not allowed"}
		}
	}
	if root == nil {
		return nil, &Error{File: file, Line: 1, Msg: "no root element"}
	}
	return root, nil
}
