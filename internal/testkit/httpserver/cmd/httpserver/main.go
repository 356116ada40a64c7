// Command httpserver runs one test MCP server of package httpserver on
// 127.0.0.1, in a process of its own, so that a benchmark's allocation
// figures are the client's alone. It prints the server's URL on a line of
// its own and serves until its stdin closes.
//
//	httpserver -kind gosdk-stateful
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
)

func main() {
	kindName := flag.String("kind", "mcpgo", "the server's kind (httpserver.Kind's names)")
	flag.Parse()
	kind, ok := httpserver.ParseKind(*kindName)
	if !ok {
		fmt.Fprintf(os.Stderr, "httpserver: unknown kind %q\n", *kindName)
		os.Exit(2)
	}
	s, err := httpserver.Listen(kind, "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
	fmt.Println(s.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.Stop()
}
