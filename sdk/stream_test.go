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
