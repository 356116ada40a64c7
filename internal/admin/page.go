package admin

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The status page: HTML, a script and a style sheet, served to anyone who
// can reach the endpoint (they hold nothing); everything they show or do
// goes through the token-checked endpoints, with the token the page takes
// from its URL's fragment (which a browser never sends). No cookie is
// involved, so no other site can make the user's browser act; a request
// with an Origin header must come from the page itself.
//
//go:embed page
var page embed.FS

// pageCSP allows the page its own script, style and requests, and nothing
// else: no inline script, no frame around it, no form.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// servePage answers the page's files; false if path is none of them.
func servePage(w http.ResponseWriter, r *http.Request) bool {
	var name, typ string
	switch r.URL.Path {
	case "/", "/status":
		name, typ = "page/status.html", "text/html; charset=utf-8"
	case "/status.js":
		name, typ = "page/status.js", "text/javascript; charset=utf-8"
	case "/status.css":
		name, typ = "page/status.css", "text/css; charset=utf-8"
	default:
		return false
	}
	b, err := page.ReadFile(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return true
	}
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
	return true
}

// DefaultEventsRefresh is how often the page's event stream sends the
// servers' reports again when no event came but their counters changed
// (calls made, failed).
const DefaultEventsRefresh = time.Second

// events is the page's stream of server-sent events: "serve" (ServeInfo)
// once, then "servers" (every ServerReport) at the start, after every
// event and when the counters change, and "event" (an EventReport) for
// each event of the Manager. A comment every 15 s keeps proxies from
// thinking it idle.
func (a *Handler) events(w http.ResponseWriter, r *http.Request) {
	statuses, _, evs, cancel := a.m.Watch(0)
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	var last []byte
	sendServers := func(statuses []ServerReport) error {
		b, err := json.Marshal(statuses)
		if err != nil || bytes.Equal(b, last) {
			return err
		}
		last = b
		if _, err := fmt.Fprintf(w, "event: servers\ndata: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	if send("serve", a.o.Serve) != nil || sendServers(a.reports(statuses)) != nil {
		return
	}
	refresh := time.NewTicker(DefaultEventsRefresh)
	defer refresh.Stop()
	alive := time.NewTicker(15 * time.Second)
	defer alive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-evs:
			if !ok {
				return
			}
			if send("event", MakeEventReport(ev)) != nil || sendServers(a.reports(a.m.Statuses())) != nil {
				return
			}
		case <-refresh.C:
			if sendServers(a.reports(a.m.Statuses())) != nil {
				return
			}
		case <-alive.C:
			if _, err := fmt.Fprint(w, ": alive\n\n"); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}
