package toolsearch

import (
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/snapshot"
)

// Budget says how to choose the tools a model gets for one task.
type Budget struct {
	// Max is the most tools to choose, pinned ones included; a host sets
	// it under its model's or its client's cap (VS Code refuses more than
	// 128 tools, Cursor about 40). Zero or less means DefaultMax.
	Max int
	// Pinned are qualified names always chosen (before any hit), in this
	// order of priority when they alone exceed Max. They count against Max
	// but not against PerServer.
	Pinned []string
	// Query finds the rest; its K is ignored (Select asks for as many as it
	// needs) and so is its Mode when its Text is empty: then no tool but
	// the pinned ones is chosen.
	Query Query
	// PerServer caps the hits chosen from any one server, so that one
	// large server cannot take the whole budget; zero means no cap.
	PerServer int
	// ServerCaps overrides PerServer for the servers it names.
	ServerCaps map[string]int
}

// DefaultMax is the Budget.Max of a Budget that sets none: under the caps
// of the common hosts and the size past which models choose tools worse.
const DefaultMax = 20

// Selection is what Select chose.
type Selection struct {
	// Tools are the chosen tools sorted by qualified name, so that the
	// same set gives the same list (and the same provider payload) in
	// whatever order it was found.
	Tools []snapshot.Tool
	// Pinned and Found name the chosen tools by how they were chosen:
	// Found best first.
	Pinned, Found []string
	// Missing are pinned names the index does not hold.
	Missing []string
	// OverMax are pinned names left out because the pinned tools before
	// them filled Max.
	OverMax []string
	// Capped counts the hits left out by a per-server cap.
	Capped int
}

// Select chooses at most b.Max tools: the pinned ones the index holds,
// then the best hits of b.Query that no per-server cap keeps out.
func (x *Index) Select(b Budget) (Selection, error) {
	limit := b.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	var sel Selection
	chosen := map[string]bool{}
	for _, name := range b.Pinned {
		if chosen[name] {
			continue
		}
		hits, _ := x.Search(Query{Text: name, Mode: ModeExact, K: 1})
		if len(hits) == 0 || hits[0].Qualified != name {
			sel.Missing = append(sel.Missing, name)
			continue
		}
		if len(sel.Tools) == limit {
			sel.OverMax = append(sel.OverMax, name)
			continue
		}
		chosen[name] = true
		sel.Pinned = append(sel.Pinned, name)
		sel.Tools = append(sel.Tools, hits[0].Tool)
	}
	if room := limit - len(sel.Tools); room > 0 && strings.TrimSpace(b.Query.Text) != "" {
		q := b.Query
		q.Exclude = slices.Concat(q.Exclude, sel.Pinned)
		per := map[string]int{}
		// Ask for a few more than the room, and for everything only when
		// the caps keep out so many that the first answer is short.
		for _, k := range []int{room * 2, -1} {
			q.K = k
			hits, err := x.Search(q)
			if err != nil {
				return Selection{}, err
			}
			clear(per)
			found, capped := sel.Found[:0], 0
			for _, h := range hits {
				if len(found) == room {
					break
				}
				server := h.Tool.Server()
				limit, ok := b.ServerCaps[server]
				if !ok {
					limit = b.PerServer
				}
				if limit > 0 && per[server] >= limit {
					capped++
					continue
				}
				per[server]++
				found = append(found, h.Qualified)
				sel.Tools = append(sel.Tools, h.Tool)
			}
			sel.Found, sel.Capped = found, capped
			if len(found) == room || len(hits) < k {
				break
			}
			sel.Tools = sel.Tools[:len(sel.Pinned)]
		}
	}
	slices.SortFunc(sel.Tools, func(a, b snapshot.Tool) int { return strings.Compare(a.Qualified(), b.Qualified()) })
	return sel, nil
}
