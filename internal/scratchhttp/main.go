package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

func main() {
	cases := map[string]http.Handler{
		"404":  http.NotFoundHandler(),
		"405":  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "method not allowed", 405) }),
		"401":  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "unauthorized", 401) }),
		"403":  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "forbidden", 403) }),
		"501html": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(501)
			fmt.Fprint(w, "<html><head><title>501 Not Implemented</title></head><body><h1>Not Implemented</h1><p>lots of text</p></body></html>")
		}),
		"500": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }),
	}
	for name, h := range cases {
		srv := httptest.NewServer(h)
		run(name, srv.URL+"/mcp?api_key=SECRET")
		srv.Close()
	}
	tls := httptest.NewTLSServer(http.NotFoundHandler())
	run("tls", tls.URL+"/mcp")
	tls.Close()
	run("refused", "http://127.0.0.1:1/mcp")
}

func run(name, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	ch, _ := m.Subscribe(100)
	m.Add(ctx, "s", client.ServerSpec{HTTP: &mcphttp.Spec{URL: url}})
	for {
		select {
		case e := <-ch:
			if e.Kind == client.EventRetry || e.Kind == client.EventState {
				fmt.Printf("%s: %s %s->%s attempt %d: %v\n", name, e.Kind, e.From, e.To, e.Attempt, e.Err)
				if e.Kind == client.EventRetry {
					return
				}
			}
		case <-ctx.Done():
			st, _ := m.Status("s")
			fmt.Printf("%s: timeout: state %s %v\n", name, st.State, st.LastError)
			return
		}
	}
}
