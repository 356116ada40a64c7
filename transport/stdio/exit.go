package stdio

import "syscall"

// exitStatus is how a process ended: its exit code, or, when a signal
// ended it, code -1 and the signal.
type exitStatus struct {
	code   int
	signal syscall.Signal
}

// exitOf says how the process ended, for ExitError, from st, what wait
// reported (waitStatus, proc_*.go). killed says that Close's kill reached
// the tree before the process was reaped; killedCode is the exit code
// that kill gives where it is no signal (Windows's TerminateJobObject:
// killedExitCode), or -1 where wait reports the signal itself (Unix).
//
// A process our kill ended is reported as ended by SIGKILL on every OS,
// rather than, on Windows, as an exit status the server could have chosen
// itself (1, which a crashing server gives as often as anything). A
// process that exited by itself just before the kill keeps its own status,
// unless it was that very code.
func exitOf(st exitStatus, killed bool, killedCode int) exitStatus {
	if killed && st.signal == 0 && killedCode >= 0 && st.code == killedCode {
		return exitStatus{code: -1, signal: syscall.SIGKILL}
	}
	return st
}
