package otel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// StateChange keeps the server's state for the servers-by-state counts and
// the requests' wait events, and records sessions, reconnects and
// recoveries. It runs on the Manager's event goroutine, in order.
func (o *Observer) StateChange(server string, from, to lifecycle.State, gen uint64, cause error) {
	now := time.Now().UnixNano()
	ctx := context.Background()
	s := o.serverState(server)
	s.state.Store(int32(to))
	s.seen.Store(true)
	srv := ServerKey.String(server)

	if from == lifecycle.Connected && s.sessionStart != 0 {
		o.endSession(ctx, s, srv, now, cause)
	}
	switch {
	case to == lifecycle.Connected:
		s.sessionStart, s.sessionGen = now, gen
		if s.lostAt != 0 {
			o.recovery.Record(ctx, seconds(now-s.lostAt), metric.WithAttributes(srv))
			s.lostAt = 0
		}
	case from == lifecycle.Connected && to == lifecycle.Reconnecting:
		o.reconnects.Add(ctx, 1, metric.WithAttributes(srv))
		s.lostAt = now
	case !to.Accepting():
		s.lostAt = 0 // no recovery to time
	}

	if to == lifecycle.Closed {
		o.mu.Lock()
		if o.servers[server] == s {
			delete(o.servers, server)
		}
		o.mu.Unlock()
	}
}

// endSession records the session of s's runtime generation, which ended at
// now; cause is why, if a failure ended it. A runtime closed for going
// idle (client.ErrIdleTimeout) ended without a failure.
func (o *Observer) endSession(ctx context.Context, s *serverState, srv attribute.KeyValue, now int64, cause error) {
	var kv [8]attribute.KeyValue
	attrs := append(kv[:0], srv)
	if rt := s.runtime.Load(); rt != nil && rt.gen == s.sessionGen {
		attrs = runtimeAttrs(attrs, &rt.req)
	}
	if cause != nil && !errors.Is(cause, client.ErrIdleTimeout) {
		attrs = append(attrs, failureType(cause))
	}
	o.sessionDur.Record(ctx, seconds(now-s.sessionStart), attrs...)
	s.sessionStart = 0
}

// Dial records a connection attempt's duration, and remembers the newest
// generation for the requests' wait events.
func (o *Observer) Dial(server string, gen uint64, took time.Duration, err error) {
	srv := ServerKey.String(server)
	if err == nil {
		d := &o.serverState(server).dialed
		for old := d.Load(); gen > old && !d.CompareAndSwap(old, gen); old = d.Load() {
		}
		o.dialDuration.Record(context.Background(), took.Seconds(), metric.WithAttributes(srv))
		return
	}
	o.dialDuration.Record(context.Background(), took.Seconds(), metric.WithAttributes(srv, failureType(err)))
}

func seconds(ns int64) float64 { return time.Duration(ns).Seconds() }
