package catalog_test

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// A manager publishes what each server offers; a host reads the View without
// locking and waits for the next one on Changed.
func Example() {
	p := catalog.NewPublisher(catalog.Naming{})

	gh := &catalog.Catalog{Server: "github", Generation: 1, Tools: []mcp.Tool{
		mcp.NewTool("create_issue", mcp.WithDescription("Open an issue")),
		mcp.NewTool("search"),
	}}
	d, _ := p.Publish(gh.Seal(), "")
	fmt.Println("added:", d.Added)

	// Another server wants the same prefix; its "search" collides and is
	// quarantined, its other tool is published.
	gl := &catalog.Catalog{Server: "gitlab", Generation: 1, Tools: []mcp.Tool{
		mcp.NewTool("search"), mcp.NewTool("merge.request"),
	}}
	v := p.View()
	d, _ = p.Publish(gl.Seal(), "github")
	fmt.Println("quarantined:", d.Quarantined)

	<-v.Changed() // closed: a newer View replaced v
	v = p.View()
	for _, t := range v.Tools() {
		fmt.Printf("%d %-34s -> %s %q\n", v.Version(), t.Qualified, t.Server, t.Tool.Name)
	}

	// A late refresh from an older runtime is ignored.
	_, ok := p.Publish((&catalog.Catalog{Server: "github", Generation: 0}).Seal(), "")
	fmt.Println("late publish accepted:", ok)

	// github goes away; gitlab's search is promoted.
	d, _ = p.Unpublish("github", 1)
	fmt.Println("removed:", d.Removed, "promoted:", d.Promoted[0].Server, d.Promoted[0].Qualified)
	// Output:
	// added: [github__create_issue github__search]
	// quarantined: [{gitlab search github__search github}]
	// 2 github__create_issue               -> github "create_issue"
	// 2 github__merge_request-8f1a0e3ca0a3 -> gitlab "merge.request"
	// 2 github__search                     -> github "search"
	// late publish accepted: false
	// removed: [github__create_issue github__search] promoted: gitlab github__search
}
