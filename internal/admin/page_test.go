package admin_test

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// screenshot names the file TestStatusPage writes its screenshot to (the
// README's is docs/status-page.png: go test ./internal/admin -run
// TestStatusPage -screenshot $PWD/docs/status-page.png); by default a file
// of the test's own.
var screenshot = flag.String("screenshot", "", "write the status page's screenshot to this `file`")

// chromium returns Debian's chromium (make services installs it). When it
// is missing the test fails under CI (CI is set) and is skipped elsewhere,
// as the npm test servers are (internal/testkit/npmtest).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed: apt-get install chromium (make services does it, as root)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// startFixed starts an HTTP MCP server on a port below the kernel's range
// of ephemeral ports, so that no other process's connection takes it
// while it is stopped for a restart.
func startFixed(t *testing.T) *httpserver.Server {
	t.Helper()
	for i := range 200 {
		port := 20000 + (os.Getpid()*13+i*131)%12000
		s, err := httpserver.Listen(httpserver.MCPGoStateful, "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return nil
}

// browser starts a headless Chromium for the test, with the flags that
// work in a container (no sandbox, no GPU, nothing fetched on its own), a
// fresh profile, and ctx's deadline on everything it is asked. The
// returned function ends it (so do the test's cleanups): before the server
// it reads a stream from closes, which waits for that stream.
func browser(ctx context.Context, t *testing.T) (context.Context, func()) {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 640),
	)
	bctx, cancel := chromedp.NewContext(alloc)
	end := func() {
		cancel()
		cancelAlloc() // waits for the browser to exit
	}
	t.Cleanup(end)
	return bctx, end
}

// TestStatusPage: a real browser (headless Chromium) loads a serve's
// status page with the token in its URL's fragment, sees every server
// with its state, follows one that goes from Connected to Reconnecting
// when it stops and back when it is restarted (waiting on the page, not
// on a clock), and disables another with its button; the token leaves the
// address bar, and a screenshot is written.
func TestStatusPage(t *testing.T) {
	ctx := testCtx(t)
	notes := startFixed(t)
	m := client.New()
	defer m.Close()
	for name, spec := range map[string]client.ServerSpec{
		"notes":  {HTTP: &mcphttp.Spec{URL: notes.URL()}},
		"files":  {Dialer: client.InProcess(upstream.New("files").MCPServer)},
		"search": {Dialer: client.InProcess(upstream.New("search").MCPServer)},
		"off":    {Dialer: client.InProcess(upstream.New("off").MCPServer), Disabled: true},
		"broken": {Stdio: &stdio.Spec{Command: "mcpfleet-no-such-server"}},
	} {
		if err := m.Add(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"notes", "files", "search"} {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // calls, for the counts
		if _, err := m.Call(ctx, "search__echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	const token = "the-token-of-the-admin-file"
	h := admin.New(m, token, admin.Options{Serve: admin.ServeInfo{PID: os.Getpid(), Started: time.Now(),
		Serving: "stdio", Version: "devel", Config: "/home/me/.config/mcpfleet/mcp.json"}})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	b, closeBrowser := browser(ctx, t)
	defer closeBrowser()
	row := func(name, attrs string) chromedp.CSS { return chromedp.CSS(`tr[data-server="` + name + `"]` + attrs) }
	start := time.Now()
	if err := chromedp.Do(b,
		chromedp.Navigate(srv.URL+"/status#token="+token),
		chromedp.WaitVisible(row("notes", `[data-state="Connected"][data-generation="1"]`)),
		chromedp.WaitVisible(row("off", `[data-state="Disabled"]`)),
		chromedp.WaitVisible(row("broken", `[data-state="PermanentlyFailed"]`)),
	); err != nil {
		t.Fatalf("the page never showed the servers: %v", err)
	}
	t.Logf("the page showed the fleet %s after it was asked for", time.Since(start).Round(time.Millisecond))
	loc, err := chromedp.Run(b, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	cause, err := chromedp.Run(b, chromedp.Text(row("broken", " td.cause")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, token) {
		t.Fatalf("the token stayed in the address bar: %s", loc)
	}
	if !strings.Contains(cause, "command not found") {
		t.Fatalf("the failed server's cause: %q", cause)
	}

	notes.Stop()
	stopped := time.Now()
	if err := chromedp.Do(b, chromedp.WaitVisible(row("notes", `[data-state="Reconnecting"]`))); err != nil {
		t.Fatalf("the page never showed notes reconnecting: %v", err)
	}
	t.Logf("Reconnecting on the page %s after the stop", time.Since(stopped).Round(time.Millisecond))
	notes.Restart(t)
	restarted := time.Now()
	if err := chromedp.Do(b, chromedp.WaitVisible(row("notes", `[data-state="Connected"][data-generation="2"]`))); err != nil {
		t.Fatalf("the page never showed notes back: %v", err)
	}
	t.Logf("Connected again on the page %s after the restart", time.Since(restarted).Round(time.Millisecond))

	if err := chromedp.Do(b,
		chromedp.Click(row("files", ` button[data-op="disable"]`)),
		chromedp.WaitVisible(row("files", `[data-state="Disabled"]`)),
	); err != nil {
		t.Fatalf("disabling files from the page: %v", err)
	}
	if st, _ := m.Status("files"); st.State != lifecycle.Disabled {
		t.Fatalf("files is %v after its button", st.State)
	}

	shot, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	path := *screenshot
	if path == "" {
		path = t.TempDir() + "/status-page.png"
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
}

// TestStatusPageRefusesOtherSites: the page's files are served to anyone
// who reaches the endpoint, with a policy that runs only its own script;
// its data and buttons need the token, and a request from another page
// (another Origin) is refused even with it.
func TestStatusPageRefusesOtherSites(t *testing.T) {
	m := newManager(t, map[string]*upstream.Server{"a": upstream.New("a")})
	h := admin.New(m, "t", admin.Options{})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method, path string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(testCtx(t), method, srv.URL+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := do("GET", "/status", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") ||
		resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("the page: %d %v", resp.StatusCode, resp.Header)
	}
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		want         int
	}{
		{"GET", "/v1/events", nil, http.StatusUnauthorized},
		{"POST", "/v1/servers/a/disable", nil, http.StatusUnauthorized},
		{"POST", "/v1/servers/a/disable", map[string]string{"Authorization": "Bearer t", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"POST", "/v1/servers/a/disable", map[string]string{"Authorization": "Bearer t", "Origin": "http://localhost:1"}, http.StatusForbidden},
		{"GET", "/status", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		if got := do(tc.method, tc.path, tc.header).StatusCode; got != tc.want {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.path, tc.header, got, tc.want)
		}
	}
	if st, _ := m.Status("a"); st.State != lifecycle.Connected {
		t.Fatalf("a refused request changed the server: %v", st.State)
	}
	// From the page itself (its own origin), with the token: done.
	origin := "http://" + srv.Listener.Addr().String()
	if got := do("POST", "/v1/servers/a/disable", map[string]string{"Authorization": "Bearer t", "Origin": origin}).StatusCode; got != http.StatusOK {
		t.Fatalf("from the page: %d", got)
	}
}
