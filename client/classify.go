package client

import (
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
)

// IsStaleSession reports whether err says the server forgot our session: an
// HTTP 404 (transport.ErrSessionTerminated), or the HTTP 400 with JSON-RPC
// -32000 "No valid session ID provided" that some servers answer instead.
// Such a request was never executed.
func IsStaleSession(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, transport.ErrSessionTerminated) {
		return true
	}
	return strings.Contains(err.Error(), "No valid session ID")
}
