package toolsearch

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokens splits s into search terms: words split on case changes, digits
// and every non-letter (so "github__create_pullRequest" and "list-files.v2"
// split as a person reads them), lower-cased, stop words dropped,
// abbreviations spelled out and stemmed. Documents and queries go through
// the same function, so whatever it does it does to both.
func (v *vocab) tokens(s string, emit func(term string)) {
	v.scan(s, func(term string, _ bool) { emit(term) })
}

// scan is tokens that also tells which terms are values the text carries
// rather than words of what it asks (arg): numbers and words with digits,
// quoted text, the word after "called" or "named", a capitalized word
// that does not start the text (a name: "Carol", "Denver"), and the parts
// of a file name, a URL or an email address. Such a chunk also gives the
// term of what it is ("file", "url", "email"), which is no value: "what's
// in config.yaml" asks for a file.
func (v *vocab) scan(s string, emit func(term string, arg bool)) {
	first, quoted, named := true, false, false
	for len(s) > 0 {
		// The next chunk: a run of non-space characters.
		i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
		if i < 0 {
			return
		}
		s = s[i:]
		j := strings.IndexFunc(s, unicode.IsSpace)
		if j < 0 {
			j = len(s)
		}
		chunk := s[:j]
		s = s[j:]
		opens := strings.HasPrefix(chunk, "\"") || strings.HasPrefix(chunk, "“")
		closes := len(chunk) > 1 && (strings.HasSuffix(strings.TrimRight(chunk, ".,;:!?)"), "\"") || strings.HasSuffix(strings.TrimRight(chunk, ".,;:!?)"), "”"))
		if opens {
			quoted = true
		}
		core := strings.TrimFunc(chunk, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '~' && r != '/' && r != '.'
		})
		core = strings.TrimRight(core, ".")
		valued := quoted || named
		switch kind, value := chunkKind(core); kind {
		case "":
			v.words(chunk, func(w string) bool {
				arg := valued || hasDigit(w) || !first && isName(w)
				first = false
				return arg
			}, emit)
		default:
			emit(kind, false)
			v.words(value, func(string) bool { return true }, emit)
		}
		first = false
		named = strings.EqualFold(core, "called") || strings.EqualFold(core, "named")
		if closes {
			quoted = false
		}
	}
}

// words emits the terms of the runs of letters and digits in s, each as a
// value when arg says so of its run.
func (v *vocab) words(s string, arg func(run string) bool, emit func(term string, arg bool)) {
	start := -1
	flush := func(end int) {
		run := s[start:end]
		a := arg(run)
		v.word(run, func(t string) { emit(t, a) })
		start = -1
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			flush(i)
		}
	}
	if start >= 0 {
		flush(len(s))
	}
}

// chunkKind tells a URL ("https://...", "www.x.org", "docs.stripe.com"),
// an email address or a file name ("config.yaml", "src/main.go") from
// other text, and returns the part whose words are values: the host of a
// URL, the name of a file.
func chunkKind(c string) (kind, value string) {
	if c == "" {
		return "", ""
	}
	if i := strings.Index(c, "://"); i > 0 {
		host, _, _ := strings.Cut(c[i+3:], "/")
		return "url", hostWords(host)
	}
	if at := strings.IndexByte(c, '@'); at > 0 && strings.Contains(c[at:], ".") {
		return "email", c
	}
	dot := strings.LastIndexByte(c, '.')
	if dot <= 0 || dot == len(c)-1 {
		return "", ""
	}
	ext := strings.ToLower(c[dot+1:])
	if strings.ContainsAny(ext, "/") {
		return "", ""
	}
	if fileExtensions[ext] {
		return "file", c
	}
	host, _, _ := strings.Cut(c, "/")
	if i := strings.LastIndexByte(host, '.'); i > 0 && topLevelDomains[strings.ToLower(host[i+1:])] {
		return "url", hostWords(host)
	}
	return "", ""
}

// hostWords is a host name without its "www" and its top-level domain:
// the words that name the site.
func hostWords(host string) string {
	host = strings.TrimPrefix(strings.ToLower(host), "www.")
	if i := strings.LastIndexByte(host, '.'); i > 0 {
		host = host[:i]
	}
	return host
}

