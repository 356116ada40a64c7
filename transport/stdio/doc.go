// Package stdio runs an MCP server as a child process and hands mcp-go its
// pipes.
//
// mcp-go's own stdio transport starts the child with exec.CommandContext
// (cancelling the start context kills it), fires no callback when the child
// dies and leaves it a zombie until Close. Here the process is ours from
// spawn to reap instead: Dial starts it in its own process group, a
// goroutine of ours waits for it and closes Done within milliseconds of its
// exit (Err then names the exit status or signal and quotes the last lines
// of stderr), stderr is drained into a bounded ring buffer so a noisy child
// can neither block nor grow our memory, and Close ends the whole group with
// a bounded close-stdin, SIGTERM, SIGKILL escalation that always reaps.
//
// mcp-go gets only stdin and stdout, through transport.NewIO: Transport
// returns it unstarted, and the caller (the Manager) builds the mcp-go
// client, starts it and runs the handshake.
//
// A *Conn satisfies the client package's Conn interface without importing
// it. The package is for Unix; the exit watcher's early group kill is
// Linux-only.
package stdio
