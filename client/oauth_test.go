package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// oauthSpec is the spec of an OAuth server: dynamic registration, the
// authorization code grant, the default redirect URI (nothing listens
// there: the tests play the browser with oauthtest.Approve).
func oauthSpec(srv *oauthtest.Server) ServerSpec {
	return ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}, OAuth: &oauth.Config{}}
}

// authorizeOnce waits for the server's NeedsAuthorization event, approves
// at its URL as the user would, completes the authorization and waits for
// Connected.
func authorizeOnce(t *testing.T, m *Manager, r *recorder, name string) {
	t.Helper()
	ev := r.wait(t, func(e Event) bool {
		return e.Kind == EventState && e.Server == name && e.To == lifecycle.NeedsAuthorization
	})
	if ev.AuthorizationURL == "" {
		t.Fatalf("NeedsAuthorization event without a URL: %+v", ev)
	}
	ctx := testCtx(t)
	redirect, err := oauthtest.Approve(ctx, ev.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CompleteAuthorization(ctx, name, redirect); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, name, lifecycle.Connected)
}

func echo(t *testing.T, m *Manager, name, msg string) {
	t.Helper()
	res, err := m.CallTool(testCtx(t), name, "echo", map[string]any{"message": msg})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got := text(res); got != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

func needsAuthorizationEvents(r *recorder) int {
	n := 0
	for _, e := range r.snapshot() {
		if e.Kind == EventState && e.To == lifecycle.NeedsAuthorization {
			n++
		}
	}
	return n
}

// The token belongs to the slot: three reconnects and a restart of the
// HTTP server need no user step, no new authorization, no new token.
//
// Redialled forever (httpPolicy), the call after the restart waiting for
// it: the server is down from its stop to its start, which took long
// enough on a loaded machine (fresh-clone make test) for fastPolicy's
// three quick dials to be refused and the server to end PermanentlyFailed.
func TestOAuthTokenReusedAcrossReconnects(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	m := newTestManager(t, WithPolicy(httpPolicy), WithTimeouts(Timeouts{Ready: httpReadyBound}))
	r := record(m)
	mustAdd(t, m, "s", oauthSpec(srv))
	authorizeOnce(t, m, r, "s")
	echo(t, m, "s", "first")

	for i := range 3 {
		gen := mustStatus(t, m, "s").Generation
		if err := m.Reconnect(testCtx(t), "s"); err != nil {
			t.Fatal(err)
		}
		mustWait(t, m, "s", lifecycle.Connected)
		if g := mustStatus(t, m, "s").Generation; g <= gen {
			t.Fatalf("reconnect %d: generation %d, want > %d", i, g, gen)
		}
		echo(t, m, "s", fmt.Sprint("after reconnect ", i))
	}
	srv.Restart(t)
	echo(t, m, "s", "after restart")

	if n := srv.Authorizations(); n != 1 {
		t.Errorf("authorizations = %d, want 1", n)
	}
	if n := srv.Grants("authorization_code"); n != 1 {
		t.Errorf("code exchanges = %d, want 1", n)
	}
	if n := srv.Grants("refresh_token"); n != 0 {
		t.Errorf("refreshes = %d, want 0 (the token was valid all along)", n)
	}
	if n := needsAuthorizationEvents(r); n != 1 {
		t.Errorf("NeedsAuthorization events = %d, want 1: %v", n, states(r.snapshot(), "s"))
	}
}

func mustStatus(t *testing.T, m *Manager, name string) ServerStatus {
	t.Helper()
	st, err := m.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// An access token that expires mid-session, with the client unaware (the
// server dropped it) or aware (its lifetime runs out), costs the caller
// nothing: the 401 is answered by a refresh and the call sent again, or
// the token is refreshed before it runs out.
func TestOAuthTokenExpiresMidSession(t *testing.T) {
	t.Run("server side", func(t *testing.T) {
		srv := oauthtest.Start(t, oauthtest.Options{})
		m := newTestManager(t)
		r := record(m)
		mustAdd(t, m, "s", oauthSpec(srv))
		authorizeOnce(t, m, r, "s")
		for i := range 3 {
			srv.ExpireAccessTokens()
			echo(t, m, "s", fmt.Sprint("call ", i))
		}
		if n := srv.Grants("refresh_token"); n != 3 {
			t.Errorf("refreshes = %d, want 3", n)
		}
		if st := mustStatus(t, m, "s"); st.State != lifecycle.Connected || st.Generation != 1 {
			t.Errorf("status = %v generation %d, want Connected generation 1 (no reconnect)", st.State, st.Generation)
		}
	})
	t.Run("lifetime", func(t *testing.T) {
		// Tokens live a second; calls go on until two refreshes happened.
		srv := oauthtest.Start(t, oauthtest.Options{AccessTokenExp: time.Second})
		m := newTestManager(t)
		r := record(m)
		mustAdd(t, m, "s", oauthSpec(srv))
		authorizeOnce(t, m, r, "s")
		ctx := testCtx(t)
		for i := 0; srv.Grants("refresh_token") < 2; i++ {
			if ctx.Err() != nil {
				t.Fatalf("only %d refreshes", srv.Grants("refresh_token"))
			}
			echo(t, m, "s", fmt.Sprint("call ", i))
		}
		if n := needsAuthorizationEvents(r); n != 1 {
			t.Errorf("NeedsAuthorization events = %d, want 1", n)
		}
	})
}

// Fifty calls that all find the token expired cause one refresh: the
// refresh token rotates (a second use would be refused and send the server
// to NeedsAuthorization), so coalescing is required, not an optimisation.
func TestOAuthConcurrentCallsRefreshOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		expire func(srv *oauthtest.Server, advance func(time.Duration))
	}{
		// Every call is sent with the old token and answered 401.
		{"server expired", func(srv *oauthtest.Server, _ func(time.Duration)) { srv.ExpireAccessTokens() }},
		// Every call finds the token due before it is sent.
		{"client clock", func(_ *oauthtest.Server, advance func(time.Duration)) { advance(time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := oauthtest.Start(t, oauthtest.Options{})
			var skew atomic.Int64
			now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
			m := newTestManager(t, WithOAuthOptions(oauth.WithClock(now)))
			r := record(m)
			mustAdd(t, m, "s", oauthSpec(srv))
			authorizeOnce(t, m, r, "s")
			tc.expire(srv, func(d time.Duration) { skew.Add(int64(d)) })

			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 50)
			for i := range 50 {
				wg.Go(func() {
					<-start
					_, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": fmt.Sprint(i)})
					if err != nil {
						errs <- err
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("call: %v", err)
			}
			if n := srv.Grants("refresh_token"); n != 1 {
				t.Errorf("refreshes = %d, want 1", n)
			}
			if n := needsAuthorizationEvents(r); n != 1 {
				t.Errorf("NeedsAuthorization events = %d, want 1", n)
			}
		})
	}
}

// A revoked refresh token sends the server to NeedsAuthorization with an
// event carrying the URL; calls then fail fast with the typed error and
// dial nothing; completing the authorization brings it back.
func TestOAuthRevokedRefreshToken(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	m := newTestManager(t)
	r := record(m)
	mustAdd(t, m, "s", oauthSpec(srv))
	authorizeOnce(t, m, r, "s")
	echo(t, m, "s", "before")

	srv.RevokeRefreshTokens()
	_, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "x"})
	var ae *AuthorizationError
	var se *ServerError
	if !errors.Is(err, ErrNeedsAuthorization) || !errors.As(err, &ae) || !errors.As(err, &se) || se.Server != "s" {
		t.Fatalf("call after revocation: %v, want a *ServerError for s with *AuthorizationError", err)
	}
	if ae.URL == "" {
		t.Error("AuthorizationError has no URL")
	}
	ev := r.wait(t, func(e Event) bool { return e.To == lifecycle.NeedsAuthorization && e.From == lifecycle.Connected })
	if ev.AuthorizationURL != ae.URL {
		t.Errorf("event URL %q, error URL %q: want the same", ev.AuthorizationURL, ae.URL)
	}
	if st := mustStatus(t, m, "s"); st.State != lifecycle.NeedsAuthorization || st.AuthorizationURL != ae.URL {
		t.Errorf("status = %v %q", st.State, st.AuthorizationURL)
	}

	// Fail fast, with no dial: the authorization server and the MCP server
	// hear nothing more.
	tokens := srv.Grants("refresh_token") + srv.Grants("authorization_code")
	begin := time.Now()
	for range 20 {
		_, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "x"})
		if !errors.Is(err, ErrNeedsAuthorization) || !errors.Is(err, oauth.ErrNeedsAuthorization) {
			t.Fatalf("call while NeedsAuthorization: %v", err)
		}
		if !strings.Contains(err.Error(), `server "s"`) || !strings.Contains(err.Error(), "CompleteAuthorization") {
			t.Fatalf("error does not name the server and what to do: %v", err)
		}
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("20 calls took %v: not failing fast", d)
	}
	if n := srv.Grants("refresh_token") + srv.Grants("authorization_code"); n != tokens {
		t.Errorf("token requests while waiting for the user: %d", n-tokens)
	}
	if st := mustStatus(t, m, "s"); st.Attempt != 0 {
		t.Errorf("attempt = %d: the budget was spent", st.Attempt)
	}

	u, err := m.StartAuthorization(testCtx(t), "s")
	if err != nil || u != ae.URL {
		t.Fatalf("StartAuthorization = %q, %v; want the waiting one", u, err)
	}
	redirect, err := oauthtest.Approve(testCtx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CompleteAuthorization(testCtx(t), "s", redirect); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	echo(t, m, "s", "after")
	// The events come by the bus, after the state they report: WaitFor
	// can return before the recorder has the last one.
	r.waitStates(t, "s", "Connecting", "NeedsAuthorization", "Connecting", "Connected",
		"NeedsAuthorization", "Reconnecting", "Connected")
}

