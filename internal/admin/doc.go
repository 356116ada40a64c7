// Package admin is the wire between mcpfleet's serve and its other
// commands: a running serve answers status, tools, call, watch and auth
// for the commands of the same config on a loopback admin endpoint
// (Handler), in the reports this package defines, and a command without a
// serve builds the same reports from a Manager of its own (Reports,
// ToolReports, Call, Authorize). Only cmd/mcpfleet uses it: a host that
// embeds a gateway has the Manager itself.
package admin
