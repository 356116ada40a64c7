package http_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// mcp-go's server with an event store (the resume tests' servers) starts
	// a session's listening pump for a GET that races the session's end (a
	// DELETE, or the test server's shutdown) and never stops it: the
	// server's goroutine, in the test servers only, not one of ours (make
	// stress found one, once).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/mark3labs/mcp-go/server.(*StreamableHTTPServer).startListeningPump.func1"))
}
