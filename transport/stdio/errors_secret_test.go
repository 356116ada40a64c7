package stdio

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// A failed spawn names the command, never its arguments or environment:
// tokens are often passed as arguments, and the error reaches the
// Manager's status, events and logs.
func TestSpawnErrorNamesOnlyTheCommand(t *testing.T) {
	spec := Spec{Command: "mcp-server-x", Args: []string{"--api-key=ARGSECRET-a1", "ARGSECRET-a2"},
		Env: map[string]string{"TOKEN": "ENVSECRET-e1"}, Dir: "/srv"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"spawn", spawnError(spec, errors.New("pipe: broken"))},
		{"exhausted", spawnError(spec, syscall.EMFILE)},
		{"start", startError(spec, "/usr/bin/mcp-server-x", errors.New("fork/exec: something else"))},
	} {
		msg := tc.err.Error()
		if !strings.Contains(msg, "mcp-server-x") {
			t.Errorf("%s: %q does not name the command", tc.name, msg)
		}
		for _, secret := range []string{"ARGSECRET", "ENVSECRET", "TOKEN"} {
			if strings.Contains(msg, secret) {
				t.Errorf("%s: %q holds %s", tc.name, msg, secret)
			}
		}
	}
}
