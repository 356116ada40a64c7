// Package client is mcpfleet's Manager: it keeps many MCP servers usable at
// once, each in a stable slot from Add to Remove, and keeps them usable
// when they crash, restart or are switched off.
//
// A host adds servers (Add, or Apply with a config file that Claude
// Desktop, Cursor, VS Code or Gemini CLI would read), reads the tools of
// all of them from one lock-free View, and calls them by qualified name
// ("files__read_file") or by server and tool:
//
//	m := client.New(client.WithLogger(slog.Default()))
//	defer m.Close()
//	m.Add(ctx, "files", client.ServerSpec{Stdio: &stdio.Spec{Command: "npx",
//		Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv"}}})
//	if err := m.WaitConnected(ctx, "files"); err != nil { ... } // err says why not
//	res, err := m.Call(ctx, "files__read_file", map[string]any{"path": "/srv/a.txt"})
//
// # The ten things a host uses
//
//  1. New and Close: one Manager for the host's life; Close ends every
//     server and reaps every child.
//  2. LoadConfig and Apply: a config file, applied as a whole (only what
//     changed is touched); Add, Remove for one server.
//  3. WaitReady (every server) or WaitConnected (one): wait with a
//     context, and get the cause, not only a deadline, when it ends.
//  4. View: the published catalog of every server's tools, prompts and
//     resources, lock-free, the last good one kept while a server is away.
//  5. Call (by qualified name) and CallTool (by server and tool): the same
//     call; the result, or an error that says whether the request ran.
//  6. Status and Statuses: each server's state, generation and last cause.
//  7. Watch: ordered events (state changes, catalog changes) from now on,
//     with the statuses they start from.
//  8. Enable, Disable and Reconnect: switch a server at run time.
//  9. WithTask and Task: a long call as an MCP task that outlives its
//     connection, found again by id after a restart.
//  10. Errors: *ServerError around the sentinels (ErrUnavailable,
//     ErrOutcomeUnknown, ErrPermanentlyFailed, ...), for errors.Is.
//
// The rest (OAuth, limits, filters, resources and prompts, roots,
// subscriptions, idle shutdown, observers) is there when a host needs it.
//
// # What the Manager does for you
//
// Each slot has a lifecycle state (lifecycle.State: Connecting, Connected,
// Reconnecting, PermanentlyFailed, NeedsAuthorization, Disabled, ...), the
// one source of truth for what calls do and what Status and events say.
// When a runtime dies (a child exits, an HTTP stream is lost, a session is
// forgotten) the slot detaches it, closes it, and reconnects within a
// budget (lifecycle.Policy); every runtime carries a generation, so that
// nothing a dead runtime reports touches its replacement. The last good
// catalog stays published while the server is away.
//
// A mistake is not an outage: before a server ever connected, a failure
// no retry can fix (a command not found, a URL that answers 404 to every
// way of speaking MCP, credentials refused with no way to get others, the
// same exit at start three times) settles the slot in PermanentlyFailed at
// once, with the cause in Status.LastError; calls, WaitConnected and
// WaitReady fail fast with it.
//
// # Calls that outlive the connection
//
// A long tool call can run as an MCP task (StartTask, WithTask; a tool that
// requires one runs as one through CallTool): the server answers at once
// with a task, and the Manager polls it from one goroutine, whatever
// runtime the server has, until Task.Wait can return the result. Task
// handles are kept in a TaskStore (a directory of files by default, see
// TaskOptions.Store), so a host that restarts finds them in Tasks and collects
// them. Both protocol generations of tasks are spoken: the 2025-11-25 form
// and the 2026-07-28 tasks extension (SEP-2663).
//
// # Errors
//
// Every per-server error is a *ServerError naming the server and the
// operation, around one of the package's sentinels (ErrUnavailable,
// ErrOutcomeUnknown, ErrPermanentlyFailed, ErrDisabled, ...) and the
// transport's typed error (*stdio.Error, an HTTP error), so a host branches
// with errors.Is and errors.As, never on a message. A call either returns
// the server's answer or says whether the request ran (see CallTool).
//
// # Seeing what happens
//
// WithLogger gets one line per state change and failed attempt (a
// flapping server is summarised); Events and Watch deliver ordered
// events; Status, Statuses and Stats are plain snapshots; WithObserver
// (and the otel module) hand every request to OpenTelemetry.
//
// The design, the state table and the call path are in the repository's
// docs/DESIGN.md.
package client
