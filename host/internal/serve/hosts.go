package serve

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/sextant-dev/sextant/host/internal/hostname"
)

// hostPolicy is the set of Host names the server answers to: names no
// DNS answer can move — localhost and IP addresses — plus the listen
// address's own name and the names given in Options.AllowHosts. A page
// that rebinds its own name (evil.example) to 127.0.0.1 still sends
// Host: evil.example, and is refused.
type hostPolicy struct {
	names map[string]bool // lower case, no port, no final dot
}

// newHostPolicy checks the extra names and returns the policy of a server
// listening on addr.
func newHostPolicy(addr string, allow []string) (hostPolicy, error) {
	p := hostPolicy{names: map[string]bool{}}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		p.names[hostname.Canon(h)] = true
	}
	for _, a := range allow {
		n, err := hostname.Check(a)
		if err != nil {
			return p, fmt.Errorf("serve: --allow-host %q: %w", a, err)
		}
		p.names[n] = true
	}
	return p, nil
}

// allows reports whether the server answers to hostport (a Host header or
// an Origin's host). The port is not compared: a tunnel or a container's
// port mapping changes it, and a rebinding page can pick any port, but
// never the name.
func (p hostPolicy) allows(hostport string) bool {
	h := hostname.Canon(hostport)
	if h == "" {
		return false
	}
	if h == "localhost" || p.names[h] {
		return true
	}
	_, err := netip.ParseAddr(h)
	return err == nil
}

// checkHost refuses a request whose Host, or whose Origin, names a host
// the server does not answer to (DNS rebinding, or a page of another site).
func (s *Server) checkHost(r *http.Request) *Error {
	if !s.hosts.allows(r.Host) {
		return &Error{Status: http.StatusForbidden, Code: CodeForbidden,
			Message: fmt.Sprintf("host %q is not a name this server answers to (localhost, IP addresses, --allow-host): if it is, start sextant serve with --allow-host %s", r.Host, hostname.Canon(r.Host))}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !s.hosts.allows(u.Host) {
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: fmt.Sprintf("origin %q is not a site this server answers to", o)}
		}
	}
	return nil
}
