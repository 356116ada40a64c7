package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
)

// Explain renders the error of a call to the tool qualified as a message
// for the model: what happened, in terms of what the model can do next
// (retry soon, check before retrying, use another tool, ask the user).
// It tells the client's error classes apart with errors.Is and errors.As
// and adds the error's own message, which the client keeps free of
// secrets. now is the time a retry is counted from; the zero time means
// time.Now().
func Explain(qualified string, err error, now time.Time) string {
	if err == nil {
		return ""
	}
	if now.IsZero() {
		now = time.Now()
	}
	server := "the server"
	var se *client.ServerError
	if errors.As(err, &se) && se.Server != "" {
		server = "server " + se.Server
	}
	var msg string
	var ua *client.UnavailableError
	switch {
	case errors.As(err, &ua):
		msg = fmt.Sprintf("%s is %s and did not come back in time; ", server, strings.ToLower(ua.State.String()))
		if ua.NextRetry.IsZero() {
			msg += "retry in a few seconds."
		} else {
			wait := max(ua.NextRetry.Sub(now), time.Second)
			msg += fmt.Sprintf("it reconnects in about %d s; retry then.", int(math.Ceil(wait.Seconds())))
		}
	case errors.Is(err, client.ErrUnavailable):
		msg = server + " is restarting; retry in a few seconds."
	case errors.Is(err, client.ErrOutcomeUnknown):
		msg = fmt.Sprintf("the connection to %s was lost while %s ran, so it may or may not have taken effect. "+
			"Check its effect (with a read-only tool) before calling it again.", server, qualified)
	case errors.Is(err, ErrNotAllowed):
		msg = qualified + " may not be called here. Do not try it again; search for a tool that is allowed."
	case errors.Is(err, client.ErrToolNotFound):
		msg = fmt.Sprintf("there is no tool %s (it may have been removed or renamed). Search the tools again and call one that exists.", qualified)
	case errors.Is(err, client.ErrNeedsAuthorization):
		msg = server + " needs the user to authorize access. Tell the user to sign in to it; retrying will not help until then."
	case errors.Is(err, client.ErrPermanentlyFailed):
		msg = server + " has failed and is not reconnecting. Do not retry; use another tool, or tell the user it is down."
	case errors.Is(err, client.ErrDisabled):
		msg = server + " is turned off. Use another tool, or ask the user to enable it."
	case errors.Is(err, client.ErrClosed), errors.Is(err, client.ErrUnknownServer):
		msg = server + " is no longer connected. Use another tool."
	case errors.Is(err, client.ErrMessageTooLarge):
		msg = "the result of " + qualified + " was too large to receive. Call it again asking for less (a smaller page, a narrower query)."
	case errors.Is(err, client.ErrServerError):
		msg = server + " rejected the call. Check the arguments against the tool's schema before retrying."
	case errors.Is(err, context.DeadlineExceeded):
		msg = "the call to " + qualified + " timed out; it may still take effect. Check before retrying, or retry with a smaller request."
	case errors.Is(err, context.Canceled):
		msg = "the call to " + qualified + " was cancelled."
	default:
		msg = "the call to " + qualified + " failed."
	}
	return msg + " (" + err.Error() + ")"
}
