package httpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRestartSamePort checks that every kind comes back on its port, and
// refuses connections while stopped.
func TestRestartSamePort(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for _, kind := range httpserver.Kinds {
		t.Run(kind.String(), func(t *testing.T) {
			s := httpserver.Start(t, kind)
			addr := s.Addr()
			s.Stop()
			if _, err := client.Get(s.URL()); err == nil {
				t.Fatal("GET succeeded while stopped")
			}
			s.Restart(t)
			if s.Addr() != addr {
				t.Fatalf("restarted on %s, want %s", s.Addr(), addr)
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodDelete, s.URL(), nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("DELETE after restart: %v", err)
			}
			resp.Body.Close()
			if got := s.Deletes(); got != 1 {
				t.Errorf("Deletes = %d, want 1", got)
			}
		})
	}
}

// TestEverythingRestart checks that server-everything comes back on its
// port after a kill, and that the kill reaps it.
func TestEverythingRestart(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	e := httpserver.StartEverything(t, httpserver.EverythingStreamable)
	e.Restart(t)
	resp, err := client.Get(e.URL())
	if err != nil {
		t.Fatalf("GET after restart: %v\n%s", err, e.Output())
	}
	resp.Body.Close()
	e.Stop()
	if _, err := client.Get(e.URL()); err == nil {
		t.Fatal("GET succeeded after Stop")
	}
}

func ExampleKind_String() {
	for _, k := range httpserver.Kinds {
		fmt.Println(k)
	}
	// Output:
	// mcpgo
	// mcpgo-stateful
	// mcpgo-sse
	// gosdk-stateful
	// gosdk-stateless
}
