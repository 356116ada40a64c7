// Command agent is an agent loop over a fleet of MCP servers: a real LLM
// (Claude, an OpenAI model or Gemini, through each one's official Go SDK)
// answers a prompt with the fleet's tools, and mcpfleet runs the tool
// calls, concurrently, across servers that may reconnect under it.
//
//	ANTHROPIC_API_KEY=... go run . -config mcp.json -provider anthropic -prompt "..."
//	OPENAI_API_KEY=...    go run . -config mcp.json -provider openai -prompt "..."
//	GEMINI_API_KEY=...    go run . -config mcp.json -provider gemini -prompt "..."
//
// -tools picks how the model gets the tools:
//
//	all     every tool of the fleet (fine for a few dozen)
//	budget  at most -max tools: the whole catalog if it fits, else the best
//	        matches of the prompt (tool search), the rest of the budget filled
//	        with other tools, one of each server in turn
//	meta    the fleet's own tool search in place of the catalog: Gemini gets two
//	        meta-tools, search_tools and call_tool; Anthropic search_tools, with
//	        every tool deferred and loaded by what it finds (tool references);
//	        OpenAI a tool_search run here, whose answers carry the tools found
//	defer   the provider's own deferred loading: Anthropic's tool search tool,
//	        OpenAI's tool_search with one namespace per server (Gemini has none)
//
// It prints what the model was offered, then the answer.
//
// It is a module of its own because it needs all three SDKs; the core
// module keeps its three dependencies. Run from examples/agent.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	osdk "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/llm/anthropic"
	"github.com/mcpfleet/mcpfleet/llm/gemini"
	"github.com/mcpfleet/mcpfleet/llm/openai"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// Options are the agent's flags.
type Options struct {
	Provider, Model, Prompt, Tools, BaseURL, APIKey string
	Max, Turns                                      int
}

