package serve

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
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
		p.names[canonHost(h)] = true
	}
	for _, a := range allow {
		n, err := checkHostName(a)
		if err != nil {
			return p, fmt.Errorf("serve: --allow-host %q: %w", a, err)
		}
		p.names[n] = true
	}
	return p, nil
}

// checkHostName checks a name given to AllowHosts: a DNS name or an IP
// address, with no scheme, port or path.
func checkHostName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("is empty")
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return canonHost(s), nil
	}
	if strings.Contains(s, ":") {
		return "", fmt.Errorf("want a host name without scheme or port (such as sextant.example.com)")
	}
	n := canonHost(s)
	if n == "" || len(n) > 253 {
		return "", fmt.Errorf("is not a host name")
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("is not a host name (label %q)", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("is not a host name (character %q)", c)
			}
		}
	}
	return n, nil
}

// canonHost is a host without port, brackets and final dot, in lower case.
func canonHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.ToLower(h)
}

// allows reports whether the server answers to hostport (a Host header or
// an Origin's host). The port is not compared: a tunnel or a container's
// port mapping changes it, and a rebinding page can pick any port, but
// never the name.
func (p hostPolicy) allows(hostport string) bool {
	h := canonHost(hostport)
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
			Message: fmt.Sprintf("host %q is not a name this server answers to (localhost, IP addresses, --allow-host): if it is, start sextant serve with --allow-host %s", r.Host, canonHost(r.Host))}
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
