package configfile

import (
	"errors"
	"fmt"
	"os"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/filetrust"
)

// ErrUntrusted is the error of a config file that another user could
// have written (see Load).
var ErrUntrusted = errors.New("mcpfleet: config: untrusted file")

// Load is client.LoadConfig for a config whose commands are going to
// be run. On Unix it refuses a file that is not this user's, or that group
// or others can write: whoever can write the file chooses the commands the
// fleet runs, with this user's credentials. The error wraps
// ErrUntrusted, names the file and says what to do. A file replaced
// while it was read is refused too; keep the file in a directory only you
// can write, so that it cannot be replaced at all.
func Load(path string, opts ...client.ConfigOption) (*client.Config, error) {
	before, err := trustedConfig(path)
	if err != nil {
		return nil, err
	}
	cfg, err := client.LoadConfig(path, opts...)
	if err != nil {
		return nil, err
	}
	after, err := trustedConfig(path)
	if err != nil {
		return nil, err
	}
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) || before.Size() != after.Size() {
		return nil, fmt.Errorf("%w: %s was replaced while it was read; try again", ErrUntrusted, path)
	}
	return cfg, nil
}

// trustedConfig returns the FileInfo of the config file at path, or the
// error that refuses it.
func trustedConfig(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: config: %w", err)
	}
	switch why := filetrust.Untrusted(fi); why {
	case "":
		return fi, nil
	case "writable by other users":
		return nil, fmt.Errorf("%w: %s is writable by other users (mode %#o), who could make mcpfleet run any command: run chmod go-w %s",
			ErrUntrusted, path, fi.Mode().Perm(), path)
	default:
		return nil, fmt.Errorf("%w: %s is %s, who could make mcpfleet run any command as you: copy it to a file of your own, check the commands it runs, and use that",
			ErrUntrusted, path, why)
	}
}
