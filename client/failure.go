package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpfleet/mcpfleet/internal/failure"
)

// notCanceled hides the context errors in the chain of a failure caused by
// a context other than the caller's (the runtime's, ended when it was
// closed; a dial's timeout; a run of call timeouts), so that the error
// cannot pass for the caller's own cancellation with errors.Is. The rest of
// the chain still matches.
func notCanceled(err error) error {
	if err == nil || !failure.Context(err) {
		return err
	}
	return ctxHidden{err}
}

// ctxHidden is an error whose chain matches everything its cause's does but
// the context errors.
type ctxHidden struct{ err error }

func (e ctxHidden) Error() string { return e.err.Error() }

func (e ctxHidden) Is(target error) bool {
	if target == context.Canceled || target == context.DeadlineExceeded {
		return false
	}
	return errors.Is(e.err, target)
}

func (e ctxHidden) As(target any) bool { return errors.As(e.err, target) }

// canceledError is the error of a request whose caller's context ended: it
// wraps the context's error, and no sentinel, since nothing failed but the
// caller's patience.
func canceledError(ctx context.Context, server string, err error) error {
	if err == nil || errors.Is(err, ctx.Err()) {
		if err == nil {
			err = ctx.Err()
		}
		return &ServerError{Server: server, Err: err}
	}
	// Some servers answer with their own error for the cancelled request;
	// keep the context's error testable, and the answer readable.
	return &ServerError{Server: server, Err: fmt.Errorf("%w (%v)", ctx.Err(), err)}
}

type outcome int

const (
	outcomeResult   outcome = iota // the server answered, with an error: a result
	outcomeCanceled                // the caller's context ended
	outcomeNotSent                 // provably never executed: safe to send again
	outcomeLost                    // anything else: the outcome is unknown
	outcomeTooLarge                // answered over the message size limit
)

// classify decides what a failed request on c means. The caller's context
// comes first (mcp-go wraps context errors in *mcptransport.Error too). Then
// only the error's type decides, never its text: mcp-go returns the
// server's JSON-RPC error answer as a plain error
// (JSONRPCErrorDetails.AsError), and every failure under it, wrapped in
// *mcptransport.Error. Of those, only the ones that prove the request was not
// run are "not sent"; every other one is lost.
func classify(ctx context.Context, c transport.Conn, err error) outcome {
	if ctx.Err() != nil {
		return outcomeCanceled
	}
	var te *mcptransport.Error
	if !errors.As(err, &te) {
		return outcomeResult
	}
	if tooLarge(err) != nil {
		return outcomeTooLarge
	}
	if notSent(c, err) {
		return outcomeNotSent
	}
	return outcomeLost
}

// notSent reports whether a transport failure proves the server never ran
// the request: it rejected our session (it forgot it: HTTP 404, or the 400
// forms transport/http turns into it), the request never left (connection
// refused, a failed dial), or c knows it never wrote it.
func notSent(c transport.Conn, err error) bool {
	if errors.Is(err, mcptransport.ErrSessionTerminated) || errors.Is(err, transport.ErrNotSent) || failure.NeverSent(err) {
		return true
	}
	k, ok := c.(transport.Classifier)
	return ok && k.NotSent(err)
}

// fatal reports whether a failure means c's connection is unusable:
// broken under the request, or so c says of its own transport's errors.
func fatal(c transport.Conn, err error) bool {
	if failure.Broken(err) {
		return true
	}
	k, ok := c.(transport.Classifier)
	return ok && k.Fatal(err)
}

// check looks at l's runtime after a request on it was lost, and detaches it
// if it is dead: its Conn reported its death (waited for briefly: a child's
// exit is reaped a moment after mcp-go sees its stdout close) or mcp-go's
// transport is closed. A live one stays: an HTTP exchange can break while
// the server and its session are fine, and the next request tells which.
// It returns err with the Conn's account of its death, if any.
func (s *slot) check(l *lease, err error) error {
	t := time.NewTimer(deathReportWait)
	select {
	case <-l.conn.Done():
	case <-t.C:
	}
	t.Stop()
	err = explain(l.conn, err)
	if connErr(l.conn) != nil || errors.Is(err, mcptransport.ErrTransportClosed) {
		s.lost(l, err)
	}
	return err
}

// connErr returns the Conn's own account of its death, if it died.
func connErr(c transport.Conn) error {
	select {
	case <-c.Done():
		if err := c.Err(); err != nil {
			return err
		}
		return errConnDone
	default:
		return nil
	}
}

var errConnDone = errors.New("connection closed")

// deathReportWait bounds how long a failure waits for its Conn to report
// why it died.
const deathReportWait = 100 * time.Millisecond

// explain puts the Conn's own account of its death in place of a fatal
// err, which is only its symptom ("transport closed"); both stay in the
// chain. mcp-go sees a dead child's EOF before the exit watcher has reaped
// it, so the account may be a moment behind: wait for it, briefly.
func explain(c transport.Conn, err error) error {
	if !fatal(c, err) {
		return err
	}
	t := time.NewTimer(deathReportWait)
	defer t.Stop()
	select {
	case <-c.Done():
	case <-t.C:
	}
	if cause := connErr(c); cause != nil && !errors.Is(err, cause) {
		return &deathError{symptom: err, cause: cause}
	}
	return err
}

// plain returns err without the words of mcp-go's *transport.Error
// ("transport error: "), which wraps every failure under a request and
// says nothing the failure's own text does not. The chain is kept: the
// result wraps err.
func plain(err error) error {
	if te, ok := err.(*mcptransport.Error); ok && te.Err != nil {
		return &plainError{err: te}
	}
	return err
}

// plainError reads as the error under mcp-go's wrapper, and wraps the
// wrapper.
type plainError struct{ err *mcptransport.Error }

func (e *plainError) Error() string { return e.err.Err.Error() }
func (e *plainError) Unwrap() error { return e.err }

// deathError is a request's failure whose cause is its connection's death:
// it reads as the cause, and matches both.
type deathError struct{ symptom, cause error }

func (e *deathError) Error() string   { return e.cause.Error() }
func (e *deathError) Unwrap() []error { return []error{e.cause, e.symptom} }

// connLost is the cause recorded when a Conn's Done channel closed.
func connLost(c transport.Conn) error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("connection lost: %w", err)
	}
	return fmt.Errorf("connection lost: %w", errConnDone)
}

// unavailable builds the error of a call that gave up waiting, or whose
// runtime was lost twice under it, with cause or else the last one.
func (s *slot) unavailable(cause error) *UnavailableError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unavailableLocked(cause)
}

// unavailableLocked builds the error of a call that gave up waiting.
func (s *slot) unavailableLocked(cause error) *UnavailableError {
	if cause == nil {
		cause = s.lastErr
	}
	// A cause from a context other than the caller's (a dial that timed
	// out, a run of call timeouts) must not pass for the caller's own.
	cause = notCanceled(cause)
	return &UnavailableError{
		Server:     s.name,
		State:      s.state,
		Generation: s.gen,
		Attempt:    s.budget.Attempts(),
		NextRetry:  s.nextRetry,
		Cause:      cause,
	}
}
