package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// fleet is what the commands ask of the fleet: a running serve's, through
// its admin endpoint, or one the command makes from the config file.
type fleet interface {
	status(ctx context.Context) ([]admin.ServerReport, error)
	tools(ctx context.Context, query string, k int) ([]admin.ToolReport, error)
	call(ctx context.Context, tool string, args json.RawMessage, progress func(admin.ProgressReport)) (*mcp.CallToolResult, error)
	// watch hands each line of the fleet's history to fn (the statuses,
	// then events) until ctx ends or fn fails.
	watch(ctx context.Context, fn func(admin.StreamLine) error) error
	auth(ctx context.Context, server string, open func(url string) error) error
	close() error
}

// openFleet returns the running serve of the config if one answers (unless
// direct), else a fleet made from the config file.
func openFleet(ctx context.Context, e *env, config string, direct bool) (fleet, error) {
	config, err := configPath(config)
	if err != nil {
		return nil, err
	}
	paths, err := pathsFor(config)
	if err != nil {
		return nil, err
	}
	if !direct {
		af, err := readAdminFile(paths.admin)
		if err != nil && !isNotExist(err) {
			fmt.Fprintf(e.stderr, "mcpfleet: ignoring a serve's admin file: %v; using the config file\n", err)
		}
		if err == nil {
			// A command makes a request or two: no connection is kept.
			r := &remoteFleet{base: "http://" + af.Addr, token: af.Token,
				hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, perr := r.status(pctx)
			cancel()
			if perr == nil {
				return r, nil
			}
			r.close()
			fmt.Fprintf(e.stderr, "mcpfleet: the serve of %s (pid %d) does not answer (%v); using the config file\n", config, af.PID, perr)
		}
	}
	return openLocal(ctx, e, config, paths)
}

// localFleet is a Manager made from the config file, for one command.
type localFleet struct {
	e    *env
	m    *client.Manager
	ts   *client.ToolSearch
	wait time.Duration
}

// settleTimeout bounds how long a command waits for the servers of a
// config to connect before it shows what it has.
const settleTimeout = 15 * time.Second

func openLocal(ctx context.Context, e *env, config string, paths statePaths) (*localFleet, error) {
	cfg, err := configfile.Load(config)
	if err != nil {
		return nil, err
	}
	m := client.New(client.WithLogger(e.logger), client.WithTokenStore(oauth.NewFileStore(paths.tokens)))
	l := &localFleet{e: e, m: m, wait: settleTimeout}
	actx, cancel := context.WithTimeout(ctx, configfile.DefaultApplyTimeout)
	defer cancel()
	if _, err := m.Apply(actx, cfg); err != nil {
		fmt.Fprintf(e.stderr, "mcpfleet: %v\n", err) // one bad entry does not stop the others
	}
	return l, nil
}

func (l *localFleet) close() error {
	if l.ts != nil {
		l.ts.Close()
	}
	return l.m.Close()
}

// settle waits, showing which, until no server is connecting for the first
// time (a lazy server stays as it is), or until l.wait has passed.
func (l *localFleet) settle(ctx context.Context) {
	statuses, _, events, cancel := l.m.Watch(0)
	defer cancel()
	states := map[string]lifecycle.State{}
	for _, s := range statuses {
		states[s.Name] = s.State
	}
	connecting := func() []string {
		var names []string
		for n, s := range states {
			if s == lifecycle.Connecting {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		return names
	}
	p := newProgress(l.e.stderr, l.e.tty)
	defer p.end()
	ctx, stop := context.WithTimeout(ctx, l.wait)
	defer stop()
	for {
		names := connecting()
		if len(names) == 0 {
			return
		}
		p.set(waitingFor(names))
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Kind == client.EventState {
				states[ev.Server] = ev.To
			}
		}
	}
}

func (l *localFleet) status(ctx context.Context) ([]admin.ServerReport, error) {
	l.settle(ctx)
	return admin.Reports(l.m), nil
}

func (l *localFleet) tools(ctx context.Context, query string, k int) ([]admin.ToolReport, error) {
	l.settle(ctx)
	l.unready()
	if query != "" && l.ts == nil {
		l.ts = l.m.NewToolSearch()
	}
	return admin.ToolReports(l.m, l.ts, query, k)
}

// unready tells stderr why each server that is neither Connected nor
// Disabled has no tools to show: a mistake (a command not found, a wrong
// URL) must not look like a server without tools.
func (l *localFleet) unready() {
	for _, st := range l.m.Statuses() {
		if st.State == lifecycle.Connected || st.State == lifecycle.Disabled {
			continue
		}
		line := fmt.Sprintf("mcpfleet: server %q is %v", st.Name, st.State)
		if st.LastError != nil {
			line += ": " + st.LastError.Error()
		}
		fmt.Fprintln(l.e.stderr, termSafe(line, true))
	}
}

func (l *localFleet) call(ctx context.Context, tool string, args json.RawMessage, progress func(admin.ProgressReport)) (*mcp.CallToolResult, error) {
	return admin.Call(ctx, l.m, tool, args, progress)
}

func (l *localFleet) watch(ctx context.Context, fn func(admin.StreamLine) error) error {
	statuses, _, events, cancel := l.m.Watch(0)
	defer cancel()
	if err := fn(admin.StreamLine{Servers: admin.MakeReports(statuses, l.m.Stats())}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			r := admin.MakeEventReport(ev)
			if err := fn(admin.StreamLine{Event: &r}); err != nil {
				return err
			}
		}
	}
}

func (l *localFleet) auth(ctx context.Context, server string, open func(url string) error) error {
	return admin.Authorize(ctx, l.m, server, open)
}

// remoteFleet is a running serve, through its admin endpoint.
type remoteFleet struct {
	base, token string
	hc          *http.Client
}

func (r *remoteFleet) close() error {
	r.hc.CloseIdleConnections()
	return nil
}

// do sends a request to the admin endpoint and returns the response of a
// 200, or the endpoint's refusal as an error.
func (r *remoteFleet) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, admin.Refused(resp.StatusCode, string(b))
	}
	return resp, nil
}

