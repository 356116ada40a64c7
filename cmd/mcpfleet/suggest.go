package main

import (
	"fmt"
	"slices"
	"strings"
)

// didYouMean returns " (did you mean X?)" for the candidates nearest to
// word, or "": a candidate within a typo's distance (a third of its length
// edited, one for a short word; case ignored), or one that word is the end
// of after a separator ("echo" for "files__echo", "files/echo"). At most
// three are named, nearest first.
func didYouMean(word string, candidates []string) string {
	type scored struct {
		s string
		d int
	}
	var near []scored
	lw := strings.ToLower(word)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lw {
			continue
		}
		switch d := editDistance(lw, lc); {
		case d <= max(1, len([]rune(c))/3):
			near = append(near, scored{c, d})
		case strings.HasSuffix(lc, "__"+lw) || strings.HasSuffix(lc, "/"+lw):
			near = append(near, scored{c, 50})
		default:
			// A tool's own name, mistyped without its server's.
			if _, tool, ok := strings.Cut(lc, "__"); ok && !strings.Contains(lw, "__") {
				if d := editDistance(lw, tool); d <= max(1, len([]rune(tool))/3) {
					near = append(near, scored{c, 60 + d})
				}
			}
		}
	}
	if len(near) == 0 {
		return ""
	}
	slices.SortStableFunc(near, func(a, b scored) int { return a.d - b.d })
	names := make([]string, 0, 3)
	for _, n := range near[:min(len(near), 3)] {
		names = append(names, n.s)
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(names, " or "))
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b: insertions, deletions, substitutions and
// swaps of two neighbours each count one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 128 || len(rb) > 128 {
		return max(len(ra), len(rb)) // no name is that long; do not spend on it
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
