package main

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/tsclient"
)

// TestServeFollowsTheConfig: a serve applies an edit of its config file
// (a client sees the new server's tools after a list_changed), logs the
// Apply's summary, and keeps the running fleet on an edit that does not
// parse, logging why with the line and column, once.
func TestServeFollowsTheConfig(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)})
	s := c.startServe("--watch-interval", "10ms")
	d := tsclient.StartHTTPWithToken(t, s.url, s.token)
	ctx := testCtx(t)
	if names, err := d.ListTools(ctx); err != nil || !slices.Contains(names, "one__echo") {
		t.Fatalf("tools %v %v", names, err)
	}

	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil), "two": faultEntry(faultserver.ModeNormal, nil)})
	for {
		e, ok := <-d.Events
		if !ok {
			t.Fatalf("the client exited:\n%s", d.Stderr())
		}
		if e != "tools/list_changed" {
			continue
		}
		if names, err := d.ListTools(ctx); err == nil && slices.Contains(names, "two__echo") {
			break
		}
	}
	s.waitLogs(t, `summary="added two"`)

	c.writeConfigBytes([]byte("{\n  \"mcpServers\": {\n    \"one\": {,\n"))
	s.waitLogs(t, "keeping the running fleet")
	if !strings.Contains(s.Logs(), "line 3") {
		t.Fatalf("the log does not say where the file is wrong:\n%s", s.Logs())
	}
	res, err := d.Call(ctx, "two__echo", map[string]any{"text": "still"})
	if err != nil || res.Text() != "still" {
		t.Fatalf("after a bad edit: %+v %v", res, err)
	}
	// The edit that mends it is read after the bad one was: by then the
	// bad one has said all it will, once.
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil), "two": faultEntry(faultserver.ModeNormal, nil)})
	s.waitLogs(t, `summary="no changes"`)
	if n := strings.Count(s.Logs(), "the changed file was not applied"); n != 1 {
		t.Fatalf("a bad edit logged %d times:\n%s", n, s.Logs())
	}
}

// TestWatch: watch prints the statuses, then a line per event, as they
// happen, through a running serve; --json prints them for programs.
func TestWatch(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)})
	c.startServe()
	servers := map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)}
	for i, asJSON := range []bool{false, true} {
		added := []string{"two", "three"}[i]
		args := []string{"watch"}
		if asJSON {
			args = append(args, "--json")
		}
		cmd := c.command(args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		next := func() string {
			t.Helper()
			if !lines.Scan() {
				t.Fatalf("watch ended: %v", lines.Err())
			}
			return lines.Text()
		}
		first := next()
		if asJSON {
			var l admin.StreamLine
			if json.Unmarshal([]byte(first), &l) != nil || len(l.Servers) == 0 {
				t.Fatalf("watch --json starts with %q", first)
			}
		} else if !strings.HasPrefix(first, "SERVER") {
			t.Fatalf("watch starts with %q", first)
		}
		// A change: the config gains a server, which connects.
		servers[added] = faultEntry(faultserver.ModeNormal, nil)
		c.writeConfig(servers)
		for {
			l := next()
			if asJSON && strings.Contains(l, `"server":"`+added+`"`) && strings.Contains(l, `"to":"Connected"`) ||
				!asJSON && strings.Contains(l, added+": Connecting -> Connected") {
				break
			}
		}
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

// TestServerRequestsThroughServe: a server's sampling and roots requests
// reach the TypeScript SDK's client that called it, through a serve over
// stdio and over HTTP. The server (the fault server's flood mode) sends
// them on its connection, as servers before 2026-07-28 do, so the serve
// attributes them by the calls in flight.
func TestServerRequestsThroughServe(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			c := newCLI(t)
			c.writeConfig(map[string]any{"flood": faultEntry(faultserver.ModeFlood, nil)})
			var d *tsclient.Client
			if tr == "stdio" {
				d = tsclient.StartStdio(t, c.env(), os.Args[0], "serve", "--stdio", "--config", c.config)
			} else {
				s := c.startServe()
				d = tsclient.StartHTTPWithToken(t, s.url, s.token)
			}
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			for _, kind := range []string{"sampling", "roots", "elicitation"} {
				res, err := d.Call(ctx, "flood__ask", map[string]any{"kind": kind, "n": 2})
				if err != nil {
					t.Fatal(err)
				}
				var got faultserver.FloodAnswers
				if err := json.Unmarshal([]byte(res.Text()), &got); err != nil || got.OK != 2 {
					t.Fatalf("%s: %s %v", kind, res.Text(), err)
				}
			}
			asked := map[string]int{}
			for len(asked) < 3 || asked["asked sampling/createMessage"] < 2 {
				select {
				case e := <-d.Events:
					asked[e]++
				case <-ctx.Done():
					t.Fatalf("the client was asked %v", asked)
				}
			}
		})
	}
}

// TestRootsReachTheServer: the reference filesystem server asks its client
// for roots; behind a serve over stdio, the client it gets them from is the
// serve's one client (the TypeScript SDK's), whose root directory becomes
// the server's allowed one.
func TestRootsReachTheServer(t *testing.T) {
	fs := npmtest.Bin(t, "mcp-server-filesystem")
	initial, theirs := t.TempDir(), t.TempDir()
	c := newCLI(t)
	c.writeConfig(map[string]any{"fs": map[string]any{"command": fs, "args": []string{initial}}})
	d := tsclient.StartStdio(t, append(c.env(), "TSCLIENT_ROOTS="+(&url.URL{Scheme: "file", Path: theirs}).String()),
		os.Args[0], "serve", "--stdio", "--config", c.config)
	ctx := testCtx(t)
	for e := range d.Events {
		if e == "asked roots/list" {
			break
		}
	}
	for {
		res, err := d.Call(ctx, "fs__list_allowed_directories", nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Text(), theirs) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the server's directories: %s", res.Text())
		}
	}
}

// TestServeHTTPTimeouts: serve --http's server cuts off a client that
// sends its request slowly or keeps a connection idle (a connection and
// a goroutine each, for ever, otherwise).
func TestServeHTTPTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if srv.ReadHeaderTimeout != gateway.DefaultReadHeaderTimeout || srv.ReadTimeout != gateway.DefaultReadTimeout ||
		srv.IdleTimeout != gateway.DefaultIdleTimeout {
		t.Fatalf("timeouts: header %v, read %v, idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
}