func main() {
	var o Options
	config := flag.String("config", "", "MCP servers config (mcpServers or VS Code servers form)")
	flag.StringVar(&o.Provider, "provider", "anthropic", "anthropic, openai or gemini")
	flag.StringVar(&o.Model, "model", "", "the model (defaults per provider)")
	flag.StringVar(&o.Prompt, "prompt", "", "what to ask")
	flag.StringVar(&o.Tools, "tools", "budget", "all, budget, meta or defer")
	flag.IntVar(&o.Max, "max", 20, "the tool budget of -tools budget")
	flag.IntVar(&o.Turns, "turns", 10, "the most model responses")
	flag.StringVar(&o.BaseURL, "base-url", "", "the provider's API base URL (a proxy or a stand-in)")
	flag.Parse()
	if *config == "" || o.Prompt == "" {
		fmt.Fprintln(os.Stderr, "agent: -config and -prompt are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := client.LoadConfig(*config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	m := client.New()
	defer m.Close()
	if _, err := m.Apply(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	// Give the servers a moment to publish their catalogs.
	ready, cancel := context.WithTimeout(ctx, 30*time.Second)
	for _, st := range m.Statuses() {
		_ = m.WaitFor(ready, st.Name, lifecycle.Connected)
	}
	cancel()
	if err := Run(ctx, m, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Run answers o.Prompt with the fleet m and prints the model's answer and
// the tool calls it made to w.
func Run(ctx context.Context, m *client.Manager, o Options, w io.Writer) error {
	ts := m.NewToolSearch()
	defer ts.Close()
	meta := llm.NewMetaTools(m, ts)
	tools, found, err := pick(m.View(), ts, o)
	if err != nil {
		return err
	}
	total := m.View().NumTools()
	switch o.Tools {
	case "all":
		fmt.Fprintf(w, "%d of %d tools offered (all)\n", len(tools), total)
	case "budget":
		fmt.Fprintf(w, "%d of %d tools offered (budget of %d: %d found for the prompt)\n", len(tools), total, max(o.Max, 0), found)
	} // meta and defer: each provider says what it was given
	run := llm.RunOptions{}
	switch o.Provider {
	case "anthropic":
		return runAnthropic(ctx, m, meta, tools, o, run, w)
	case "openai":
		return runOpenAI(ctx, m, meta, tools, o, run, w)
	case "gemini":
		return runGemini(ctx, m, meta, tools, o, run, w)
	}
	return fmt.Errorf("agent: unknown provider %q", o.Provider)
}

// pick chooses the fleet tools to declare (none for meta and defer), and
// says how many of them tool search found for the prompt.
func pick(v *snapshot.View, ts *client.ToolSearch, o Options) ([]snapshot.Tool, int, error) {
	var all []snapshot.Tool
	for t := range v.Tools() {
		all = append(all, t)
	}
	switch o.Tools {
	case "all":
		return all, 0, nil
	case "budget":
		if o.Max <= 0 {
			o.Max = toolsearch.DefaultMax
		}
		if len(all) <= o.Max {
			return all, 0, nil // the whole catalog fits: nothing to choose
		}
		// A prompt's words need not be a tool's ("what is 2+3" names no
		// add): the matches first, then the rest of the budget.
		sel, err := ts.Select(toolsearch.Budget{Max: o.Max, Query: toolsearch.Query{Text: o.Prompt}, PerServer: o.Max / 2})
		if err != nil {
			return nil, 0, err
		}
		return fill(sel.Tools, all, o.Max), len(sel.Found), nil
	case "meta", "defer":
		return nil, 0, nil
	}
	return nil, 0, fmt.Errorf("agent: unknown -tools %q", o.Tools)
}

// fill adds tools of all to chosen up to max: one of each server in turn,
// in the catalog's order, so that no server takes the rest of the budget.
func fill(chosen, all []snapshot.Tool, max int) []snapshot.Tool {
	have := map[string]bool{}
	for _, t := range chosen {
		have[t.Qualified()] = true
	}
	var servers []string
	byServer := map[string][]snapshot.Tool{}
	for _, t := range all {
		if have[t.Qualified()] {
			continue
		}
		if _, ok := byServer[t.Server()]; !ok {
			servers = append(servers, t.Server())
		}
		byServer[t.Server()] = append(byServer[t.Server()], t)
	}
	for added := true; added && len(chosen) < max; {
		added = false
		for _, s := range servers {
			if rest := byServer[s]; len(rest) > 0 && len(chosen) < max {
				chosen, byServer[s], added = append(chosen, rest[0]), rest[1:], true
			}
		}
	}
	return chosen
}

// names are the functions a Gemini tool declares.
func names(t *genai.Tool) []string {
	var out []string
	for _, f := range t.FunctionDeclarations {
		out = append(out, f.Name)
	}
	return out
}

func report(w io.Writer, reports []llm.Report) {
	for _, r := range reports {
		if len(r.Reasons) > 0 {
			fmt.Fprintf(w, "schema %s: %s\n", r.Tool, r.Conversion)
		}
	}
}

func runAnthropic(ctx context.Context, m *client.Manager, meta *llm.MetaTools, tools []snapshot.Tool, o Options, run llm.RunOptions, w io.Writer) error {
	opts := []aoption.RequestOption{aoption.WithMaxRetries(1)}
	if o.BaseURL != "" {
		opts = append(opts, aoption.WithBaseURL(o.BaseURL))
	}
	if o.APIKey != "" {
		opts = append(opts, aoption.WithAPIKey(o.APIKey))
	}
	c := asdk.NewClient(opts...)
	var params []asdk.ToolUnionParam
	var reports []llm.Report
	a := anthropic.New(m, llm.WithRunOptions(run))
	switch o.Tools {
	case "meta":
		params, reports = anthropic.MetaTools(m.View(), meta)
		a = anthropic.New(m, llm.WithMetaTools(meta), llm.WithRunOptions(run))
		search, _ := meta.Names()
		fmt.Fprintf(w, "1 tool offered (%s) and %d deferred, loaded by what it finds (meta)\n", search, len(params)-1)
	case "defer":
		params, reports = anthropic.DeferredTools(m.View(), anthropic.SearchBM25)
		fmt.Fprintf(w, "1 tool offered (Anthropic's tool search) and %d deferred (defer)\n", len(params)-1)
	default:
		params, reports = anthropic.Tools(tools)
	}
	report(w, reports)
	model := o.Model
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	last, _, err := a.Converse(ctx, &c, asdk.MessageNewParams{
		Model: asdk.Model(model), MaxTokens: 4096, Tools: params,
		Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock(o.Prompt))},
	}, o.Turns)
	if err != nil {
		return err
	}
	for _, b := range last.Content {
		if b.Type == "text" {
			fmt.Fprintln(w, b.Text)
		}
	}
	return nil
}

func runOpenAI(ctx context.Context, m *client.Manager, meta *llm.MetaTools, tools []snapshot.Tool, o Options, run llm.RunOptions, w io.Writer) error {
	opts := []ooption.RequestOption{ooption.WithMaxRetries(1)}
	if o.BaseURL != "" {
		opts = append(opts, ooption.WithBaseURL(o.BaseURL))
	}
	if o.APIKey != "" {
		opts = append(opts, ooption.WithAPIKey(o.APIKey))
	}
	c := osdk.NewClient(opts...)
	a := openai.New(m, llm.WithMetaTools(meta), llm.WithRunOptions(run))
	var params []responses.ToolUnionParam
	var reports []llm.Report
	switch o.Tools {
	case "meta":
		params = openai.ResponsesClientSearch(meta)
		fmt.Fprintf(w, "1 tool offered (tool_search, run here) in place of %d: its answers carry the tools found (meta)\n", m.View().NumTools())
	case "defer":
		params, reports = openai.ResponsesDeferredTools(m.View())
		fmt.Fprintf(w, "1 tool offered (OpenAI's tool_search) and %d deferred in %d namespaces (defer)\n", m.View().NumTools(), len(params)-1)
	default:
		params, reports = openai.ResponsesTools(tools)
	}
	report(w, reports)
	model := o.Model
	if model == "" {
		model = "gpt-5"
	}
	last, err := a.ConverseResponses(ctx, &c, responses.ResponseNewParams{
		Model: model, Tools: params, Input: responses.ResponseNewParamsInputUnion{OfString: osdk.String(o.Prompt)},
	}, o.Turns)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, last.OutputText())
	return nil
}

func runGemini(ctx context.Context, m *client.Manager, meta *llm.MetaTools, tools []snapshot.Tool, o Options, run llm.RunOptions, w io.Writer) error {
	cfg := &genai.ClientConfig{Backend: genai.BackendGeminiAPI, APIKey: o.APIKey}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("GEMINI_API_KEY")
	}
	if o.BaseURL != "" {
		cfg.HTTPOptions.BaseURL = o.BaseURL
	}
	c, err := genai.NewClient(ctx, cfg)
	if err != nil {
		return err
	}
	a := gemini.New(m, llm.WithRunOptions(run))
	var decl *genai.Tool
	var reports []llm.Report
	switch o.Tools {
	case "meta":
		decl = gemini.MetaTools(meta)
		a = gemini.New(m, llm.WithMetaTools(meta), llm.WithRunOptions(run))
		fmt.Fprintf(w, "%d tools offered in place of %d (meta): %s\n", len(decl.FunctionDeclarations), m.View().NumTools(),
			strings.Join(names(decl), ", "))
	case "defer":
		return errors.New("agent: Gemini has no deferred loading; use -tools meta or budget")
	default:
		decl, reports = gemini.Tools(tools)
	}
	report(w, reports)
	model := o.Model
	if model == "" {
		model = "gemini-2.5-flash"
	}
	last, _, err := a.Converse(ctx, c, model, genai.Text(o.Prompt), &genai.GenerateContentConfig{Tools: []*genai.Tool{decl}}, o.Turns)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, last.Text())
	return nil
}
