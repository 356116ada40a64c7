package toolsearch_test

import (
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A host indexes plain tool definitions and asks for the tools of a task.
// (A host with a client.Manager uses Manager.NewToolSearch, which keeps
// the index in step with the fleet's catalog.)
func Example() {
	x := toolsearch.New()
	_ = x.Put("github",
		mcp.NewTool("create_issue", mcp.WithDescription("Create a new issue in a GitHub repository")),
		mcp.NewTool("list_commits", mcp.WithDescription("Get list of commits of a branch"), mcp.WithReadOnlyHintAnnotation(true)),
	)
	_ = x.Put("slack",
		mcp.NewTool("post_message", mcp.WithDescription("Post a new message to a Slack channel")),
	)

	hits, _ := x.Search(toolsearch.Query{Text: "report a bug in the repo", K: 1})
	fmt.Println(hits[0].Qualified)

	hits, _ = x.Search(toolsearch.Query{Text: "github", K: -1, Require: toolsearch.HintReadOnly})
	fmt.Println(hits[0].Qualified)

	// A request no tool does gets no hit when the query abstains.
	hits, _ = x.Search(toolsearch.Query{Text: "book a flight to Tokyo", Abstain: true})
	fmt.Println(len(hits), "hits")

	sel, _ := x.Select(toolsearch.Budget{Max: 2, Pinned: []string{"slack__post_message"}, Query: toolsearch.Query{Text: "open an issue"}})
	for _, t := range sel.Tools {
		fmt.Println(t.Qualified())
	}
	// Output:
	// github__create_issue
	// github__list_commits
	// 0 hits
	// github__create_issue
	// slack__post_message
}

// A host adds the words of its domain to the built-in vocabulary.
func ExampleVocabulary() {
	v := toolsearch.DefaultVocabulary()
	_ = v.AddAbbreviation("tf", "terraform")
	_ = v.AddSynonyms("deploy", "apply")
	x := toolsearch.New(toolsearch.WithVocabulary(v))
	_ = x.Put("infra",
		mcp.NewTool("apply", mcp.WithDescription("Apply the Terraform plan to the infrastructure")),
		mcp.NewTool("plan", mcp.WithDescription("Show what Terraform would change")),
	)
	hits, _ := x.Search(toolsearch.Query{Text: "deploy the tf changes", K: 1})
	fmt.Println(hits[0].Qualified)
	// Output:
	// infra__apply
}

// The default vocabulary reads English with a lexicon from WordNet: "how
// tall" asks for a height, "get rid of" for a removal, though no synonym
// group says so. A host whose words mislead it turns the lexicon off.
func ExampleVocabulary_SetLexicon() {
	tools := []mcp.Tool{
		mcp.NewTool("get_height", mcp.WithDescription("Get the height of a building")),
		mcp.NewTool("eliminate_duplicates", mcp.WithDescription("Eliminate duplicate rows from a table")),
	}
	x := toolsearch.New()
	_ = x.Put("db", tools...)
	for _, q := range []string{"how tall is the tower", "get rid of the doubles"} {
		hits, _ := x.Search(toolsearch.Query{Text: q, K: 1})
		fmt.Println(q, "->", hits[0].Qualified)
	}

	v := toolsearch.DefaultVocabulary()
	v.SetLexicon(false)
	y := toolsearch.New(toolsearch.WithVocabulary(v))
	_ = y.Put("db", tools...)
	hits, _ := y.Search(toolsearch.Query{Text: "how tall is the tower"})
	fmt.Println(len(hits), "hits without the lexicon")
	// Output:
	// how tall is the tower -> db__get_height
	// get rid of the doubles -> db__eliminate_duplicates
	// 0 hits without the lexicon
}

// Hits print as their qualified name, score and Match, and "weak" when
// the tool only shares a few words with the query.
func ExampleHit_String() {
	x := toolsearch.New()
	_ = x.Put("github",
		mcp.NewTool("create_issue", mcp.WithDescription("Create a new issue in a GitHub repository")),
		mcp.NewTool("list_commits", mcp.WithDescription("Get list of commits of a branch")),
	)
	_ = x.Put("slack",
		mcp.NewTool("post_message", mcp.WithDescription("Post a new message to a Slack channel")),
	)
	hits, _ := x.Search(toolsearch.Query{Text: "open a new issue about the broken branch", K: 3})
	fmt.Println(hits)
	// Output:
	// [github__create_issue (score 0.904, match 0.11) github__list_commits (score 0.416, match 0.05, weak) slack__post_message (score 0.181, match 0.02, weak)]
}
