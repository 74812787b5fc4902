//go:build !wasip1

package sdk_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestHTTPStream: the body is handed over as it arrives (the server holds
// its second line back until the first was read), with the credential
// filled in from the environment; an unbound credential sends nothing.
func TestHTTPStream(t *testing.T) {
	release := make(chan struct{})
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		fmt.Fprintf(w, "first %s\n", r.Header.Get("Authorization"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "second\n")
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	t.Setenv("SDK_STREAM_TEST_KEY", "sk-1")
	resp, err := sdk.HTTPStream(context.Background(), &sdk.HTTPRequest{Method: "POST", URL: srv.URL,
		Credentials: []sdk.HeaderCredential{{Header: "Authorization", Name: "SDK_STREAM_TEST_KEY", Prefix: "Bearer "}}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first Bearer sk-1\n" || resp.Status != 200 {
		t.Fatalf("first line %q, status %d, err %v", line, resp.Status, err)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second\n" {
		t.Fatalf("rest %q, err %v", rest, err)
	}

	_, err = sdk.HTTPStream(context.Background(), &sdk.HTTPRequest{Method: "POST", URL: srv.URL,
		Credentials: []sdk.HeaderCredential{{Header: "Authorization", Name: "SDK_STREAM_TEST_UNSET"}}})
	if err == nil || !strings.Contains(err.Error(), "not bound") || calls != 1 {
		t.Fatalf("unbound credential: err %v, %d calls; want an error and no request", err, calls)
	}
}

// TestHTTPCredentialRedirect: a request carrying a bound credential is
// not followed to another origin (here another port of the same host,
// where net/http keeps even Authorization), so the server a redirect
// names never sees the key; one within the origin, and one without a
// credential, are followed.
func TestHTTPCredentialRedirect(t *testing.T) {
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
		fmt.Fprint(w, "elsewhere")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here":
			fmt.Fprint(w, "here")
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		default:
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	t.Setenv("SDK_REDIRECT_TEST_KEY", "sk-1")
	creds := []sdk.HeaderCredential{{Header: "X-Api-Key", Name: "SDK_REDIRECT_TEST_KEY"}, {Header: "Authorization", Name: "SDK_REDIRECT_TEST_KEY", Prefix: "Bearer "}}
	for _, stream := range []bool{false, true} {
		send := func(path string, creds []sdk.HeaderCredential) (string, error) {
			req := &sdk.HTTPRequest{Method: "POST", URL: srv.URL + path, Credentials: creds}
			if !stream {
				resp, err := sdk.HTTP(req)
				if err != nil {
					return "", err
				}
				return string(resp.Body), nil
			}
			resp, err := sdk.HTTPStream(context.Background(), req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		if got, err := send("/away", creds); err == nil || !strings.Contains(err.Error(), "refused: the request carries a bound credential") {
			t.Errorf("stream %v: redirected elsewhere: %q %v, want refused", stream, got, err)
		}
		if got, err := send("/moved", creds); err != nil || got != "here" {
			t.Errorf("stream %v: redirected within the origin: %q %v", stream, got, err)
		}
		if got, err := send("/away", nil); err != nil || got != "elsewhere" {
			t.Errorf("stream %v: without a credential: %q %v", stream, got, err)
		}
	}
	if len(seen) != 2 || seen[0] != "" || seen[1] != "" {
		t.Errorf("the other origin saw %q, want two requests without the key", seen)
	}
}
