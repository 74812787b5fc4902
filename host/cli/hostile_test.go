package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// TestHostileServerText: what the server that holds the store answers
// cancel, send and set — a task id, a status, a note, here with escape
// sequences that would retitle the window, clear the screen, set the
// clipboard or hide text — is printed escaped, never obeyed by the
// terminal. The server is a real HTTP server announced as the store's
// holder.
func TestHostileServerText(t *testing.T) {
	isolate(t)
	st := filepath.Join(t.TempDir(), ".sextant")
	s, err := store.Open(context.Background(), st, store.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	answers := map[string]string{
		"/api/v1/tasks/t1/cancel":   `{"task":"t1\u001b]0;owned\u0007","status":"cancelled","error":"cancelled by \u001b[2Jeve \u009b8m"}`,
		"/api/v1/tasks/t1/messages": `{"task":"t1\u001b[8m","status":"running","error":"queued \u001b]52;c;ZXZpbA==\u0007"}`,
		"/api/v1/tasks/t1/vars":     `{"task":"t1","status":"waiting\u001b[1A\u001b[2K"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, a)
	}))
	t.Cleanup(srv.Close)
	remove, err := serve.WriteInfo(st, serve.Info{URL: srv.URL, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "t1"}, `task t1\x1b]0;owned\x07 cancelled by \x1b[2Jeve \u009b8m`},
		{[]string{"send", "t1", "--message", "paid"}, `message "paid" delivered to task t1\x1b[8m; queued \x1b]52;c;ZXZpbA==\x07`},
		{[]string{"set", "t1", "k=1"}, `task t1 waiting\x1b[1A\x1b[2K: set k`},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append(c.args, "--store", st), strings.NewReader(""), &out, &errb)
		if code != 0 || termtext.HasControl(out.Bytes()) || strings.TrimSpace(out.String()) != c.want {
			t.Errorf("sextant %s: exit %d, printed %q, want %q escaped\n%s", strings.Join(c.args, " "), code, out.String(), c.want, errb.String())
		}
	}
}
