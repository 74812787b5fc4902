package evolve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/plugins/script"
	"github.com/sextant-dev/sextant/sdk"
)

// Given in no particular order: Curate sorts them by task id.
var failures = []Failure{
	{Task: "t050", Input: `{"body":"Merci de confirmer la facture"}`, Output: `{"reply":"Thanks, confirmed."}`, Truth: `{"language":"fr"}`},
	{Task: "t004", Input: `{"body":"Bitte senden Sie die Rechnung"}`, Output: `{"reply":"Sure, sending it."}`, Truth: `{"language":"de"}`},
	{Task: "t017", Input: `{"body":"¿Puede enviar el contrato?"}`, Error: "step reply: timeout after 30s"},
}

// rules answers the reflector only when it was shown the failures, and
// the curator only when it was shown the reflector's insights; curator is
// the curator's reply.
func rules(curator string) string {
	return `
[[rule]]
step = "reflector"
match = '(?s)task t004.*task t017.*task t050'
reply = "Clients who wrote in French, German or Spanish were answered in English."

[[rule]]
step = "curator"
match = 'answered in English'
reply = '''` + curator + `'''
`
}

func curateWith(t *testing.T, curator string, opts CurateOptions, fs []Failure) Mutator {
	t.Helper()
	if opts.At.IsZero() {
		opts.At = tEvolve
	}
	opts.Config = map[string]any{script.ConfigRules: rules(curator)}
	m, err := Curate(script.New(), fs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ops(s *strategy.Strategy) []string {
	var out []string
	for _, d := range s.ChangeLog[len(s.ChangeLog)-1].Playbook {
		out = append(out, d.String()+": "+d.Reason)
	}
	return out
}

func TestCurate(t *testing.T) {
	const from = "(from 3 failed replays: t004, t017, t050)"
	tests := []struct {
		name     string
		reply    string
		playbook []string // bullets of the candidate
		want     []string // its change_log playbook operations
	}{
		{
			name: "add, tag and update",
			reply: `{"operations":[
  {"op":"ADD","section":"tone","content":"Reply in the language the client wrote in","reason":"3 clients answered in English"},
  {"op":"TAG","id":"reasoning-00001","tag":"neutral"},
  {"op":"UPDATE","id":"reasoning-00001","content":"Treat invoices from unknown senders as financial actions, in any language"}
]}`,
			playbook: []string{
				"[reasoning-00001] Treat invoices from unknown senders as financial actions, in any language (+5 -0)",
				"[tone-00001] Reply in the language the client wrote in (+0 -0)",
			},
			want: []string{
				`ADD tone-00001 [tone] "Reply in the language the client wrote in": 3 clients answered in English ` + from,
				"TAG reasoning-00001 neutral +1: from 3 failed replays: t004, t017, t050",
				`UPDATE reasoning-00001 "Treat invoices from unknown senders as financial actions, in any language": from 3 failed replays: t004, t017, t050`,
			},
		},
		{
			name:     "remove, in a code fence",
			reply:    "```json\n{\"operations\":[{\"op\":\"REMOVE\",\"id\":\"reasoning-00001\",\"reason\":\"misled 2 replies\"}]}\n```",
			playbook: nil,
			want:     []string{"REMOVE reasoning-00001: misled 2 replies " + from},
		},
		{
			name:  "duplicate adds are dropped",
			reply: `{"operations":[{"op":"ADD","section":"reasoning","content":"treat invoices from unknown senders as FINANCIAL actions!"},{"op":"ADD","section":"tone","content":"Mirror the client's language"}]}`,
			playbook: []string{
				"[reasoning-00001] Treat invoices from unknown senders as financial actions (+5 -0)",
				"[tone-00001] Mirror the client's language (+0 -0)",
			},
			want: []string{`ADD tone-00001 [tone] "Mirror the client's language": from 3 failed replays: t004, t017, t050`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := baseline()
			got, err := curateWith(t, tt.reply, CurateOptions{}, failures).Propose(context.Background(), base, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d candidates, want 1", len(got))
			}
			c := got[0]
			var pb []string
			for _, b := range c.Playbook {
				pb = append(pb, b.String())
			}
			if !slices.Equal(pb, tt.playbook) {
				t.Errorf("playbook:\n got %q\nwant %q", pb, tt.playbook)
			}
			if g := ops(c); !slices.Equal(g, tt.want) {
				t.Errorf("change log:\n got %q\nwant %q", g, tt.want)
			}
			md := c.Metadata
			if md.Version != "2.1.0" || md.ParentVersion != "2.0.0" || md.CreatedBy != "sextant evolve (curate)" || !md.CreatedAt.Equal(tEvolve) {
				t.Errorf("metadata = %+v", md)
			}
			if !maps.Equal(c.Parameters, base.Parameters) {
				t.Errorf("parameters changed: %v", c.Parameters)
			}
		})
	}
}

func TestCurateNoCandidate(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		fs    []Failure
	}{
		{"no operations", `{"operations":[]}`, failures},
		{"only duplicates", `{"operations":[{"op":"ADD","section":"x","content":"Treat invoices from unknown senders as financial actions."}]}`, failures},
		// The rules would fail the reflector call: no call is made.
		{"no failures", `not json`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := curateWith(t, tt.reply, CurateOptions{}, tt.fs).Propose(context.Background(), baseline(), nil)
			if !errors.Is(err, ErrNothingProposed) || len(got) != 0 {
				t.Fatalf("%d candidates, %v; want none and why", len(got), err)
			}
		})
	}
}

