// Command fakeopenai runs a command beside a deterministic OpenAI-compatible
// server (openaitest.Upstream) for end-to-end tests:
//
//	fakeopenai [-rate TEXT=N]... [-default N] [-log FILE] [-eol lf|crlf|cr] [-no-done] [-cut] -- COMMAND [ARG]...
//
// It listens on a free local port, runs COMMAND with OPENAI_BASE_URL set
// to the server's /v1 root, stops the server when COMMAND ends and exits
// with COMMAND's status. A script thus has the server exactly as long as
// the command that uses it: no port to wait for, nothing left running.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
)

type rules []openaitest.Rule

func (r *rules) String() string { return fmt.Sprint(*r) }

func (r *rules) Set(s string) error {
	text, n, ok := strings.Cut(s, "=")
	rating, err := strconv.Atoi(n)
	if !ok || text == "" || err != nil {
		return fmt.Errorf("want TEXT=RATING, got %q", s)
	}
	*r = append(*r, openaitest.Rule{Contains: text, Rating: rating})
	return nil
}

func main() {
	os.Exit(run())
}

func run() int {
	var up openaitest.Upstream
	var rs rules
	flag.Var(&rs, "rate", "TEXT=N: the judge rates a text holding TEXT N (first match wins; repeatable)")
	flag.IntVar(&up.Default, "default", 1, "the judge's rating when no -rate matches")
	logFile := flag.String("log", "", "append one line per request (METHOD PATH) to this file")
	eol := flag.String("eol", "lf", "streamed answers: end lines with lf, crlf or cr")
	flag.BoolVar(&up.Stream.NoDone, "no-done", false, "streamed answers: leave out data: [DONE]")
	flag.BoolVar(&up.Stream.Cut, "cut", false, "streamed answers: stop inside the last chunk")
	flag.Parse()
	up.Stream.EOL = map[string]string{"lf": "\n", "crlf": "\r\n", "cr": "\r"}[*eol]
	if up.Stream.EOL == "" {
		fmt.Fprintf(os.Stderr, "fakeopenai: -eol %q: want lf, crlf or cr\n", *eol)
		return 2
	}
	up.Rules = rs
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: fakeopenai [flags] -- COMMAND [ARG]...")
		return 2
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeopenai:", err)
			return 2
		}
		defer f.Close()
		up.Log = f
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeopenai:", err)
		return 2
	}
	srv := &http.Server{Handler: &up}
	go srv.Serve(l)
	defer srv.Close()

	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL=http://"+l.Addr().String()+"/v1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "fakeopenai:", err)
		return 2
	}
	return 0
}
