// Package replicatest runs the refresh of one OAuth grant across replicas
// that are real OS processes (the test binary started again), sharing one
// store.Shared, against oauthtest's authorization server, which rotates
// refresh tokens and revokes the grant when an old one is redeemed again.
// The nested store modules (store/redis, store/postgres) run it against
// their real servers.
package replicatest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// Opener opens a client of the shared store at url (the test's), as each
// replica does; close releases it.
type Opener func(ctx context.Context, url string) (st store.Shared, close func(), err error)

// Environment of a replica process.
const (
	envReplica = "MCPFLEET_REPLICA"
	envServer  = "MCPFLEET_REPLICA_SERVER"
	envStore   = "MCPFLEET_REPLICA_STORE"
	envCalls   = "MCPFLEET_REPLICA_CALLS"
	envTTL     = "MCPFLEET_REPLICA_LEASE_TTL"
)

// user is the user whose grant the replicas share.
const user = "alice"

// Main runs a replica when the process was started as one, and otherwise
// the tests; call it from TestMain (with goleak after it, as usual).
func Main(m *testing.M, open Opener, tests func() int) {
	if os.Getenv(envReplica) != "" {
		os.Exit(replica(open))
	}
	os.Exit(tests())
}

// Report is what a replica says when its calls are done.
type Report struct {
	OK     int      `json:"ok"`
	Failed int      `json:"failed"`
	Errors []string `json:"errors,omitempty"`
}

// shiftedClock is the replica's clock for token expiry: the real one, an
// hour and a half ahead once the test says go, so that the token every
// replica holds is due at the same moment.
type shiftedClock struct{ ahead atomic.Bool }

func (c *shiftedClock) now() time.Time {
	if c.ahead.Load() {
		return time.Now().Add(90 * time.Minute)
	}
	return time.Now()
}

// pidHeader names the replica in its requests to the authorization server.
const pidHeader = "X-Replica-Pid"

type tagged struct{ base http.RoundTripper }

func (t tagged) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(pidHeader, strconv.Itoa(os.Getpid()))
	return t.base.RoundTrip(r)
}

func replica(open Opener) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, closeStore, err := open(ctx, os.Getenv(envStore))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	defer closeStore()
	calls, _ := strconv.Atoi(os.Getenv(envCalls))
	ttl, _ := time.ParseDuration(os.Getenv(envTTL))
	clock := &shiftedClock{}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: tagged{&http.Transport{DisableKeepAlives: true}}}
	m := client.New(client.WithSharedState(st), client.WithUser(user),
		client.WithTimeouts(client.Timeouts{Ready: time.Minute}),
		client.WithOAuthOptions(oauth.WithClock(clock.now), oauth.WithHTTPClient(hc), oauth.WithLeaseTTL(ttl)))
	defer m.Close()
	if err := m.Add(ctx, "s", client.ServerSpec{HTTP: &mcphttp.Spec{URL: os.Getenv(envServer)}, OAuth: &oauth.Config{}}); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return 2
	}
	clock.ahead.Store(true)
	var mu sync.Mutex
	var rep Report
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			msg := "call-" + strconv.Itoa(i)
			res, err := m.CallTool(ctx, "s", "echo", map[string]any{"message": msg})
			mu.Lock()
			defer mu.Unlock()
			if err != nil || res.IsError {
				rep.Failed++
				if len(rep.Errors) < 5 {
					rep.Errors = append(rep.Errors, fmt.Sprint(err))
				}
				return
			}
			rep.OK++
		})
	}
	wg.Wait()
	out, _ := json.Marshal(rep)
	fmt.Println("report " + string(out))
	return 0
}

// process is a running replica.
type process struct {
	cmd   *exec.Cmd
	stdin interface{ Write([]byte) (int, error) }
	lines chan string
	done  chan struct{}
}

func start(t *testing.T, env []string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stdin: in, lines: make(chan string, 16), done: make(chan struct{})}
	// One goroutine reads the output to its end, then waits for the
	// process: Wait closes the pipe, and a Wait beside the reader lost the
	// last lines ("report ...") of a replica that exited before the reader
	// had them, which a loaded machine makes likely.
	go func() {
		defer close(p.done)
		defer func() { _ = cmd.Wait() }()
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			p.lines <- "error: reading the replica's output: " + err.Error()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// expect waits for a line with prefix, and returns its rest.
func (p *process) expect(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("replica %d ended before %q", p.cmd.Process.Pid, prefix)
			}
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return rest
			}
			if strings.HasPrefix(l, "error:") {
				t.Fatalf("replica %d: %s", p.cmd.Process.Pid, l)
			}
		case <-ctx.Done():
			t.Fatalf("replica %d: no %q: %v", p.cmd.Process.Pid, prefix, ctx.Err())
		}
	}
}

