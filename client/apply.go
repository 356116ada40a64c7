package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Apply makes the manager's servers match cfg, touching only what changed:
// servers new in cfg are added, servers gone from it are removed, servers
// whose entry changed (anything but disabled) are restarted, and servers
// whose disabled flag flipped are disabled or enabled in place. Untouched
// servers see no blip: same slot, same runtime, same generation.
//
// Apply manages the servers that came from a config (through Apply); servers
// added with Add are left alone, and a config entry with the same name as
// one of them is an error. Once the changes are made, Apply waits (bounded
// by ctx) for every enabled server marked required to be Connected.
// Problems are reported together; one bad entry does not stop the others.
func (m *Manager) Apply(ctx context.Context, cfg *Config) error {
	if cfg == nil {
		return errors.New("mcpfleet: apply: config is nil")
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()

	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return fmt.Errorf("%w: apply", ErrClosed)
	}
	current := make(map[string]*slot, len(m.slots))
	for name, s := range m.slots {
		current[name] = s
	}
	m.mu.RUnlock()

	var errs []error
	for name, s := range current {
		if _, keep := cfg.Servers[name]; !keep && s.configKey != "" {
			if err := m.Remove(ctx, name); err != nil && !errors.Is(err, ErrUnknownServer) {
				errs = append(errs, err)
			}
		}
	}
	var required []string
	for _, name := range sortedKeys(cfg.Servers) {
		sc := cfg.Servers[name]
		spec, err := sc.Spec()
		if err != nil {
			errs = append(errs, fmt.Errorf("mcpfleet: %s: server %q: %w", cfg.Source, name, err))
			continue
		}
		key := sc.key()
		s, exists := current[name]
		switch {
		case exists && s.configKey == "":
			errs = append(errs, fmt.Errorf("mcpfleet: %s: server %q: %w: added with Add, not managed by Apply",
				cfg.Source, name, ErrDuplicateServer))
			continue
		case !exists:
			err = m.add(ctx, name, spec, key)
		case s.configKey != key:
			// A close error is reported, but closing is teardown, not a
			// transaction: the old slot is gone either way, and the new
			// entry must still start.
			if err = m.Remove(ctx, name); err != nil && !errors.Is(err, ErrUnknownServer) {
				errs = append(errs, err)
			}
			err = m.add(ctx, name, spec, key)
		case sc.Disabled:
			err = s.disable(ctx)
		default:
			err = s.enable(ctx)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sc.Required && !sc.Disabled {
			required = append(required, name)
		}
	}
	for _, name := range required {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			st, _ := m.Status(name)
			errs = append(errs, fmt.Errorf("mcpfleet: required server %q did not connect: %w (last error: %v)",
				name, err, st.LastError))
		}
	}
	return errors.Join(errs...)
}
