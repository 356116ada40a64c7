//go:build linux

package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses; fields count from the last ')'.
	p, err := parseStat("42 (a (weird) name) Z 7 42 42 0 -1 4194560 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != 42 || p.Comm != "a (weird) name" || p.State != 'Z' || p.PPID != 7 || p.PGID != 42 || !p.Zombie() {
		t.Errorf("parsed %+v", p)
	}
	for _, bad := range []string{"", "42 no parens", "x (c) S 1 2", "42 (c) S"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

func TestChildLifecycle(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	pid := cmd.Process.Pid
	kids, err := Children()
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || kids[0].PID != pid || kids[0].PPID != os.Getpid() {
		t.Fatalf("Children() = %v, want only %d", kids, pid)
	}
	if !Alive(pid) {
		t.Fatalf("%d not alive", pid)
	}
	_ = cmd.Process.Kill()
	WaitDead(t, pid) // a zombie counts as dead
	if p, err := Stat(pid); err != nil || !p.Zombie() {
		t.Errorf("unreaped child should be a zombie: %+v, %v", p, err)
	}
	_ = cmd.Wait()
	NoChildren(t)
}

// Example shows the check a test makes after tearing down what it started.
func Example() {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil { // Run reaps it
		fmt.Println(err)
		return
	}
	kids, err := Children()
	fmt.Println(len(kids), err, Alive(cmd.Process.Pid))
	// Output: 0 <nil> false
}
