package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// Per-user scale (issue 30): 10,000 users of a template of 3 HTTP
// servers, 1% of them active at a time (MaxLive 100: each user who comes
// back closes the fleet used least recently).
const (
	scaleUsers  = 10_000
	scaleActive = 100
)

// heap returns the live heap after a full collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkPerUserScale measures, on one pool:
//
//   - IdleUser: what a user whose fleet was closed still costs, in the
//     pool and its shared store (B/idle-user), and with the user's
//     credentials for one OAuth server in the store (B/idle-user-oauth);
//     also what a live fleet of 3 servers costs (B/live-user);
//   - ReturningUser: the first call of a user whose fleet was closed: Get
//     (its tools are published from the shared catalogs: ns-to-tools),
//     then a call, which waits for the connect Get started in the
//     background (ns/op: from Get to the call's answer);
//   - NewUser: the same for a user whose catalogs are not cached (the
//     template's servers per user, as their entries use ${user:token}
//     and SharedCatalogs is not set, and a user never seen): the tools
//     show once the servers connect.
func BenchmarkPerUserScale(b *testing.B) {
	ups := []*upstream{startUpstream(b), startUpstream(b), startUpstream(b)}
	tmplJSON := `{"mcpServers": {`
	for i, u := range ups {
		if i > 0 {
			tmplJSON += ","
		}
		tmplJSON += fmt.Sprintf(`"s%d": {"url": %q, "headers": {"Authorization": "Bearer ${user:token}"}}`, i, u.URL())
	}
	tmplJSON += "}}"
	tmpl, err := fleet.ParseTemplate([]byte(tmplJSON))
	if err != nil {
		b.Fatal(err)
	}
	var closed atomic.Int64
	shared := store.NewMemory()
	// Every user's token gets the same tools: the catalogs are shared.
	p, err := fleet.New(fleet.Config{Template: tmpl, Values: tokens, Shared: shared, MaxLive: scaleActive,
		IdleTimeout: time.Hour, OnClose: func(string, fleet.Reason) { closed.Add(1) }, SharedCatalogs: tmpl.Servers()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	user := func(i int) string { return "user-" + strconv.Itoa(i) }
	// come: the user's request: Get, a call (after the connect), Release.
	come := func(b *testing.B, p *fleet.Pool, u string) (toTools time.Duration) {
		start := time.Now()
		f, err := p.Get(ctx, u)
		if err != nil {
			b.Fatal(err)
		}
		m := f.Manager()
		if m.View().NumTools() != len(ups) {
			for i := range ups {
				if err := m.WaitFor(ctx, "s"+strconv.Itoa(i), lifecycle.Connected); err != nil {
					b.Fatal(err)
				}
			}
		}
		toTools = time.Since(start)
		if _, err := m.CallTool(ctx, "s0", "whoami", nil); err != nil {
			b.Fatal(err)
		}
		f.Release()
		return toTools
	}
	settle := func() {
		for want := p.Stats().Built - uint64(p.Stats().Live); uint64(closed.Load()) < want; {
			runtime.Gosched() // the closes run in the pool's goroutines
		}
	}
	for i := range scaleActive {
		come(b, p, user(i))
	}
	settle()
	live := heap()
	for i := scaleActive; i < scaleUsers; i++ {
		come(b, p, user(i))
	}
	settle()
	idle := heap()
	perIdle := (float64(idle) - float64(live)) / float64(scaleUsers-scaleActive)
	// Each user's credentials for one OAuth server, as the Authorizer
	// keeps them: registration, access and refresh token.
	entry, _ := json.Marshal(&oauth.Entry{Issuer: "https://auth.example.com", Resource: ups[0].URL(),
		Token: &oauth.Token{AccessToken: strings.Repeat("x", 40), RefreshToken: strings.Repeat("x", 40),
			TokenType: "Bearer", Expiry: time.Now().Add(time.Hour), Scopes: []string{"mcp:tools"}},
		Client: &oauth.Client{ID: strings.Repeat("x", 36), Issuer: "https://auth.example.com", AuthMethod: "none"}})
	for i := range scaleUsers {
		k := store.TokenKey{User: user(i), Server: "oauth", Issuer: "https://auth.example.com"}
		if err := shared.SaveToken(ctx, k, store.TokenRecord{Data: entry, Fence: 1}); err != nil {
			b.Fatal(err)
		}
	}
	withTokens := heap()
	perToken := (float64(withTokens) - float64(idle)) / scaleUsers

	b.Run("IdleUser", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(perIdle, "B/idle-user")
		b.ReportMetric(perIdle+perToken, "B/idle-user-oauth")
		b.ReportMetric(float64(live)/scaleActive, "B/live-user")
	})
	b.Run("ReturningUser", func(b *testing.B) {
		var tools time.Duration
		n := 0
		for b.Loop() {
			// The user whose fleet was closed longest ago.
			tools += come(b, p, user(n%scaleUsers))
			n++
		}
		b.ReportMetric(float64(tools.Nanoseconds())/float64(n), "ns-to-tools")
	})
	b.Run("NewUser", func(b *testing.B) {
		cold, err := fleet.New(fleet.Config{Template: tmpl, Values: tokens, MaxLive: scaleActive,
			IdleTimeout: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		defer cold.Close()
		var tools time.Duration
		n := 0
		for b.Loop() {
			tools += come(b, cold, "new-"+strconv.Itoa(n)+"-"+strconv.Itoa(b.N))
			n++
		}
		b.ReportMetric(float64(tools.Nanoseconds())/float64(n), "ns-to-tools")
	})
}
