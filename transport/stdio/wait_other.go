//go:build unix && !linux

package stdio

import "errors"

// waitExitedNoReap is Linux-only (waitid with WNOWAIT); elsewhere the exit
// watcher reaps first and skips killing the orphaned group, since the group
// id could already name someone else's processes.
func waitExitedNoReap(int) error {
	return errors.New("stdio: waitid WNOWAIT not supported")
}