func (r *remoteFleet) getJSON(ctx context.Context, path string, v any) error {
	resp, err := r.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func (r *remoteFleet) status(ctx context.Context) ([]admin.ServerReport, error) {
	var out struct{ Servers []admin.ServerReport }
	err := r.getJSON(ctx, "/v1/status", &out)
	return out.Servers, err
}

func (r *remoteFleet) tools(ctx context.Context, query string, k int) ([]admin.ToolReport, error) {
	var out struct{ Tools []admin.ToolReport }
	err := r.getJSON(ctx, "/v1/tools?q="+url.QueryEscape(query)+"&k="+strconv.Itoa(k), &out)
	return out.Tools, err
}

// stream reads the StreamLines of a response, handing each to fn.
func stream(resp *http.Response, fn func(admin.StreamLine) error) error {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), client.DefaultMaxMessageBytes+1<<10)
	for sc.Scan() {
		var l admin.StreamLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("the admin endpoint's answer: %w", err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return sc.Err()
}

// errStreamEnd ends a stream that said all it had to.
var errStreamEnd = errors.New("end of stream")

func (r *remoteFleet) call(ctx context.Context, tool string, args json.RawMessage, progress func(admin.ProgressReport)) (*mcp.CallToolResult, error) {
	resp, err := r.do(ctx, http.MethodPost, "/v1/call", admin.CallRequest{Tool: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	var res *mcp.CallToolResult
	var callErr error
	err = stream(resp, func(l admin.StreamLine) error {
		switch {
		case l.Progress != nil && progress != nil:
			progress(*l.Progress)
		case l.Result != nil:
			res = l.Result
			return errStreamEnd
		case l.Error != "":
			callErr = errors.New(l.Error)
			return errStreamEnd
		}
		return nil
	})
	if callErr != nil {
		return nil, callErr
	}
	if res == nil {
		if err == nil || errors.Is(err, errStreamEnd) {
			err = errors.New("the serve ended the call without an answer")
		}
		return nil, err
	}
	return res, nil
}

func (r *remoteFleet) watch(ctx context.Context, fn func(admin.StreamLine) error) error {
	resp, err := r.do(ctx, http.MethodGet, "/v1/watch", nil)
	if err != nil {
		return err
	}
	err = stream(resp, fn)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (r *remoteFleet) auth(ctx context.Context, server string, open func(url string) error) error {
	resp, err := r.do(ctx, http.MethodPost, "/v1/auth?server="+url.QueryEscape(server), nil)
	if err != nil {
		return err
	}
	done := false
	var authErr error
	err = stream(resp, func(l admin.StreamLine) error {
		switch {
		case l.URL != "":
			return open(l.URL)
		case l.Done:
			done = true
			return errStreamEnd
		case l.Error != "":
			authErr = errors.New(l.Error)
			return errStreamEnd
		}
		return nil
	})
	switch {
	case authErr != nil:
		return authErr
	case done:
		return nil
	case err != nil && !errors.Is(err, errStreamEnd):
		return err
	}
	return errors.New("the serve ended the authorization without saying how it went")
}
