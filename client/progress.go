package client

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// progressBuffer is how many progress notifications of one call wait for
// the host's callback; more are dropped until it catches up. Progress is a
// running report, so the next one says as much as a dropped one.
const progressBuffer = 64

// WithProgress asks the server for progress reports on this call and hands
// each notifications/progress of this call (and no other) to fn. fn runs on
// a goroutine of the call, in order, never after the call returned; a slow
// fn never stalls the connection, but reports arriving while 64 wait for
// it are dropped. The progress token is made by the Manager, one per call.
func WithProgress(fn func(mcp.ProgressNotification)) CallOption {
	return func(o *callOptions) { o.progress = fn }
}

// progressSink delivers one call's progress notifications to its callback.
type progressSink struct {
	server string
	ch     chan mcp.ProgressNotification
	done   chan struct{} // closed when the delivery goroutine returned

	mu     sync.Mutex // guards closed and every send on ch
	closed bool
}

type progressTokenKey struct{}

// trackProgress registers a progress token for one call to server and
// returns the call's context carrying it, and the function that ends the
// registration and waits until fn returned for the last time.
func (m *Manager) trackProgress(ctx context.Context, server string, fn func(mcp.ProgressNotification)) (context.Context, func()) {
	token := "mcpfleet-" + strconv.FormatUint(m.progressSeq.Add(1), 10)
	p := &progressSink{server: server, ch: make(chan mcp.ProgressNotification, progressBuffer), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for n := range p.ch {
			fn(n)
		}
	}()
	m.progress.Store(token, p)
	return context.WithValue(ctx, progressTokenKey{}, token), func() {
		m.progress.Delete(token)
		p.mu.Lock()
		p.closed = true
		close(p.ch)
		p.mu.Unlock()
		<-p.done
	}
}

// withProgressToken puts the call's progress token, if it has one, in meta.
func withProgressToken(ctx context.Context, meta *mcp.Meta) *mcp.Meta {
	token, ok := ctx.Value(progressTokenKey{}).(string)
	if !ok {
		return meta
	}
	if meta == nil {
		meta = &mcp.Meta{}
	} else {
		cp := *meta
		meta = &cp
	}
	meta.ProgressToken = token
	return meta
}

// onProgress routes a progress notification from l to the call whose token
// it carries. Reports of other servers' tokens, of finished calls and of
// detached runtimes are dropped. It runs on the transport's goroutine and
// never blocks.
func (l *lease) onProgress(n mcp.JSONRPCNotification) {
	var params mcp.ProgressNotificationParams
	if !decodeParams(n.Params, &params) || l.ctx.Err() != nil {
		return
	}
	token, ok := params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := l.slot.m.progress.Load(token)
	if !ok {
		return
	}
	p := v.(*progressSink)
	if p.server != l.slot.name {
		return
	}
	pn := mcp.ProgressNotification{Notification: mcp.Notification{Method: n.Method}, Params: params}
	p.mu.Lock()
	if !p.closed {
		select {
		case p.ch <- pn:
		default:
		}
	}
	p.mu.Unlock()
}

// decodeParams decodes a notification's params into v.
func decodeParams(params mcp.NotificationParams, v any) bool {
	b, err := json.Marshal(params)
	if err != nil {
		return false
	}
	return json.Unmarshal(b, v) == nil
}
