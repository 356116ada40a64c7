package http

import (
	"fmt"
	"io"
	nethttp "net/http"
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
	if err != nil || !refused(resp) {
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
	if err != nil || !refused(resp) {
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

func refused(resp *nethttp.Response) bool {
	return resp.StatusCode == nethttp.StatusUnauthorized || resp.StatusCode == nethttp.StatusForbidden
}

// discard drains a little of resp's body, so the connection can be reused,
// and closes it.
func discard(resp *nethttp.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}
