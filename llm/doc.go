// Package llm is the provider-neutral half of the glue between a fleet of
// MCP servers and an LLM: what every adapter (llm/anthropic, llm/openai,
// llm/gemini, each a module of its own) would otherwise write again.
//
// The API of this package may still change before v1: Run, Explain, Parts,
// the schema conversions and the meta-tools as a model sees them
// (search_tools and call_tool, their arguments and answers) are meant to
// stay; the Go types around them (RunOptions, AdapterOption, ToolCall,
// Report) may still be regrouped or renamed, as ToolCall.Args was. Every
// such change is in CHANGELOG.md.
//
//   - [Run] executes the tool calls a model asked for in one turn,
//     concurrently, through a [Fleet] (a *client.Manager), and [Explain]
//     turns a call's error into words the model can act on ("server github
//     is reconnecting; retry in about 2 s"), from the client's error
//     classes, never from message text.
//   - [Parts] splits a tool result into the pieces providers take apart
//     (text, images, structured content, resources) and says what a
//     provider cannot take.
//   - [StrictSchema] converts a tool's input schema for OpenAI's strict
//     mode and [OpenAPISchema] into the OpenAPI subset Gemini reads, each
//     reporting what could not be converted.
//   - [MetaTools] are two tools, search_tools and call_tool, that a host
//     can give its model instead of hundreds of definitions: the model
//     searches the fleet's catalog ([toolsearch]) and calls what it found.
//     Their definitions and handlers take only a Fleet and a Searcher, so
//     a gateway can serve them over MCP as they are.
package llm
