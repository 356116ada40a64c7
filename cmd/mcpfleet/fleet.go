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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// fleet is what the commands ask of the fleet: a running serve's, through
// its admin endpoint, or one the command makes from the config file.
type fleet interface {
	status(ctx context.Context) (statusReport, error)
	tools(ctx context.Context, query string, k int, schemas bool) ([]admin.ToolReport, error)
	call(ctx context.Context, tool string, args json.RawMessage, progress func(admin.ProgressReport)) (*mcp.CallToolResult, error)
	// watch hands each line of the fleet's history to fn (the statuses,
	// then events) until ctx ends or fn fails.
	watch(ctx context.Context, fn func(admin.StreamLine) error) error
	auth(ctx context.Context, server string, open func(url string) error) error
	close() error
}

// statusReport is what status shows: which serve answers, if one does,
// and every server's report.
type statusReport struct {
	// Serve is the serve that answered; nil when the command started the
	// servers itself. Others are the other serves of the config that
	// answered, newest first.
	Serve   *admin.ServeInfo     `json:"serve"`
	Others  []admin.ServeInfo    `json:"otherServes,omitempty"`
	Servers []admin.ServerReport `json:"servers"`
	// Connecting are the servers still connecting when the command's wait
	// ended (see --wait); their cached catalogs, if any, are shown.
	Connecting []string `json:"stillConnecting,omitempty"`
	// applyErr is what the Apply of a command's own fleet reported (a bad
	// entry, a required server not connected within --wait), already
	// printed: status then exits 1.
	applyErr error
}

// probeTimeout bounds how long a command waits for a serve's admin
// endpoint to answer before it looks for another, or starts the servers
// itself.
const probeTimeout = 2 * time.Second

// openFleet returns the newest running serve of the config that answers
// (unless --direct), else a fleet made from the config file.
func openFleet(ctx context.Context, e *env, flags *commonFlags) (fleet, error) {
	config, err := configPath(flags.config)
	if err != nil {
		return nil, err
	}
	if config, err = filepath.Abs(config); err != nil {
		return nil, err
	}
	paths, err := pathsFor(config)
	if err != nil {
		return nil, err
	}
	if !flags.direct {
		r, notes := findServe(ctx, e, paths)
		if r != nil {
			return r, nil
		}
		for _, n := range notes {
			fmt.Fprintf(e.stderr, "mcpfleet: %s; using the config file\n", n)
		}
	}
	return openLocal(ctx, e, config, paths, flags)
}

