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
	_, err := w.Write(appendRESPCommand(nil, args))
	return err
}

// appendRESPCommand appends args to b as a RESP array of bulk strings.
func appendRESPCommand(b []byte, args []string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for i := 0; i < len(args); i++ {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(args[i])), 10)
		b = append(b, '\r', '\n')
		b = append(b, args[i]...)
		b = append(b, '\r', '\n')
	}
	return b
}

func respProtocolError(msg string) error {
	return &respError{msg: "redis: protocol error: " + msg, cause: errRESPProtocol}
}

// respLine checks the result of br.ReadSlice('\n') (line, err) as one
// CRLF-terminated reply line and returns it without the CRLF. A line
// longer than the reader's buffer is a protocol error.
func respLine(line []byte, err error) (string, error) {
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
	raw, err := br.ReadSlice('\n')
	return finishRESPReply(br, raw, err, depth)
}

// finishRESPReply reads the rest of the reply whose first line
// br.ReadSlice('\n') returned as (raw, rerr), with readRESPReply's
// bounds. raw must not have been overwritten by a later read.
func finishRESPReply(br *bufio.Reader, raw []byte, rerr error, depth int) (respValue, error) {
	var v respValue
	line, err := respLine(raw, rerr)
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

// respBatch is one pipelined exchange: the encoded commands and where
// their replies are read to. Replies come in three sections, each
// optional, in this order:
//
//   - 2*len(incrVals) INCRBY/EXPIRE reply pairs, read on an integer fast
//     path: each INCRBY value goes to incrVals; bad is the index of the
//     first of these replies that is not an integer reply (-1: none) and
//     badReply is that reply;
//   - when gets is non-nil, one MGET reply for len(gets) keys whose
//     values are decimal counters: each goes to gets (a missing key
//     reads 0). getsShape is false when the reply is not an array of
//     len(gets) elements; it is then in mget. Otherwise getsBad is the
//     index of the first element that is not a counter (-1: none), and
//     getsBadKind is its type ('$': a bulk string that is not an
//     integer);
//   - len(replies) replies parsed generically.
//
// The outputs are only meaningful after a successful exchange.
type respBatch struct {
	req []byte

	incrVals []int64
	incrs    []Incr // the incrs (nil: none is a Set): a Set's first reply is +OK
	bad      int
	badReply respValue

	gets        []int64
	getsShape   bool
	mget        respValue
	getsBad     int
	getsBadKind byte

	replies []respValue
}

// readRESPBatch reads every reply of bt's commands from br. A Go error
// is an I/O or protocol error: the connection is unusable.
//
// This loop is the client's hot path under the interpreter, where each
// function call costs microseconds and calls into the standard library
// run compiled: a well-formed integer reply costs one ReadSlice and, unless
// it is a single digit (EXPIRE's :1), one ParseInt. Anything else takes
// the generic parser, with identical results and errors.
func readRESPBatch(br *bufio.Reader, bt *respBatch) error {
	vals := bt.incrVals
	bad := -1
	var badReply respValue
	for p := 0; p < len(vals); p++ {
		// INCRBY's reply: the counter's new value.
		line, err := br.ReadSlice('\n')
		n := len(line)
		fast := false
		if err == nil && n >= 4 && line[0] == ':' && line[n-2] == '\r' && line[1] != '+' {
			x, perr := strconv.ParseInt(string(line[1:n-2]), 10, 64)
			if perr == nil {
				vals[p] = x
				fast = true
			}
		}
		if !fast {
			v, ferr := finishRESPReply(br, line, err, 0)
			if ferr != nil {
				return ferr
			}
			if v.kind == ':' {
				vals[p] = v.int
			} else if v.kind == '+' && v.str == "OK" && p < len(bt.incrs) && bt.incrs[p].Set {
				vals[p] = 0 // a Set incr's SET
			} else if bad < 0 {
				bad = 2 * p
				badReply = v
			}
		}
		// EXPIRE's reply: an integer, 1 for a key that exists.
		line, err = br.ReadSlice('\n')
		if err == nil && string(line) == ":1\r\n" {
			continue
		}
		v, ferr := finishRESPReply(br, line, err, 0)
		if ferr != nil {
			return ferr
		}
		if v.kind != ':' && bad < 0 {
			bad = 2*p + 1
			badReply = v
		}
	}
	bt.bad = bad
	bt.badReply = badReply
	if bt.gets != nil {
		if err := readRESPCounters(br, bt); err != nil {
			return err
		}
	}
	for i := 0; i < len(bt.replies); i++ {
		v, err := readRESPReply(br, 0)
		if err != nil {
			return err
		}
		bt.replies[i] = v
	}
	return nil
}

// readRESPCounters reads bt's MGET reply (see respBatch).
func readRESPCounters(br *bufio.Reader, bt *respBatch) error {
	gets := bt.gets
	line, err := br.ReadSlice('\n')
	n := len(line)
	shape := false
	if err == nil && n >= 4 && line[0] == '*' && line[n-2] == '\r' && line[1] != '+' && line[1] != '-' {
		k, perr := strconv.ParseInt(string(line[1:n-2]), 10, 64)
		shape = perr == nil && k == int64(len(gets)) && k <= respMaxArray
	}
	if !shape {
		v, err := finishRESPReply(br, line, err, 0)
		if err != nil {
			return err
		}
		bt.getsShape = false
		bt.mget = v
		return nil
	}
	bad := -1
	var badKind byte
	for i := 0; i < len(gets); i++ {
		line, err := br.ReadSlice('\n')
		n := len(line)
		if err == nil && n == 5 && line[0] == '$' && line[1] == '-' && line[2] == '1' && line[3] == '\r' {
			gets[i] = 0 // a missing key
			continue
		}
		if err == nil && n >= 4 && n <= 6 && line[0] == '$' && line[n-2] == '\r' && line[1] >= '0' && line[1] <= '9' {
			// A bulk string of at most 99 bytes ("$0".."$99"), read
			// whole from the buffer.
			size := int(line[1] - '0')
			if n == 5 && line[2] >= '0' && line[2] <= '9' {
				size = 10*size + int(line[2]-'0')
			}
			if n == 4 || n == 5 && line[2] >= '0' && line[2] <= '9' {
				p, perr := br.Peek(size + 2)
				if perr != nil {
					if perr == io.EOF {
						perr = io.ErrUnexpectedEOF
					}
					return perr
				}
				if p[size] != '\r' || p[size+1] != '\n' {
					return respProtocolError("bulk string not terminated by CRLF")
				}
				x, perr := strconv.ParseInt(string(p[:size]), 10, 64)
				if _, derr := br.Discard(size + 2); derr != nil {
					return derr
				}
				if perr == nil {
					gets[i] = x
				} else if bad < 0 {
					bad = i
					badKind = '$'
				}
				continue
			}
		}
		v, err := finishRESPReply(br, line, err, 1)
		if err != nil {
			return err
		}
		if v.kind == '$' && v.null {
			gets[i] = 0
			continue
		}
		if v.kind == '$' {
			x, perr := strconv.ParseInt(v.str, 10, 64)
			if perr == nil {
				gets[i] = x
				continue
			}
		}
		if bad < 0 {
			bad = i
			badKind = v.kind
		}
	}
	bt.getsShape = true
	bt.getsBad = bad
	bt.getsBadKind = badKind
	return nil
}
