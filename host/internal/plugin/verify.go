package plugin

import (
	"context"
	"fmt"
	"io"
)

// Verified is one plugin's line in `sextant plugins verify`.
type Verified struct {
	Name      string `json:"name"`
	Status    string `json:"status"` // ok or fail
	Pinned    string `json:"pinned,omitempty"`
	Transport string `json:"transport,omitempty"`
	Version   string `json:"version,omitempty"`
	Checksum  string `json:"checksum,omitempty"`
	Source    string `json:"source,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Verify checks the registry's plugins called names (every one when names
// is empty): the artifact matches its pinned sha256 and the plugin loads
// over its transport and describes itself as its manifest says. With pin,
// an unpinned artifact's sha256 is written into its manifest first. errs
// holds each failure, then an unknown-plugin error for each name no
// plugin has. Builtins pass as they are.
func (r *Registry) Verify(ctx context.Context, names []string, pin bool) (rows []Verified, errs []error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	found := map[string]bool{}
	rows = []Verified{}
	for _, e := range r.entries {
		if len(want) > 0 && !want[e.Name] {
			continue
		}
		found[e.Name] = true
		v, err := r.verify(ctx, e, pin)
		if err != nil {
			errs = append(errs, err)
			v.Status, v.Error = "fail", err.Error()
		}
		rows = append(rows, v)
	}
	for _, n := range names {
		if !found[n] {
			errs = append(errs, r.UnknownError(n, ""))
		}
	}
	return rows, errs
}

// verify checks one entry, pinning it first when asked to and unpinned.
func (r *Registry) verify(ctx context.Context, e Entry, pin bool) (Verified, error) {
	v := Verified{Name: e.Name, Status: "ok", Transport: e.Transport, Version: e.Version, Checksum: e.Checksum, Source: e.Source}
	if e.Builtin != nil {
		return v, nil
	}
	if pin && e.Checksum == ChecksumUnpinned {
		sum, err := Pin(e.Manifest)
		if err != nil {
			return v, err
		}
		v.Pinned, v.Checksum = sum, ChecksumOK
	}
	h, err := r.Open(ctx, e.Name, Grant{})
	if err != nil {
		return v, err
	}
	h.Close(context.WithoutCancel(ctx))
	return v, nil
}

// WriteVerified writes rows as `sextant plugins verify` prints them: a
// line a plugin, ok or FAIL, and a pinned line before a plugin pinned now.
func WriteVerified(w io.Writer, rows []Verified) error {
	for _, v := range rows {
		var err error
		switch {
		case v.Status == "fail":
			_, err = fmt.Fprintf(w, "FAIL     %s (%s)\n", v.Name, v.Source)
		case v.Transport == TransportBuiltin:
			_, err = fmt.Fprintf(w, "ok       %s (builtin)\n", v.Name)
		default:
			if v.Pinned != "" {
				fmt.Fprintf(w, "pinned   %s sha256 %s\n", v.Name, v.Pinned)
			}
			_, err = fmt.Fprintf(w, "ok       %s %s %s checksum %s (%s)\n", v.Name, v.Transport, v.Version, v.Checksum, v.Source)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
