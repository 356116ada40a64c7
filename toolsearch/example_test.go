package toolsearch_test

import (
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A host indexes its fleet's View and asks for the tools of a task. (A
// host with a client.Manager uses Manager.NewToolSearch, which keeps the
// index in step with the catalog.)
func Example() {
	p := toolcorpus.Publisher([]toolcorpus.Server{
		{Name: "github", Tools: []mcp.Tool{
			mcp.NewTool("create_issue", mcp.WithDescription("Create a new issue in a GitHub repository")),
			mcp.NewTool("list_commits", mcp.WithDescription("Get list of commits of a branch"), mcp.WithReadOnlyHintAnnotation(true)),
		}},
		{Name: "slack", Tools: []mcp.Tool{
			mcp.NewTool("post_message", mcp.WithDescription("Post a new message to a Slack channel")),
		}},
	}, 1)
	x := toolsearch.New()
	x.Sync(toolcorpus.View(p))

	hits, _ := x.Search(toolsearch.Query{Text: "report a bug in the repo", K: 1})
	fmt.Println(hits[0].Qualified)

	hits, _ = x.Search(toolsearch.Query{Text: "github", K: -1, Require: toolsearch.HintReadOnly})
	fmt.Println(hits[0].Qualified)

	sel, _ := x.Select(toolsearch.Budget{Max: 2, Pinned: []string{"slack__post_message"}, Query: toolsearch.Query{Text: "open an issue"}})
	for _, t := range sel.Tools {
		fmt.Println(t.Qualified())
	}
	// Output:
	// github__create_issue
	// github__list_commits
	// github__create_issue
	// slack__post_message
}
