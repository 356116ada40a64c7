//go:build linux

package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startBound bounds initdb and the server's start.
const startBound = 60 * time.Second

// Server is one PostgreSQL instance.
type Server struct {
	dir  string // the data directory's parent, removed at the end
	data string
	port int
	cred *syscall.Credential // nil: run as this process's user
	bin  string

	mu   sync.Mutex // guards cmd and done
	cmd  *exec.Cmd
	done chan struct{}
}

// Start initializes a cluster and starts a server on it; both go when t
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv("PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	for _, b := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			missing(t, filepath.Join(bin, b)+" is missing")
		}
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		name := os.Getenv("MCPFLEET_TEST_USER")
		if name == "" {
			name = "mcpfleet-test"
		}
		u, err := user.Lookup(name)
		if err != nil {
			missing(t, "user "+name+" is missing (postgres refuses to run as root)")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "mcpfleet-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir, s.data = dir, filepath.Join(dir, "data")
	t.Cleanup(func() {
		s.Stop()
		os.RemoveAll(dir)
	})
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	initdb := s.command(ctx, "initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v: %s", err, out)
	}
	var last error
	for range 5 { // a free port can be taken between Listen and the server's bind
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if last = s.start(); last == nil {
			return s
		}
	}
	t.Fatalf("pgtest: %v", last)
	return nil
}

// URL returns the URL of database db ("postgres" if empty) for the
// superuser postgres, which trusts connections from 127.0.0.1.
func (s *Server) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Stop stops the server (a fast shutdown, then SIGKILL) and reaps it;
// Restart starts it again on the same port and data.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Restart starts a stopped server again, with its data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("pgtest: restart: %v", err)
	}
}

// Pause stops the server's processes (SIGSTOP) without closing its port:
// clients connect and wait, as with a server that hangs. Resume continues
// them.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, sig)
	}
}

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "HOME=" + s.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	return cmd
}

func (s *Server) start() error {
	cmd := s.command(context.Background(), "postgres", "-D", s.data, "-p", strconv.Itoa(s.port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200",
		"-c", "logging_collector=off")
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads once it is up: drop
			}
		}
		close(lines)
	}()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	var seen []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // stderr closed: the exit follows
				continue
			}
			if len(seen) < 20 {
				seen = append(seen, l)
			}
			if !strings.Contains(l, "database system is ready to accept connections") {
				continue
			}
			if err := dial(ctx, s.Addr()); err != nil {
				return fmt.Errorf("postgres on port %d says it is ready but refuses connections: %v", s.port, err)
			}
		case <-done:
			return fmt.Errorf("postgres on port %d exited: %s", s.port, strings.Join(seen, " | "))
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return fmt.Errorf("postgres on port %d not ready within %v: %s", s.port, startBound, strings.Join(seen, " | "))
		}
		break
	}
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return nil
}

// dial checks that something accepts connections at addr.
func dial(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
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
	msg := why + "; install with: apt-get install postgresql-15 && useradd --system mcpfleet-test (make test does it, through .ci/services)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