// Config is one run.
type Config struct {
	// Replicas is how many processes, Calls how many concurrent calls each.
	Replicas, Calls int
	// LeaseTTL is the refresh lease's ttl.
	LeaseTTL time.Duration
	// KillHolder SIGKILLs the replica whose refresh request reaches the
	// authorization server first, while the request is held there: another
	// replica must refresh once the lease expires.
	KillHolder bool
}

// Run authorizes user once (in this process, through a Manager on the
// shared store), starts the replicas, each Connected with that token,
// makes the token due in all of them at once, and checks: exactly one
// refresh for the grant, no invalid_grant, no reuse, every call answered.
func Run(t *testing.T, storeURL string, open Opener, cfg Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var killed atomic.Int64
	holder := make(chan int, 1)
	opts := oauthtest.Options{}
	if cfg.KillHolder {
		opts.Refreshing = func(r *http.Request) {
			if !killed.CompareAndSwap(0, -1) {
				return // only the first refresh is held
			}
			pid, _ := strconv.Atoi(r.Header.Get(pidHeader))
			holder <- pid
			<-r.Context().Done() // until the replica is killed
		}
	}
	srv := oauthtest.Start(t, opts)

	st, closeStore, err := open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	m := client.New(client.WithSharedState(st), client.WithUser(user))
	if err := m.Add(ctx, "s", client.ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}, OAuth: &oauth.Config{}}); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(ctx, "s", lifecycle.NeedsAuthorization); err != nil {
		t.Fatal(err)
	}
	u, err := m.StartAuthorization(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	redirect, err := oauthtest.Approve(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CompleteAuthorization(ctx, "s", redirect); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	env := []string{envReplica + "=1", envServer + "=" + srv.URL(), envStore + "=" + storeURL,
		envCalls + "=" + strconv.Itoa(cfg.Calls), envTTL + "=" + cfg.LeaseTTL.String()}
	procs := make([]*process, cfg.Replicas)
	for i := range procs {
		procs[i] = start(t, env)
	}
	for _, p := range procs {
		p.expect(t, ctx, "ready")
	}
	srv.ExpireAccessTokens() // the server refuses the old token too
	for _, p := range procs {
		if _, err := p.stdin.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
	}
	victim := 0
	var killedAt time.Time
	if cfg.KillHolder {
		select {
		case victim = <-holder:
		case <-ctx.Done():
			t.Fatal("no refresh reached the authorization server")
		}
		for _, p := range procs {
			if p.cmd.Process.Pid == victim {
				killedAt = time.Now()
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}
	var total Report
	for _, p := range procs {
		if p.cmd.Process.Pid == victim {
			continue
		}
		var rep Report
		if err := json.Unmarshal([]byte(p.expect(t, ctx, "report ")), &rep); err != nil {
			t.Fatal(err)
		}
		total.OK += rep.OK
		total.Failed += rep.Failed
		total.Errors = append(total.Errors, rep.Errors...)
	}
	want := cfg.Calls * cfg.Replicas
	if cfg.KillHolder {
		want -= cfg.Calls
		t.Logf("holder %d killed; the refresh came %v later (lease ttl %v)", victim, time.Since(killedAt).Round(time.Millisecond), cfg.LeaseTTL)
	}
	if total.OK != want || total.Failed != 0 {
		t.Errorf("%d calls answered, %d failed, want %d and 0: %v", total.OK, total.Failed, want, total.Errors)
	}
	if n := srv.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes granted for the grant, want exactly 1", n)
	}
	if n := srv.TokenErrors("invalid_grant"); n != 0 {
		t.Errorf("%d invalid_grant answers, want 0", n)
	}
	if n := srv.Reuses(); n != 0 {
		t.Errorf("%d refresh tokens redeemed twice", n)
	}
	t.Logf("%d replicas × %d calls: %d answered, %d refresh, %d token requests in all",
		cfg.Replicas, cfg.Calls, total.OK, srv.Grants("refresh_token"), len(srv.TokenRequests()))
}