func TestCurateRejects(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string
	}{
		{"not JSON", `Sure! Here are the operations: ADD a bullet`,
			`curate: curator reply rejected: not a JSON object of operations: invalid character 'S' looking for beginning of value (reply "Sure! Here are the operations: ADD a bullet")`},
		{"truncated", `{"operations":[{"op":"ADD"`,
			`curate: curator reply rejected: not a JSON object of operations: unexpected EOF (reply "{\"operations\":[{\"op\":\"ADD\"")`},
		{"a list, not an object", `[{"op":"ADD","section":"tone","content":"x"}]`,
			`curate: curator reply rejected: not a JSON object of operations: cannot unmarshal array into Go value of type evolve.curatorReply (reply "[{\"op\":\"ADD\",\"section\":\"tone\",\"content\":\"x\"}]")`},
		{"no operations", `{"ops":[]}`,
			`curate: curator reply rejected: not a JSON object of operations: unknown field "ops" (reply "{\"ops\":[]}")`},
		{"operations null", `{"operations":null}`,
			`curate: curator reply rejected: no "operations" array (reply "{\"operations\":null}")`},
		{"unknown field in an operation", `{"operations":[{"op":"ADD","section":"tone","content":"x","priority":1}]}`,
			`curate: curator reply rejected: not a JSON object of operations: unknown field "priority" (reply "{\"operations\":[{\"op\":\"ADD\",\"section\":\"tone\",\"content\":\"x\",\"priority\":1}]}")`},
		{"trailing data", `{"operations":[]} {"operations":[]}`,
			`curate: curator reply rejected: trailing data after the JSON object (reply "{\"operations\":[]} {\"operations\":[]}")`},
		{"unknown op", `{"operations":[{"op":"APPEND","id":"reasoning-00001","content":"x"}]}`,
			`curate: curator reply rejected: operations[0]: unknown op "APPEND" (want ADD, UPDATE, TAG or REMOVE)`},
		{"lower-case op", `{"operations":[{"op":"add","section":"tone","content":"x"}]}`,
			`curate: curator reply rejected: operations[0]: unknown op "add" (want ADD, UPDATE, TAG or REMOVE)`},
		{"update of an unknown id", `{"operations":[{"op":"UPDATE","id":"reasoning-00002","content":"x"}]}`,
			`curate: curator reply rejected: operations[0]: UPDATE reasoning-00002: unknown id (did you mean "reasoning-00001"?)`},
		{"remove of an unknown id", `{"operations":[{"op":"REMOVE","id":"tone-00009"}]}`,
			`curate: curator reply rejected: operations[0]: REMOVE tone-00009: unknown id`},
		{"tag of an unknown id", `{"operations":[{"op":"TAG","id":"x","tag":"helpful"}]}`,
			`curate: curator reply rejected: operations[0]: TAG x: unknown id`},
		{"add without content", `{"operations":[{"op":"ADD","section":"tone","content":"  "}]}`,
			`curate: curator reply rejected: operations[0]: ADD needs content`},
		{"unknown tag", `{"operations":[{"op":"TAG","id":"reasoning-00001","tag":"useful"}]}`,
			`curate: curator reply rejected: operations[0]: TAG reasoning-00001: unknown tag "useful" (want helpful, harmful or neutral)`},
		{"every problem at once, the good operations not applied", `{"operations":[
  {"op":"ADD","section":"tone","content":"Reply in the client's language"},
  {"op":"REMOVE","id":"reasoning-00001"},
  {"op":"UPDATE","id":"reasoning-00001","content":"x"},
  {"op":"ADD","section":"bad section","content":"y"}
]}`,
			`curate: curator reply rejected: operations[2]: UPDATE reasoning-00001: unknown id; operations[3]: ADD: invalid section "bad section" (want letters, digits, '_' and '-')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := curateWith(t, tt.reply, CurateOptions{}, failures).Propose(context.Background(), baseline(), nil)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err =\n %v\nwant\n %s", err, tt.want)
			}
			if got != nil {
				t.Errorf("%d candidates with a rejection", len(got))
			}
			var rej *RejectedError
			if !errors.Is(err, ErrRejected) || !errors.As(err, &rej) || rej.Reply != tt.reply {
				t.Errorf("not a *RejectedError with the reply: %#v", err)
			}
		})
	}
}

func TestCurateBudget(t *testing.T) {
	base := baseline()
	base.Evolution.MaxPlaybookTokens = 30 // the playbook is 21 tokens
	long := strings.Repeat("Always check the sender's domain against the client list. ", 2)
	m := curateWith(t, `{"operations":[{"op":"ADD","section":"reasoning","content":"`+long+`"}]}`, CurateOptions{}, failures)
	_, err := m.Propose(context.Background(), base, nil)
	const want = "curate: curator reply rejected: the playbook would be 57 tokens, over evolution.max_playbook_tokens 30 (it is 21 now)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrRejected) {
		t.Fatalf("err =\n %v\nwant\n %s", err, want)
	}

	// Within the budget, the same reply is a candidate.
	base.Evolution.MaxPlaybookTokens = 57
	got, err := m.Propose(context.Background(), base, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("%d candidates, %v", len(got), err)
	}
	if tokens, over := got[0].OverBudget(); over || tokens != 57 {
		t.Errorf("tokens %d, over %v", tokens, over)
	}
}

// recorder is a provider that records its requests and answers from a
// script provider.
type recorder struct {
	*script.Provider
	reqs []sdk.ChatRequest
}

func (r *recorder) Chat(ctx context.Context, req *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	r.reqs = append(r.reqs, *req)
	return r.Provider.Chat(ctx, req)
}

func TestCurateRequests(t *testing.T) {
	rec := &recorder{Provider: script.New()}
	temp := 0.3
	m, err := Curate(rec, failures, CurateOptions{
		At: tEvolve, Model: "claude-x", Temperature: &temp, MaxFailures: 2,
		Config:          map[string]any{script.ConfigRules: `[default]` + "\n" + `reply = '{"operations":[]}'`},
		ReflectorPrompt: `{{.Name}} {{.Version}}:{{range .Failures}} {{.Task}}={{clip 5 .Input}}{{end}}`,
		CuratorPrompt:   `{{len .Playbook}} bullets, {{.Tokens}}/{{.Budget}} tokens; insights: {{.Insights}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Propose(context.Background(), baseline(), nil); !errors.Is(err, ErrNothingProposed) {
		t.Fatal(err)
	}
	want := []string{
		`reflector json=false model=claude-x temp=0.3: email-handler 2.0.0: t004={"bod… t017={"bod…`,
		`curator json=true model=claude-x temp=0.3: 1 bullets, 21/0 tokens; insights: {"operations":[]}`,
	}
	var got []string
	for _, r := range rec.reqs {
		if len(r.Messages) != 1 || r.Messages[0].Role != "user" {
			t.Fatalf("messages %+v", r.Messages)
		}
		got = append(got, fmt.Sprintf("%s json=%v model=%s temp=%v: %s", r.Step, r.JSON, r.Model, *r.Temperature, r.Messages[0].Content))
	}
	if !slices.Equal(got, want) {
		t.Errorf("requests:\n got %q\nwant %q", got, want)
	}
}

func TestCurateErrors(t *testing.T) {
	t.Run("options", func(t *testing.T) {
		tests := []struct {
			name string
			p    sdk.Provider
			fs   []Failure
			opts CurateOptions
			want string
		}{
			{"no provider", nil, nil, CurateOptions{At: tEvolve}, "curate: no provider"},
			{"no time", script.New(), nil, CurateOptions{}, "curate: options: missing time (At)"},
			{"negative cap", script.New(), nil, CurateOptions{At: tEvolve, MaxFailures: -1}, "curate: options: max failures -1 is negative"},
			{"failure without a task", script.New(), []Failure{{Task: "t1"}, {Output: "x"}}, CurateOptions{At: tEvolve}, "curate: failure 1 has no task id"},
			{"bad reflector template", script.New(), nil, CurateOptions{At: tEvolve, ReflectorPrompt: "{{.Failures"},
				`curate: reflector prompt: template: reflector:1: unclosed action`},
			{"bad curator template", script.New(), nil, CurateOptions{At: tEvolve, CuratorPrompt: "{{nope}}"},
				`curate: curator prompt: template: curator:1: function "nope" not defined`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				m, err := Curate(tt.p, tt.fs, tt.opts)
				if err == nil || err.Error() != tt.want {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				if m != nil {
					t.Error("a mutator with an error")
				}
			})
		}
	})
	t.Run("calls", func(t *testing.T) {
		tests := []struct {
			name  string
			rules string
			opts  CurateOptions
			want  string
		}{
			{"reflector unanswered", `[[rule]]` + "\nstep = \"curator\"\nreply = \"{}\"\n", CurateOptions{},
				`curate: reflector: script provider: no rule in rules matches step "reflector" (prompt "You are reviewing failed runs of an AI agent that follows th…")`},
			{"curator unanswered", `[[rule]]` + "\nstep = \"reflector\"\nreply = \"insight\"\n", CurateOptions{},
				`curate: curator: script provider: no rule in rules matches step "curator" (prompt "You maintain the playbook of the AI agent strategy \"email-ha…")`},
			{"empty insights", "[default]\nreply = \"  \"\n", CurateOptions{}, "curate: reflector: empty reply"},
			{"template fails", "[default]\nreply = \"x\"\n", CurateOptions{ReflectorPrompt: "{{.Nope}}"},
				`curate: reflector prompt: template: reflector:1:2: executing "reflector" at <.Nope>: can't evaluate field Nope in type evolve.PromptData`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				opts := tt.opts
				opts.At = tEvolve
				opts.Config = map[string]any{script.ConfigRules: tt.rules}
				m, err := Curate(script.New(), failures, opts)
				if err != nil {
					t.Fatal(err)
				}
				_, err = m.Propose(context.Background(), baseline(), nil)
				if err == nil || err.Error() != tt.want {
					t.Fatalf("err =\n %v\nwant\n %s", err, tt.want)
				}
			})
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		slow := "[default]\nreply = \"x\"\ndelay = \"1h\"\n"
		m, _ := Curate(script.New(), failures, CurateOptions{At: tEvolve, Config: map[string]any{script.ConfigRules: slow}})
		_, err := m.Propose(ctx, baseline(), nil)
		if !errors.Is(err, sdk.ErrTimeout) {
			t.Errorf("err = %v", err)
		}
	})
}

// The same failures and provider answers give the same candidate, byte
// for byte, whatever order the failures came in.
func TestCurateDeterministic(t *testing.T) {
	reply := `{"operations":[{"op":"ADD","section":"tone","content":"Reply in the language the client wrote in"},{"op":"TAG","id":"reasoning-00001","tag":"harmful"}]}`
	run := func(fs []Failure) []byte {
		got, err := curateWith(t, reply, CurateOptions{}, fs).Propose(context.Background(), baseline(), nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("%d candidates, %v", len(got), err)
		}
		return got[0].Encode()
	}
	reversed := slices.Clone(failures)
	slices.Reverse(reversed)
	if a, b := run(failures), run(reversed); !bytes.Equal(a, b) {
		t.Errorf("candidates differ:\n%s\n---\n%s", a, b)
	}
}
