package client

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// A server that dies or hangs with no call in flight, over HTTP with no
// notification stream to lose, is Reconnecting before the host's next call:
// the idle probe notices. Without the probe nothing would, and these waits
// would run into their deadline.
func TestIdleProbeNoticesServerGoneWithoutCall(t *testing.T) {
	const period = 50 * time.Millisecond
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (url string, fault func())
		cause func(error) bool
	}{
		{"stopped/mcpgo-no-list-changed", func(t *testing.T) (string, func()) {
			q := httpserver.StartQuiet(t, httpserver.QuietOptions{})
			return q.URL(), q.Stop
		}, func(err error) bool { return strings.Contains(err.Error(), "idle probe") }},
		{"hung/gosdk-stateless", func(t *testing.T) (string, func()) {
			srv := httpserver.Start(t, httpserver.GoSDKStateless)
			return srv.URL(), func() { srv.SetHang(true) }
		}, func(err error) bool { return errors.Is(err, ErrTooManyTimeouts) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, fault := tc.start(t)
			m := newTestManager(t, WithPolicy(httpPolicy), WithTimeouts(Timeouts{IdleProbe: period}))
			rec := record(m)
			mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: url}})
			mustWait(t, m, "s", lifecycle.Connected)
			if _, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "hi"}); err != nil {
				t.Fatal(err)
			}
			fault()
			e := rec.wait(t, func(e Event) bool {
				return e.Kind == EventState && e.From == lifecycle.Connected && e.To == lifecycle.Reconnecting
			})
			if e.Err == nil || !tc.cause(e.Err) {
				t.Fatalf("Connected -> Reconnecting with cause %v, want the idle probe's", e.Err)
			}
		})
	}
}

// A live, idle server is probed and left alone: its generation stays.
func TestIdleProbeLeavesLiveServerAlone(t *testing.T) {
	q := httpserver.StartQuiet(t, httpserver.QuietOptions{})
	m, probes := probedManager(t, q.URL())
	for range 3 {
		awaitProbe(t, probes, "a live server")
	}
	st, err := m.Status("s")
	if err != nil || st.State != lifecycle.Connected || st.Generation != 1 {
		t.Fatalf("after idle probes: %+v, %v; want Connected generation 1", st, err)
	}
}

// A 2026-07-28 server that declares no list at all is still probed, and
// answers: the probe is server/discover, which every server of that
// protocol answers. (With a list as the probe, such a server had nothing
// to be asked, and its death with no call in flight went unnoticed.)
func TestIdleProbeOfAServerThatListsNothing(t *testing.T) {
	s := server.NewMCPServer("bare", "1.0")
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close) // after the manager's Close
	m, probes := probedManager(t, srv.URL)
	if st, _ := m.Status("s"); !mcp.IsModernProtocol(st.Protocol) {
		t.Fatalf("protocol %q: the test needs a 2026-07-28 connection", st.Protocol)
	}
	awaitProbe(t, probes, "a live server that lists nothing")
}

// probedManager connects server "s" at url with an idle probe every 5 ms,
// and returns the probes' outcomes.
func probedManager(t *testing.T, url string) (*Manager, <-chan error) {
	t.Helper()
	m := newTestManager(t, WithPolicy(httpPolicy), WithTimeouts(Timeouts{IdleProbe: 5 * time.Millisecond}))
	probes := make(chan error, 100)
	m.onProbe = func(_ *slot, err error) {
		select {
		case probes <- err:
		default:
		}
	}
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: url}})
	mustWait(t, m, "s", lifecycle.Connected)
	return m, probes
}

// awaitProbe waits for the next probe and fails unless it was answered.
func awaitProbe(t *testing.T, probes <-chan error, of string) {
	t.Helper()
	select {
	case err := <-probes:
		if err != nil {
			t.Fatalf("probe of %s: %v", of, err)
		}
	case <-testCtx(t).Done():
		t.Fatal("no idle probe was sent")
	}
}
