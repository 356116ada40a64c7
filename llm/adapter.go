package llm

// AdapterOption configures a provider adapter's New (llm/anthropic,
// llm/openai, llm/gemini). The three take the same options because what
// they configure is the same: how Run makes a turn's calls.
type AdapterOption func(*RunOptions)

// WithMetaTools has the adapter answer the meta-tools' calls
// (RunOptions.Meta): search_tools and call_tool, and a call of any other
// name held to what the search offers. Each adapter's New says in which
// of its provider's forms it answers a search.
func WithMetaTools(m *MetaTools) AdapterOption {
	return func(o *RunOptions) { o.Meta = m }
}

// WithRunOptions sets how a turn's calls run (parallelism, clock). A nil
// r.Meta keeps the meta-tools WithMetaTools gave, whichever of the two
// options comes first.
func WithRunOptions(r RunOptions) AdapterOption {
	return func(o *RunOptions) {
		if r.Meta == nil {
			r.Meta = o.Meta
		}
		*o = r
	}
}
