package client

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// blockKey is one key of a block (tools, limits, oauth, reconnect, an
// input) and what its value sets.
type blockKey struct {
	name string
	// set parses the key's value; field is its full name ("oauth.grant").
	set func(field string, v json.RawMessage)
}

// block parses v, the block field of server's entry (server "" for one
// at the top of the file), which must be a JSON object: each key by its
// set, in sorted order, so errors come in the file's key order whatever
// the table's. A key not in keys is an error suggesting the nearest one,
// or listing them all in the table's order. If v is not an object, block
// records the error msg and reports false.
func (p *configParser) block(server, field string, v json.RawMessage, msg string, keys []blockKey) bool {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil || fields == nil {
		p.errorf(server, field, "%s", msg)
		return false
	}
	for _, k := range sortedKeys(fields) {
		f := field + "." + k
		i := slices.IndexFunc(keys, func(b blockKey) bool { return b.name == k })
		if i < 0 {
			known := make([]string, len(keys))
			for j, b := range keys {
				known[j] = b.name
			}
			p.unknownKey(server, f, k, known)
			continue
		}
		keys[i].set(f, fields[k])
	}
	return true
}

// into is the set of a block key whose value parse makes into *dst.
func into[T any](server string, parse func(server, field string, v json.RawMessage) T, dst *T) func(string, json.RawMessage) {
	return func(field string, v json.RawMessage) { *dst = parse(server, field, v) }
}

// toolFilter parses a "tools" object: {"allow": [...], "deny": [...]}.
func (p *configParser) toolFilter(server string, v json.RawMessage) ToolFilter {
	var f ToolFilter
	if !p.block(server, "tools", v, `must be an object like {"allow": ["read_*"], "deny": ["delete_*"]}`, []blockKey{
		{"allow", into(server, p.patterns, &f.Allow)},
		{"deny", into(server, p.patterns, &f.Deny)},
	}) {
		return ToolFilter{}
	}
	return f
}

// toolList settles one list of a tool filter given both by "tools" (ours)
// and by the Gemini CLI key (theirs, already parsed): giving it twice is
// an error, not a merge.
func (p *configParser) toolList(server, ours, theirs string, had, got []string) []string {
	if got == nil {
		return had
	}
	if had != nil {
		p.errorf(server, "tools."+ours, "%s is set too; use one of them", theirs)
	}
	return got
}

// patterns parses an array of tool names and globs. It returns an empty
// (not nil) list for an empty array, so that a list given twice is told
// apart from one not given.
func (p *configParser) patterns(server, field string, v json.RawMessage) []string {
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		p.errorf(server, field, "must be an array of tool names or globs")
		return nil
	}
	out := make([]string, 0, len(list))
	for i, raw := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		s := p.str(server, f, raw)
		if err := validPattern(s); err != nil {
			p.errorf(server, f, "%v", err)
			continue
		}
		out = append(out, s)
	}
	return out
}

// limits parses a "limits" object. Every field takes a number, or "off";
// maxMessageBytes also a size like "16MiB" or "512KiB".
func (p *configParser) limits(server string, v json.RawMessage) Limits {
	var l Limits
	count := func(dst *int) func(string, json.RawMessage) {
		return func(f string, v json.RawMessage) { *dst = int(p.limitNumber(server, f, v, false)) }
	}
	rate := func(dst *float64) func(string, json.RawMessage) {
		return func(f string, v json.RawMessage) { *dst = p.limitNumber(server, f, v, false) }
	}
	if !p.block(server, "limits", v, "must be an object", []blockKey{
		{"maxMessageBytes", func(f string, v json.RawMessage) { l.MaxMessageBytes = int64(p.limitNumber(server, f, v, true)) }},
		{"maxCatalogItems", count(&l.MaxCatalogItems)},
		{"maxCatalogPages", count(&l.MaxCatalogPages)},
		{"notificationRate", rate(&l.NotificationRate)},
		{"maxServerRequests", count(&l.MaxServerRequests)},
		{"serverRequestRate", rate(&l.ServerRequestRate)},
	}) {
		return Limits{}
	}
	return l
}

