package client

import (
	"reflect"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// TestSpecFieldsDecided: every field of ServerSpec is in Apply's restart
// table, so that a new field cannot be left out of the decision unseen.
func TestSpecFieldsDecided(t *testing.T) {
	typ := reflect.TypeFor[ServerSpec]()
	for i := range typ.NumField() {
		if _, ok := specFields[typ.Field(i).Name]; !ok {
			t.Errorf("ServerSpec.%s is not in specFields: say whether a change of it restarts the server", typ.Field(i).Name)
		}
	}
	for name := range specFields {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("specFields names %s, which ServerSpec has not", name)
		}
	}
}

// TestRestartKey: a change of any field the table marks restart changes
// the key, down to a map value or a nested field; a change of a field it
// applies in place does not.
func TestRestartKey(t *testing.T) {
	base := func() ServerSpec {
		return ServerSpec{
			Stdio:       &stdio.Spec{Command: "srv", Args: []string{"-v"}, Env: map[string]string{"A": "1"}},
			OAuth:       &oauth.Config{ClientID: "id", Scopes: []string{"read"}},
			Timeout:     time.Second,
			IdleTimeout: time.Minute,
			Reconnect:   &lifecycle.Policy{MaxAttempts: 3},
			ToolPrefix:  "p",
			ToolFilter:  ToolFilter{Allow: []string{"a"}},
			Limits:      Limits{MaxMessageBytes: 1 << 20},
		}
	}
	key := restartKey(base())
	if restartKey(base()) != key {
		t.Fatal("the same spec, another key")
	}
	for _, tt := range []struct {
		name    string
		change  func(*ServerSpec)
		restart bool
	}{
		{"command", func(s *ServerSpec) { s.Stdio.Command = "other" }, true},
		{"an arg", func(s *ServerSpec) { s.Stdio.Args = []string{"-q"} }, true},
		{"an env value", func(s *ServerSpec) { s.Stdio.Env = map[string]string{"A": "2"} }, true},
		{"stdio to http", func(s *ServerSpec) { s.Stdio, s.HTTP = nil, &mcphttp.Spec{URL: "http://x/mcp"} }, true},
		{"an oauth scope", func(s *ServerSpec) { s.OAuth.Scopes = []string{"write"} }, true},
		{"the oauth issuer", func(s *ServerSpec) { s.OAuth.Issuer = "https://as.example.com" }, true},
		{"the ID token file", func(s *ServerSpec) { s.OAuth.IDTokenFile = "/run/id_token" }, true},
		{"lazy", func(s *ServerSpec) { s.Lazy = true }, true},
		{"timeout", func(s *ServerSpec) { s.Timeout = 2 * time.Second }, true},
		{"reconnect", func(s *ServerSpec) { s.Reconnect.MaxAttempts = 4 }, true},
		{"tool prefix", func(s *ServerSpec) { s.ToolPrefix = "q" }, true},
		{"in-flight limit", func(s *ServerSpec) { s.MaxInFlight = 2 }, true},
		{"a limit", func(s *ServerSpec) { s.Limits.NotificationRate = 5 }, true},
		{"disabled", func(s *ServerSpec) { s.Disabled = true }, false},
		{"idle timeout", func(s *ServerSpec) { s.IdleTimeout = time.Hour }, false},
		{"tool filter", func(s *ServerSpec) { s.ToolFilter = ToolFilter{Deny: []string{"b"}} }, false},
	} {
		s := base()
		tt.change(&s)
		if got := restartKey(s) != key; got != tt.restart {
			t.Errorf("%s: key changed %v, want %v", tt.name, got, tt.restart)
		}
	}
}
