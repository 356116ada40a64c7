package stdio

import (
	"syscall"
	"testing"
)

// TestExitOf: how Err reports an end, on every OS's terms, whichever OS
// runs the test. On Unix wait names the signal; on Windows a kill is an
// exit code (killedExitCode there), which is reported as SIGKILL only when
// Close's kill reached the process.
func TestExitOf(t *testing.T) {
	const unix, windows = -1, 1 // killedExitCode of each
	kill := exitStatus{code: -1, signal: syscall.SIGKILL}
	tests := []struct {
		name       string
		st         exitStatus
		killed     bool
		killedCode int
		want       exitStatus
	}{
		{"unix: exit 0", exitStatus{code: 0}, false, unix, exitStatus{code: 0}},
		{"unix: exit 1 after our kill", exitStatus{code: 1}, true, unix, exitStatus{code: 1}},
		{"unix: SIGTERM", exitStatus{code: -1, signal: syscall.SIGTERM}, true, unix, exitStatus{code: -1, signal: syscall.SIGTERM}},
		{"unix: SIGKILL from elsewhere", kill, false, unix, kill},
		{"windows: terminated by Close", exitStatus{code: windows}, true, windows, kill},
		{"windows: exit 1 by itself", exitStatus{code: 1}, false, windows, exitStatus{code: 1}},
		{"windows: exit 0 just before the kill", exitStatus{code: 0}, true, windows, exitStatus{code: 0}},
		{"windows: a crash (0xC0000005)", exitStatus{code: 0xC0000005}, false, windows, exitStatus{code: 0xC0000005}},
		{"windows: a crash just before the kill", exitStatus{code: 0xC0000005}, true, windows, exitStatus{code: 0xC0000005}},
	}
	for _, tt := range tests {
		if got := exitOf(tt.st, tt.killed, tt.killedCode); got != tt.want {
			t.Errorf("%s: exitOf(%+v, killed=%v) = %+v, want %+v", tt.name, tt.st, tt.killed, got, tt.want)
		}
	}
}