// A redirect with another state is refused and the authorization stays
// open; a pasted code completes it.
func TestOAuthCompleteChecksState(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	m := newTestManager(t)
	r := record(m)
	mustAdd(t, m, "s", oauthSpec(srv))
	ev := r.wait(t, func(e Event) bool { return e.To == lifecycle.NeedsAuthorization })
	redirect, err := oauthtest.Approve(testCtx(t), ev.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(redirect, "state=", "state=forged", 1)
	if err := m.CompleteAuthorization(testCtx(t), "s", forged); !errors.Is(err, oauth.ErrStateMismatch) {
		t.Fatalf("forged redirect: %v, want ErrStateMismatch", err)
	}
	rd, err := oauth.ParseRedirect(redirect)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CompleteAuthorization(testCtx(t), "s", rd.Code); err != nil {
		t.Fatalf("pasted code: %v", err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
}

// The file store keeps the token across Managers: a host that restarts
// does not ask the user again.
func TestOAuthFileStoreSurvivesNewManager(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	path := filepath.Join(t.TempDir(), "tokens.json")

	m1 := New(WithTokenStore(oauth.NewFileStore(path)))
	r := record(m1)
	mustAdd(t, m1, "s", oauthSpec(srv))
	authorizeOnce(t, m1, r, "s")
	echo(t, m1, "s", "one")
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}

	m2 := newTestManager(t, WithTokenStore(oauth.NewFileStore(path)))
	r2 := record(m2)
	mustAdd(t, m2, "s", oauthSpec(srv))
	mustWait(t, m2, "s", lifecycle.Connected)
	echo(t, m2, "s", "two")
	if n := needsAuthorizationEvents(r2); n != 0 {
		t.Errorf("the new Manager needed authorization %d times", n)
	}
	if n := srv.Authorizations(); n != 1 {
		t.Errorf("authorizations = %d, want 1", n)
	}
	if n := srv.Registrations(); n != 1 {
		t.Errorf("registrations = %d, want 1 (the client registration is kept too)", n)
	}
}

// No token, code, verifier or client secret reaches a log, an event, a
// status or an error, at any level.
func TestOAuthSecretsNeverShown(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"pre": "s3cret-client-secret"}})
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := oauth.NewMemoryStore()
	m := newTestManager(t, WithLogger(logger), WithTokenStore(store))
	r := record(m)
	spec := ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()},
		OAuth: &oauth.Config{ClientID: "pre", ClientSecret: "s3cret-client-secret"}}
	mustAdd(t, m, "s", spec)
	ev := r.wait(t, func(e Event) bool { return e.To == lifecycle.NeedsAuthorization })
	redirect, err := oauthtest.Approve(testCtx(t), ev.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	rd, _ := oauth.ParseRedirect(redirect)
	if err := m.CompleteAuthorization(testCtx(t), "s", redirect); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	srv.ExpireAccessTokens()
	echo(t, m, "s", "x") // a refresh
	e, _ := store.Load(testCtx(t), "s")
	if e == nil || e.Token == nil {
		t.Fatal("no stored entry")
	}
	srv.RevokeRefreshTokens()
	_, callErr := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "y"})
	if !errors.Is(callErr, ErrNeedsAuthorization) {
		t.Fatalf("call after revocation: %v", callErr)
	}

	secrets := map[string]string{"client secret": "s3cret-client-secret", "code": rd.Code}
	var shown []string
	st, _ := m.Status("s")
	shown = append(shown, fmt.Sprintf("%v %+v %#v", st, st, st), fmt.Sprint(callErr), fmt.Sprintf("%+v", spec),
		fmt.Sprintf("%v %+v %#v", e, e, e), fmt.Sprintf("%v", *spec.OAuth), rd.String(), fmt.Sprintf("%v %#v", rd, rd))
	for _, ev := range r.snapshot() {
		shown = append(shown, fmt.Sprintf("%+v", ev), fmt.Sprint(ev.Err))
	}
	logMu.Lock()
	shown = append(shown, logs.String())
	logMu.Unlock()
	// The refreshed token; every earlier one passed through the same code.
	secrets["access token"] = e.Token.AccessToken
	secrets["refresh token"] = e.Token.RefreshToken
	for what, secret := range secrets {
		if secret == "" {
			t.Fatalf("no %s to look for", what)
		}
		for _, s := range shown {
			if strings.Contains(s, secret) {
				t.Errorf("the %s leaked in: %s", what, s)
			}
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Reconnect, Disable and Enable work from NeedsAuthorization: a redial
// with no token lands there again, with no budget spent; a disabled server
// leaves it.
func TestOAuthNeedsAuthorizationTransitions(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	m := newTestManager(t)
	r := record(m)
	mustAdd(t, m, "s", oauthSpec(srv))
	mustWait(t, m, "s", lifecycle.NeedsAuthorization)
	if err := m.Reconnect(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	r.wait(t, func(e Event) bool {
		return e.From == lifecycle.Connecting && e.To == lifecycle.NeedsAuthorization && e.Seq > 3
	})
	if st := mustStatus(t, m, "s"); st.State != lifecycle.NeedsAuthorization || st.Attempt != 0 {
		t.Fatalf("status after Reconnect = %v attempt %d", st.State, st.Attempt)
	}
	if err := m.Disable(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	if err := m.Enable(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	n := 0
	r.wait(t, func(e Event) bool {
		if e.Kind == EventState && e.To == lifecycle.NeedsAuthorization {
			n++
		}
		return n == 3
	})
	want := []string{"Connecting", "NeedsAuthorization", "Connecting", "NeedsAuthorization", "Disabling", "Disabled", "Connecting", "NeedsAuthorization"}
	if got := states(r.snapshot(), "s"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("states = %v, want %v", got, want)
	}
	if n := srv.Authorizations(); n != 0 {
		t.Errorf("authorizations = %d with no user", n)
	}
}

// TestAuthorizedDuringADial: an authorization completed while a dial is
// still running without the token (the server's first connect, say) is not
// lost: the dial that finds no usable token dials again at once, with it,
// instead of leaving the server in NeedsAuthorization with the token
// stored.
func TestAuthorizedDuringADial(t *testing.T) {
	ts := newTestServer()
	inDial := make(chan struct{})
	release := make(chan struct{})
	var dials atomic.Int32
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) {
		if dials.Add(1) == 1 {
			close(inDial)
			<-release
			return nil, &oauth.NeedsAuthorizationError{Reason: "no token yet"}
		}
		return ts.dialer()(ctx)
	}})
	<-inDial
	s, err := m.slot("s")
	if err != nil {
		t.Fatal(err)
	}
	s.authorized() // the user completes the flow while the dial runs
	close(release)
	mustWait(t, m, "s", lifecycle.Connected)
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
	for _, st := range states(rec.snapshot(), "s") {
		if st == lifecycle.NeedsAuthorization.String() {
			t.Fatalf("went to NeedsAuthorization with the authorization done: %v", states(rec.snapshot(), "s"))
		}
	}
}
