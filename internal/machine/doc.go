// Package machine is the manager's state machinery that needs no I/O: the
// one transition table of lifecycle.State, the reconnect Budget that
// schedules a slot's dials under a lifecycle.Policy, and the Health of a
// runtime generation. A host never sees these; it reads the State and sets
// the Policy.
package machine
