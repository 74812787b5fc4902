package serve

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAdmit: the caps as a sequence of connections from several clients.
func TestAdmit(t *testing.T) {
	lim, err := Limits{MaxConns: 16, MaxConnsPerIP: 4}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(nil, lim, nil)
	admit := func(key string, local bool, want string) {
		t.Helper()
		if got := l.admit(key, local); !strings.Contains(got, want) || (want == "") != (got == "") {
			t.Fatalf("admit(%s, local %v) = %q, want %q", key, local, got, want)
		}
	}
	// One remote client: its share, then refused.
	for range 4 {
		admit("203.0.113.1", false, "")
	}
	admit("203.0.113.1", false, "MaxConnsPerIP")
	// Other remote clients until the remote share (16 less 2 reserved).
	for i := range 10 {
		admit("203.0.113."+string(rune('a'+i)), false, "")
	}
	admit("198.51.100.7", false, "loopback reserve")
	// Loopback still finds room, up to the total.
	admit("127.0.0.1", true, "")
	admit("127.0.0.1", true, "")
	admit("127.0.0.1", true, "MaxConns")
	// A closed remote connection frees a slot of its client, of the
	// remote share and of the total.
	l.release("203.0.113.1", false)
	admit("203.0.113.1", false, "")
	admit("127.0.0.1", true, "MaxConns")
	l.release("127.0.0.1", true)
	admit("198.51.100.7", false, "loopback reserve")
	admit("127.0.0.1", true, "")
	if l.total != 16 || l.remote != 14 || l.perIP["203.0.113.1"] != 4 {
		t.Fatalf("counts: total %d, remote %d, per IP %v", l.total, l.remote, l.perIP)
	}

	for _, bad := range []Limits{{MaxConns: 1}, {MaxConnsPerIP: -1}, {ReadTimeout: -time.Second}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestClientKey: IPv6 clients count by /64, mapped IPv4 as IPv4.
func TestClientKey(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		key   string
		local bool
	}{
		{"127.0.0.1:5000", "127.0.0.1", true},
		{"127.9.9.9:5000", "127.9.9.9", true},
		{"[::1]:5000", "::1", true},
		{"[::ffff:127.0.0.1]:5000", "127.0.0.1", true},
		{"192.0.2.2:5000", "192.0.2.2", false},
		{"[::ffff:192.0.2.2]:5000", "192.0.2.2", false},
		{"[2001:db8:1:2:3:4:5:6]:5000", "2001:db8:1:2::/64", false},
		{"[2001:db8:1:2:ffff::1]:5000", "2001:db8:1:2::/64", false},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if key, local := clientKey(a); key != tc.key || local != tc.local {
			t.Errorf("clientKey(%s) = %s, %v; want %s, %v", tc.addr, key, local, tc.key, tc.local)
		}
	}
	if key, local := clientKey(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}); !local || key != "unix" {
		t.Errorf("a unix socket: %s, %v", key, local)
	}
}

// TestWriteTimeout: a client that stops reading is cut off when one
// write waits WriteTimeout, over a real TCP connection.
func TestWriteTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lim, _ := Limits{WriteTimeout: 100 * time.Millisecond}.withDefaults()
	l := newLimitListener(ln, lim, nil)
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() // never read
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Far more than the socket buffers hold, in writes of 1 MiB.
	chunk := make([]byte, 1<<20)
	for i := 0; ; i++ {
		if i == 1024 {
			t.Fatal("1 GiB written to a client that reads nothing")
		}
		if _, err := c.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("write %d: %v, want the write deadline", i, err)
			}
			break
		}
	}
}
