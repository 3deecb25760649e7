package store

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// The RESP2 wire format: the command encoder and the bounded reply
// parser the client reads every reply with.

const (
	// respMaxBulk caps one bulk string (RESP allows 512 MiB; the gateway
	// never stores anything near this).
	respMaxBulk = 64 << 20
	// respMaxArray caps the elements of one array reply.
	respMaxArray = 1 << 20
	// respMaxDepth caps array nesting.
	respMaxDepth = 8
)

// errRESPProtocol is the cause of every malformed-reply error.
var errRESPProtocol = errors.New("redis: protocol error")

// respValue is one reply. kind is '+' (str), '-' (error reply, str), ':'
// (int), '$' (bulk, str; null when the key is missing) or '*' (array;
// null for "*-1").
type respValue struct {
	kind  byte
	str   string
	int   int64
	array []respValue
	null  bool
}

// writeRESPCommand writes args as a RESP array of bulk strings.
func writeRESPCommand(w *bufio.Writer, args []string) error {
	var scratch [24]byte
	b := append(scratch[:0], '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	if _, err := w.Write(b); err != nil {
		return err
	}
	for i := 0; i < len(args); i++ {
		b = append(scratch[:0], '$')
		b = strconv.AppendInt(b, int64(len(args[i])), 10)
		b = append(b, '\r', '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
		if _, err := w.WriteString(args[i]); err != nil {
			return err
		}
		if _, err := w.WriteString("\r\n"); err != nil {
			return err
		}
	}
	return nil
}

func respProtocolError(msg string) error {
	return &respError{msg: "redis: protocol error: " + msg, cause: errRESPProtocol}
}

// readRESPLine reads one CRLF-terminated line (without the CRLF). A line
// longer than the reader's buffer is a protocol error.
func readRESPLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return "", respProtocolError("reply line too long")
		}
		if err == io.EOF && len(line) > 0 {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", respProtocolError("line not terminated by CRLF")
	}
	return string(line[:len(line)-2]), nil
}

// parseRESPInt parses a RESP integer (or length) strictly.
func parseRESPInt(s string) (int64, error) {
	if s == "" {
		return 0, respProtocolError("empty integer")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || s[0] == '+' {
		return 0, respProtocolError("invalid integer")
	}
	return n, nil
}

// readRESPReply reads one reply. It is bounded: bulk strings up to
// respMaxBulk (read incrementally, so a bogus length never allocates
// ahead of the bytes actually received), arrays up to respMaxArray
// elements, nesting up to respMaxDepth. Malformed input is an error.
func readRESPReply(br *bufio.Reader, depth int) (respValue, error) {
	var v respValue
	line, err := readRESPLine(br)
	if err != nil {
		return v, err
	}
	if len(line) == 0 {
		return v, respProtocolError("empty reply line")
	}
	v.kind = line[0]
	body := line[1:]
	switch v.kind {
	case '+', '-':
		v.str = body
		return v, nil
	case ':':
		n, err := parseRESPInt(body)
		if err != nil {
			return v, err
		}
		v.int = n
		return v, nil
	case '$':
		n, err := parseRESPInt(body)
		if err != nil {
			return v, err
		}
		if n == -1 {
			v.null = true
			return v, nil
		}
		if n < 0 || n > respMaxBulk {
			return v, respProtocolError("bulk length out of range")
		}
		s, err := readRESPBulk(br, int(n))
		if err != nil {
			return v, err
		}
		v.str = s
		return v, nil
	case '*':
		n, err := parseRESPInt(body)
		if err != nil {
			return v, err
		}
		if n == -1 {
			v.null = true
			return v, nil
		}
		if n < 0 || n > respMaxArray {
			return v, respProtocolError("array length out of range")
		}
		if depth+1 > respMaxDepth {
			return v, respProtocolError("arrays nested too deeply")
		}
		capHint := int(n)
		if capHint > 1024 {
			capHint = 1024
		}
		v.array = make([]respValue, 0, capHint)
		for i := int64(0); i < n; i++ {
			e, err := readRESPReply(br, depth+1)
			if err != nil {
				return v, err
			}
			v.array = append(v.array, e)
		}
		return v, nil
	}
	return v, respProtocolError("unsupported reply type " + strconv.QuoteRune(rune(v.kind)))
}

// readRESPBulk reads an n-byte payload and its CRLF, allocating at most
// 64 KiB beyond what has actually arrived.
func readRESPBulk(br *bufio.Reader, n int) (string, error) {
	const chunk = 64 << 10
	first := n
	if first > chunk {
		first = chunk
	}
	buf := make([]byte, 0, first)
	for len(buf) < n {
		want := n - len(buf)
		if want > chunk {
			want = chunk
		}
		start := len(buf)
		if cap(buf)-start < want {
			size := 2*cap(buf) + want
			if size > n {
				size = n
			}
			grown := make([]byte, start, size)
			copy(grown, buf)
			buf = grown
		}
		buf = buf[:start+want]
		if _, err := io.ReadFull(br, buf[start:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
	var crlf [2]byte
	if _, err := io.ReadFull(br, crlf[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if crlf[0] != '\r' || crlf[1] != '\n' {
		return "", respProtocolError("bulk string not terminated by CRLF")
	}
	return string(buf), nil
}
