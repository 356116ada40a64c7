//go:build unix && !linux && !darwin

package stdio

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// readProc asks ps(1) for the process's state, group and start time
// (lstart, to the second), in the C locale and UTC so that the same
// process reads the same from any host. The BSDs' kinfo_proc layout is not
// in golang.org/x/sys, and ps is in every base system.
func readProc(pid int) (procState, error) {
	if !exists(pid) {
		return procState{}, errProcGone
	}
	cmd := exec.Command("ps", "-o", "stat=", "-o", "pgid=", "-o", "lstart=", "-p", strconv.Itoa(pid))
	cmd.Env = []string{"LC_ALL=C", "TZ=UTC", "PATH=/bin:/usr/bin"}
	out, err := cmd.Output()
	if err != nil {
		if !exists(pid) {
			return procState{}, errProcGone
		}
		return procState{}, fmt.Errorf("%w: ps: %w", errNoStartTime, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return procState{}, fmt.Errorf("%w: ps printed %q", errNoStartTime, out)
	}
	pgid, err := strconv.Atoi(f[1])
	if err != nil {
		return procState{}, fmt.Errorf("%w: ps printed %q", errNoStartTime, out)
	}
	return procState{
		start:  "ps:" + strings.Join(f[2:], " "),
		pgid:   pgid,
		zombie: strings.HasPrefix(f[0], "Z"),
	}, nil
}

// runningGroups: see runningGroupsByKill.
func runningGroups(groups []groupRecord) map[int]bool { return runningGroupsByKill(groups) }
