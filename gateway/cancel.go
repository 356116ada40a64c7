package gateway

import (
	"bytes"
	"context"
	"sync"
)

// cancels are the 2026-07-28 requests in flight over HTTP, for the
// notifications/cancelled that name them.
//
// mcp-go keys the requests it may cancel by session id and request id, and
// a 2026-07-28 request has no session: every client's request 7 has the
// same key, and any client could end any other's call by sending
// notifications/cancelled {requestId: 7}. So the HTTP front keeps those
// notifications from mcp-go and answers them itself: a cancellation holds
// only for a request of the same client (peer.client) on the same
// connection (peer.conn), the one thing a second client cannot share. Over
// HTTP/2 a client's requests share its connection; over HTTP/1.1 a
// 2026-07-28 client cancels by ending the request's stream (the protocol's
// way, and what mcp-go's client does), which ends the call too.
type cancels struct {
	mu sync.Mutex
	m  map[cancelKey][]*cancelEntry
}

// cancelKey is one request id of one client on one connection.
type cancelKey struct {
	client, conn string
	id           string // the id as the client wrote it (JSON)
}

type cancelEntry struct{ cancel context.CancelFunc }

// add registers the request id of p's, whose context cancel ends; the
// returned function takes it off (when the request is done).
func (c *cancels) add(p *peer, id []byte, cancel context.CancelFunc) func() {
	k := cancelKey{p.client, p.conn, string(bytes.TrimSpace(id))}
	e := &cancelEntry{cancel}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[cancelKey][]*cancelEntry{}
	}
	c.m[k] = append(c.m[k], e)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		list := c.m[k]
		for i, x := range list {
			if x == e {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(c.m, k)
		} else {
			c.m[k] = list
		}
	}
}

// cancel ends p's requests of id in flight on p's connection, and reports
// whether there was one: a cancellation that names no request of its
// sender's is dropped.
func (c *cancels) cancel(p *peer, id []byte) bool {
	k := cancelKey{p.client, p.conn, string(bytes.TrimSpace(id))}
	c.mu.Lock()
	list := c.m[k]
	delete(c.m, k)
	c.mu.Unlock()
	for _, e := range list {
		e.cancel()
	}
	return len(list) > 0
}
