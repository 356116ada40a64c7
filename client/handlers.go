package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// SamplingHandler answers a server's sampling/createMessage request on the
// host's behalf. server is the name the server was added under. ctx ends
// when the server gives up on the request or when the runtime that carried
// it is detached (a reconnect, Disable, Remove, Close).
type SamplingHandler func(ctx context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

// ElicitationHandler answers a server's elicitation/create request, in form
// mode (req.Params.Mode empty or "form": fill in RequestedSchema) or URL
// mode ("url": send the user to req.Params.URL). server and ctx are as for
// SamplingHandler. Return an ElicitationResult with action "decline" or
// "cancel" when the user says no; an error is for when asking failed.
type ElicitationHandler func(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

// ElicitationMode is a mode of elicitation the host supports.
type ElicitationMode string

// Elicitation modes.
const (
	// ElicitForm: the server sends a JSON schema and the host fills it in.
	ElicitForm ElicitationMode = "form"
	// ElicitURL: the server sends a URL for the user to open.
	ElicitURL ElicitationMode = "url"
)

// Errors of the client role.
var (
	// ErrDetachedRuntime: a server-initiated request arrived on a runtime
	// that the slot had already detached. It is refused without reaching
	// the host: the host only ever answers the server's current runtime.
	ErrDetachedRuntime = errors.New("request from a detached runtime refused")
	// ErrRootsNotEnabled: SetRoots was called on a Manager made without
	// WithRoots, so servers were told at connect that it has no roots.
	ErrRootsNotEnabled = errors.New("roots not enabled (use WithRoots)")
)

// WithSamplingHandler makes the Manager declare the sampling capability to
// every server and pass their sampling/createMessage requests to h. Without
// it the capability is not declared, and a server that asks anyway gets an
// error. Defaults to none.
func WithSamplingHandler(h SamplingHandler) Option {
	return func(o *options) { o.sampling = h }
}

// WithElicitationHandler makes the Manager declare the elicitation
// capability, for the given modes (ElicitForm if none are given), and pass
// servers' elicitation/create requests to h. A request in a mode the host
// did not declare is refused without reaching h. Without this option the
// capability is not declared, and a server that asks anyway gets an error.
// Defaults to none.
func WithElicitationHandler(h ElicitationHandler, modes ...ElicitationMode) Option {
	return func(o *options) {
		o.elicitation = h
		o.elicitModes = modes
		if len(modes) == 0 {
			o.elicitModes = []ElicitationMode{ElicitForm}
		}
	}
}

// WithRoots makes the Manager declare the roots capability (with
// listChanged) to every server, answer roots/list with the host's roots,
// initially roots, and tell connected servers when SetRoots changes them.
// Without it the capability is not declared. Defaults to none.
func WithRoots(roots ...mcp.Root) Option {
	return func(o *options) {
		o.rootsEnabled = true
		o.roots = slices.Clone(roots)
	}
}

// rootsState holds the host's current roots. The zero value means "the
// roots given to WithRoots".
type rootsState struct {
	mu   sync.Mutex // guards list and set
	list []mcp.Root
	set  bool
}

// Roots returns the host's current roots: those of WithRoots, or of the
// last SetRoots.
func (m *Manager) Roots() []mcp.Root {
	m.roots.mu.Lock()
	defer m.roots.mu.Unlock()
	if m.roots.set {
		return slices.Clone(m.roots.list)
	}
	return slices.Clone(m.opts.roots)
}

// SetRoots replaces the host's roots and sends notifications/roots/list_changed
// to every connected server, so that each asks for the new list. Servers
// connecting later get the new list when they ask. It returns once every
// notification was sent or ctx ended, with the send errors (naming their
// servers) joined; a failed send leaves the roots replaced. It fails with
// ErrRootsNotEnabled if the Manager was made without WithRoots.
func (m *Manager) SetRoots(ctx context.Context, roots []mcp.Root) error {
	if !m.opts.rootsEnabled {
		return ErrRootsNotEnabled
	}
	m.roots.mu.Lock()
	m.roots.list = slices.Clone(roots)
	m.roots.set = true
	m.roots.mu.Unlock()

	slots, _ := m.slotList()
	var leases []*lease
	for _, s := range slots {
		s.mu.Lock()
		if l := s.lease; l != nil {
			leases = append(leases, l)
		}
		s.mu.Unlock()
	}

	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	for _, l := range leases {
		wg.Go(func() {
			// A runtime detached meanwhile is closing: nothing to tell it.
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(l.ctx, cancel)
			defer stop()
			if err := l.client.RootListChanges(sctx); err != nil && l.ctx.Err() == nil {
				emu.Lock()
				errs = append(errs, &ServerError{Server: l.slot.name, Op: "notify roots changed", Err: err})
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clientOptions returns the mcp-go client options that declare the host's
// capabilities for l, with handlers bound to l: a request arriving after l
// was detached (or its dial abandoned) is refused with ErrDetachedRuntime
// and never reaches the host.
func (m *Manager) clientOptions(l *lease) []mcpclient.ClientOption {
	var copts []mcpclient.ClientOption
	h := &leaseHandlers{m: m, l: l}
	if m.opts.sampling != nil {
		copts = append(copts, mcpclient.WithSamplingHandler(h))
	}
	if m.opts.elicitation != nil {
		caps := &mcp.ElicitationCapability{}
		for _, mode := range m.opts.elicitModes {
			switch mode {
			case ElicitForm:
				caps.Form = &struct{}{}
			case ElicitURL:
				caps.URL = &struct{}{}
			}
		}
		copts = append(copts, mcpclient.WithElicitationHandler(h),
			mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: caps}))
	}
	if m.opts.rootsEnabled {
		copts = append(copts, mcpclient.WithRootsHandler(h))
	}
	return copts
}

// leaseHandlers adapts the host's handlers to mcp-go's, for one lease.
type leaseHandlers struct {
	m *Manager
	l *lease
}

// bind admits a request of the server's to the host's handler, and returns
// a context for the handler that also ends when the lease is detached, and
// the function to call when the handler returned. It refuses the request
// with ErrDetachedRuntime if the lease was detached already, and with
// ErrServerRequestLimit (naming the limit, for the server to read) if the
// server is over its Limits: too many requests open with the host, or too
// many a second. method is one of req….
func (h *leaseHandlers) bind(ctx context.Context, method int) (context.Context, func(), error) {
	s := h.l.slot
	if h.l.ctx.Err() != nil {
		h.m.opts.logger.Info("mcpfleet: refused a request from a detached runtime",
			"server", s.name, "generation", h.l.gen, "method", serverRequestMethods[method])
		return nil, nil, fmt.Errorf("%w: server %q, %s", ErrDetachedRuntime, s.name, serverRequestMethods[method])
	}
	g := s.config().requests
	if err := s.admitRequest(g, method); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.l.ctx, cancel)
	h.l.serving.Add(1) // a server request pending keeps the server from going idle
	return ctx, func() { stop(); cancel(); g.release(); h.l.used(); h.l.serving.Add(-1) }, nil
}

func (h *leaseHandlers) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ctx, done, err := h.bind(ctx, reqSampling)
	if err != nil {
		return nil, err
	}
	defer done()
	if len(h.m.opts.serverInterceptors) > 0 {
		return interceptServer(ctx, h, string(mcp.MethodSamplingCreateMessage), &req.CreateMessageParams,
			func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				req.CreateMessageParams = *p
				return h.m.opts.sampling(ctx, h.l.slot.name, req)
			})
	}
	return h.m.opts.sampling(ctx, h.l.slot.name, req)
}

func (h *leaseHandlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	mode := ElicitationMode(req.Params.Mode)
	if mode == "" {
		mode = ElicitForm
	}
	if !slices.Contains(h.m.opts.elicitModes, mode) {
		return nil, fmt.Errorf("elicitation mode %q not supported by this client", mode)
	}
	ctx, done, err := h.bind(ctx, reqElicitation)
	if err != nil {
		return nil, err
	}
	defer done()
	if len(h.m.opts.serverInterceptors) > 0 {
		return interceptServer(ctx, h, string(mcp.MethodElicitationCreate), &req.Params,
			func(ctx context.Context, p *mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
				req.Params = *p
				if mode := ElicitationMode(p.Mode); mode != "" && !slices.Contains(h.m.opts.elicitModes, mode) {
					return nil, fmt.Errorf("elicitation mode %q not supported by this client", mode)
				}
				return h.m.opts.elicitation(ctx, h.l.slot.name, req)
			})
	}
	return h.m.opts.elicitation(ctx, h.l.slot.name, req)
}

func (h *leaseHandlers) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	bctx, done, err := h.bind(ctx, reqRoots)
	if err != nil {
		return nil, err
	}
	if len(h.m.opts.serverInterceptors) > 0 {
		defer done()
		return interceptServer(bctx, h, string(mcp.MethodListRoots), (*struct{})(nil),
			func(context.Context, *struct{}) (*mcp.ListRootsResult, error) { return h.roots(), nil })
	}
	done()
	return h.roots(), nil
}

// roots is the answer to a roots/list.
func (h *leaseHandlers) roots() *mcp.ListRootsResult {
	roots := h.m.Roots()
	if roots == nil {
		roots = []mcp.Root{}
	}
	return &mcp.ListRootsResult{Roots: roots}
}
