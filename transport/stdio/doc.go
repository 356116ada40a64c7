// Package stdio runs an MCP server as a child process and hands mcp-go its
// pipes.
//
// mcp-go's own stdio transport starts the child with exec.CommandContext
// (cancelling the start context kills it), fires no callback when the child
// dies and leaves it a zombie until Close. Here the process is ours from
// spawn to reap instead: Dial starts it so that it and everything it
// starts form a tree we own, a goroutine of ours waits for it and closes
// Done within milliseconds of its exit (Err then names the exit status or
// signal and quotes the last lines of stderr), stderr is drained into a
// bounded ring buffer so a noisy child can neither block nor grow our
// memory, and Close ends the whole tree with a bounded escalation that
// always reaps.
//
// mcp-go gets only stdin and stdout, through transport.NewIO: Transport
// returns it unstarted, and the caller (the Manager) builds the mcp-go
// client, starts it and runs the handshake.
//
// A *Conn satisfies the client package's Conn interface without importing
// it.
//
// What differs by OS is in one small file per OS with the same functions
// (proc_unix.go, proc_windows.go); the rest is shared:
//
//   - Unix: the tree is the child's own process group; Close goes close
//     stdin, SIGTERM, SIGKILL to the group. On Linux the exit watcher also
//     kills what a dead child left in its group, while the unreaped child
//     keeps the group id from being reused (waitid with WNOWAIT); other
//     Unixes leave that to Close.
//   - Linux, when the host dies without closing (SIGKILL, the OOM killer,
//     a crash): the child gets SIGKILL as its parent-death signal, and a
//     guard, a tiny /bin/sh in the child's group that waits on a pipe only
//     the host holds, kills the rest of the group when the kernel closes
//     that pipe with the host (guard_linux.go says why this shape).
//   - Windows: the child starts suspended and is put in a Job Object with
//     JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE before it runs, so nothing it
//     starts escapes the job, and the job dies with the host even when the
//     host is killed. It has no console window (CREATE_NO_WINDOW), so a GUI
//     host does not flash one per child. Close goes close stdin, then
//     TerminateJobObject (there is no SIGTERM), which Err reports as
//     SIGKILL; the exit watcher ends what a dead child left in the job.
//   - macOS, the BSDs: nothing ties a child to the host's life; a child
//     that does not exit on stdin EOF outlives a killed host.
//
// What a child costs the host: on Linux, six file descriptors (our ends of
// its three pipes, its pidfd, its guard's pipe and pidfd) and two
// processes (the child and its guard). A spawn that finds none left (the
// host's RLIMIT_NOFILE or RLIMIT_NPROC, the system's limits, memory) fails
// with ErrOutOfResources, which says what ran out and wraps the OS's
// error, and leaves nothing behind: no descriptor, no process, no guard,
// no goroutine. Nothing is wrong with the server then, so the Manager
// retries such a dial on its backoff like any other.
//
// A Registry (OpenRegistry, WithRegistry) is the fallback everywhere: it
// records each child's process group, with its leader's start time, in a
// state file of the host's choosing, and the next Registry opened on that
// file ends the groups a crashed host left, those and only those whose
// leader is still the very process recorded.
package stdio
