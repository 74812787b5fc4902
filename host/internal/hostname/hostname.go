// Package hostname checks the host names `sextant serve` answers to
// (--allow-host and serve.toml's allow_hosts): one check for the flag and
// the file, in a leaf package that serve and pipeline both import.
package hostname

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Check checks a name the server may be reached by: a DNS name or an IP
// address, with no scheme, port or path. It returns the name as Canon
// writes it.
func Check(s string) (string, error) {
	if s == "" {
		return "", errors.New("is empty")
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return Canon(s), nil
	}
	if strings.Contains(s, ":") {
		return "", errors.New("want a host name without scheme or port (such as sextant.example.com)")
	}
	n := Canon(s)
	if n == "" || len(n) > 253 {
		return "", errors.New("is not a host name")
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

// Canon is a host without port, brackets and final dot, in lower case.
func Canon(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.ToLower(h)
}
