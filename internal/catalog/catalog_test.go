package catalog

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestSealHashStable(t *testing.T) {
	// Two fetches of the same content that differ only in things a server
	// may vary freely between fetches: map insertion order, JSON property
	// order, list order. Go randomizes map iteration, so building the maps
	// in different orders many times exercises it.
	build := func(reverse bool) *Catalog {
		keys := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
		props := map[string]any{}
		order := append([]string(nil), keys...)
		if reverse {
			for i := len(keys) - 1; i >= 0; i-- {
				props[keys[i]] = map[string]any{"type": "string", "description": keys[i], "n": json.Number("12345678901234567890")}
			}
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		} else {
			for _, k := range keys {
				props[k] = map[string]any{"n": json.Number("12345678901234567890"), "description": k, "type": "string"}
			}
		}
		t1 := mcp.Tool{Name: "search", Description: "find", InputSchema: mcp.ToolInputSchema{Type: "object", Properties: props, PropertyOrder: order}}
		t2 := tool("fetch", "get", "url")
		tools := []mcp.Tool{t1, t2}
		prompts := []mcp.Prompt{mcp.NewPrompt("p1"), mcp.NewPrompt("p2")}
		res := []mcp.Resource{mcp.NewResource("file:///a", "a"), mcp.NewResource("file:///b", "b")}
		if reverse {
			tools = []mcp.Tool{t2, t1}
			prompts = []mcp.Prompt{prompts[1], prompts[0]}
			res = []mcp.Resource{res[1], res[0]}
		}
		c := &Catalog{Server: "s", Tools: tools, Prompts: prompts, Resources: res,
			ResourceTemplates: []mcp.ResourceTemplate{mcp.NewResourceTemplate("file:///{path}", "files")},
			Capabilities:      mcp.ServerCapabilities{Experimental: map[string]any{"z": 1, "a": 2}}}
		return c.Seal()
	}
	want := build(false).Hash
	if !hexSHA256.MatchString(want) {
		t.Fatalf("Hash %q is not hex sha256", want)
	}
	for i := range 50 {
		a, b := build(false), build(true)
		if a.Hash != want || b.Hash != want {
			t.Fatalf("round %d: hashes %s, %s; want %s", i, a.Hash, b.Hash, want)
		}
		if a.seal.meta != b.seal.meta {
			t.Fatalf("round %d: server info digest depends on map order", i)
		}
	}

	// And a real change does change it.
	c := build(false)
	if c.WithTools(c.Tools[:1]).Hash == want {
		t.Fatal("dropping a tool kept the hash")
	}
	if c.WithPrompts(nil).Hash == want || c.WithResources(nil).Hash == want || c.WithResourceTemplates(nil).Hash == want {
		t.Fatal("dropping a list kept the hash")
	}
}

func TestSealIgnoresNonContent(t *testing.T) {
	a := cat("s", 1, "x")
	b := cat("s", 9, "x")
	b.FetchedAt = b.FetchedAt.Add(1e9)
	b.Instructions = "be nice" // server info is not tool content
	b.Seal()
	if a.Hash != b.Hash {
		t.Fatalf("generation, fetch time or instructions changed the content hash")
	}
}

func TestWithListsKeepGenerationAndOriginal(t *testing.T) {
	c := cat("s", 7, "a", "b")
	hash := c.Hash
	n := c.WithTools([]mcp.Tool{tool("c", "")})
	if n == c || n.Generation != 7 || n.Server != "s" || len(n.Tools) != 1 || n.Hash == hash || !n.sealedNow() {
		t.Fatalf("WithTools = %+v", n)
	}
	if len(c.Tools) != 2 || c.Hash != hash || !c.sealedNow() {
		t.Fatal("WithTools modified the original")
	}
	for _, n := range []*Catalog{
		c.WithPrompts([]mcp.Prompt{mcp.NewPrompt("p")}),
		c.WithResources([]mcp.Resource{mcp.NewResource("u:", "r")}),
		c.WithResourceTemplates([]mcp.ResourceTemplate{mcp.NewResourceTemplate("u:{x}", "t")}),
	} {
		if n.Generation != 7 || n.Hash == hash || len(n.Tools) != 2 || !n.sealedNow() {
			t.Fatalf("With… = %+v", n)
		}
	}
}

func TestUnencodableEntriesStillSeal(t *testing.T) {
	// A tool with both schemas fails mcp-go's MarshalJSON and a template
	// with a nil template panics in it; one bad server must not crash the
	// host, and the catalog must still hash deterministically.
	bad := mcp.Tool{Name: "both", InputSchema: mcp.ToolInputSchema{Type: "object"}, RawInputSchema: json.RawMessage(`{"type":"object"}`)}
	mk := func() *Catalog {
		return (&Catalog{Server: "s", Tools: []mcp.Tool{bad, tool("ok", "")},
			ResourceTemplates: []mcp.ResourceTemplate{{Name: "t", URITemplate: &mcp.URITemplate{}}}}).Seal()
	}
	a, b := mk(), mk()
	if a.Hash != b.Hash || !hexSHA256.MatchString(a.Hash) {
		t.Fatalf("hashes %q %q", a.Hash, b.Hash)
	}
	p := NewPublisher(Naming{})
	mustPublish(t, p, a, "")
	if _, ok := p.View().Tool("s__both"); !ok {
		t.Fatal("unencodable tool missing from the View")
	}
}

func TestPublishSealsCopyOfStaleCatalog(t *testing.T) {
	c := &Catalog{Server: "s", Generation: 1, Tools: []mcp.Tool{tool("a", "")}} // never sealed
	p := NewPublisher(Naming{})
	mustPublish(t, p, c, "")
	if c.Hash != "" || c.seal != nil {
		t.Fatal("Publish wrote to the caller's catalog")
	}
	got, _ := p.View().Catalog("s")
	if got == c || got.Hash == "" {
		t.Fatalf("published catalog not a sealed copy")
	}

	// A sealed catalog copied and given a new list without Seal keeps a
	// stale Hash; Publish must notice instead of trusting it.
	s := cat("t", 1, "a")
	stale := *s
	stale.Tools = []mcp.Tool{tool("b", "")}
	mustPublish(t, p, &stale, "")
	if _, ok := p.View().Tool("t__b"); !ok {
		t.Fatal("stale-sealed catalog published with its old tools")
	}
	got, _ = p.View().Catalog("t")
	if got.Hash == s.Hash {
		t.Fatal("stale hash kept")
	}
}
