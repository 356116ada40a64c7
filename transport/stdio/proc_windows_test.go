package stdio

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// Tests of what is Windows's own. CI builds and vets them (.ci/crossbuild)
// but runs them on Linux only; exitOf, which decides what they check, is
// tested on every OS (TestExitOf).

// TestCreationFlags: a child starts suspended (put in its job before it
// runs), in a process group of its own, and without a console window, and
// with none of the flags beside which CREATE_NO_WINDOW does nothing.
func TestCreationFlags(t *testing.T) {
	flags := sysProcAttr().CreationFlags
	for _, f := range []struct {
		name string
		bit  uint32
	}{
		{"CREATE_SUSPENDED", windows.CREATE_SUSPENDED},
		{"CREATE_NEW_PROCESS_GROUP", windows.CREATE_NEW_PROCESS_GROUP},
		{"CREATE_NO_WINDOW", windows.CREATE_NO_WINDOW},
	} {
		if flags&f.bit == 0 {
			t.Errorf("creation flags %#x lack %s", flags, f.name)
		}
	}
	if flags&(windows.CREATE_NEW_CONSOLE|windows.DETACHED_PROCESS) != 0 {
		t.Errorf("creation flags %#x hold a flag that cancels CREATE_NO_WINDOW", flags)
	}
}

// TestCloseTerminatedReportsKill: a child that ignores the end of its
// stdin is terminated by Close after the grace; Err says SIGKILL and
// Closed, not exit status 1. A child that exits by itself keeps its
// status.
func TestCloseTerminatedReportsKill(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeIgnoreEOF), WithCloseGrace(100*time.Millisecond), WithKillTimeout(waitBound))
	mustConnect(t, c)
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Fatal(err)
	}
	var e *ExitError
	if !errors.As(c.Err(), &e) || e.Signal != syscall.SIGKILL || e.Code != -1 || !e.Closed {
		t.Errorf("Err() = %#v, want SIGKILL, code -1, closed", c.Err())
	}

	c2 := dial(t, faultSpec(faultserver.ModeExitAtStart))
	waitDone(t, c2)
	if !errors.As(c2.Err(), &e) || e.Signal != 0 || e.Code != faultserver.ExitAtStartCode || e.Closed {
		t.Errorf("Err() = %#v, want exit status %d", c2.Err(), faultserver.ExitAtStartCode)
	}
}
