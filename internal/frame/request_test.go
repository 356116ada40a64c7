package frame_test

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/internal/frame"
)

// The id of a request too large to keep, found in what was kept of it:
// its start, or its end when the id comes last.
func ExampleMessageID() {
	fmt.Printf("%s\n", frame.MessageID([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"xxxx`), nil))
	fmt.Printf("%s\n", frame.MessageID([]byte(`{"method":"tools/call","params":{"arguments":{"text":"xxxx`), []byte(`xxxx"}},"jsonrpc":"2.0","id":"a-1"}`+"\n")))
	fmt.Printf("%q\n", frame.MessageID([]byte(`{"method":"tools/call","params":{"arguments":{"text":"xxxx`), []byte(`xxxx`)))
	// Output:
	// 7
	// "a-1"
	// ""
}
