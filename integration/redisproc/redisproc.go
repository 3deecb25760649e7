// Package redisproc runs throwaway redis-server processes for integration
// tests and benchmarks: a free loopback port, no persistence (unless
// StartWith asks for it), a private directory, ready once it answers
// PING. It also has a minimal RESP2 client (resp.go) to read what the
// gateway wrote, and a counting TCP proxy (proxy.go) that records the
// request/response turns a client makes.
//
// Tests call Start (or Require) rather than assume a server: without
// redis-server on PATH they are skipped, unless LLMGW_REQUIRE_REDIS=1 (CI),
// where a missing redis-server fails them.
package redisproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns "redis-server is not
// installed" from a skip into a failure.
const RequireEnv = "LLMGW_REQUIRE_REDIS"

// Lookup finds redis-server on PATH.
func Lookup() (string, error) {
	return exec.LookPath("redis-server")
}

// Require returns the path of redis-server, or skips tb when it is not
// installed (fails it instead when LLMGW_REQUIRE_REDIS=1).
func Require(tb testing.TB) string {
	tb.Helper()
	path, err := Lookup()
	if err == nil {
		return path
	}
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("%s=1 but redis-server is not on PATH: %v", RequireEnv, err)
	}
	tb.Skipf("redis-server is not on PATH (%v): skipping (install redis-server, or set %s=1 to fail instead)", err, RequireEnv)
	return ""
}

// Server is one redis-server process. Its port stays the same across
// Stop and Restart, so clients configured with Addr reconnect to the new
// process.
type Server struct {
	// Addr is 127.0.0.1:Port.
	Addr string
	// Port is the TCP port.
	Port string

	bin, dir string
	args     []string // extra flags (Options.Args), kept across Restart
	password string   // Options.Password

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs redis-server on a free loopback port in a temp dir of tb and
// stops it when tb ends (its log is printed when tb failed). It skips or
// fails tb as Require does when redis-server is missing.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartWith(tb, Options{})
}

// Options tunes StartWith.
type Options struct {
	// Args are extra redis-server flags, after the defaults (so they win):
	// "--appendonly", "yes", "--appendfsync", "always" makes every
	// acknowledged write survive a SIGKILL. Restart keeps them, and the
	// directory, so a restarted server loads what the last one persisted.
	Args []string
	// Password, when set, starts the server with --requirepass: every
	// client must AUTH with it (the readiness PING does). Restart keeps it.
	Password string
}

// StartWith is Start with extra server flags.
func StartWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	bin := Require(tb)
	args := opts.Args
	if opts.Password != "" {
		args = append([]string{"--requirepass", opts.Password}, args...)
	}
	s, err := startServer(bin, tb.TempDir(), args, opts.Password)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Kill()
		if tb.Failed() {
			tb.Logf("redis-server log (%s):\n%s", s.Addr, s.Log())
		}
	})
	return s
}

// StartServer runs bin (redis-server) on a free loopback port with dir as
// its working directory, retrying with another port when the chosen one
// was taken in the meantime.
func StartServer(bin, dir string) (*Server, error) {
	return startServer(bin, dir, nil, "")
}

func startServer(bin, dir string, args []string, password string) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", port), Port: port, bin: bin, dir: dir, args: args, password: password}
		if lastErr = s.start(10 * time.Second); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "redis-"+s.Port+".log") }

// Log returns the server's log so far (all runs on this port).
func (s *Server) Log() string {
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// start launches the process and waits up to timeout for PING.
func (s *Server) start(timeout time.Duration) error {
	args := []string{
		"--port", s.Port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", s.LogPath(),
		"--daemonize", "no",
	}
	cmd := exec.Command(s.bin, append(args, s.args...)...)
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("redis-server on port %s exited before answering PING: %s\n%s", s.Port, strings.TrimSpace(out.String()), s.Log())
		default:
		}
		if PingAuth(s.Addr, s.password) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on port %s did not answer PING within %v:\n%s", s.Port, timeout, s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PID is the current process id (0 when stopped).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 5 s).
// Redis closes every client connection as it goes. Stopping a stopped
// server does nothing.
func (s *Server) Stop() error {
	return s.signal(syscall.SIGTERM, 5*time.Second)
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Server) Kill() {
	_ = s.signal(syscall.SIGKILL, 5*time.Second)
}

func (s *Server) signal(sig syscall.Signal, wait time.Duration) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(wait):
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("redis-server (pid %d) did not exit on %v within %v; killed", cmd.Process.Pid, sig, wait)
}

// Signal sends sig to the running process without waiting (SIGSTOP and
// SIGCONT simulate a server that hangs with its connections open).
func (s *Server) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil || !s.Running() {
		return errors.New("redisproc: Signal: the server is not running")
	}
	return cmd.Process.Signal(sig)
}

// Restart starts a new process on the same port (the previous one must
// have stopped). The port may need a moment to be free again, so it
// retries for up to 10 s.
func (s *Server) Restart() error {
	if s.Running() {
		return errors.New("redisproc: Restart while the server is still running")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.start(5 * time.Second)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
