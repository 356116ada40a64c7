package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// lazyFleet writes a config of n lazy servers (the fault server, started
// only by a first call).
func lazyFleet(c *cli, n int) {
	servers := map[string]any{}
	for i := range n {
		e := faultEntry(faultserver.ModeNormal, nil)
		e["lazy"] = true
		servers[fmt.Sprintf("s%04d", i)] = e
	}
	c.writeConfig(servers)
}

// BenchmarkServeReady is how long `mcpfleet serve --http` takes, from the
// start of its process, to answer a client's initialize and tools/list,
// with a fleet of 20 lazy servers whose catalogs the cache knows from an
// earlier run: the process starts, reads the config, publishes the cached
// catalogs, listens, and answers.
func BenchmarkServeReady(b *testing.B) {
	c := newCLI(b)
	lazyFleet(c, 20)
	// A first run fills the catalog cache: a call starts each server once.
	s := c.startServe()
	for i := range 20 {
		if code, out, errOut := c.run("call", fmt.Sprintf("s%04d__echo", i), `{"text":"x"}`); code != exitOK {
			b.Fatalf("%d %s %s", code, out, errOut)
		}
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	<-s.done
	benchToken = s.token // the serves that follow keep it

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	tools := 0
	for b.Loop() {
		cmd := c.command("serve", "--http", "127.0.0.1:0", "--admin=false")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		url := ""
		for url == "" && sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), readyLine); ok {
				url = u
			}
		}
		go io.Copy(io.Discard, stderr) //nolint:errcheck // drained until the process ends
		resp := benchPost(b, url, "", initialize)
		session := resp.Header.Get("Mcp-Session-Id")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		resp = benchPost(b, url, session, list)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tools = bytes.Count(body, []byte(`"name":"s0`))
		b.StopTimer()
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		b.StartTimer()
	}
	if tools != 20*5 {
		b.Fatalf("tools/list listed %d tools of the lazy servers, want %d", tools, 20*5)
	}
}

// benchToken is the token of BenchmarkServeReady's serves.
var benchToken string

// benchClient keeps no connection: each serve of the benchmark is a new
// process, and one it keeps would outlive it.
var benchClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func benchPost(b *testing.B, url, session, body string) *http.Response {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		b.Fatalf("%q: %v", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := benchClient.Do(req)
	if err != nil {
		b.Fatalf("%s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s", body, resp.Status)
	}
	return resp
}

// BenchmarkStatus1000 is `mcpfleet status` of a running serve of 1,000
// servers: the command as a user runs it (impl=process: the process
// starts, finds the serve, asks its admin endpoint, renders the table), and
// the same in this process (impl=inprocess: the request and the rendering
// alone).
func BenchmarkStatus1000(b *testing.B) {
	c := newCLI(b)
	lazyFleet(c, 1000)
	c.startServe()
	b.Run("impl=inprocess", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if code, out, errOut := c.run("status"); code != exitOK || strings.Count(out, "\n") != 1002 {
				b.Fatalf("%d %d lines %s", code, strings.Count(out, "\n"), errOut)
			}
		}
	})
	b.Run("impl=process", func(b *testing.B) {
		for b.Loop() {
			out, err := c.command("status").Output()
			if err != nil || bytes.Count(out, []byte("\n")) != 1002 {
				b.Fatalf("%v %d lines", err, bytes.Count(out, []byte("\n")))
			}
		}
	})
}
