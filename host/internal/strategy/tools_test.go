package strategy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseToolPattern(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "files", want: "files"},
		{in: "files.read_*", want: "files.read_*"},
		{in: "billing.refund(amount=1??, to.country=US)", want: "billing.refund(amount=1??, to.country=US)"},
		{in: "", err: `tool pattern "": no source (want SOURCE, SOURCE.TOOL or SOURCE.GLOB)`},
		{in: "*.read", err: `tool pattern "*.read": source "*" must be a [tools] name, not a pattern`},
		{in: "files.", err: `tool pattern "files.": no tool after the dot`},
		{in: "files.read_[", err: `tool pattern "files.read_[": bad glob "read_["`},
		{in: "files.write(path)", err: `tool pattern "files.write(path)": argument pattern "path" is not KEY=GLOB`},
		{in: "files.write(path=x", err: `tool pattern "files.write(path=x": argument patterns must end with )`},
	} {
		p, err := ParseToolPattern(c.in)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("ParseToolPattern(%q) err = %v, want %s", c.in, err, c.err)
		case c.err == "" && (err != nil || p.String() != c.want):
			t.Errorf("ParseToolPattern(%q) = %s, %v", c.in, p, err)
		}
	}
}

func TestDecideTool(t *testing.T) {
	s := &Strategy{Constraints: Constraints{
		NeverExecute:      []string{"tool:files.write_*(path=/etc/*)", "Delete-File"},
		MustConfirmBefore: []string{"tool:billing.refund(amount=[5-9]??)"},
		PreferConfirmFor:  []string{"tool:billing"},
	}}
	call := func(src, tool, args string) ToolCall {
		return ToolCall{Source: src, Tool: tool, Arguments: json.RawMessage(args)}
	}
	for _, c := range []struct {
		name   string
		call   ToolCall
		want   Outcome
		reason string
	}{
		{"argument glob blocks", call("files", "write_file", `{"path": "/etc/passwd", "content": "x"}`), Blocked,
			`files.write_file({"content":"x","path":"/etc/passwd"}) matches "tool:files.write_*(path=/etc/*)" in constraints.never_execute`},
		{"other path executes", call("files", "write_file", `{"path": "/tmp/x"}`), Execute, "files.write_file is not constrained"},
		{"action name blocks a tool", call("files", "delete_file", `{}`), Blocked, `files.delete_file({}) matches "Delete-File" in constraints.never_execute`},
		{"number argument as JSON text", call("billing", "refund", `{"amount": 700}`), Confirm, `billing.refund({"amount":700}) matches "tool:billing.refund(amount=[5-9]??)" in constraints.must_confirm_before`},
		{"whole source", call("billing", "refund", `{"amount": 70}`), Confirm, `billing.refund({"amount":70}) matches "tool:billing" in constraints.prefer_confirm_for`},
		{"missing argument never matches", call("files", "write_file", `{}`), Execute, "files.write_file is not constrained"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := s.DecideTool(c.call)
			if d.Outcome != c.want || d.Reason != c.reason {
				t.Errorf("DecideTool = %s %q, want %s %q", d.Outcome, d.Reason, c.want, c.reason)
			}
		})
	}
}

func TestValidateToolEntries(t *testing.T) {
	doc := strings.Replace(string(bigStrategy(0)), `never_execute = ["forward_to_external_addresses"]`, `never_execute = ["tool:files.("]`, 1)
	_, err := Parse("s.toml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), `s.toml:10: constraints.never_execute.0: tool pattern "files.(": argument patterns must end with )`) {
		t.Fatalf("err = %v", err)
	}
}
