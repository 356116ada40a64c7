package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// ToolCall is one call a model asked for.
type ToolCall struct {
	// ID is the provider's id of the call, echoed in its result.
	ID string
	// Name is the tool's qualified name, or a meta-tool's name.
	Name string
	// Arguments are the arguments as the model wrote them: a JSON object
	// (MCP's tools/call names them so too).
	Arguments json.RawMessage
}

// Outcome is what one ToolCall came to.
type Outcome struct {
	Call ToolCall
	// Result is the tool's result, or, when the call failed (Err is set),
	// an isError result whose text is Explain's message, so that it can
	// go to the model as it is.
	Result *mcp.CallToolResult
	// Err is the call's error; nil when the tool answered, even with
	// isError.
	Err error
}

// DefaultParallel is how many of one turn's calls Run makes at once when
// RunOptions.Parallel is zero.
const DefaultParallel = 8

// RunOptions tune Run.
type RunOptions struct {
	// Parallel is how many calls run at once. Defaults to DefaultParallel;
	// 1 runs them one by one.
	Parallel int
	// Meta handles the meta-tools' names (search_tools, call_tool) when
	// the host gave its model those instead of the catalog. Then the
	// model's tools came from the search (as call_tool names, tool
	// references or a client tool search), and a call of any other name
	// is held to what the search offers: a tool it would never offer
	// fails with ErrNotAllowed (MetaTools.Allowed).
	Meta *MetaTools
	// Now is the clock for Explain; nil means time.Now.
	Now func() time.Time
}

// Run makes every call of one model turn through f, at most
// opts.Parallel at once, and returns their outcomes in the calls' order,
// which is the order the provider wants the results back in. A call that
// fails becomes an isError result that explains the failure; Run itself
// never fails, so the model always gets one result per call.
func Run(ctx context.Context, f Fleet, calls []ToolCall, opts RunOptions) []Outcome {
	out := make([]Outcome, len(calls))
	par := opts.Parallel
	if par <= 0 {
		par = DefaultParallel
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, c := range calls {
		out[i].Call = c
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i].Result, out[i].Err = call(ctx, f, c, opts.Meta)
			if out[i].Err != nil {
				now := time.Now
				if opts.Now != nil {
					now = opts.Now
				}
				out[i].Result = ErrorResult(Explain(c.Name, out[i].Err, now()))
			}
		})
	}
	wg.Wait()
	return out
}

func call(ctx context.Context, f Fleet, c ToolCall, meta *MetaTools) (*mcp.CallToolResult, error) {
	args, err := Arguments(c.Arguments)
	if err != nil {
		return ErrorResult(fmt.Sprintf("the arguments of %s are not a JSON object (%v); call it again with an object that matches its schema.", c.Name, err)), nil
	}
	if meta != nil {
		if meta.Has(c.Name) {
			return meta.Handle(ctx, c.Name, args)
		}
		if err := meta.Allowed(c.Name); err != nil {
			return nil, err
		}
	}
	res, err := f.Call(ctx, c.Name, args)
	if err == nil && res == nil {
		res = &mcp.CallToolResult{}
	}
	return res, err
}

// Arguments decodes a model's arguments: a JSON object, or nothing (an
// empty object).
func Arguments(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// ErrorResult is an isError result holding text.
func ErrorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(text)}}
}
