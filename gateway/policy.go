package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/client"
)

// Policy says which servers and tools each identity of a Team may list and
// call. Rules are tried in order, and the first that names the identity
// (by its ID or one of its groups) governs it; an identity no rule names
// gets the Default. Within a rule, a server is open if its Servers filter
// lets it in, and a tool if its server is open and its Tools filter lets
// it in. A filter is as a host's tool filter (client.ToolFilter): entries
// are names or globs in the syntax of path.Match, Deny wins over Allow,
// and an empty Allow lets everything in. A Tools entry with a '/' is
// matched against "server/tool" ("github/delete_*"); one without, against
// the tool's own name on any server ("delete_*"). Identities and Groups
// entries are globs too.
//
// What a rule closes is not listed (tools, and the prompts, resources and
// templates of a closed server), and a call of it is refused with an error
// that says it was denied and by which rule. A Policy is immutable once in
// use: a Team takes a new one whole (Team.SetPolicy).
//
// In JSON, as the "policy" member of a team's config file:
//
//	"policy": {
//	  "default": "deny",
//	  "rules": [
//	    {"name": "admins", "groups": ["admin"]},
//	    {"name": "eng", "groups": ["eng"],
//	     "servers": {"deny": ["billing"]},
//	     "tools": {"deny": ["*/delete_*"]}},
//	    {"name": "readers", "identities": ["*"], "tools": {"allow": ["*/read_*", "*/list_*"]}}
//	  ]
//	}
type Policy struct {
	// Rules, in order.
	Rules []PolicyRule `json:"rules"`
	// Default is what an identity that no rule names may use: "deny"
	// (nothing; the default) or "allow" (everything).
	Default string `json:"default,omitempty"`
}

// PolicyRule is one rule of a Policy.
type PolicyRule struct {
	// Name names the rule in logs, errors and metrics. Defaults to
	// "rules[i]".
	Name string `json:"name,omitempty"`
	// Identities and Groups are the identities the rule governs: those
	// whose ID matches an entry of Identities, or one of whose groups
	// matches an entry of Groups. At least one entry in all; "*" in
	// Identities names everyone.
	Identities []string `json:"identities,omitempty"`
	Groups     []string `json:"groups,omitempty"`
	// Servers and Tools are what the rule opens (see Policy). Zero filters
	// open everything.
	Servers client.ToolFilter `json:"servers"`
	Tools   client.ToolFilter `json:"tools"`
}

// Decision is what a Policy says of one server or tool for one identity.
type Decision struct {
	// Allowed reports whether the identity may list and call it.
	Allowed bool
	// Rule is the name of the rule that decided, or "default".
	Rule string
	// Why says which entry decided: `servers.deny "billing"`, `tools.allow
	// (no entry matches)`; empty when the rule opens it with no entry to
	// name.
	Why string
}

// String describes d for a log line or an error.
func (d Decision) String() string {
	verb := "denied"
	if d.Allowed {
		verb = "allowed"
	}
	s := verb + " by rule " + strconv.Quote(d.Rule)
	if d.Why != "" {
		s += " (" + d.Why + ")"
	}
	return s
}

// ParsePolicy parses a policy in JSON and checks it: every glob, the
// default, each rule naming someone, names not used twice. Errors name the
// rule and the field.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("mcpfleet: policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate reports what is wrong with p, each naming the rule and the
// field.
func (p *Policy) Validate() error {
	var errs []error
	switch p.Default {
	case "", "deny", "allow":
	default:
		errs = append(errs, fmt.Errorf("mcpfleet: policy: default: %q is not \"deny\" or \"allow\"", p.Default))
	}
	seen := map[string]bool{}
	for i, r := range p.Rules {
		name := r.name(i)
		where := fmt.Sprintf("mcpfleet: policy: rule %q", name)
		if seen[name] {
			errs = append(errs, fmt.Errorf("%s: the name is used by another rule", where))
		}
		seen[name] = true
		if len(r.Identities) == 0 && len(r.Groups) == 0 {
			errs = append(errs, fmt.Errorf("%s: names no identity or group (identities: [\"*\"] is everyone)", where))
		}
		for _, l := range []struct {
			field   string
			entries []string
		}{{"identities", r.Identities}, {"groups", r.Groups}, {"servers.allow", r.Servers.Allow},
			{"servers.deny", r.Servers.Deny}, {"tools.allow", r.Tools.Allow}, {"tools.deny", r.Tools.Deny}} {
			for j, e := range l.entries {
				if e == "" {
					errs = append(errs, fmt.Errorf("%s: %s[%d]: empty entry", where, l.field, j))
				} else if _, err := path.Match(e, ""); err != nil {
					errs = append(errs, fmt.Errorf("%s: %s[%d]: invalid glob %q: %w", where, l.field, j, e, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (r *PolicyRule) name(i int) string {
	if r.Name != "" {
		return r.Name
	}
	return "rules[" + strconv.Itoa(i) + "]"
}

// RuleFor returns the index of the rule that governs id, -1 if none does
// (the default).
func (p *Policy) RuleFor(id *Identity) int {
	for i := range p.Rules {
		r := &p.Rules[i]
		for _, e := range r.Identities {
			if glob(e, id.ID) {
				return i
			}
		}
		for _, e := range r.Groups {
			for _, g := range id.Groups {
				if glob(e, g) {
					return i
				}
			}
		}
	}
	return -1
}

// Decide says whether id may use server's tool (tool "" is the server
// itself: its prompts, resources and templates).
func (p *Policy) Decide(id *Identity, server, tool string) Decision {
	return p.decide(p.RuleFor(id), server, tool)
}

// decide is Decide under rule i (-1: the default).
func (p *Policy) decide(i int, server, tool string) Decision {
	if i < 0 {
		return Decision{Allowed: p.Default == "allow", Rule: "default"}
	}
	r := &p.Rules[i]
	d := Decision{Rule: r.name(i)}
	if why := refusal(r.Servers, "servers", func(e string) bool { return glob(e, server) }); why != "" {
		d.Why = why
		return d
	}
	if tool != "" {
		match := func(e string) bool {
			if strings.Contains(e, "/") {
				return glob(e, server+"/"+tool)
			}
			return glob(e, tool)
		}
		if why := refusal(r.Tools, "tools", match); why != "" {
			d.Why = why
			return d
		}
	}
	d.Allowed = true
	return d
}

// refusal returns why f keeps out what match matches, "" if it lets it in.
func refusal(f client.ToolFilter, list string, match func(string) bool) string {
	for _, e := range f.Deny {
		if match(e) {
			return list + ".deny " + strconv.Quote(e)
		}
	}
	if len(f.Allow) == 0 || slices.ContainsFunc(f.Allow, match) {
		return ""
	}
	return list + ".allow (no entry matches)"
}

// glob matches one entry, as a host's tool filter does: the name itself,
// or a path.Match glob.
func glob(pattern, name string) bool {
	if pattern == name {
		return true
	}
	ok, err := path.Match(pattern, name)
	return ok && err == nil
}
