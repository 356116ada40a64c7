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
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			v.word(s[start:i], emit)
			start = -1
		}
	}
	if start >= 0 {
		v.word(s[start:], emit)
	}
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
const SynonymWeight = 0.4

// queryTerm is one term a query looks for, with its weight.
type queryTerm struct {
	term   string
	weight float32
}

// queryTerms returns the terms of a query and their synonyms, sorted, each
// once at its highest weight.
func (v *vocab) queryTerms(text string, dst []queryTerm) []queryTerm {
	dst = dst[:0]
	v.tokens(text, func(t string) {
		dst = append(dst, queryTerm{t, 1})
		for _, s := range v.synonyms[t] {
			dst = append(dst, queryTerm{s, SynonymWeight})
		}
	})
	slices.SortFunc(dst, func(a, b queryTerm) int {
		if c := strings.Compare(a.term, b.term); c != 0 {
			return c
		}
		return cmp.Compare(b.weight, a.weight)
	})
	return slices.CompactFunc(dst, func(a, b queryTerm) bool { return a.term == b.term })
}
