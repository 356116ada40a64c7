package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/editdist"
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
		switch d := editdist.Distance(lw, lc, 128); {
		case d <= max(1, len([]rune(c))/3):
			near = append(near, scored{c, d})
		case strings.HasSuffix(lc, "__"+lw) || strings.HasSuffix(lc, "/"+lw):
			near = append(near, scored{c, 50})
		default:
			// A tool's own name, mistyped without its server's.
			if _, tool, ok := strings.Cut(lc, "__"); ok && !strings.Contains(lw, "__") {
				if d := editdist.Distance(lw, tool, 128); d <= max(1, len([]rune(tool))/3) {
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