// findServe asks every serve of the config whose admin file it finds, at
// once, and returns the newest that answers, with the others that did; or
// nil and why each one did not. The admin file of a serve whose address
// refuses connections is of one that ended without removing it: removed.
func findServe(ctx context.Context, e *env, paths statePaths) (*remoteFleet, []string) {
	serves, bad := findServes(paths)
	var notes []string
	for _, err := range bad {
		notes = append(notes, fmt.Sprintf("ignoring a serve's admin file: %v", err))
	}
	// The admin file of a serve whose process is gone is stale, whatever
	// its address does now: another program may listen there since.
	serves = slices.DeleteFunc(serves, func(sf serveFile) bool {
		if processGone(sf.PID) {
			removeAdminFile(sf.path, sf.Token)
			return true
		}
		return false
	})
	type probe struct {
		r   *remoteFleet
		err error
	}
	probes := make([]probe, len(serves))
	var wg sync.WaitGroup
	for i, sf := range serves {
		wg.Go(func() {
			// A command makes a request or two: no connection is kept.
			r := &remoteFleet{file: sf, base: "http://" + sf.Addr, token: sf.Token,
				hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			st, err := r.status(pctx)
			if err == nil && st.Serve != nil {
				r.info = *st.Serve
			}
			probes[i] = probe{r, err}
		})
	}
	wg.Wait()
	var found *remoteFleet
	for i, p := range probes {
		switch {
		case p.err == nil && found == nil:
			found = p.r
		case p.err == nil:
			found.others = append(found.others, p.r.info)
			p.r.close()
		case errors.Is(p.err, syscall.ECONNREFUSED):
			removeAdminFile(serves[i].path, serves[i].Token)
			p.r.close()
		default:
			notes = append(notes, fmt.Sprintf("the serve of %s (pid %d) does not answer (%v)", serves[i].Config, serves[i].PID, p.err))
			p.r.close()
		}
	}
	if found != nil {
		return found, nil
	}
	return nil, notes
}

// localFleet is a Manager made from the config file, for one command.
type localFleet struct {
	e  *env
	m  *client.Manager
	ts *client.ToolSearch
	// wait bounds how long status and tools wait for servers that are
	// connecting (--wait); deadline is when that wait ends, counted from
	// the Apply, whose wait for the required servers it bounds too.
	wait     time.Duration
	deadline time.Time
	// applyErr is what the Apply reported (a bad entry, a required server
	// not connected by the deadline), already printed; reported are the
	// servers it named, which settle does not name again.
	applyErr error
	reported []string
}

// DefaultWait is how long status, tools and describe wait for the servers
// of a config to connect before they show what they have: a server that
// hangs costs that long, not its dial timeout.
const defaultWait = 2 * time.Second

func openLocal(ctx context.Context, e *env, config string, paths statePaths, flags *commonFlags) (*localFleet, error) {
	if err := checkChain(config); err != nil {
		return nil, err
	}
	cfg, err := newConfigLoader(e, config, flags, true).load(config)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(paths.dir, 0o700); err != nil {
		return nil, fmt.Errorf("the state directory: %w", err)
	}
	m := client.New(client.WithLogger(e.logger), client.WithTokenStore(oauth.NewFileStore(paths.tokens)),
		client.WithCatalogCache(paths.catalogs), // a server that hangs still shows its tools
		// A command's tasks end with it (a call waits for its task's
		// outcome): it keeps them in memory, and leaves the user's task
		// store to a serve, which would find it locked by the command and
		// keep its own in memory, warning, while the command ran.
		client.WithTasks(client.TaskOptions{Store: store.NewMemoryTaskStore()}))
	// The Apply's wait for the servers marked required is the command's
	// wait (--wait), not a serve's Apply timeout: a required server that
	// hangs costs a command as long as any other.
	l := &localFleet{e: e, m: m, wait: flags.wait, deadline: time.Now().Add(flags.wait)}
	actx, cancel := context.WithDeadline(ctx, l.deadline)
	defer cancel()
	if _, err := m.Apply(actx, cfg); err != nil && ctx.Err() == nil {
		l.applyErr = err
		for _, one := range splitErrors(err) { // one bad entry does not stop the others
			if se := (*client.ServerError)(nil); errors.As(one, &se) && se.Server != "" {
				l.reported = append(l.reported, se.Server)
			}
			fmt.Fprintln(e.stderr, "mcpfleet: "+termSafe(unprefixed(one), true))
		}
	}
	return l, nil
}

// splitErrors returns the errors err joins (errors.Join), or err alone.
func splitErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// unprefixed is err's message without the library's "mcpfleet: ", for a
// line that carries the command's own prefix.
func unprefixed(err error) string {
	return strings.TrimPrefix(err.Error(), "mcpfleet: ")
}

func (l *localFleet) close() error {
	if l.ts != nil {
		l.ts.Close()
	}
	return l.m.Close()
}

// settle waits, showing which, until no server is connecting (for the
// first time, or again after a loss: a lazy server stays as it is), or
// until the command's wait has ended; it returns the servers still
// connecting then, having said so on stderr (but for those the Apply's
// error already named). Which servers are connecting is read from the
// Manager at every event, not worked out from the events: what it shows
// is what the Manager says now.
func (l *localFleet) settle(ctx context.Context) []string {
	_, _, events, cancel := l.m.Watch(0)
	defer cancel()
	p := newProgress(l.e.stderr, l.e.tty)
	wctx, stop := context.WithDeadline(ctx, l.deadline)
	defer stop()
	for {
		names := connectingNow(l.m.Statuses())
		if len(names) == 0 {
			p.end()
			return nil
		}
		if wctx.Err() != nil {
			p.end()
			unsaid := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(l.reported, n) })
			if ctx.Err() == nil && len(unsaid) > 0 {
				fmt.Fprintln(l.e.stderr, termSafe(fmt.Sprintf("mcpfleet: still connecting after %s: %s (showing the tools known from before, if any; --wait to wait longer)",
					l.wait, strings.Join(unsaid, ", ")), false))
			}
			return names
		}
		p.set(waitingFor(names))
		select {
		case <-wctx.Done():
		case _, ok := <-events:
			if !ok {
				p.end()
				return nil
			}
		}
	}
}