// limitNumber parses one limit: a positive number, "off" (-1), or, for a
// size, a string with a KiB, MiB or GiB suffix.
func (p *configParser) limitNumber(server, field string, v json.RawMessage, size bool) float64 {
	var n float64
	if err := json.Unmarshal(v, &n); err == nil {
		if n <= 0 || n > 1<<53 {
			p.errorf(server, field, `must be a positive number or "off"`)
			return 0
		}
		return n
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, `must be a positive number or "off"`)
		return 0
	}
	s, err := p.expand(server, field, s)
	if err != nil {
		p.errorf(server, field, "%v", err)
		return 0
	}
	if s == "off" {
		return -1
	}
	if size {
		for _, u := range []struct {
			suffix string
			mult   float64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
			if num, ok := strings.CutSuffix(s, u.suffix); ok {
				if x, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil && x > 0 && x*u.mult <= 1<<53 {
					return x * u.mult
				}
				break
			}
		}
		p.errorf(server, field, `must be a number of bytes, a size like "16MiB", or "off", got %q`, s)
		return 0
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x > 0 && x <= 1<<53 {
		return x
	}
	p.errorf(server, field, `must be a positive number or "off", got %q`, s)
	return 0
}

// oauth parses an "oauth" block.
func (p *configParser) oauth(server string, v json.RawMessage) *oauth.Config {
	var c oauth.Config
	str := func(dst *string) func(string, json.RawMessage) { return into(server, p.str, dst) }
	if !p.block(server, "oauth", v, "must be an object", []blockKey{
		{"clientId", str(&c.ClientID)},
		{"clientSecret", str(&c.ClientSecret)},
		{"scopes", func(f string, v json.RawMessage) {
			// An array of scopes, as Gemini CLI writes it, or one
			// space-separated string, as OAuth's scope parameter is.
			var list []json.RawMessage
			if err := json.Unmarshal(v, &list); err == nil {
				for i, s := range list {
					c.Scopes = append(c.Scopes, p.str(server, fmt.Sprintf("%s[%d]", f, i), s))
				}
				return
			}
			c.Scopes = strings.Fields(p.str(server, f, v))
		}},
		{"callbackPort", func(f string, v json.RawMessage) {
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				var s string
				if json.Unmarshal(v, &s) != nil {
					p.errorf(server, f, "must be a port number")
					return
				}
				if s, err = p.expand(server, f, s); err != nil {
					p.errorf(server, f, "%v", err)
					return
				}
				if n, err = strconv.Atoi(s); err != nil {
					p.errorf(server, f, "must be a port number")
					return
				}
			}
			c.CallbackPort = n
		}},
		{"redirectUri", str(&c.RedirectURI)},
		{"grant", func(f string, v json.RawMessage) {
			g, err := oauth.ParseGrant(p.str(server, f, v))
			if err != nil {
				p.errorf(server, f, "%v", err)
			}
			c.Grant = g
		}},
		{"clientMetadataUrl", str(&c.ClientMetadataURL)},
		{"tokenEndpointAuthMethod", str(&c.TokenEndpointAuthMethod)},
		{"privateKey", str(&c.PrivateKey)},
		{"signingAlgorithm", str(&c.SigningAlgorithm)},
		{"clientName", str(&c.ClientName)},
		{"issuer", str(&c.Issuer)},
		{"idpTokenEndpoint", str(&c.IdPTokenEndpoint)},
		{"idpClientId", str(&c.IdPClientID)},
		{"idpClientSecret", str(&c.IdPClientSecret)},
		{"idTokenFile", str(&c.IDTokenFile)},
	}) {
		return nil
	}
	return &c
}

// policy parses a "reconnect" block.
func (p *configParser) policy(server string, v json.RawMessage) *lifecycle.Policy {
	var pol lifecycle.Policy
	duration := func(dst *time.Duration) func(string, json.RawMessage) { return into(server, p.duration, dst) }
	number := func(dst *float64) func(string, json.RawMessage) {
		return func(f string, v json.RawMessage) {
			var x float64
			if err := json.Unmarshal(v, &x); err != nil {
				p.errorf(server, f, "must be a number")
			}
			*dst = x
		}
	}
	if !p.block(server, "reconnect", v, "must be an object", []blockKey{
		{"initialInterval", duration(&pol.InitialInterval)},
		{"maxInterval", duration(&pol.MaxInterval)},
		{"multiplier", number(&pol.Multiplier)},
		{"jitter", number(&pol.Jitter)},
		{"maxAttempts", func(f string, v json.RawMessage) {
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				p.errorf(server, f, "must be an integer (negative means forever)")
			}
			pol.MaxAttempts = n
		}},
		{"maxElapsed", duration(&pol.MaxElapsed)},
		{"stableAfter", duration(&pol.StableAfter)},
		{"probeInterval", func(f string, v json.RawMessage) {
			// "off" turns the slow probe off.
			var s string
			if json.Unmarshal(v, &s) == nil && s == "off" {
				pol.ProbeInterval = -1
			} else {
				pol.ProbeInterval = p.duration(server, f, v)
			}
		}},
	}) {
		return nil
	}
	return &pol
}
