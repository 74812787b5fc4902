// Command misbehave is a gate that misbehaves on request, for the
// containment suite: Config["mode"] picks what Check does. Built both as a
// wasip1 module and as a native process plugin.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Misbehave does what Config["mode"] says.
type Misbehave struct{}

var _ sdk.Gate = Misbehave{}

// api is what Describe reports; `--api N` changes it (process builds).
var api = sdk.APIVersion

// Describe implements sdk.Plugin.
func (Misbehave) Describe() sdk.Info {
	return sdk.Info{Name: "misbehave", Kind: sdk.KindGate, Version: "0.0.1", API: api,
		Description: "misbehaves on request (containment tests)"}
}

var sink [][]byte

// Check implements sdk.Gate.
func (Misbehave) Check(ctx context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	mode, _ := c.Config["mode"].(string)
	switch mode {
	case "ok":
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{"behaved"}}, nil
	case "loop":
		n := 0
		for {
			n++
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "membomb":
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = byte(i)
			}
			sink = append(sink, b)
		}
	case "readfile":
		b, err := os.ReadFile("/etc/passwd")
		if err != nil {
			return nil, fmt.Errorf("read /etc/passwd: %w", err)
		}
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{fmt.Sprintf("read %d bytes of /etc/passwd", len(b))}}, nil
	case "dial":
		conn, err := net.DialTimeout("tcp", "127.0.0.1:9", time.Second)
		if err != nil {
			return nil, fmt.Errorf("dial 127.0.0.1:9: %w", err)
		}
		conn.Close()
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{"dialed 127.0.0.1:9"}}, nil
	case "env":
		// Report the names (never the values) of every variable the
		// plugin can see, so tests can check the scrubbing.
		var names []string
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		sort.Strings(names)
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: names}, nil
	case "panic":
		panic("misbehave: deliberate panic")
	case "panic-goroutine":
		done := make(chan struct{})
		go func() { panic("misbehave: deliberate panic in a goroutine") }()
		<-done
	case "bigoutput":
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{strings.Repeat("x", 100<<20)}}, nil
	case "stdout":
		for i := 0; i < 1000; i++ {
			fmt.Println("garbage on stdout \x00\x01\x02 {not json")
		}
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{"printed garbage"}}, nil
	case "stderr":
		fmt.Fprintln(os.Stderr, "misbehave: a line on stderr")
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{"wrote stderr"}}, nil
	case "crash":
		os.Exit(3)
	case "flood-crash":
		// A thousand lines straight to fd 2, then death: as a crash
		// report of many goroutines does.
		fd2 := os.NewFile(2, "stderr")
		for i := range 1000 {
			fmt.Fprintf(fd2, "misbehave: stderr line %d\n", i)
		}
		os.Exit(3)
	}
	return nil, sdk.Errorf(sdk.CodeInvalid, "unknown mode %q", mode)
}

func init() { sdk.Register(Misbehave{}) }

func main() {
	for i := 1; i < len(os.Args); i++ {
		switch os.Args[i] {
		case "--garbage-stdout":
			// Before the go-plugin handshake: the host must refuse this
			// plugin with a clear error rather than hang or crash.
			fmt.Println("hello, I am not a handshake line")
		case "--api":
			if i+1 < len(os.Args) {
				fmt.Sscan(os.Args[i+1], &api)
				i++
			}
		}
	}
	sdk.Main()
}
