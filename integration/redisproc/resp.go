package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Value is one RESP2 reply. Kind is '+', '-', ':', '$' or '*'; Null marks
// a nil bulk string or array.
type Value struct {
	Kind  byte
	Str   string
	Int   int64
	Array []Value
	Null  bool
}

// Err is the error of an error reply ('-'), nil otherwise.
func (v Value) Err() error {
	if v.Kind == '-' {
		return errors.New("redis: " + v.Str)
	}
	return nil
}

// String renders the value for messages.
func (v Value) String() string {
	switch v.Kind {
	case '+', '-':
		return string(v.Kind) + v.Str
	case ':':
		return strconv.FormatInt(v.Int, 10)
	case '$':
		if v.Null {
			return "(nil)"
		}
		return strconv.Quote(v.Str)
	case '*':
		if v.Null {
			return "(nil array)"
		}
		parts := make([]string, len(v.Array))
		for i, e := range v.Array {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "?"
}

// Conn is one plain connection to a Redis server: one command at a time,
// a deadline per command. Not safe for concurrent use.
type Conn struct {
	nc net.Conn
	br *bufio.Reader
}

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, br: bufio.NewReader(nc)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Do sends one command and reads its reply. An error reply is returned as
// a Value of Kind '-' (see Value.Err), not as a Go error.
func (c *Conn) Do(args ...string) (Value, error) {
	_ = c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(EncodeCommand(args...)); err != nil {
		return Value{}, err
	}
	return ReadValue(c.br)
}

// Int runs a command that answers an integer, or a bulk string holding
// one (GET); a nil reply reads as 0, false.
func (c *Conn) Int(args ...string) (int64, bool, error) {
	v, err := c.Do(args...)
	if err != nil {
		return 0, false, err
	}
	if err := v.Err(); err != nil {
		return 0, false, err
	}
	switch {
	case v.Kind == ':':
		return v.Int, true, nil
	case v.Kind == '$' && v.Null:
		return 0, false, nil
	case v.Kind == '$':
		n, err := strconv.ParseInt(v.Str, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("redis: %s: %q is not an integer", strings.Join(args, " "), v.Str)
		}
		return n, true, nil
	}
	return 0, false, fmt.Errorf("redis: %s: unexpected reply %s", strings.Join(args, " "), v)
}

// Strings runs a command that answers an array of bulk strings (KEYS).
func (c *Conn) Strings(args ...string) ([]string, error) {
	v, err := c.Do(args...)
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if v.Kind != '*' {
		return nil, fmt.Errorf("redis: %s: unexpected reply %s", strings.Join(args, " "), v)
	}
	out := make([]string, 0, len(v.Array))
	for _, e := range v.Array {
		out = append(out, e.Str)
	}
	return out, nil
}

// Ping dials addr, sends PING and expects +PONG.
func Ping(addr string) error {
	return PingAuth(addr, "")
}

// PingAuth is Ping on a server that requires a password: AUTH first
// (skipped when password is empty).
func PingAuth(addr, password string) error {
	c, err := Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if password != "" {
		v, err := c.Do("AUTH", password)
		if err != nil {
			return err
		}
		if err := v.Err(); err != nil {
			return err
		}
	}
	v, err := c.Do("PING")
	if err != nil {
		return err
	}
	if v.Kind != '+' || v.Str != "PONG" {
		return fmt.Errorf("redis: PING answered %s", v)
	}
	return nil
}

// EncodeCommand is args as a RESP array of bulk strings.
func EncodeCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// ReadValue reads one reply.
func ReadValue(br *bufio.Reader) (Value, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return Value{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Value{}, fmt.Errorf("redis: malformed reply line %q", line)
	}
	line = line[:len(line)-2]
	v := Value{Kind: line[0]}
	body := line[1:]
	switch v.Kind {
	case '+', '-':
		v.Str = body
	case ':':
		v.Int, err = strconv.ParseInt(body, 10, 64)
	case '$':
		var n int64
		if n, err = strconv.ParseInt(body, 10, 64); err != nil {
			break
		}
		if n < 0 {
			v.Null = true
			break
		}
		buf := make([]byte, n+2)
		if _, err = io.ReadFull(br, buf); err != nil {
			break
		}
		v.Str = string(buf[:n])
	case '*':
		var n int64
		if n, err = strconv.ParseInt(body, 10, 64); err != nil {
			break
		}
		if n < 0 {
			v.Null = true
			break
		}
		for i := int64(0); i < n; i++ {
			e, eerr := ReadValue(br)
			if eerr != nil {
				return v, eerr
			}
			v.Array = append(v.Array, e)
		}
	default:
		err = fmt.Errorf("redis: unknown reply type %q", v.Kind)
	}
	return v, err
}

// ParseCommand parses one client command (an array of bulk strings) from
// the start of b. used is 0 when b holds no complete command yet.
func ParseCommand(b []byte) (args []string, used int, err error) {
	head, pos, ok := respLine(b, 0)
	if !ok {
		return nil, 0, nil
	}
	if len(head) < 2 || head[0] != '*' {
		return nil, 0, fmt.Errorf("redis: command is not an array: %q", head)
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil || n < 0 {
		return nil, 0, fmt.Errorf("redis: bad array length %q", head)
	}
	args = make([]string, 0, n)
	for i := 0; i < n; i++ {
		h, next, ok := respLine(b, pos)
		if !ok {
			return nil, 0, nil
		}
		if len(h) < 2 || h[0] != '$' {
			return nil, 0, fmt.Errorf("redis: command argument is not a bulk string: %q", h)
		}
		l, err := strconv.Atoi(h[1:])
		if err != nil || l < 0 {
			return nil, 0, fmt.Errorf("redis: bad bulk length %q", h)
		}
		if len(b) < next+l+2 {
			return nil, 0, nil
		}
		args = append(args, string(b[next:next+l]))
		pos = next + l + 2
	}
	return args, pos, nil
}

// SkipReply measures one complete reply at the start of b: used is 0 when
// b holds no complete reply yet.
func SkipReply(b []byte) (used int, err error) {
	return skipReply(b, 0)
}

func skipReply(b []byte, at int) (int, error) {
	line, next, ok := respLine(b, at)
	if !ok {
		return 0, nil
	}
	if len(line) == 0 {
		return 0, errors.New("redis: empty reply line")
	}
	switch line[0] {
	case '+', '-', ':':
		return next - at, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return 0, fmt.Errorf("redis: bad bulk length %q", line)
		}
		if n < 0 {
			return next - at, nil
		}
		if len(b) < next+n+2 {
			return 0, nil
		}
		return next + n + 2 - at, nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return 0, fmt.Errorf("redis: bad array length %q", line)
		}
		pos := next
		for i := 0; i < n; i++ {
			used, err := skipReply(b, pos)
			if err != nil || used == 0 {
				return 0, err
			}
			pos += used
		}
		return pos - at, nil
	}
	return 0, fmt.Errorf("redis: unknown reply type %q", line[0])
}

// respLine is the CRLF-terminated line at b[at:], without the CRLF, and
// the offset after it.
func respLine(b []byte, at int) (string, int, bool) {
	for i := at; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return string(b[at:i]), i + 2, true
		}
	}
	return "", 0, false
}
