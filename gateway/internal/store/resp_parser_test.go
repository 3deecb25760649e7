package store

import (
	"bufio"
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The RESP2 reply parser and command encoder.

func parseRESP(data string) (respValue, error) {
	return readRESPReply(bufio.NewReaderSize(strings.NewReader(data), respBufSize), 0)
}

func TestRESPReplyParser(t *testing.T) {
	nested := "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n" // depth 8
	ok := []struct {
		in   string
		want respValue
	}{
		{"+OK\r\n", respValue{kind: '+', str: "OK"}},
		{"+\r\n", respValue{kind: '+'}},
		{"-ERR unknown command 'FOO'\r\n", respValue{kind: '-', str: "ERR unknown command 'FOO'"}},
		{":1000\r\n", respValue{kind: ':', int: 1000}},
		{":-9223372036854775808\r\n", respValue{kind: ':', int: -9223372036854775808}},
		{"$5\r\nhello\r\n", respValue{kind: '$', str: "hello"}},
		{"$0\r\n\r\n", respValue{kind: '$'}},
		{"$-1\r\n", respValue{kind: '$', null: true}},
		{"$4\r\na\r\nb\r\n", respValue{kind: '$', str: "a\r\nb"}},
		{"*0\r\n", respValue{kind: '*', array: []respValue{}}},
		{"*-1\r\n", respValue{kind: '*', null: true}},
		{"*2\r\n$3\r\nfoo\r\n:1\r\n", respValue{kind: '*', array: []respValue{{kind: '$', str: "foo"}, {kind: ':', int: 1}}}},
	}
	for _, tc := range ok {
		got, err := parseRESP(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", tc.in, got, tc.want)
		}
	}
	v, err := parseRESP(nested)
	if err != nil {
		t.Fatalf("depth 8: %v", err)
	}
	for i := 0; i < 8; i++ {
		if v.kind != '*' || len(v.array) != 1 {
			t.Fatalf("depth 8 level %d: %#v", i, v)
		}
		v = v.array[0]
	}
	if v.kind != ':' || v.int != 1 {
		t.Fatalf("depth 8 leaf: %#v", v)
	}
	bad := []string{
		"",
		"\r\n",
		"+OK\n",
		"+OK",
		":\r\n",
		":12a\r\n",
		":+5\r\n",
		":99999999999999999999\r\n",
		"$-2\r\n",
		"$67108865\r\n", // 64 MiB + 1
		"$60000000\r\nshort",
		"$5\r\nhello",
		"$5\r\nhelloXY",
		"$3\r\nhello\r\n",
		"*-2\r\n",
		"*1048577\r\n",
		"*3\r\n:1\r\n:2\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", // depth 9
		"%1\r\n",
		"_\r\n",
		"+" + strings.Repeat("x", respBufSize) + "\r\n",
	}
	for _, in := range bad {
		if v, err := parseRESP(in); err == nil {
			t.Errorf("%.40q parsed as %#v, want an error", in, v)
		}
	}
}

// encodeRESPValue is the wire form of a reply (the parser's inverse).
func encodeRESPValue(v respValue) string {
	switch v.kind {
	case '+', '-':
		return string(v.kind) + v.str + "\r\n"
	case ':':
		return ":" + strconv.FormatInt(v.int, 10) + "\r\n"
	case '$':
		if v.null {
			return "$-1\r\n"
		}
		return fakeRESPBulk(v.str)
	case '*':
		if v.null {
			return "*-1\r\n"
		}
		out := "*" + strconv.Itoa(len(v.array)) + "\r\n"
		for i := 0; i < len(v.array); i++ {
			out += encodeRESPValue(v.array[i])
		}
		return out
	}
	return "?"
}

func respDepth(v respValue) int {
	d := 0
	for i := 0; i < len(v.array); i++ {
		if n := respDepth(v.array[i]); n > d {
			d = n
		}
	}
	if v.kind == '*' && !v.null {
		return d + 1
	}
	return d
}

func FuzzRESPReply(f *testing.F) {
	seeds := []string{
		"+OK\r\n", "-ERR x\r\n", ":1\r\n", ":-0\r\n", "$5\r\nhello\r\n", "$-1\r\n", "$0\r\n\r\n",
		"*2\r\n$3\r\nfoo\r\n:1\r\n", "*-1\r\n", "*0\r\n", "*1\r\n*1\r\n*0\r\n",
		"$67108864\r\n", "*1048576\r\n", "$3\r\nab", "+OK\r\n:2\r\n$1\r\nx\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), respBufSize)
		for i := 0; i < 64; i++ {
			v, err := readRESPReply(br, 0)
			if err != nil {
				return
			}
			if d := respDepth(v); d > respMaxDepth {
				t.Fatalf("depth %d accepted", d)
			}
			// A parsed reply re-encodes to something that parses back to
			// the same value.
			again, err := parseRESP(encodeRESPValue(v))
			if err != nil {
				t.Fatalf("re-encoded %#v does not parse: %v", v, err)
			}
			if !reflect.DeepEqual(again, v) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", again, v)
			}
		}
	})
}

func TestRESPCommandEncoding(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := writeRESPCommand(w, []string{"SET", "k", "", "a\r\nb"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$4\r\na\r\nb\r\n"
	if buf.String() != want {
		t.Fatalf("encoded %q, want %q", buf.String(), want)
	}
	args, used, err := parseFakeRESPCommand(buf.Bytes())
	if err != nil || used != len(want) || !reflect.DeepEqual(args, []string{"SET", "k", "", "a\r\nb"}) {
		t.Fatalf("fake parse: %v %d %v", args, used, err)
	}
}
