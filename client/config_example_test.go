package client_test

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/client"
)

// A host reads a VS Code mcp.json as it is: it says which folder is the
// workspace, and answers the file's inputs (here without asking anyone;
// a real host prompts, hiding the answer when Password is set).
func ExampleWithInputs() {
	vscode := []byte(`{
		// .vscode/mcp.json
		"inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
		"servers": {
			"search": {
				"type": "stdio",
				"command": "${workspaceFolder}/bin/search",
				"env": {"API_KEY": "${input:api-key}"},
			},
		},
	}`)
	cfg, err := client.ParseConfig(vscode,
		client.WithWorkspaceFolder("/src/project"),
		client.WithInputs(func(in client.Input) (string, error) {
			fmt.Printf("asked for %s (%s, password %v)\n", in.ID, in.Description, in.Password)
			return "k-123", nil
		}))
	if err != nil {
		panic(err)
	}
	search := cfg.Servers["search"]
	fmt.Println(cfg.Dialect, search.Stdio.Command, search.Stdio.Env["API_KEY"] == "k-123")
	fmt.Println(search) // env values are never printed
	// Output:
	// asked for api-key (API key, password true)
	// vscode /src/project/bin/search true
	// stdio "/src/project/bin/search" env=[API_KEY]
}

// Gemini CLI's settings.json names a streamable HTTP server's URL
// "httpUrl", reads "url" as legacy SSE and gives timeouts in milliseconds.
// A file with an httpUrl or trust is recognised; WithDialect says so for
// one that has neither.
func ExampleWithDialect() {
	gemini := []byte(`{"mcpServers": {
		"docs": {"url": "https://docs.example.com/sse", "timeout": 30000, "includeTools": ["search_*"]}
	}}`)
	cfg, err := client.ParseConfig(gemini, client.WithDialect(client.DialectGemini))
	if err != nil {
		panic(err)
	}
	docs := cfg.Servers["docs"]
	fmt.Println(docs.Type, docs.Timeout, docs.ToolFilter)

	// Read as Claude Desktop's, the same number would be 8h20m of
	// seconds: refused, with what to do.
	_, err = client.ParseConfig(gemini, client.WithSource("settings.json"))
	fmt.Println(err)
	// Output:
	// sse 30s allow [search_*]
	// mcpfleet: settings.json: server "docs": field "timeout": 30000 seconds is 8h20m0s: if the file is Gemini CLI's, where it means milliseconds, read it with client.WithDialect(client.DialectGemini); to mean 8h20m0s, write "8h20m0s"
}
