// Package sdktest tests sextant plugins in-process, through the same wire
// encoding the host uses, so that a plugin that passes here behaves the
// same over the wasm and process transports.
package sdktest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// Wire returns p as the host sees it across a wire transport: every call is
// encoded, answered by sdk.Serve(p) and decoded again — in api 2 for the
// methods that have it, as the host does with a plugin built with this
// SDK. The result implements the sdk interface of p's kind.
//
// The client takes the Describe answer Serve gives, so a navigator is
// called through the bind-once methods, as the host calls it.
func Wire(p sdk.Plugin) *sdk.Client { return over(sdk.Serve(p), p) }

// Guest is Wire with p answering as it does compiled into a WebAssembly
// guest (sdk.ServeGuest): the guest side's code path, natively. Its
// benchmarks are what a plugin's wasm build is profile-guided by.
func Guest(p sdk.Plugin) *sdk.Client { return over(sdk.ServeGuest(p), p) }

// over is a client of p served by h, with the Describe answer h gives.
func over(h sdk.Handler, p sdk.Plugin) *sdk.Client {
	rt := loopback{h}
	info, err := sdk.DescribeOver(context.Background(), p.Describe().Name, rt)
	if err != nil {
		info = p.Describe()
	}
	return sdk.NewClient(info.Name, rt, info)
}

// WireAPI1 is Wire with every call in api 1 (JSON), as the host talks to a
// plugin that does not list api 2 (and binds, if p is a navigator).
func WireAPI1(p sdk.Plugin) *sdk.Client {
	rt := loopback{sdk.Serve(p)}
	info, err := sdk.DescribeOver(context.Background(), p.Describe().Name, rt)
	if err != nil {
		info = p.Describe()
	}
	info.APIs = nil
	return sdk.NewClient(p.Describe().Name, rt, info)
}

type loopback struct{ h sdk.Handler }

func (l loopback) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	return l.h.Handle(ctx, req), nil
}

// Check runs the contract checks every plugin must pass: a valid Describe
// answer (name, kind, api version, version), the interface of its kind,
// the same answer over the wire (with the abilities Serve declares, such
// as Embed for an sdk.Embedder), and a clear error for an unknown method.
func Check(t testing.TB, p sdk.Plugin) {
	t.Helper()
	info := p.Describe()
	if err := sdk.CheckInfo(info); err != nil {
		t.Fatalf("Describe: %v", err)
	}
	switch info.Kind {
	case sdk.KindGate:
		if _, ok := p.(sdk.Gate); !ok {
			t.Fatalf("plugin %q describes itself as a gate but does not implement sdk.Gate", info.Name)
		}
	case sdk.KindProvider:
		if _, ok := p.(sdk.Provider); !ok {
			t.Fatalf("plugin %q describes itself as a provider but does not implement sdk.Provider", info.Name)
		}
	case sdk.KindNavigator:
		if _, ok := p.(sdk.Navigator); !ok {
			t.Fatalf("plugin %q describes itself as a navigator but does not implement sdk.Navigator", info.Name)
		}
	case sdk.KindTool:
		tp, ok := p.(sdk.Tool)
		if !ok {
			t.Fatalf("plugin %q describes itself as a tool but does not implement sdk.Tool", info.Name)
		}
		checkTools(t, tp)
	}
	ctx := context.Background()
	got, err := sdk.DescribeOver(ctx, info.Name, loopback{sdk.Serve(p)})
	if err != nil {
		t.Fatalf("describe over the wire: %v", err)
	}
	want := info
	if info.Kind == sdk.KindNavigator {
		want.Bind = true // Serve answers the bind-once methods for every navigator
		if ob, ok := p.(sdk.OutputBlind); ok && ob.OutputBlind() {
			want.OutputBlind = true // and says when it never reads Outcome.Output
		}
	}
	if _, ok := p.(sdk.Embedder); ok && info.Kind == sdk.KindProvider {
		want.Embed = true // Serve answers provider.embed for a provider that embeds, and says so
	}
	got.APIs = info.APIs // the SDK's Serve adds the wire versions it answers
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("describe over the wire differs:\n in-process %s\n wire       %s", a, b)
	}
	req, _ := sdk.EncodeRequest("no.such.method", struct{}{})
	var out json.RawMessage
	err = sdk.DecodeResponse(sdk.Serve(p).Handle(ctx, req), &out)
	if !strings.Contains(errString(err), "does not answer") {
		t.Fatalf("unknown method: got %v, want an unknown_method error", err)
	}
}

// checkTools checks a tool plugin's list: valid, unique names, argument
// schemas that are JSON objects, and the same list over the wire.
func checkTools(t testing.TB, p sdk.Tool) {
	t.Helper()
	ctx := context.Background()
	specs, err := p.ListTools(ctx)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	seen := map[string]bool{}
	for i, s := range specs {
		switch {
		case !sdk.ValidToolName(s.Name):
			t.Fatalf("ListTools: tool %d: invalid name %q (want 1 to 64 letters, digits, _ or -)", i, s.Name)
		case seen[s.Name]:
			t.Fatalf("ListTools: tool %q listed twice", s.Name)
		}
		seen[s.Name] = true
		if len(s.InputSchema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema == nil {
				t.Fatalf("ListTools: tool %q: input_schema is not a JSON object: %s", s.Name, s.InputSchema)
			}
		}
	}
	wire, err := Wire(p).ListTools(ctx)
	if err != nil {
		t.Fatalf("tool.list over the wire: %v", err)
	}
	a, _ := json.Marshal(specs)
	b, _ := json.Marshal(wire)
	if len(specs) == 0 {
		a = []byte("[]") // tool.list answers an empty list for none
	}
	if string(a) != string(b) {
		t.Fatalf("tool.list over the wire differs:\n in-process %s\n wire       %s", a, b)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
