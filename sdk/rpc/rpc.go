//go:build !wasip1

// Package rpc carries sextant's wire envelope over hashicorp/go-plugin's
// gRPC transport. Plugin authors do not import it: sdk.Main uses it to
// serve, and the host's process transport uses it to call.
//
// The gRPC service is deliberately tiny so that a plugin in any language
// can implement it from PROTOCOL-process.md (package sdk):
//
//	service Plugin { rpc Call(google.protobuf.BytesValue) returns (google.protobuf.BytesValue); }
//
// The bytes are the JSON request and response envelopes of package sdk.
package rpc

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Handshake is shared by the host and every process plugin. go-plugin puts
// the magic cookie in the plugin's environment so that a plugin binary run by
// hand says so instead of hanging.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "SEXTANT_PLUGIN",
	MagicCookieValue: "7d1f6c2e-sextant-plugin-api-1",
}

// PluginName is the key of the single plugin in go-plugin's plugin set.
const PluginName = "sextant"

// MaxMessage bounds one request or response (gRPC's default is 4 MiB).
const MaxMessage = 64 << 20

// ServiceName is the gRPC service name.
const ServiceName = "sextant.plugin.v1.Plugin"

const callMethod = "/" + ServiceName + "/Call"

// Handler answers one encoded request; sdk.Handler satisfies it.
type Handler interface {
	Handle(ctx context.Context, request []byte) []byte
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*Handler)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return wrapperspb.Bytes(srv.(Handler).Handle(ctx, in.Value)), nil
		},
	}},
	Metadata: "sextant/plugin.proto",
}

// GRPCPlugin adapts a Handler (server side) or a connection (client side)
// to go-plugin.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Handler is set on the plugin side.
	Handler Handler
}

// GRPCServer registers the Call service.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Handler == nil {
		return fmt.Errorf("rpc: no handler to serve")
	}
	s.RegisterService(&serviceDesc, p.Handler)
	return nil
}

// GRPCClient returns a *Client for the connection.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &Client{cc: cc}, nil
}

// Client calls a process plugin.
type Client struct{ cc *grpc.ClientConn }

// RoundTrip sends one request envelope and returns the response envelope.
func (c *Client) RoundTrip(ctx context.Context, request []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	err := c.cc.Invoke(ctx, callMethod, wrapperspb.Bytes(request), out,
		grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage))
	if err != nil {
		return nil, err
	}
	return out.Value, nil
}

// Serve serves h as a go-plugin gRPC plugin until the host goes away.
//
// go-plugin's own logging goes to stderr as JSON, which the host parses and
// logs under the plugin's name, and only from Info up: its default (Trace)
// would write several lines on every start.
//
// When the host passes a frames control socket (FramesEnv), calls arrive
// as frames on connections passed over it, and gRPC stays up for
// go-plugin's own use (health, shutdown) and for a host that does not use
// frames.
func Serve(h Handler) {
	if err := serveFrames(h); err != nil {
		// The host sees no hello and calls over gRPC; say why.
		fmt.Fprintf(os.Stderr, "sextant plugin: frames unavailable, serving gRPC only: %v\n", err)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCPlugin{Handler: h}},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "go-plugin", Level: hclog.Info, Output: os.Stderr, JSONFormat: true,
		}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(MaxMessage), grpc.MaxSendMsgSize(MaxMessage))
			return grpc.NewServer(opts...)
		},
	})
}
