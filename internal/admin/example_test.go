package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A serve answers the commands of its config on an admin endpoint; a
// command asks it for the status with the token of the serve's admin file.
func Example() {
	ctx := context.Background()
	m := client.New()
	defer m.Close()
	_ = m.Add(ctx, "notes", client.ServerSpec{Dialer: client.InProcess(upstream.New("notes").MCPServer)})
	_ = m.WaitFor(ctx, "notes", lifecycle.Connected)

	h := admin.New(m, "the-token-of-the-admin-file", admin.Options{})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/status", nil)
	req.Header.Set("Authorization", "Bearer the-token-of-the-admin-file")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var status struct{ Servers []admin.ServerReport }
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		panic(err)
	}
	for _, s := range status.Servers {
		fmt.Println(s.Name, s.State, s.Generation)
	}
	// Output: notes Connected 1
}