// connectingNow returns the names of the servers of statuses that are
// connecting, first or again, sorted.
func connectingNow(statuses []client.ServerStatus) []string {
	var names []string
	for _, s := range statuses {
		if s.State == lifecycle.Connecting || s.State == lifecycle.Reconnecting {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

func (l *localFleet) status(ctx context.Context) (statusReport, error) {
	connecting := l.settle(ctx)
	return statusReport{Servers: admin.Reports(l.m), Connecting: connecting, applyErr: l.applyErr}, nil
}

func (l *localFleet) tools(ctx context.Context, query string, k int, schemas bool) ([]admin.ToolReport, error) {
	l.settle(ctx)
	l.unready()
	if query != "" && l.ts == nil {
		l.ts = l.m.NewToolSearch()
	}
	return admin.ToolReports(l.m, l.ts, query, k, schemas)
}

// known returns the tools the fleet knows now, without waiting and
// without a word on stderr.
func (l *localFleet) known() ([]admin.ToolReport, error) {
	return admin.ToolReports(l.m, nil, "", 0, false)
}

// unready tells stderr why each server that is neither Connected nor
// Disabled has no tools to show: a mistake (a command not found, a wrong
// URL) must not look like a server without tools.
func (l *localFleet) unready() {
	for _, st := range l.m.Statuses() {
		switch st.State {
		case lifecycle.Connected, lifecycle.Disabled, lifecycle.Connecting, lifecycle.Reconnecting:
			continue // connecting: settle said so
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
	file        serveFile
	info        admin.ServeInfo   // what the serve says of itself
	others      []admin.ServeInfo // the other serves of the config that answered
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

func (r *remoteFleet) status(ctx context.Context) (statusReport, error) {
	var out statusReport
	err := r.getJSON(ctx, "/v1/status", &out)
	out.Others = r.others
	return out, err
}

func (r *remoteFleet) tools(ctx context.Context, query string, k int, schemas bool) ([]admin.ToolReport, error) {
	var out struct{ Tools []admin.ToolReport }
	path := "/v1/tools?q=" + url.QueryEscape(query) + "&k=" + strconv.Itoa(k)
	if schemas {
		path += "&schema=1"
	}
	err := r.getJSON(ctx, path, &out)
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

// control enables, disables or reconnects server name on the serve, and
// returns its report after.
func (r *remoteFleet) control(ctx context.Context, name, op string) (admin.ServerReport, error) {
	resp, err := r.do(ctx, http.MethodPost, "/v1/servers/"+url.PathEscape(name)+"/"+op, nil)
	if err != nil {
		return admin.ServerReport{}, err
	}
	defer resp.Body.Close()
	var out struct{ Server admin.ServerReport }
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.Server, err
}

// reload makes the serve read its config file again now.
func (r *remoteFleet) reload(ctx context.Context) (admin.ReloadReport, error) {
	resp, err := r.do(ctx, http.MethodPost, "/v1/reload", nil)
	if err != nil {
		return admin.ReloadReport{}, err
	}
	defer resp.Body.Close()
	var out admin.ReloadReport
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out, err
}

// processGone reports whether no process has the id pid: a serve killed
// without removing its admin file. Where that cannot be told (Windows
// answers FindProcess for a process gone and one out of reach alike), it
// reports false, and the serve's address decides.
func processGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	return errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}
