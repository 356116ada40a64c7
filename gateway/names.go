package gateway

import (
	"fmt"
	"regexp"
)

// toolName is the form of a tool name the MCP specification asks for
// (2025-11-25, SEP-986): 1 to 128 characters, ASCII letters, digits, '_',
// '-' and '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ValidToolName reports whether name has the form the MCP specification
// asks of a tool name.
func ValidToolName(name string) bool { return toolName.MatchString(name) }

// CheckSeparator checks a separator of qualified tool names
// (client.WithSeparator) against the MCP tool-name rules: 1 to 8 of the
// characters a tool name may have, so that "server" + sep + "tool" is a
// tool name when the server's and the tool's are.
func CheckSeparator(sep string) error {
	if len(sep) < 1 || len(sep) > 8 || !toolName.MatchString(sep) {
		return fmt.Errorf("mcpfleet: gateway: separator %q: want 1 to 8 of the characters a tool name may have (A-Z a-z 0-9 _ - .)", sep)
	}
	return nil
}
