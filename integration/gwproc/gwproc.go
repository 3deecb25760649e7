// Package gwproc builds and runs the llmgateway binary as a child process
// on a loopback port, for integration tests and the load benchmark.
package gwproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmgateway/llmgateway/integration/logbuf"
)

// BinaryPackage is the import path of the gateway binary's main package.
const BinaryPackage = "github.com/llmgateway/llmgateway/cmd/llmgateway"

// Build compiles the gateway binary into dir and returns its path. It runs
// "go build" from the caller's working directory, so the go.work workspace
// must be visible from there.
func Build(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "llmgateway")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, BinaryPackage)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", BinaryPackage, err, stderr.String())
	}
	return out, nil
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// Process is a running child process serving HTTP on Addr.
type Process struct {
	// Addr is the host:port the process listens on.
	Addr string
	// URL is "http://" + Addr.
	URL string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	logs *logbuf.Buffer
	// logFile is Config.LogFile ("" : output is in logs).
	logFile string
}

// Config describes how to start a process.
type Config struct {
	// Binary is the executable to run.
	Binary string
	// Args are its arguments; the literal "{addr}" in any of them is
	// replaced by the chosen listen address.
	Args []string
	// Env is appended to the current environment.
	Env []string
	// ReadyPath is polled until it answers 200. Default "/readyz".
	ReadyPath string
	// ReadyHeader is sent with every readiness probe (an Authorization
	// header, say). Optional.
	ReadyHeader http.Header
	// ReadyTimeout bounds the wait. Default 20s.
	ReadyTimeout time.Duration
	// Dir is the working directory. Empty: the caller's.
	Dir string
	// Output, when set, also receives everything the process writes to
	// stdout and stderr, uncapped (Logs keeps only the last MiB or so).
	// It is complete once Done is closed.
	Output io.Writer
	// LogFile, when set, receives the process's stdout and stderr
	// directly (the child writes to the file itself; no pipe through this
	// process, whose goroutines would otherwise wake for every line):
	// Logs reads the file's tail. Output is ignored then.
	LogFile string
}

// StartGateway writes configJSON to dir/config.json and starts the gateway
// binary on a free loopback port, returning once /readyz answers 200.
func StartGateway(binary, dir string, configJSON []byte) (*Process, error) {
	return StartGatewayEnv(binary, dir, configJSON)
}

// StartGatewayEnv is StartGateway with env added to the process's
// environment (DebugListenEnv for a BuildWithDebug binary, say).
func StartGatewayEnv(binary, dir string, configJSON []byte, env ...string) (*Process, error) {
	return startGateway(binary, dir, configJSON, "", env)
}

// StartGatewayLogFile is StartGatewayEnv with the gateway's output
// written straight to logFile (Config.LogFile): a load benchmark's
// client is then not the reader of the gateway's log lines.
func StartGatewayLogFile(binary, dir string, configJSON []byte, logFile string, env ...string) (*Process, error) {
	return startGateway(binary, dir, configJSON, logFile, env)
}

func startGateway(binary, dir string, configJSON []byte, logFile string, env []string) (*Process, error) {
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, configJSON, 0o600); err != nil {
		return nil, err
	}
	return Start(Config{
		Binary: binary,
		Args:   []string{"-config", path, "-listen", "{addr}"},
		// Stop promptly: the drain delay only matters behind a load balancer.
		Env:     append([]string{"LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=2s"}, env...),
		LogFile: logFile,
	})
}

// Start starts a process on a free loopback port and waits until it is
// ready. On failure the process is stopped and its output is part of the
// error.
func Start(c Config) (*Process, error) {
	if c.ReadyPath == "" {
		c.ReadyPath = "/readyz"
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 20 * time.Second
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		p, err := startOnce(c)
		if err == nil {
			return p, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

func startOnce(c Config) (*Process, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = strings.ReplaceAll(a, "{addr}", addr)
	}
	p := &Process{Addr: addr, URL: "http://" + addr, done: make(chan struct{}), logs: &logbuf.Buffer{Max: 1 << 20}}
	p.cmd = exec.Command(c.Binary, args...)
	p.cmd.Env = append(os.Environ(), c.Env...)
	p.cmd.Dir = c.Dir
	if c.LogFile != "" {
		f, err := os.OpenFile(c.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child keeps its own descriptor
		p.logFile = c.LogFile
		p.cmd.Stdout = f
		p.cmd.Stderr = f
	} else {
		var out io.Writer = p.logs
		if c.Output != nil {
			out = io.MultiWriter(p.logs, c.Output)
		}
		p.cmd.Stdout = out
		p.cmd.Stderr = out
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()

	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(c.ReadyTimeout)
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before ready (%v); output:\n%s", c.Binary, p.err, p.Logs())
		default:
		}
		req, err := http.NewRequest(http.MethodGet, p.URL+c.ReadyPath, nil)
		if err != nil {
			p.Stop()
			return nil, err
		}
		for k, v := range c.ReadyHeader {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("%s not ready on %s%s after %v (last: %v); output:\n%s",
				c.Binary, p.URL, c.ReadyPath, c.ReadyTimeout, err, p.Logs())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// PID is the child's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Logs returns everything the process wrote to stdout and stderr so far.
func (p *Process) Logs() string {
	if p.logFile == "" {
		return p.logs.String()
	}
	data, err := os.ReadFile(p.logFile)
	if err != nil {
		return "(log file: " + err.Error() + ")"
	}
	if len(data) > 1<<20 {
		data = data[len(data)-(512<<10):]
	}
	return string(data)
}

// Stop sends SIGTERM, waits up to 5 seconds, then kills the process. It is
// safe to call more than once.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	p.cmd.Process.Kill()
	<-p.done
	return errors.New("process did not stop on SIGTERM within 5s; killed")
}

// Kill sends SIGKILL and waits for the process to exit: a replica that
// dies without a shutdown (no drain, no cleanup of what it holds). It is
// safe to call more than once, and Stop after Kill returns nil.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}

// Signal sends sig to the process without waiting for it to exit.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr is how the process exited: nil for status 0, an
// *exec.ExitError otherwise. Valid once Done is closed.
func (p *Process) ExitErr() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// PeakRSSKB returns the peak resident set size (VmHWM) of pid in KiB.
func PeakRSSKB(pid int) (int64, error) {
	return procStatusKB(pid, "VmHWM:")
}

// RSSKB returns the current resident set size (VmRSS) of pid in KiB.
func RSSKB(pid int) (int64, error) {
	return procStatusKB(pid, "VmRSS:")
}

func procStatusKB(pid int, key string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, key) {
			fields := strings.Fields(strings.TrimPrefix(line, key))
			if len(fields) == 0 {
				break
			}
			return strconv.ParseInt(fields[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not found in /proc/%d/status", key, pid)
}
