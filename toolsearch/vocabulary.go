package toolsearch

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Vocabulary is the words an index reads alike or not at all: synonyms
// (a query word also looks for the others of its groups, at
// SynonymWeight), abbreviations (a short form is read as its long form,
// in tools and queries alike), stop words (read in neither) and whether
// the built-in English lexicon relates a query's words to others. A host
// starts from DefaultVocabulary, adds the words of its domain and removes
// the ones that mislead it, and gives the result to an index with
// WithVocabulary or SetVocabulary; the index keeps its own copy, so a
// Vocabulary changed afterwards changes no index. A Vocabulary is not safe
// for concurrent changes; the zero Vocabulary is empty and ready to use.
type Vocabulary struct {
	groups        [][]string        // lower-case words, in the order added
	abbreviations map[string]string // lower-case short form -> long form
	stop          map[string]bool   // lower-case
	lexicon       bool              // read with the built-in lexicon
}

// DefaultVocabulary returns a copy of the built-in lists, with the
// lexicon on (see SetLexicon), for a host to change. They are kept small:
// each synonym group is there because the tuning queries of
// testdata/toolcorpus find more of what they want with it than without it
// (TestVocabularyEarnsItsPlace measures every group, and the lexicon).
func DefaultVocabulary() *Vocabulary {
	v := &Vocabulary{abbreviations: maps.Clone(builtinAbbreviations), stop: map[string]bool{}, lexicon: true}
	for _, w := range strings.Fields(builtinStop) {
		v.stop[w] = true
	}
	for _, g := range builtinSynonyms {
		v.groups = append(v.groups, slices.Clone(g))
	}
	return v
}

// ErrVocabulary is what the Vocabulary's methods wrap when a word is not
// one word.
var ErrVocabulary = errors.New("mcpfleet: toolsearch: vocabulary")

// oneWord checks that w is a run of letters and digits.
func oneWord(what, w string) (string, error) {
	if w == "" {
		return "", fmt.Errorf("%w: %s %q: empty", ErrVocabulary, what, w)
	}
	for _, r := range w {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return "", fmt.Errorf("%w: %s %q: not one word (%q is neither a letter nor a digit)", ErrVocabulary, what, w, r)
		}
	}
	return strings.ToLower(w), nil
}

// AddSynonyms adds a group of words that mean the same to the host: a
// query with one of them also looks for the others. A word may be in
// several groups. Each must be one word (letters and digits); there must
// be two at least.
func (v *Vocabulary) AddSynonyms(words ...string) error {
	if len(words) < 2 {
		return fmt.Errorf("%w: synonyms %q: a group needs two words at least", ErrVocabulary, words)
	}
	g := make([]string, 0, len(words))
	for _, w := range words {
		lw, err := oneWord("synonym", w)
		if err != nil {
			return err
		}
		if !slices.Contains(g, lw) {
			g = append(g, lw)
		}
	}
	v.groups = append(v.groups, g)
	return nil
}

// RemoveSynonyms takes each word out of every group it is in; a group
// left with one word goes. Words it does not hold are ignored.
func (v *Vocabulary) RemoveSynonyms(words ...string) {
	for _, w := range words {
		lw := strings.ToLower(w)
		for i, g := range v.groups {
			v.groups[i] = slices.DeleteFunc(g, func(s string) bool { return s == lw })
		}
	}
	v.groups = slices.DeleteFunc(v.groups, func(g []string) bool { return len(g) < 2 })
}

// Synonyms returns the synonym groups, copies.
func (v *Vocabulary) Synonyms() [][]string {
	out := make([][]string, len(v.groups))
	for i, g := range v.groups {
		out[i] = slices.Clone(g)
	}
	return out
}

// AddAbbreviation reads short (one word, any case) as long wherever it
// stands, in tools and queries: AddAbbreviation("k8s", "kubernetes"),
// AddAbbreviation("pr", "pull request"). It replaces an abbreviation of
// the same short form.
func (v *Vocabulary) AddAbbreviation(short, long string) error {
	s, err := oneWord("abbreviation", short)
	if err != nil {
		return err
	}
	if strings.TrimSpace(long) == "" {
		return fmt.Errorf("%w: abbreviation %q: no long form", ErrVocabulary, short)
	}
	if v.abbreviations == nil {
		v.abbreviations = map[string]string{}
	}
	v.abbreviations[s] = long
	return nil
}

// RemoveAbbreviation forgets the abbreviation short.
func (v *Vocabulary) RemoveAbbreviation(short string) {
	delete(v.abbreviations, strings.ToLower(short))
}

// Abbreviations returns the abbreviations, short form to long, a copy.
func (v *Vocabulary) Abbreviations() map[string]string { return maps.Clone(v.abbreviations) }

// AddStopWords makes the index ignore these words in tools and queries.
func (v *Vocabulary) AddStopWords(words ...string) error {
	for _, w := range words {
		lw, err := oneWord("stop word", w)
		if err != nil {
			return err
		}
		if v.stop == nil {
			v.stop = map[string]bool{}
		}
		v.stop[lw] = true
	}
	return nil
}

// RemoveStopWords makes the index read these words again.
func (v *Vocabulary) RemoveStopWords(words ...string) {
	for _, w := range words {
		delete(v.stop, strings.ToLower(w))
	}
}

