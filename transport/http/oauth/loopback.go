package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Loopback receives the authorization server's redirect on 127.0.0.1, for
// hosts with a browser on the same machine (RFC 8252 section 7.3). It
// listens only on the loopback interface, answers only the redirect URI's
// path, and hands each redirect to a completion function (the Authorizer's
// Complete, or the Manager's CompleteAuthorization), which checks the state
// and exchanges the code with the PKCE verifier.
type Loopback struct {
	ln   net.Listener
	path string
}

// ListenLoopback listens for redirects to redirectURI, which must be an
// http URL on 127.0.0.1, [::1] or localhost (taken as 127.0.0.1) with a
// port.
func ListenLoopback(redirectURI string) (*Loopback, error) {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme != "http" || u.Port() == "" {
		return nil, fmt.Errorf("oauth: loopback: redirect URI %q is not http://127.0.0.1:<port>/...", redirectURI)
	}
	host := u.Hostname()
	switch host {
	case "localhost":
		host = "127.0.0.1"
	case "127.0.0.1", "::1":
	default:
		return nil, fmt.Errorf("oauth: loopback: redirect URI host %q is not a loopback address", u.Hostname())
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, u.Port()))
	if err != nil {
		return nil, fmt.Errorf("oauth: loopback: %w", err)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return &Loopback{ln: ln, path: path}, nil
}

// Addr returns the address listened on.
func (l *Loopback) Addr() net.Addr { return l.ln.Addr() }

// Close stops listening, if Serve has not already.
func (l *Loopback) Close() error { return l.ln.Close() }

// Serve answers redirects until one completes the authorization, complete
// fails with anything but ErrStateMismatch, or ctx ends; then it stops
// listening and returns complete's error (or ctx's). A redirect with the
// wrong state (forged, or from an older attempt) is answered 400 and the
// wait goes on: it cannot end the authorization.
func (l *Loopback) Serve(ctx context.Context, complete func(ctx context.Context, redirect string) error) error {
	var (
		mu   sync.Mutex // one completion at a time
		once sync.Once
		done = make(chan error, 1)
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != l.path || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		redirect := "http://" + r.Host + r.URL.RequestURI()
		err := complete(ctx, redirect)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case err == nil:
			fmt.Fprint(w, page("Authorized", "You can close this window and return to the application."))
		case errors.Is(err, ErrStateMismatch):
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, page("Not authorized", "This redirect does not belong to the authorization in progress."))
			return
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, page("Not authorized", "The authorization failed; see the application for why."))
		}
		once.Do(func() { done <- err })
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l.ln)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	<-served
	return err
}

func page(title, body string) string {
	return "<!doctype html><title>" + html.EscapeString(title) + "</title><h1>" +
		html.EscapeString(title) + "</h1><p>" + html.EscapeString(strings.TrimSpace(body)) + "</p>"
}