// isName reports whether w is capitalized and not all capitals: a proper
// name in running text ("Carol"), where an acronym ("PR", "AWS") is not.
func isName(w string) bool {
	r, n := utf8.DecodeRuneInString(w)
	if !unicode.IsUpper(r) {
		return false
	}
	for _, c := range w[n:] {
		if unicode.IsLower(c) {
			return true
		}
	}
	return false
}

func hasDigit(w string) bool {
	return strings.ContainsFunc(w, unicode.IsDigit)
}

// fileExtensions are the endings that make a chunk a file name.
var fileExtensions = setOf(`txt md markdown go py js ts tsx jsx json yaml yml toml ini cfg conf csv tsv xml html
	htm css scss pdf png jpg jpeg gif svg webp mp3 mp4 wav mov zip gz tgz tar log sh bash rs java kt c h cpp
	hpp cs rb php sql lock doc docx xls xlsx ppt pptx proto mod sum`)

// topLevelDomains are the endings that make a chunk a host name.
var topLevelDomains = setOf(`com org net io dev ai app co be me so gg ly tv us uk de fr jp cn info biz xyz edu gov sh`)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// word emits the terms of one run of letters and digits: itself when it
// is a known abbreviation ("k8s"), else its parts split on case changes
// and digits. The parts are substrings of s, lower-cased only when they
// are not already, so most words cost no allocation but their stem.
func (v *vocab) word(s string, emit func(term string)) {
	if e, ok := v.abbreviation(s); ok {
		for _, part := range e {
			emit(part)
		}
		return
	}
	start := -1
	flush := func(end int) {
		if start < 0 || end <= start {
			return
		}
		w := lower(s[start:end])
		start = -1
		parts, ok := v.abbreviations[w]
		if !ok {
			if v.stop[w] || len(w) < 2 && (w[0] < '0' || w[0] > '9') {
				return
			}
			emit(stem(w))
			return
		}
		for _, part := range parts {
			emit(part)
		}
	}
	var prev rune
	for i, r := range s {
		switch {
		case unicode.IsLetter(r):
			if unicode.IsUpper(r) && start >= 0 {
				// "fooBar" splits before B; "HTTPServer" before the S
				// of Server, so an acronym stays one word.
				rest := s[i+utf8.RuneLen(r):]
				next, n := utf8.DecodeRuneInString(rest)
				after, _ := utf8.DecodeRuneInString(rest[n:])
				// The s of a plural acronym ("URLs", "IDs") is no word.
				plural := next == 's' && !unicode.IsLower(after)
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && unicode.IsLower(next) && !plural {
					flush(i)
				}
			} else if unicode.IsDigit(prev) {
				flush(i)
			}
		case unicode.IsDigit(r):
			if start >= 0 && !unicode.IsDigit(prev) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(s))
}

// abbreviation looks s up among the abbreviations, ignoring case, without
// allocating for a short ASCII word.
func (v *vocab) abbreviation(s string) ([]string, bool) {
	var buf [32]byte
	if len(s) > len(buf) {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return nil, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	e, ok := v.abbreviations[string(buf[:len(s)])]
	return e, ok
}

// lower is strings.ToLower that returns an all-lower-case ASCII s as it
// is, without a copy.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// stem strips the common English suffixes, lightly: it only has to map the
// forms of one word to one term (create, creates, created, creating), and
// must not merge different words. A short word is left alone.
func stem(w string) string {
	// Irregular forms ("wrote", "forgot", "children") are read as their
	// words, by WordNet's exception lists (lexicon.go).
	if base, ok := lexiconForms()[w]; ok {
		w = base
	}
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "es") && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes")):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if base, ok := strings.CutSuffix(w, suf); ok && len(base) >= 3 && hasVowel(base) {
			w = undouble(base)
			break
		}
	}
	// -ize verbs meet their nouns: memorize and memory, summarize and
	// summary, visualization and visual.
	for _, suf := range []string{"ization", "ize", "iz"} {
		if base, ok := strings.CutSuffix(w, suf); ok && len(base) >= 4 && hasVowel(base) {
			w = base
			break
		}
	}
	for _, suf := range []string{"ation", "ion", "ment", "er", "ly", "e", "y"} {
		if base, ok := strings.CutSuffix(w, suf); ok && len(base) >= 3 && hasVowel(base) {
			return base
		}
	}
	return w
}