// SetLexicon turns the built-in English lexicon on or off. With it, a
// query word also looks for the words WordNet relates to it, each counting
// less than the word itself: its synonyms in its most frequent senses, its
// derived forms ("elevate" and "elevation"), the nouns its adjectives are
// values of ("high" and "height") and, lower still, the more general words
// above it ("sedan" finds "car"). DefaultVocabulary has it on; a
// Vocabulary built from the zero value has it off. Irregular forms
// ("forgot", "children") are read as their words either way.
func (v *Vocabulary) SetLexicon(on bool) { v.lexicon = on }

// Lexicon reports whether the built-in lexicon is on (see SetLexicon).
func (v *Vocabulary) Lexicon() bool { return v.lexicon }

// StopWords returns the stop words, sorted.
func (v *Vocabulary) StopWords() []string { return slices.Sorted(maps.Keys(v.stop)) }

// vocab is a Vocabulary compiled for tokens: what an index reads with.
// It is immutable once built.
type vocab struct {
	abbreviations map[string][]string // lower-case short form -> terms
	stop          map[string]bool
	synonyms      map[string][]string // term -> the other terms of its groups
	lexicon       *lexicon            // nil: none
}

// compile builds the vocab of v: long forms and synonyms go through the
// same tokens as tools and queries (stop words, then stems), so that they
// meet the terms they stand for.
func (v *Vocabulary) compile() *vocab {
	c := &vocab{abbreviations: map[string][]string{}, stop: maps.Clone(v.stop), synonyms: map[string][]string{}}
	if c.stop == nil {
		c.stop = map[string]bool{}
	}
	plain := &vocab{stop: c.stop}
	for short, long := range v.abbreviations {
		var terms []string
		plain.tokens(long, func(t string) { terms = append(terms, t) })
		if len(terms) > 0 {
			c.abbreviations[short] = terms
		}
	}
	for _, g := range v.groups {
		var terms []string
		for _, w := range g {
			c.tokens(w, func(t string) {
				if !slices.Contains(terms, t) {
					terms = append(terms, t)
				}
			})
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t && !slices.Contains(c.synonyms[t], o) {
					c.synonyms[t] = append(c.synonyms[t], o)
				}
			}
		}
	}
	for _, s := range c.synonyms {
		slices.Sort(s)
	}
	if v.lexicon {
		c.lexicon = builtinLexicon()
	}
	return c
}

// defaultVocab is DefaultVocabulary compiled once, for every index that
// sets none.
var defaultVocab = sync.OnceValue(func() *vocab { return DefaultVocabulary().compile() })

// builtinAbbreviations spell out the short forms tools and people use for
// the same thing, so that "repo" finds "repository" and "k8s" finds
// "kubernetes".
var builtinAbbreviations = map[string]string{
	"repo": "repository", "repos": "repository", "dir": "directory", "dirs": "directory",
	"db": "database", "k8s": "kubernetes", "pr": "pull request", "prs": "pull request",
	"msg": "message", "msgs": "message", "img": "image", "pic": "image", "pics": "image",
	"doc": "document", "info": "information", "config": "configuration",
	"env": "environment", "app": "application", "apps": "application",
	"ns": "namespace", "svc": "service", "auth": "authentication",
	"params": "parameter", "param": "parameter", "args": "argument", "arg": "argument",
	"mkdir": "create directory", "rm": "remove", "mv": "move",
	"cwd": "current directory", "js": "javascript", "mongo": "mongodb",
	// Kept whole: not split on case ("URLs") nor dropped.
	"url": "url", "urls": "url", "ci": "ci", "sql": "sql", "cpu": "cpu", "screenshot": "screenshot",
}

// builtinStop are words too common in tool descriptions and questions to
// tell tools apart.
const builtinStop = `a an the and or of to in on for with by from at as is are was were be been
	being it its this that these those i me my we our you your he she they them their what which whom
	how when where why can could would should will shall may might must do does did done have has had
	not no so if then than too very just also any all some each every into onto about over under again
	further once here there both few more most other such only own same s t don now please want need like
	using use used uses via e g eg ie etc given returns return called named everything anything something`

// builtinSynonyms are words that tools and people use for the same action
// or thing.
var builtinSynonyms = [][]string{
	{"delete", "remove", "erase", "destroy", "drop", "wipe", "purge", "forget"},
	{"create", "make", "add"},
	{"add", "append"},
	{"find", "search", "lookup", "locate", "look"},
	{"write", "save", "persist"},
	{"image", "picture", "photo", "pic"},
	{"directory", "folder"},
	{"issue", "bug", "ticket"},
	{"remember", "memory", "recall"},
	{"merge", "combine", "join", "integrate"},
	{"emulate", "simulate", "pretend", "mimic", "fake"},
	{"count", "many", "tally"},
	{"size", "big", "large"},
	{"user", "who"},
	{"observation", "fact", "note"},
	{"transcript", "subtitle", "caption"},
	{"coordinate", "latitude", "longitude"},
	{"schema", "field"},
	{"open", "read"},
	{"run", "evaluate"},
	{"switch", "select"},
}
