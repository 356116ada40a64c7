// Package toolsearch finds tools in a fleet's catalog for a task, so that a
// host with hundreds of tools can hand its model the few that matter.
//
// The API of this package may still change before v1: an Index filled with
// Put or from a View, searched with a Query (deterministic answers, best
// first) and cut to a Budget with Select is meant to stay; the tuning knobs
// (WithBM25, WithWeights, WithMinMatch, WithHybrid, the Default values)
// and the Vocabulary's methods may still change as the search is tuned.
// Every such change is in CHANGELOG.md.
//
// # Filling an index
//
// An [Index] holds tools under their qualified names (server__tool). A
// host fills it in one of two ways. With plain tool definitions, no
// Manager needed: [Index.Put] indexes a server's tools (name, title,
// description, input schema, annotations) and [Index.RemoveServer] takes
// them out, each at the cost of that server's tools. Or by following a
// [snapshot.View]: [Index.Apply] takes the names a catalog change touched
// (a catalog event's [snapshot.Diff]) and costs that many tools whatever
// the size of the fleet; [Index.Sync] compares a whole View, for a start
// or after events were lost. The client package's ToolSearch keeps an
// Index in step with a Manager that way. An index follows one or the
// other: Sync and Apply drop what Put gave.
//
// # Searching
//
// A [Query] is answered in one of three modes: ranking by words (the
// default); the exact name; or a regular expression over the names. The
// ranking is BM25F over the tool's name (split on case, '_', '-' and '.'),
// server, title, description and parameter names and descriptions, each
// field with its own weight. The values of a parameter's enum of four
// values at most count as words of its name: they name the modes a tool
// has ("open" or "closed", "cordon", "drain" or "uncordon"), where a long
// enum lists data. A word of the query and its synonyms count
// once, by the best of them. A query can keep to some servers, to tools
// whose annotations promise something (read-only, not destructive,
// idempotent, closed-world), and cap the hits any one server may take
// (PerServer, ServerCaps), so that one large server cannot fill the
// answer. Answers are deterministic: the same tools and the same query
// give the same hits in the same order, ties broken by qualified name.
//
// # What the words are
//
// Tools and queries are read with the same [Vocabulary]: synonyms (a query
// word also looks for the others of its groups, at [SynonymWeight]),
// abbreviations ("k8s" is read as "kubernetes") and stop words. The
// built-in lists are small: each synonym group, and each word in it, is
// there because the project's tuning queries find more of what they want
// with it than without it, and a test measures them all (see Measures).
// A host adds the words of its domain and removes the ones that mislead
// it, per index ([DefaultVocabulary], [WithVocabulary],
// [Index.SetVocabulary]).
//
// Beyond the lists, the default vocabulary reads English with a lexicon
// derived from WordNet ([Vocabulary.SetLexicon]): a query word also looks
// for the words WordNet relates to it in its two most frequent senses:
// its synonyms ("purchase" finds "buy"), derived forms ("elevate" finds
// "elevation"), the noun an adjective is a value of ("tall" finds
// "height"), the noun an adjective pertains to, and the more general
// words one step up ("sedan" finds "car"). Each counts less than the word
// itself (a half to a fifth, by kind and sense), and a word and the words
// related to it count once, by the best of them, as synonyms do. A phrase
// of the query that WordNet knows ("throw away", "get rid of", "shut
// down") relates by itself, through its first word, and its words count
// little alone ("get rid of" asks for no getter). To keep a search
// cheap, a related word that more than 1% of the tools (and more than 16)
// hold is left out (it tells nothing), and a query word keeps its 5 best
// related words by weighted idf. WordNet's exception lists read irregular
// forms as their words ("wrote" is "write", "children" is "child")
// whether the lexicon is on or not. The lexicon is a table compiled once
// per process, at the first index that uses it (about 0.1 s of CPU, 2.3
// MB kept); its license is WordNet's, in LICENSE.wordnet beside this
// package. Beyond that, the reading knows that -ize words meet their
// nouns ("memorize" meets "memory") and that a file name, a URL or an
// email address in a query asks for a file, a URL or an email.
//
// # Abstention: what Match means
//
// Each hit carries a Match: the hit's score over the query's best
// possible score in this index. The best possible score is what a tool
// holding every word of the query would get: for each word of the query,
// the most any of its terms (the word, a synonym or a related word) can
// give, which is the term's idf times its weight. A word no tool holds
// weighs [DefaultUnseenWeight] times the rarest known word, even when a
// synonym or a related word of it is held (the tools then speak of
// something near, not of what was asked), because a request for
// something the fleet lacks ("book a flight", "order a pizza") is made of
// such words. A value the query carries is never unseen (a number, a
// quoted string, a capitalized name inside the text, the word after
// "called" or "named", a file name, a URL), because an argument says
// nothing about which tool is wanted; nor is a word of a phrase the
// lexicon knows ("rid" of "get rid of"), whose meaning is the phrase's. Match is between 0 and 1 and does not depend on
// the size of the index or on the units of BM25.
//
// A hit under the index's MinMatch ([DefaultMinMatch], [WithMinMatch]) is
// Weak: it shares some words with the query but is unlikely to do what the
// query asks. With Query.Abstain, a query whose best hit is weak gets no
// hit at all. The default MinMatch was calibrated on the tuning queries of
// the project's corpus (the requests no tool does against the ones a tool
// does), to lose at most 0.02 of recall@5 there; on requests written
// later, apart from the tuning, it lost more (BENCHMARKS.md). Match
// measures how much of the query a tool's text covers, so
// where descriptions are one line and queries long (the MetaTool set)
// it is lower for right answers too: there the default abstains on right
// answers, and a host sets a lower MinMatch. BENCHMARKS.md has the
// figures of both sets.
//
// # Ranking by meaning
//
// With [WithHybrid], an [Embedder] (texts in, vectors out; llm/openai and
// llm/gemini have ones on the providers' APIs) gives each tool a vector of
// its name, title and description, and a query is embedded when it is
// asked ([Index.SearchContext]) or brought as Query.Vector; the lexical
// ranking and the ranking by cosine similarity are fused by reciprocal
// rank. [Index.Embed] embeds only the texts it has not embedded before
// (vectors are kept by a hash of the text), in batches, without holding
// the index. Words alone stay the default and need nothing.
//
// # Budgets
//
// [Index.Select] makes a tool budget: at most N tools for a task, the
// host's pinned tools first, then the best hits, under per-server caps, in
// an order that depends only on the chosen set (so a provider's prompt
// cache keeps hitting).
//
// # Measures
//
// testdata/toolcorpus holds the tools of 27 real MCP servers and sets of
// labelled queries: the project's first ones, written from the tools'
// purposes; requests written as users speak, in two halves (one to tune
// on, one to check the tuning on); requests no tool of the corpus does;
// and a held-out set of both kinds, written later and never tuned on.
// TestQuality prints recall@1, recall@5, MRR and abstention for every
// set, with plain BM25, the index without its lexicon and the index
// without its synonym groups beside the default; TestMetaTool does the
// same on a subset of the public MetaTool benchmark; TestTune,
// TestTuneLexicon, TestTuneAbstention, TestTuneThird and the others
// (internal, run on request) searched the parameters on the tuning
// queries only, with MetaTool as a check. TestQualityHybrid and
// TestQualityHybridUSE (run on request, after an npm install they name)
// measure the fusion with the two models that npm holds, GloVe's word
// vectors and the Universal Sentence Encoder Lite: both rank worse than
// the words alone and pull the fused ranking down, so what the fusion
// brings depends on an embedder that ranks well on its own.
//
// The package reads snapshot and mcp-go types only, and takes no lock a
// Manager holds.
package toolsearch