// undouble turns "stopp" (of stopped) back into "stop", but keeps the ll of
// "install" and the ss of "pass".
func undouble(w string) string {
	n := len(w)
	if n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// SynonymWeight is how much a query word's synonym counts, against 1 for
// the word itself.
const SynonymWeight = 0.6

// queryTerm is one term a query looks for, with its weight. Each word of
// the query is a concept, and its synonyms belong to it: a tool scores
// for a concept once, by the best of its terms, so that a tool holding two
// synonyms of one word is no better than one holding the word. arg says
// the word is a value the query carries (see scan).
type queryTerm struct {
	term    string
	weight  float32
	concept int
	arg     bool
	synonym bool // a synonym of the word, or a word the lexicon relates
	lexical bool // a word the lexicon relates
	phrase  bool // a word of a phrase the lexicon knows ("get rid of")
}

// phraseWordWeight is what a word of a phrase the lexicon knows counts by
// itself, as little as the weakest related word: the phrase's meaning is
// in its related words, and "get" of "get rid of" asks for no getter.
// Measured on the tuning half and MetaTool, 0.2 and 0.5 are alike, and 0
// loses a query.
const phraseWordWeight = 0.2

// queryTerms returns the concepts of a query: each word once (as a word
// the query asks for when it is also a value), then its synonyms that are
// no word of the query nor a synonym of an earlier word, sorted by
// concept and, within one, the word first.
//
// seen, when not nil, is a map queryTerms may clear and use, so that a
// query with many related words costs no allocation.
func (v *vocab) queryTerms(text string, synonymWeight float32, lw *lexWeights, dst []queryTerm, seen map[string]int) []queryTerm {
	dst = dst[:0]
	// The concepts in the order the words came, for the lexicon's
	// compounds ("throw away").
	var seqBuf [32]int
	seq := seqBuf[:0]
	v.scan(text, func(t string, arg bool) {
		for i := range dst {
			if dst[i].term == t {
				dst[i].arg = dst[i].arg && arg
				seq = append(seq, i)
				return
			}
		}
		seq = append(seq, len(dst))
		dst = append(dst, queryTerm{term: t, weight: 1, arg: arg, concept: len(dst)})
	})
	words := len(dst)
	for c := range words {
		for _, s := range v.synonyms[dst[c].term] {
			if !slices.ContainsFunc(dst, func(q queryTerm) bool { return q.term == s }) {
				dst = append(dst, queryTerm{term: s, weight: synonymWeight, synonym: true, concept: c})
			}
		}
	}
	if v.lexicon != nil && lw != nil {
		if seen == nil {
			seen = map[string]int{}
		}
		clear(seen)
		for i, q := range dst {
			seen[q.term] = i
		}
		relate := func(c int, rels []lexRel) {
			for _, r := range rels {
				w := lw.weight(r)
				if w == 0 {
					continue
				}
				term := v.lexicon.terms[r.term]
				i, ok := seen[term]
				switch {
				case !ok:
					seen[term] = len(dst)
					dst = append(dst, queryTerm{term: term, weight: w, synonym: true, lexical: true, concept: c})
				case dst[i].concept == c && dst[i].synonym && dst[i].weight < w:
					dst[i].weight = w
				}
			}
		}
		for c := range words {
			if !dst[c].arg { // a value names no tool's purpose
				if sp, ok := v.lexicon.related[dst[c].term]; ok {
					relate(c, v.lexicon.of(sp))
				}
			}
		}
		// A compound's relations go to its first word: "throw away"
		// asks to discard, and its first word is the verb.
		for i := range seq {
			for n := 2; n <= 3 && i+n <= len(seq); n++ {
				var k compoundKey
				arg := false
				for j := range n {
					k[j] = dst[seq[i+j]].term
					arg = arg || dst[seq[i+j]].arg
				}
				if sp, ok := v.lexicon.compounds[k]; ok && !arg {
					relate(seq[i], v.lexicon.of(sp))
					// The phrase's words mean the phrase, not
					// themselves: "get" of "get rid of" asks for no
					// getter, and "rid" is no word a tool lacks.
					for j := range n {
						w := &dst[seq[i+j]]
						w.weight = min(w.weight, phraseWordWeight)
						w.phrase = true
					}
				}
			}
		}
	}
	slices.SortStableFunc(dst, func(a, b queryTerm) int {
		if c := cmp.Compare(a.concept, b.concept); c != 0 {
			return c
		}
		return cmpBool(a.synonym, b.synonym)
	})
	return dst
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
