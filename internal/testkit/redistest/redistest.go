//go:build linux

package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startBound bounds how long a redis-server may take to accept connections.
const startBound = 20 * time.Second

// Server is one redis-server instance.
type Server struct {
	dir  string
	port int

	mu  sync.Mutex // guards cmd
	cmd *exec.Cmd
}

// Start starts a redis-server and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server is not on PATH")
	}
	s := &Server{dir: t.TempDir()}
	var last error
	for range 5 { // a free port can be taken between Listen and the server's bind
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if last = s.start(bin); last == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: %v", last)
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop stops the server (SIGTERM, then SIGKILL) and reaps it. Clients see
// their connections refused until Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	stop(cmd)
}

// Restart starts the server again on the same port, empty: a Redis without
// persistence comes back having forgotten everything.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.start(bin); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

// Pause stops the server's process (SIGSTOP) without closing its port:
// clients connect and wait, as with a server that hangs. Resume continues
// it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

func (s *Server) start(bin string) error {
	cmd := exec.Command(bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--protected-mode", "no", "--logfile", "")
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if len(lines) < 20 {
				lines = append(lines, line)
			}
			if strings.Contains(line, "Ready to accept connections") {
				ready <- nil
				_, _ = bufioDrain(sc)
				return
			}
		}
		ready <- fmt.Errorf("redis-server on port %d exited before it was ready: %s", s.port, strings.Join(lines, " | "))
	}()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Wait()
			return err
		}
	case <-time.After(startBound):
		stop(cmd)
		return fmt.Errorf("redis-server on port %d not ready within %v", s.port, startBound)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return nil
}

// bufioDrain reads what the server still writes, so that it never blocks
// on a full pipe.
func bufioDrain(sc *bufio.Scanner) (int, error) {
	n := 0
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}

// stop ends cmd: SIGTERM to its group, SIGKILL after a grace, then reap.
func stop(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func missing(t testing.TB, why string) {
	t.Helper()
	msg := why + "; install it with: apt-get install redis-server (make test does it, through .ci/services)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Dir is the server's working directory.
func (s *Server) Dir() string { return filepath.Clean(s.dir) }

// Dial checks that the server answers PING, within ctx.
func (s *Server) Dial(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis answered %q to PING", strings.TrimSpace(line))
	}
	return nil
}
