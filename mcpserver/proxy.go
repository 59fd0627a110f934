package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Proxy serves one session (stdio) with what an upstream MCP server serves:
// `memfsd mcp` when a daemon manages the agent, so the daemon stays the one
// owner of the agent's folder. Every request is forwarded as it came; a
// resource the upstream says changed is told to this session when it
// subscribed to it.
type Proxy struct {
	// srv is published once DialProxy made it: the upstream's
	// notifications may arrive (on the client session's goroutine) while
	// it is being made.
	srv atomic.Pointer[mcp.Server]
	up  *mcp.ClientSession
}

// unsubscribeWait bounds taking a subscription back upstream.
const unsubscribeWait = 5 * time.Second

// DialProxy connects to the upstream server over t and makes the proxy.
func DialProxy(ctx context.Context, t mcp.Transport, version string) (*Proxy, error) {
	p := &Proxy{}
	c := mcp.NewClient(&mcp.Implementation{Name: "memfsd-mcp", Version: version}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if srv := p.srv.Load(); srv != nil {
				srv.ResourceUpdated(ctx, req.Params)
			}
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			if srv := p.srv.Load(); srv != nil {
				resourceListChanged(srv)
			}
		},
	})
	up, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	p.up = up
	init := up.InitializeResult()
	impl := &mcp.Implementation{Name: "memfsd", Version: version}
	opts := &mcp.ServerOptions{
		// A subscription is taken upstream first, then recorded here, so
		// ResourceUpdated reaches this session. The handlers (not the
		// forwarding middleware) do it: a client of protocol 2026-07-28
		// subscribes with subscriptions/listen, which the SDK turns into
		// these handlers' calls, never into a resources/subscribe request.
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			if err := p.up.Subscribe(ctx, &mcp.SubscribeParams{Meta: own(req.Params.Meta), URI: req.Params.URI}); err != nil {
				return upstreamErr("subscribe", req.Params.URI, err)
			}
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			// A listen stream's subscriptions are taken back when it ends,
			// with its context already done.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeWait)
			defer cancel()
			if err := p.up.Unsubscribe(ctx, &mcp.UnsubscribeParams{Meta: own(req.Params.Meta), URI: req.Params.URI}); err != nil {
				return upstreamErr("unsubscribe", req.Params.URI, err)
			}
			return nil
		},
		HasTools:     true,
		HasResources: true,
		HasPrompts:   true,
	}
	if init != nil {
		if init.ServerInfo != nil {
			impl = init.ServerInfo
		}
		opts.Instructions = init.Instructions
	}
	srv := mcp.NewServer(impl, opts)
	srv.AddReceivingMiddleware(p.forward)
	p.srv.Store(srv)
	return p, nil
}

// Run serves the session over t until it ends, then closes the upstream
// session (the daemon pushes what it wrote).
func (p *Proxy) Run(ctx context.Context, t mcp.Transport) error {
	defer p.up.Close()
	return p.srv.Load().Run(ctx, t)
}

// forward answers the methods the upstream serves with its answers;
// subscriptions go upstream through the server's handlers (DialProxy).
func (p *Proxy) forward(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		up := p.up
		// A list request may come without params, or with "params": null
		// (the TypeScript SDK sends tools/list so): the SDK hands those
		// over as a nil pointer of the method's type. Each is then the
		// empty params, as the in-process server takes it.
		switch params := req.GetParams().(type) {
		case *mcp.ListToolsParams:
			params = orEmpty(params)
			return answer(up.ListTools(ctx, &mcp.ListToolsParams{Meta: own(params.Meta), Cursor: params.Cursor}))
		case *mcp.CallToolParamsRaw:
			params = orEmpty(params)
			call := &mcp.CallToolParams{Meta: own(params.Meta), Name: params.Name}
			if len(params.Arguments) > 0 {
				// Absent stays absent (a nil RawMessage would be sent as
				// null, which the tools take for other input).
				call.Arguments = params.Arguments
			}
			return answer(up.CallTool(ctx, call))
		case *mcp.ListResourcesParams:
			params = orEmpty(params)
			return answer(up.ListResources(ctx, &mcp.ListResourcesParams{Meta: own(params.Meta), Cursor: params.Cursor}))
		case *mcp.ListResourceTemplatesParams:
			params = orEmpty(params)
			return answer(up.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Meta: own(params.Meta), Cursor: params.Cursor}))
		case *mcp.ReadResourceParams:
			params = orEmpty(params)
			return answer(up.ReadResource(ctx, &mcp.ReadResourceParams{Meta: own(params.Meta), URI: params.URI}))
		case *mcp.ListPromptsParams:
			params = orEmpty(params)
			return answer(up.ListPrompts(ctx, &mcp.ListPromptsParams{Meta: own(params.Meta), Cursor: params.Cursor}))
		case *mcp.GetPromptParams:
			params = orEmpty(params)
			return answer(up.GetPrompt(ctx, &mcp.GetPromptParams{Meta: own(params.Meta), Name: params.Name, Arguments: params.Arguments}))
		}
		return next(ctx, method, req)
	}
}

// listChangedURI is a resource this proxy's server holds for an instant
// (resourceListChanged); never listed nor read: both are forwarded.
const listChangedURI = "memfsd-proxy://list-changed"

// resourceListChanged tells srv's sessions what the upstream told
// the proxy: notifications/resources/list_changed (a write added or
// removed a file). The SDK sends it when the server's own resource list
// changes, and has no call to send it otherwise: a resource added and
// taken back at once does it (one notification: the SDK folds changes
// 10 ms apart into one).
func resourceListChanged(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{URI: listChangedURI, Name: "list-changed"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, mcp.ResourceNotFoundError(listChangedURI)
	})
	srv.RemoveResources(listChangedURI)
}

// orEmpty is p, or the empty params for a request that came without.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// answer turns a typed answer into a method's (no typed nil on error). An
// error the upstream answered is passed on as it came (its code, message
// and data), not wrapped in the client's "calling ...": the client sees
// what the in-process server says.
func answer[R mcp.Result](r R, err error) (mcp.Result, error) {
	if err != nil {
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil, wire
		}
		return nil, err
	}
	return r, nil
}

// upstreamErr is the upstream's refusal as it answered it (the same
// answer as in-process), or, when it never answered, op and uri with the
// cause.
func upstreamErr(op, uri string, err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return wire
	}
	return fmt.Errorf("%s %s: %w", op, uri, err)
}

// own is a request's _meta without the protocol's own keys
// (io.modelcontextprotocol/...: the version, client info and capabilities
// this session negotiated), which belong to this hop, not the upstream's:
// the upstream session negotiated its own.
func own(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}
