//go:build unix

package client_test

import (
	"context"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// BenchmarkStdioRecovery measures, with the default reconnect policy, how
// long the Manager takes from the SIGKILL of a Go stdio server to the
// Reconnecting event and to Connected again (a new child spawned, the
// handshake done and the catalog fetched). Each iteration adds a fresh
// server, so every kill is the first loss of a fresh budget, the common case
// of a server that had been up. The metrics are medians over the iterations,
// from the events' own timestamps; ns/op is the mean time to Connected.
func BenchmarkStdioRecovery(b *testing.B) {
	b.Run("server=fresh", func(b *testing.B) { benchStdioRecovery(b, false) })
	b.Run("server=same", func(b *testing.B) { benchStdioRecovery(b, true) })
}

// benchStdioRecovery kills a fresh server each iteration, or (same) the same
// server again and again, a call answered between kills: a server that
// keeps coming back, which must recover as fast on its hundredth kill as on
// its first.
func benchStdioRecovery(b *testing.B, same bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := client.New() // the default policy, dial and close timeouts
	defer m.Close()
	events, unsubscribe := m.Events(4096)
	defer unsubscribe()
	// waitFor returns the time of the next state event of server into to.
	waitFor := func(server string, to lifecycle.State) time.Time {
		b.Helper()
		for {
			select {
			case e := <-events:
				if e.Server == server && e.Kind == client.EventState && e.To == to {
					return e.Time
				}
			case <-ctx.Done():
				b.Fatalf("server %s: no %s event", server, to)
			}
		}
	}

	var toReconnecting, toConnected []time.Duration
	i := 0
	name := ""
	for b.Loop() {
		b.StopTimer()
		if !same || name == "" {
			name = "s" + strconv.Itoa(i)
			i++
			if err := m.Add(ctx, name, faultServerSpec()); err != nil {
				b.Fatal(err)
			}
			waitFor(name, lifecycle.Connected)
		}
		res, err := m.CallTool(ctx, name, "pid", nil)
		if err != nil {
			b.Fatal(err)
		}
		pid, err := strconv.Atoi(res.Content[0].(mcp.TextContent).Text)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		toReconnecting = append(toReconnecting, waitFor(name, lifecycle.Reconnecting).Sub(killed))
		toConnected = append(toConnected, waitFor(name, lifecycle.Connected).Sub(killed))

		if !same {
			b.StopTimer()
			if err := m.Remove(ctx, name); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	if st, err := m.Status(name); err == nil && same {
		b.ReportMetric(float64(st.Generation), "generations")
	}
	b.ReportMetric(medianMillis(toReconnecting), "ms-to-reconnecting")
	b.ReportMetric(medianMillis(toConnected), "ms-to-connected")
}

func medianMillis(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	mid := s[len(s)/2]
	if len(s)%2 == 0 {
		mid = (s[len(s)/2-1] + mid) / 2
	}
	return float64(mid) / float64(time.Millisecond)
}
