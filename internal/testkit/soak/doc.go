// Package soak holds TestSoak: a fleet of more than twenty MCP servers of
// every kind the Manager speaks to (the TypeScript reference server over
// stdio and streamable HTTP, the official Go SDK server over stdio and HTTP,
// mcp-go over HTTP, SSE and in process, and the servers whose calls survive
// their connection: the TypeScript SDK's resumable server and mcp-go with
// tasks, behind proxies), eight callers that each check the answer is
// exactly theirs, and random faults (SIGKILL, an HTTP restart on the same
// port, a hang, Disable then Enable, Reconnect, a cut of every connection
// to a server) for a while.
//
// It exists because the unit tests each exercise one fault at a time, and
// the bugs that hurt hosts (a budget spent across separate outages, an error
// no documented class covers, a call that outlives its context) show up only
// when faults overlap and the machine is busy. Every call ends in one of the
// classes the README documents, or the soak fails and says which server,
// which rule, and which fault was in flight.
//
// The duration comes from SOAK (a Go duration, 30s when unset), the fault
// schedule's seed from SOAK_SEED (logged on every run). It reads /proc and
// sends POSIX signals, so it runs on Linux only.
package soak
