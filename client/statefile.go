package client

import (
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// WithStateFile names a file in which the Manager records the process
// groups of its stdio servers (see stdio.Registry), so that if the host is
// killed without a chance to clean up, the next Manager given the same
// file ends what is left of them. New opens the file and, before it
// returns, ends the groups a crashed predecessor recorded there that still
// run: each only if its pid still names the very process recorded (same
// start time), with SIGTERM and then SIGKILL after stdio.DefaultSweepGrace,
// so New may take up to twice that when orphans ignore SIGTERM.
// OrphanSweep says what it did. Close removes the file once every child is
// reaped.
//
// The file holds, per group, only pids, start times and the command's base
// name: no arguments, environment or headers. It is written with mode 0600
// and must not be writable by other users (such a file is ignored). Each
// spawn and each reap appends one line to it, so it costs the same with
// thousands of servers as with one (see stdio.Registry).
//
// A file that cannot be used never stops the Manager: a corrupt or foreign
// one is logged and replaced; one that a running host holds, or that
// cannot be written, is logged at error level and the Manager runs without
// a state file. Off unless a path is given. Defaults to off.
//
// On Linux a parent-death signal and a guard in each process group already
// end the servers with the host; the state file is the fallback for when
// they could not act. On macOS and the BSDs it is the only way a server
// does not outlive a crashed host. On Windows a kill-on-close Job Object
// ends them, and the state file records nothing (see stdio.Registry).
func WithStateFile(path string) Option {
	return func(o *options) { o.stateFile = path }
}

// openStateFile opens the state file WithStateFile named, if any, and
// makes every stdio dial record its child in it. It runs once, from New.
func (m *Manager) openStateFile() {
	if m.opts.stateFile == "" {
		return
	}
	reg, err := stdio.OpenRegistry(m.opts.stateFile, stdio.WithRegistryLogger(m.opts.logger))
	if err != nil {
		m.opts.logger.Error("mcpfleet: running without a state file: stdio servers may outlive a crash of this host",
			"path", m.opts.stateFile, "error", err)
		return
	}
	m.registry = reg
	// Clipped, so that the host's slice is never appended to.
	m.opts.stdioOptions = append(m.opts.stdioOptions[:len(m.opts.stdioOptions):len(m.opts.stdioOptions)], stdio.WithRegistry(reg))
}

// OrphanSweep returns what New did with the process groups a previous
// host left in the state file (WithStateFile): how many it found, how many
// it ended and how many would not die. It is the zero SweepResult without
// a state file, or when the file could not be used.
func (m *Manager) OrphanSweep() stdio.SweepResult {
	if m.registry == nil {
		return stdio.SweepResult{}
	}
	return m.registry.Swept()
}
