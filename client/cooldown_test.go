package client

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// downServer accepts connections on 127.0.0.1 and closes them at once,
// counting them: an upstream that is down, where each dial shows.
type downServer struct {
	ln    net.Listener
	conns atomic.Int64
	done  chan struct{}
}

func startDown(t *testing.T) *downServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &downServer{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(d.stop)
	return d
}

func (d *downServer) stop() {
	d.ln.Close()
	<-d.done
}

// An upstream down for a while (3 s here, a 30 s outage scaled down ten
// times, with the backoff scaled alike) gets at most one dial per backoff
// step from four replicas sharing their cooldown, not one per replica;
// when it is back, one replica's dial finds it and every replica connects.
func TestSharedCooldown(t *testing.T) {
	const replicas = 4
	const outage = 3 * time.Second
	policy := lifecycle.Policy{InitialInterval: 20 * time.Millisecond, MaxInterval: 160 * time.Millisecond,
		Multiplier: 2, Jitter: -1, MaxAttempts: -1, FastInterval: -1}
	down := startDown(t)
	addr := down.ln.Addr().String()
	shared := store.NewMemory()
	ms := make([]*Manager, replicas)
	for i := range ms {
		ms[i] = newTestManager(t, WithSharedState(shared), WithPolicy(policy))
		mustAdd(t, ms[i], "up", ServerSpec{HTTP: &mcphttp.Spec{URL: "http://" + addr + "/mcp"}})
	}
	began := time.Now()
	<-time.After(outage) // the outage's length, not a state
	var attempts int64
	for _, m := range ms {
		attempts += int64(m.Stats().Total.Dials)
	}
	elapsed := time.Since(began)
	conns := down.conns.Load()
	down.stop()

	// The schedule every replica reads: how many steps fit in the outage.
	steps, at := 0, time.Duration(0)
	for at <= elapsed {
		at += cooldownStep(policy, steps)
		steps++
	}
	// The first connects of fresh replicas are not claimed (nobody has
	// found the upstream down yet): one each, then one per step.
	if limit := int64(steps + replicas); attempts > limit {
		t.Errorf("%d dials in %v from %d replicas; at most %d (%d steps + the first %d)", attempts, elapsed, replicas, limit, steps, replicas)
	}
	if attempts < 2 {
		t.Errorf("%d dials: the replicas stopped dialling", attempts)
	}
	t.Logf("%d dials (%d connections at the upstream) in %v from %d replicas (%d backoff steps fit)",
		attempts, conns, elapsed.Round(time.Millisecond), replicas, steps)

	// Back up, on the same address.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	mcps := mcpserver.NewMCPServer("back", "1.0.0", mcpserver.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(mcps)
	hs := &http.Server{Handler: mcpserver.NewStreamableHTTPServer(mcps), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	defer func() {
		for _, m := range ms {
			m.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-served
	}()
	for _, m := range ms {
		mustWait(t, m, "up", lifecycle.Connected)
	}
	if cd, _ := shared.Cooldown(testCtx(t), cooldownKey(ServerSpec{HTTP: &mcphttp.Spec{URL: "http://" + addr + "/mcp"}})); cd.Attempts != 0 {
		t.Errorf("cooldown after the upstream is back: %+v", cd)
	}
}
