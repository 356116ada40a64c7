//go:build linux

package soak

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// childrenWithEnv returns the live (not zombie) children of this process
// whose environment assigns value to name (the last assignment, as the
// child's getenv sees it) and whose command line contains arg, if arg is
// not empty. It is how a fault finds a server's process: stdio children by
// markerEnv, server-everything over HTTP by its PORT.
func childrenWithEnv(name, value, arg string) ([]int, error) {
	kids, err := proctest.Children()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range kids {
		if p.Zombie() {
			continue
		}
		if v, ok := envOf(p.PID, name); !ok || v != value {
			continue
		}
		if arg != "" && !strings.Contains(cmdlineOf(p.PID), arg) {
			continue
		}
		pids = append(pids, p.PID)
	}
	return pids, nil
}

// envOf reads one variable of a process's initial environment.
func envOf(pid int, name string) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	var (
		val   string
		found bool
	)
	prefix := []byte(name + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			val, found = string(kv[len(prefix):]), true
		}
	}
	return val, found
}

func cmdlineOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// describeChild says what a leftover child is, naming its server when it is
// a stdio child of the fleet, so that a leak report points at a transport.
func describeChild(p proctest.Proc) string {
	what := "not a stdio server of the fleet"
	if name, ok := envOf(p.PID, markerEnv); ok {
		what = "stdio child of server " + name
	} else if port, ok := envOf(p.PID, "PORT"); ok && strings.Contains(cmdlineOf(p.PID), "streamableHttp") {
		what = "server-everything over HTTP on port " + port
	}
	cmd := cmdlineOf(p.PID)
	if len(cmd) > 160 {
		cmd = cmd[:160] + "…"
	}
	return fmt.Sprintf("%v (%s): %s", p, what, cmd)
}
