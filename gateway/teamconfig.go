package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpfleet/mcpfleet/client"
	fleets "github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/internal/filetrust"
)

// A team's config file is a config file of servers, as every host writes them,
// used as the template of each identity's fleet (its ${user:NAME} are the
// identity's claims), with one more top-level member, "policy" (see
// Policy). The policy is taken out before the servers are parsed, so that
// errors in them keep their lines and columns.

// LoadTeamConfig reads a team's config file: the template of the
// identities' fleets, its policy (nil if it has none), and the file as it
// was read (to tell, at the next change, what changed). The file must be
// the user's and writable by no one else (on Unix): whoever can write it
// chooses what every identity runs and may use. opts are as ParseTemplate
// takes them.
func LoadTeamConfig(path string, opts ...client.ConfigOption) (*fleets.Template, *Policy, []byte, error) {
	data, err := readTrusted(path)
	if err != nil {
		return nil, nil, nil, err
	}
	servers, raw, err := SplitPolicy(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mcpfleet: %s: %w", path, err)
	}
	tmpl, err := fleets.ParseTemplate(servers, append([]client.ConfigOption{client.WithSource(path)}, opts...)...)
	if err != nil {
		return nil, nil, nil, err
	}
	var policy *Policy
	if raw != nil {
		if policy, err = ParsePolicy(raw); err != nil {
			return nil, nil, nil, fmt.Errorf("mcpfleet: %s: %w", path, err)
		}
	}
	return tmpl, policy, data, nil
}

// readTrusted reads path, refusing a file another user owns or can write.
func readTrusted(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: config: %w", err)
	}
	if why := filetrust.Untrusted(fi); why != "" {
		return nil, fmt.Errorf("mcpfleet: config: %s is %s, who would choose what every identity runs and may use: chmod go-w %s (or copy it and check it)", path, why, path)
	}
	return io.ReadAll(io.LimitReader(f, 64<<20))
}

// SplitPolicy takes the top-level "policy" member out of a config file:
// it returns the file with the member blanked out (spaces in place of its
// characters, newlines kept, so that lines and columns stay where they
// were) and the member's value, nil if there is none. A file that is not
// plain JSON (JSON with comments, say) and has a policy is refused: the
// policy must be found for sure.
func SplitPolicy(data []byte) (servers, policy []byte, err error) {
	if !bytes.Contains(data, []byte(`"policy"`)) {
		return data, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New(`a config with a "policy" must be a JSON object without comments`)
	}
	prevEnd := dec.InputOffset() // after '{', or after the previous value
	first := true
	for dec.More() {
		start := prevEnd
		t, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf(`a config with a "policy" must be plain JSON (no comments): %w`, err)
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf(`a config with a "policy" must be plain JSON (no comments): %w`, err)
		}
		end := dec.InputOffset()
		if key == "policy" {
			out := bytes.Clone(data)
			if first {
				// The first member: its comma is after it.
				if i := bytes.IndexByte(out[end:], ','); i >= 0 && dec.More() {
					end += int64(i) + 1
				}
			}
			for i := start; i < end; i++ {
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
			return out, v, nil
		}
		first = false
		prevEnd = end
	}
	return data, nil, nil
}
