package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The Manager's raw requests: the ones it sends on a runtime's transport
// itself, past mcp-go's Client, which has no method for an arbitrary
// request (the task calls, taskwire.go) or does more than the Manager
// wants (tools/list, listTools). mcp-go's request id counter is its own,
// so these carry string ids of the Manager's that cannot meet its numbers.

// rawCall sends method with params on c's transport, as c itself would
// send a request: on 2026-07-28 with the protocol's per-request _meta
// (protocol version, client capabilities, with the tasks extension if ext,
// client info, log level) and its standard headers (Mcp-Method, and
// Mcp-Name: name, the tool or the task id); an answer that is a JSON-RPC
// error comes back as mcp-go's error for it, and every failure under it
// wrapped in *mcptransport.Error, so that the request pipeline classifies
// them as it does mcp-go's own. A request whose ctx ends before its
// answer is cancelled as mcp-go cancels its own (cancelRaw). params is
// changed.
func (m *Manager) rawCall(ctx context.Context, s *slot, c *mcpclient.Client, method string, params map[string]any, name string, ext bool) (json.RawMessage, error) {
	version := c.ProtocolVersion()
	meta := map[string]any{}
	if in := withMeta(ctx, nil); in != nil {
		if in.ProgressToken != nil {
			meta["progressToken"] = in.ProgressToken
		}
		for k, v := range in.AdditionalFields {
			meta[k] = v
		}
	}
	var header http.Header
	if mcp.IsModernProtocol(version) {
		s.mu.Lock()
		level := s.logLevelLocked()
		s.mu.Unlock()
		meta[mcp.MetaKeyProtocolVersion] = version
		meta[mcp.MetaKeyClientCapabilities] = m.clientCapabilities(c, ext)
		meta[mcp.MetaKeyClientInfo] = m.opts.clientInfo
		if level != "" {
			meta[mcp.MetaKeyLogLevel] = level
		}
		header = http.Header{}
		header.Set(mcp.HeaderMethod, method)
		if v, ok := mcp.EncodeHeaderValue(name); ok && name != "" {
			header.Set(mcp.HeaderName, v)
		}
		if method == string(mcp.MethodToolsCall) {
			if tool := m.catalogTool(s, name); tool != nil {
				if encoded, err := json.Marshal(params); err == nil {
					for k, v := range mcp.GenerateParamHeaders(tool, encoded) {
						header.Set(k, v)
					}
				}
			}
		}
	}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	req := mcptransport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("mcpfleet-" + strconv.FormatUint(m.rawSeq.Add(1), 36)),
		Method:  method,
		Params:  params,
		Header:  header,
	}
	if err := ctx.Err(); err != nil {
		return nil, mcptransport.NewError(err)
	}
	resp, err := c.GetTransport().SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			m.cancelRaw(ctx, c, req)
		}
		return nil, mcptransport.NewError(err)
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	return resp.Result, nil
}

// clientCapabilities are the capabilities c declares on every request, as
// mcp-go's Client computes them from its handlers, with the tasks
// extension when ext.
func (m *Manager) clientCapabilities(c *mcpclient.Client, ext bool) mcp.ClientCapabilities {
	caps := c.GetClientCapabilities()
	if m.opts.sampling != nil && caps.Sampling == nil {
		caps.Sampling = &mcp.SamplingCapability{}
	}
	if m.opts.rootsEnabled && caps.Roots == nil {
		caps.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}
	}
	if ext {
		exts := make(map[string]any, len(caps.Extensions)+1)
		for k, v := range caps.Extensions {
			exts[k] = v
		}
		exts[TaskProtocolExtension] = map[string]any{}
		caps.Extensions = exts
	}
	return caps
}

// catalogTool returns the server's tool named name from its published
// catalog, if it is there.
func (m *Manager) catalogTool(s *slot, name string) *mcp.Tool {
	c, ok := m.pub.View().Catalog(s.name)
	if !ok {
		return nil
	}
	for i := range c.Tools {
		if c.Tools[i].Name == name {
			return &c.Tools[i]
		}
	}
	return nil
}

// cancelNoticeTimeout bounds the sending of a raw request's cancellation,
// as mcp-go bounds its own.
const cancelNoticeTimeout = 5 * time.Second

// cancelRaw tells the server to stop working on req, whose ctx ended
// before its answer, by mcp-go's rule for its own requests: with a
// notifications/cancelled over stdio and in process, and not for a
// task-augmented request (tasks/cancel ends a task). Over HTTP
// transport/http sends the notification itself (cancel.go). It is sent
// off the caller's path, best effort, bounded by cancelNoticeTimeout and
// by the Manager's life. The goroutine is counted in m.wg while the count
// cannot be zero: every raw request is made from a goroutine of the
// Manager's own (the runner, a watcher, a poll worker) or within a call
// on a lease, which the lease's drain, itself counted, waits for.
func (m *Manager) cancelRaw(ctx context.Context, c *mcpclient.Client, req mcptransport.JSONRPCRequest) {
	t := c.GetTransport()
	if _, ok := t.(mcptransport.HTTPConnection); ok {
		return
	}
	if p, ok := req.Params.(map[string]any); ok && p["task"] != nil {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{
				AdditionalFields: map[string]any{"requestId": req.ID, "reason": ctx.Err().Error()},
			},
		},
	}
	m.wg.Go(func() {
		ctx, cancel := context.WithTimeout(m.ctx, cancelNoticeTimeout)
		defer cancel()
		_ = t.SendNotification(ctx, n)
	})
}

// listTools returns the function that lists a page of the tools of c's
// server, for fetchLists. Over HTTP on 2026-07-28 it is mcp-go's
// ListToolsByPage, which also keeps each tool's definition so that a
// tools/call mirrors the arguments its schema marks with x-mcp-header into
// Mcp-Param-* headers (SEP-2243), and drops a tool whose marks break that
// proposal's rules. Over stdio and in process no header goes anywhere, and
// the older protocol has no such headers, so there the tools are listed
// raw: mcp-go would otherwise keep a second copy of every tool beside the
// catalog and, on 2026-07-28, encode and decode the tool's input schema on
// every call to find marks whose headers no one reads (about 40
// allocations a call; BENCHMARKS.md, issue 40).
func (m *Manager) listTools(s *slot, c *mcpclient.Client) func(context.Context, mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	if _, ok := c.GetTransport().(mcptransport.HTTPConnection); ok && mcp.IsModernProtocol(c.ProtocolVersion()) {
		return c.ListToolsByPage
	}
	return func(ctx context.Context, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
		params := map[string]any{}
		if req.Params.Cursor != "" {
			params["cursor"] = req.Params.Cursor
		}
		raw, err := m.rawCall(ctx, s, c, string(mcp.MethodToolsList), params, "", false)
		if err != nil {
			return nil, err
		}
		var res mcp.ListToolsResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("failed to unmarshal response: %w", err)
		}
		return &res, nil
	}
}
