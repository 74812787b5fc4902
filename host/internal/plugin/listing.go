package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sextant-dev/sextant/host/internal/termtext"
	"github.com/sextant-dev/sextant/sdk"
)

// Listed is one plugin as `sextant plugins list` shows it.
type Listed struct {
	Name        string   `json:"name"`
	Kind        sdk.Kind `json:"kind"`
	Version     string   `json:"version"`
	Transport   string   `json:"transport"`
	Checksum    string   `json:"checksum"`
	Source      string   `json:"source"`
	Description string   `json:"description,omitempty"`
	Shadows     []string `json:"shadows,omitempty"`
}

func listed(e Entry) Listed {
	return Listed{Name: e.Name, Kind: e.Kind, Version: e.Version, Transport: e.Transport,
		Checksum: e.Checksum, Source: e.Source, Description: e.Description, Shadows: e.Shadows}
}

// List lists the entries of kind ("" for every kind), in search order.
// It is never nil.
func List(entries []Entry, kind sdk.Kind) []Listed {
	rows := []Listed{}
	for _, e := range entries {
		if kind == "" || e.Kind == kind {
			rows = append(rows, listed(e))
		}
	}
	return rows
}

// WriteList writes rows as the table `sextant plugins list` prints, each
// source followed by the sources it shadows.
func WriteList(w io.Writer, rows []Listed) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tVERSION\tTRANSPORT\tCHECKSUM\tSOURCE")
	for _, r := range rows {
		src := r.Source
		if len(r.Shadows) > 0 {
			src += " (shadows " + strings.Join(r.Shadows, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termtext.Cell(r.Name), termtext.Cell(string(r.Kind)), termtext.Cell(r.Version),
			termtext.Cell(string(r.Transport)), termtext.Cell(r.Checksum), termtext.Cell(src))
	}
	return tw.Flush()
}

// Inspection is what `sextant plugins inspect` shows of a plugin: its
// manifest and its own Describe answer (whose description wins).
type Inspection struct {
	Listed
	API      int               `json:"api"`
	Config   []sdk.ConfigField `json:"config,omitempty"`
	Requests *Requests         `json:"requests,omitempty"`
	Artifact string            `json:"artifact,omitempty"`
	SHA256   string            `json:"sha256,omitempty"`
	// Abilities are the optional abilities the plugin has beside its
	// kind's methods, as the host sees them: "embed" (sdk.Embedder),
	// "stream" (sdk.StreamingProvider, builtins only).
	Abilities []string `json:"abilities,omitempty"`
}

// Inspect opens the plugin called name over its transport (verifying its
// checksum first), asks it to describe itself and closes it again.
func (r *Registry) Inspect(ctx context.Context, name string) (*Inspection, error) {
	h, err := r.Open(ctx, name, Grant{})
	if err != nil {
		return nil, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	info := h.Plugin.Describe()
	out := &Inspection{Listed: listed(h.Entry), API: info.API, Config: info.Config}
	out.Description = info.Description
	out.Abilities = abilities(h.Plugin)
	if m := h.Entry.Manifest; m != nil {
		out.Requests = &m.Requests
		out.Artifact = m.ArtifactPath()
		out.SHA256 = m.Artifact().SHA256
	}
	return out, nil
}

// WriteText writes the inspection as `sextant plugins inspect` prints it:
// one field a line, then the config fields the plugin takes. What the
// plugin says of itself (its description, its fields' docs) and what its
// manifest and folder hold are escaped (termtext.Cell): a plugin's text
// is shown, never obeyed by the terminal, and stays in its column.
func (in *Inspection) WriteText(w io.Writer) error {
	c := termtext.Cell
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\nkind:\t%s\nversion:\t%s\napi:\t%d\n", c(in.Name), c(string(in.Kind)), c(in.Version), in.API)
	fmt.Fprintf(tw, "transport:\t%s\nsource:\t%s\nchecksum:\t%s\n", c(string(in.Transport)), c(in.Source), c(in.Checksum))
	if in.Description != "" {
		fmt.Fprintf(tw, "description:\t%s\n", c(in.Description))
	}
	if len(in.Abilities) > 0 {
		fmt.Fprintf(tw, "abilities:\t%s\n", c(strings.Join(in.Abilities, ", ")))
	}
	if in.Artifact != "" {
		fmt.Fprintf(tw, "artifact:\t%s\n", c(in.Artifact))
	}
	if in.Requests != nil && len(in.Requests.HTTP) > 0 {
		fmt.Fprintf(tw, "requests http:\t%s\n", c(strings.Join(in.Requests.HTTP, ", ")))
	}
	if in.Requests != nil && in.Requests.Memory != "" {
		fmt.Fprintf(tw, "requests memory:\t%s\n", c(in.Requests.Memory))
	}
	if err := tw.Flush(); err != nil || len(in.Config) == 0 {
		return err
	}
	fmt.Fprintln(w, "config:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range in.Config {
		def := ""
		if f.Default != nil {
			def = fmt.Sprintf(" (default %v)", f.Default)
		}
		req := ""
		if f.Required {
			req = " required"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c(f.Name), c(string(f.Type)+req+def), c(f.Doc))
	}
	return tw.Flush()
}

// abilities lists what p can do beside its kind's methods (Inspection).
func abilities(p sdk.Plugin) []string {
	var out []string
	if _, ok := p.(sdk.Embedder); ok {
		out = append(out, "embed")
	}
	if _, ok := p.(sdk.StreamingProvider); ok {
		out = append(out, "stream")
	}
	return out
}
