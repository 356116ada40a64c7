package http

import (
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// Authorizer gives a Conn's requests their credentials and answers the
// server's refusals of them. It belongs to the server, not to one Conn:
// the client package gives every Conn of a server the same one, so tokens
// outlive reconnects. transport/http/oauth's Authorizer is the MCP
// authorization one.
type Authorizer interface {
	// Authorize sets the credentials of req (a clone the Conn owns) just
	// before it is sent. An error fails the request unsent.
	Authorize(req *nethttp.Request) error
	// Answered is told the server refused req with resp, an HTTP 401 or
	// 403; it must not read resp's body. retry means: send req again, with
	// credentials Authorize will now set. An error fails the request
	// unsent (the server did not run it) with that error. Neither means
	// resp is the server's answer to pass on.
	Answered(req *nethttp.Request, resp *nethttp.Response) (retry bool, err error)
}

// Acceptor is an Authorizer that is told when the server took a
// request's credentials: it answered with neither a refusal (401, 403)
// nor a server error. transport/http/oauth's Authorizer is one: a token
// it just refreshed that the server refuses before taking it once sends
// the user to authorize, instead of refreshing again.
type Acceptor interface {
	Accepted(req *nethttp.Request)
}

// WithAuthorizer makes every request of the Conn (the MCP requests, the
// notification stream, the session DELETE) to the server's origin carry
// a's credentials, and hands a the server's 401 and 403 answers; a
// request to any other origin never gets them. A request a says to retry is
// sent once more; one it fails, fails with its error, marked not sent
// (isNotSent): a request the server refused for its credentials did not
// run.
func WithAuthorizer(a Authorizer) Option {
	return func(o *options) { o.auth = a }
}

// authorized sends req with the Authorizer's credentials, and once more
// when the Authorizer fixed what the server refused.
func (rt *roundTripper) authorized(req *nethttp.Request, a Authorizer) (*nethttp.Response, error) {
	areq := req.Clone(req.Context())
	if err := a.Authorize(areq); err != nil {
		return nil, &notSentError{err: fmt.Errorf("authorization: %w", err)}
	}
	resp, err := rt.sendOnce(areq)
	if err == nil && resp.StatusCode >= 500 && areq.Header.Get("Authorization") != "" {
		resp = rt.probeCredentials(req, resp)
	}
	if err != nil || !refused(resp) {
		accepted(a, areq, resp)
		return resp, err
	}
	retry, aerr := a.Answered(areq, resp)
	if aerr == nil && !retry {
		return resp, nil
	}
	discard(resp)
	if aerr != nil {
		return nil, &notSentError{err: fmt.Errorf("authorization: %w", aerr)}
	}
	again, ok := rewind(req)
	if !ok {
		return nil, &notSentError{err: fmt.Errorf("authorization: HTTP %d, and the request cannot be sent again", resp.StatusCode)}
	}
	if err := a.Authorize(again); err != nil {
		return nil, &notSentError{err: fmt.Errorf("authorization: %w", err)}
	}
	resp, err = rt.sendOnce(again)
	if err == nil && resp.StatusCode >= 500 && again.Header.Get("Authorization") != "" {
		// The fresh credentials may be refused with a 5xx as the old were.
		resp = rt.probeCredentials(req, resp)
	}
	if err != nil || !refused(resp) {
		accepted(a, again, resp)
		return resp, err
	}
	// Refused again with fresh credentials: no second retry. The
	// Authorizer may know what the user must do about it.
	if _, aerr := a.Answered(again, resp); aerr != nil {
		discard(resp)
		return nil, &notSentError{err: fmt.Errorf("authorization: %w", aerr)}
	}
	return resp, nil
}

// accepted tells a, if it wants to know, that the server took req's
// credentials when resp says so.
func accepted(a Authorizer, req *nethttp.Request, resp *nethttp.Response) {
	if acc, ok := a.(Acceptor); ok && resp != nil && resp.StatusCode < 500 && !refused(resp) {
		acc.Accepted(req)
	}
}

func refused(resp *nethttp.Response) bool {
	return resp.StatusCode == nethttp.StatusUnauthorized || resp.StatusCode == nethttp.StatusForbidden
}

// discard drains a little of resp's body, so the connection can be reused,
// and closes it.
func discard(resp *nethttp.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}

// probeCredentials is told the server answered resp, a 5xx, to req sent
// with credentials. Some servers answer a token they no longer accept
// with a 5xx instead of a 401 (the TypeScript SDK's example server does,
// after a restart that forgot its tokens), which would pass for an outage
// for as long as the token lasts. For a handshake request (initialize,
// server/discover: nothing runs), req is sent once more without
// credentials: a 401 or 403 then is the server saying it is up and wants
// credentials, so the token is what it failed on, and that answer goes to
// the Authorizer (one refresh, or the user). Any other answer leaves resp
// as the server's.
func (rt *roundTripper) probeCredentials(req *nethttp.Request, resp *nethttp.Response) *nethttp.Response {
	if !opensConnection(req) {
		return resp
	}
	probe, ok := rewind(req)
	if !ok {
		return resp
	}
	probe.Header.Del("Authorization")
	presp, err := rt.sendOnce(probe)
	if err != nil {
		return resp
	}
	if !refused(presp) {
		discard(presp)
		return resp
	}
	discard(resp)
	return presp
}

// opensConnection reports whether req opens a connection (initialize, or
// 2026-07-28's server/discover): a request that runs nothing on the
// server, so it may be sent once more.
func opensConnection(req *nethttp.Request) bool {
	if m := req.Header.Get(mcp.HeaderMethod); m != "" {
		return handshake(m)
	}
	if req.Method != nethttp.MethodPost || req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	var msg struct {
		Method string `json:"method"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 1<<16)).Decode(&msg); err != nil {
		return false
	}
	return handshake(msg.Method)
}
