package client

import (
	"encoding/json"
	"time"
)

func (p *configParser) str(server, field string, v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, "must be a string")
		return ""
	}
	out, err := p.expand(server, field, s)
	if err != nil {
		p.errorf(server, field, "%v", err)
	}
	return out
}

func (p *configParser) strMap(server, field string, v json.RawMessage) map[string]string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		p.errorf(server, field, "must be an object of strings")
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if k == "" {
			p.errorf(server, field, "has an empty name")
			continue
		}
		out[k] = p.str(server, field+"."+k, m[k])
	}
	return out
}

func (p *configParser) boolean(server, field string, v json.RawMessage) bool {
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		p.errorf(server, field, "must be true or false")
	}
	return b
}

// duration accepts a Go duration string ("1m30s") or a number of seconds.
func (p *configParser) duration(server, field string, v json.RawMessage) time.Duration {
	var n float64
	if err := json.Unmarshal(v, &n); err == nil {
		if n < 0 || n > float64(1<<62)/float64(time.Second) {
			p.errorf(server, field, "must be a non-negative number of seconds")
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, `must be a duration like "30s" or a number of seconds`)
		return 0
	}
	s, err := p.expand(server, field, s)
	if err != nil {
		p.errorf(server, field, "%v", err)
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		p.errorf(server, field, `must be a duration like "30s" or a number of seconds, got %q`, s)
		return 0
	}
	return d
}
