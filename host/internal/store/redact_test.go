package store

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestRedactBuiltins(t *testing.T) {
	r := DefaultRedactor()
	tests := []struct{ name, in, want string }{
		{"json auth header", `{"Authorization":"Bearer abc.def"}`, `{"Authorization":"[REDACTED]"}`},
		{"json api key", `{"headers":{"x-api-key": "k-123"}}`, `{"headers":{"x-api-key": "[REDACTED]"}}`},
		{"json api_key field", `{"api_key":"hunter2","model":"m"}`, `{"api_key":"[REDACTED]","model":"m"}`},
		{"json password", `{"Password":"p"}`, `{"Password":"[REDACTED]"}`},
		{"nested json string", `{"body":"{\"authorization\":\"Basic dXNlcjpwYXNz\"}"}`, `{"body":"{\"authorization\":\"[REDACTED]\"}"}`},
		{"header line", `curl -H "Authorization: Basic dXNlcjpwYXNz" x`, `curl -H "Authorization: [REDACTED]" x`},
		{"x-api-key line", "x-api-key: abc123\nnext", "x-api-key: [REDACTED]\nnext"},
		{"bearer in text", `token was Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig here`, `token was Bearer [REDACTED] here`},
		{"openai key", `key sk-proj-AbCdEf0123456789xyz end`, `key [REDACTED] end`},
		{"anthropic key", `"sk-ant-api03-AbCdEf0123456789_xyz"`, `"[REDACTED]"`},
		{"query param", `GET /v1?api_key=abc123&x=1`, `GET /v1?api_key=[REDACTED]&x=1`},
		{"aws key", `AKIAIOSFODNN7EXAMPLE`, `[REDACTED]`},
		{"github token", `ghp_abcdefghijklmnopqrstuvwxyz0123456789`, `[REDACTED]`},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\\nMIIE\\n-----END RSA PRIVATE KEY-----", `[REDACTED]`},
		{"task-like id is not a key", `task-0123456789abcdefghij`, `task-0123456789abcdefghij`},
		{"max_tokens stays", `{"max_tokens":100,"input_tokens":3}`, `{"max_tokens":100,"input_tokens":3}`},
		{"token count prose stays", `we used 12 tokens; the bearer bonds`, `we used 12 tokens; the bearer bonds`},

		// Secrets by name: key=value, YAML, TOML, JSON, URL and header forms.
		{"k=v in a JSON string", `{"body":"login with password=hunter2hunter2 today"}`, `{"body":"login with password=[REDACTED] today"}`},
		{"aws secret k=v", `aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`, `aws_secret_access_key=[REDACTED]`},
		{"k=v before an escaped newline", `{"b":"passwd=s3cr3t\nnext line"}`, `{"b":"passwd=[REDACTED]\nnext line"}`},
		{"yaml", "db:\n  password: hunter2\n  user: bob", "db:\n  password: [REDACTED]\n  user: bob"},
		{"toml in a JSON string", `{"cfg":"client_secret = \"abc123def\"\nname = \"x\""}`, `{"cfg":"client_secret = \"[REDACTED]\"\nname = \"x\""}`},
		{"toml", `api_key = 'abc123'`, `api_key = '[REDACTED]'`},
		{"url query", `GET https://h/x?user=bob&access_token=abc.def&page=2`, `GET https://h/x?user=bob&access_token=[REDACTED]&page=2`},
		{"url query token", `https://h/cb?token=abcdef123`, `https://h/cb?token=[REDACTED]`},
		{"auth token header", `X-Auth-Token: Bearer abcdef0123`, `X-Auth-Token: Bearer [REDACTED]`},
		{"pwd", `mysql -u root pwd=toor`, `mysql -u root pwd=[REDACTED]`},
		{"json field by name", `{"db_password":"hunter2","user":"bob"}`, `{"db_password":"[REDACTED]","user":"bob"}`},
		{"json camelCase", `{"clientSecret": "abc", "accessToken":"t0k"}`, `{"clientSecret": "[REDACTED]", "accessToken":"[REDACTED]"}`},
		{"json nested", `{"a":{"b":[{"private_key":"-k-"}]}}`, `{"a":{"b":[{"private_key":"[REDACTED]"}]}}`},
		{"json number", `{"pin_password":1234,"n":1}`, `{"pin_password":"[REDACTED]","n":1}`},
		{"escaped json field", `{"body":"{\"credentials\":\"u:p\"}"}`, `{"body":"{\"credentials\":\"[REDACTED]\"}"}`},
		{"escaped json number", `{"body":"{\"password\":42}"}`, `{"body":"{\"password\":\"[REDACTED]\"}"}`},

		// Not secrets: names that only contain a secret word, prose, usage.
		{"tokens usage field", `tokens: 194`, `tokens: 194`},
		{"usage json", `{"usage":{"input_tokens":3,"output_tokens":5,"total_tokens":8}}`, `{"usage":{"input_tokens":3,"output_tokens":5,"total_tokens":8}}`},
		{"max_tokens k=v", `max_tokens=100 token_count=5`, `max_tokens=100 token_count=5`},
		{"token prose", `the token was used; a secret of success; password reset`, `the token was used; a secret of success; password reset`},
		{"author", `{"author":"Jane","auth_method":"oauth","passwordless":true}`, `{"author":"Jane","auth_method":"oauth","passwordless":true}`},
		{"secretary", `secretary: Bob`, `secretary: Bob`},
		{"key alone", `{"key":"v","monkey":"m"} key=value`, `{"key":"v","monkey":"m"} key=value`},
		{"object value kept", `{"auth":{"user":"bob"}}`, `{"auth":{"user":"bob"}}`},
		{"already redacted", `password=[REDACTED]`, `password=[REDACTED]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.RedactString(tt.in)
			if got != tt.want {
				t.Fatalf("\n got: %s\nwant: %s", got, tt.want)
			}
			if again := r.RedactString(got); again != got {
				t.Fatalf("not idempotent:\n once: %s\ntwice: %s", got, again)
			}
			if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
				t.Fatalf("valid JSON made invalid: %s", got)
			}
		})
	}
}

func TestRedactUserPatterns(t *testing.T) {
	r, err := NewRedactor(`acct-[0-9]{6}`, `(?i)pin=(?P<secret>\d+)`)
	must(t, err)
	if got := r.RedactString(`acct-123456 PIN=9876 sk-abcdefghijklmnop1234`); got != `[REDACTED] PIN=[REDACTED] [REDACTED]` {
		t.Fatalf("got %s", got)
	}
	if got := r.Patterns(); len(got) != 2 {
		t.Fatalf("patterns %v", got)
	}
	tests := []struct {
		pattern, want string
	}{
		{`(`, "redaction pattern \"(\": error parsing regexp: missing closing ): `(`"},
		{`x*`, `redaction pattern "x*" matches the empty string`},
	}
	for _, tt := range tests {
		_, err := NewRedactor(tt.pattern)
		wantErr(t, err, tt.want)
	}

	// A pattern that breaks the stored JSON is an error, not a corrupt record.
	r, err = NewRedactor(`"pipeline":"[a-z]+"`)
	must(t, err)
	s := openTest(t, testConfig().WithRedactor(r))
	err = s.CreateTask(context.Background(), &Task{ID: "t1", Pipeline: "p"})
	wantErr(t, err, `create task "t1": redaction pattern "\"pipeline\":\"[a-z]+\"" turned a stored value into invalid JSON; make it match inside strings only`)
}

// TestRedactMatchesIdentically: a request holding a secret and the same
// request with the secret redacted get the same key, so replay finds the
// recording whatever key the live run used.
func TestRedactMatchesIdentically(t *testing.T) {
	req := &sdk.ChatRequest{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "use key sk-live0123456789abcdefgh please"}}}
	h1, canon, err := ChatKey(nil, req)
	must(t, err)
	req2 := *req
	req2.Messages = []sdk.Message{{Role: "user", Content: "use key sk-other0123456789abcdefgh please"}}
	req2.Config = map[string]any{"base_url": "http://x", "api_key_env": "OPENAI_API_KEY"}
	h2, _, err := ChatKey(DefaultRedactor(), &req2)
	must(t, err)
	if h1 != h2 {
		t.Fatal("redacted requests hash differently")
	}
	if bytes.Contains(canon, []byte("sk-live")) {
		t.Fatalf("canonical request keeps the key: %s", canon)
	}
	req3 := *req
	req3.Model = "other"
	if h3, _, _ := ChatKey(nil, &req3); h3 == h1 {
		t.Fatal("different requests hash the same")
	}
}

// TestSecretsNeverOnDisk plants secrets in every kind of record and
// greps every file Badger wrote.
func TestSecretsNeverOnDisk(t *testing.T) {
	const (
		apiKey = "sk-proj-PLANTEDsecret0123456789"
		bearer = "PLANTEDbearerTOKEN0123456789"
		header = "PLANTEDheaderVALUE"
		custom = "acct-424242"
		// A key the host holds, in a form no pattern knows.
		held = "held-KEY-0x5eed-26"
	)
	if !RegisterSecret(held) {
		t.Fatal("not registered")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	red, err := NewRedactor(`acct-\d{6}`)
	must(t, err)
	s, err := Open(ctx, dir, testConfig().WithRedactor(red))
	must(t, err)

	must(t, s.CreateTask(ctx, &Task{ID: "t1", Pipeline: "p",
		Input: json.RawMessage(`{"body":"my key is ` + apiKey + `","account":"` + custom + `"}`),
		Truth: json.RawMessage(`{"headers":{"X-Api-Key":"` + header + `"}}`)}))
	e := &Execution{Task: "t1", ID: "e1", Error: "401 with Authorization: Bearer " + bearer}
	must(t, s.CreateExecution(ctx, e))
	must(t, s.AppendSpans(ctx, []Span{{Task: "t1", Execution: "e1", Name: "call " + apiKey, Start: t0,
		Attributes: Attributes{"http.request.header.authorization": String("Bearer " + bearer), "api_key": String(header)},
		Status:     SpanStatus{Code: CodeError, Message: "x-api-key: " + header}}}))
	must(t, s.AddReward(ctx, &Reward{Task: "t1", Value: 1, Note: "leaked " + apiKey + " and " + held}))
	req := &sdk.ChatRequest{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "Authorization: Bearer " + bearer}},
		Config: map[string]any{"api_key": apiKey}}
	rec, err := NewChatRecording(s.Redactor(), "openai", "t1", req, &sdk.ChatResponse{Text: "your key " + apiKey}, 0)
	must(t, err)
	must(t, s.PutRecording(ctx, rec))
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "t1", Execution: "e1", Step: 1,
		State: []byte(`{"vars":{"token":"Bearer ` + bearer + `","acct":"` + custom + `"}}`)}))
	must(t, s.PutStrategy(ctx, &StrategyRecord{Name: "s", Version: "1.0.0", Hash: "h", Evidence: json.RawMessage(`{"note":"` + apiKey + `"}`)}))
	coll, err := NewCollection[map[string]string](s, CollReviews)
	must(t, err)
	must(t, coll.Put(ctx, "r1", map[string]string{"authorization": header}))
	var exp bytes.Buffer
	_, err = s.Export(ctx, &exp, ExportOptions{Checkpoints: true})
	must(t, err)
	must(t, s.Close())

	secrets := []string{apiKey, bearer, header, custom, held}
	for _, sec := range secrets {
		if bytes.Contains(exp.Bytes(), []byte(sec)) {
			t.Errorf("export holds %q", sec)
		}
	}
	files := 0
	must(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, sec := range secrets {
			if bytes.Contains(data, []byte(sec)) {
				t.Errorf("%s holds %q", filepath.Base(path), sec)
			}
		}
		return nil
	}))
	if files < 3 {
		t.Fatalf("only %d files written", files)
	}
	// The records are still there, redacted.
	if !strings.Contains(exp.String(), `"name":"call [REDACTED]"`) {
		t.Fatalf("span not exported redacted:\n%s", exp.String())
	}
}

// TestRedactSecretEndings: the rules whose hints are a secret word and
// the byte after it still catch every word, before every delimiter, in
// any case.
func TestRedactSecretEndings(t *testing.T) {
	r := DefaultRedactor()
	for _, e := range secretNameEndings {
		if e == "key" {
			e = "api_key" // a bare "key" is no secret name
		}
		for _, in := range []string{
			`{"my_` + strings.ToUpper(e) + `":"hunter2xyz"}`,
			`{"my_` + e + `": 12345}`,
			`{"doc":"{\"my_` + e + `\":\"hunter2xyz\"}"}`,
			`{"text":"my_` + e + ` = hunter2xyz"}`,
			`{"text":"my_` + e + `:hunter2xyz"}`,
		} {
			out, err := r.redactJSON([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "hunter2xyz") || strings.Contains(string(out), "12345") {
				t.Errorf("%s: not redacted: %s", in, out)
			}
		}
	}
}

// BenchmarkRedact/llm-span: a provider call's span, whose attribute
// names hold "token" (gen_ai.usage.input_tokens) but no secret.
func BenchmarkRedact(b *testing.B) {
	b.Run("llm-span", func(b *testing.B) {
		js := []byte(`{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174","name":"chat gpt-4o-mini","kind":"client","start":"2026-11-23T17:00:00Z","end":"2026-11-23T17:00:00Z","attributes":{"gen_ai.operation.name":"chat","gen_ai.provider.name":"openai","gen_ai.request.model":"gpt-4o-mini","gen_ai.response.finish_reasons":["stop"],"gen_ai.usage.input_tokens":230,"gen_ai.usage.output_tokens":7,"sextant.request_hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","sextant.recorded":true,"sextant.cost_usd":0.0001,"sextant.latency_ms":3},"status":{"code":"ok"}}`)
		r := DefaultRedactor()
		for b.Loop() {
			if _, err := r.redactJSON(js); err != nil {
				b.Fatal(err)
			}
		}
	})
	// BenchmarkRedact/16MB: linear time (compare the 1MB rates), with or
	// without registered secrets, which add one pass.
	r := DefaultRedactor()
	for _, size := range []struct {
		name string
		n    int
	}{{"1MB", 1 << 20}, {"16MB", 16 << 20}} {
		for _, in := range redactInputs {
			js := in.make(size.n)
			b.Run(size.name+in.name, func(b *testing.B) {
				b.SetBytes(int64(len(js)))
				cpu := cpuTime()
				for b.Loop() {
					if _, err := r.redactJSON(js); err != nil {
						b.Fatal(err)
					}
				}
				// Throughput by CPU time: what neighbours on a busy
				// machine do not slow down.
				if d := cpuTime() - cpu; d > 0 {
					b.ReportMetric(float64(len(js))*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
				}
			})
		}
	}
}
