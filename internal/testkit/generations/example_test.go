package generations_test

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/testkit/generations"
)

// The fleet, one line per protocol generation and library: the releases
// whose newest protocol each generation is, and the one server told to
// speak only 2026-07-28.
func Example() {
	seen := map[string]bool{}
	for _, m := range generations.Fleet {
		key := m.Protocol + " " + m.Library
		if seen[key] {
			continue
		}
		seen[key] = true
		how := "newest protocol of the release"
		if m.Told {
			how = "told to speak only it"
		}
		fmt.Printf("%s  %-22s %s\n", m.Protocol, m.Library, how)
	}
	// Output:
	// 2024-11-05  TypeScript SDK 1.0.4   newest protocol of the release
	// 2025-03-26  TypeScript SDK 1.12.3  newest protocol of the release
	// 2025-03-26  mcp-go v0.32.0         newest protocol of the release
	// 2025-06-18  TypeScript SDK 1.22.0  newest protocol of the release
	// 2025-06-18  Go SDK v1.1.0          newest protocol of the release
	// 2025-11-25  TypeScript SDK 1.32.2  newest protocol of the release
	// 2026-07-28  mcp-go v1.2.1          told to speak only it
}
