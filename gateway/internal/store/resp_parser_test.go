package store

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
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

// refApplyCommands is Apply's commands the plain way: one argument list
// per command.
func refApplyCommands(incrs []Incr, gets []string) [][]string {
	var cmds [][]string
	for i := 0; i < len(incrs); i++ {
		cmds = append(cmds, []string{"INCRBY", incrs[i].Key, strconv.FormatInt(incrs[i].Delta, 10)})
		cmds = append(cmds, []string{"EXPIRE", incrs[i].Key, strconv.FormatInt(ttlSeconds(incrs[i].TTL), 10)})
	}
	if len(gets) > 0 {
		cmds = append(cmds, append([]string{"MGET"}, gets...))
	}
	return cmds
}

func TestRESPApplyEncoding(t *testing.T) {
	long := strings.Repeat("k", 100)
	cases := []struct {
		incrs []Incr
		gets  []string
	}{
		{[]Incr{{Key: "a", Delta: 5, TTL: time.Minute}}, nil},
		{nil, []string{"a", "", "0123456789", long}},
		{[]Incr{
			{Key: "", Delta: 0, TTL: 0},
			{Key: "123456789", Delta: -1, TTL: -time.Second},
			{Key: "1234567890", Delta: 999999999, TTL: time.Nanosecond},
			{Key: "1234567890", Delta: 1000000000, TTL: time.Nanosecond},
			{Key: strings.Repeat("x", 99), Delta: -99999999, TTL: 1500 * time.Millisecond},
			{Key: long, Delta: -100000000, TTL: 1500 * time.Millisecond},
			{Key: long + long + "\r\n", Delta: math.MaxInt64, TTL: 36 * time.Hour},
			{Key: "m", Delta: math.MinInt64, TTL: 24 * time.Hour},
			{Key: "m", Delta: 7, TTL: time.Duration(math.MaxInt64)},
			{Key: "a\x00b", Delta: 1, TTL: 24 * time.Hour},
		}, []string{"m", long}},
		{benchIncrs(27), nil},
	}
	for i, tc := range cases {
		var want []byte
		cmds := refApplyCommands(tc.incrs, tc.gets)
		for j := 0; j < len(cmds); j++ {
			want = appendRESPCommand(want, cmds[j])
		}
		if got := appendApply(nil, tc.incrs, tc.gets); string(got) != string(want) {
			t.Errorf("case %d:\n got %q\nwant %q", i, got, want)
		}
		if got := appendApply(make([]byte, 0, 3), tc.incrs, tc.gets); string(got) != string(want) {
			t.Errorf("case %d, small buffer:\n got %q\nwant %q", i, got, want)
		}
	}
}

// refApplyResult is Apply's verdict on generically parsed replies: the
// first unexpected reply, in command order, is the error.
func refApplyResult(replies []respValue, nIncrs, nGets int) ([]int64, []int64, error) {
	incrVals := make([]int64, nIncrs)
	for i := 0; i < nIncrs; i++ {
		r := replies[2*i]
		if r.kind == '-' {
			return nil, nil, redisReplyError("INCRBY", r)
		}
		if r.kind != ':' {
			return nil, nil, errors.New("redis: INCRBY: unexpected reply type " + strconv.QuoteRune(rune(r.kind)))
		}
		incrVals[i] = r.int
		e := replies[2*i+1]
		if e.kind == '-' {
			return nil, nil, redisReplyError("EXPIRE", e)
		}
		if e.kind != ':' {
			return nil, nil, errors.New("redis: EXPIRE: unexpected reply type " + strconv.QuoteRune(rune(e.kind)))
		}
	}
	var getVals []int64
	if nGets > 0 {
		r := replies[len(replies)-1]
		if r.kind == '-' {
			return nil, nil, redisReplyError("MGET", r)
		}
		if r.kind != '*' || r.null || len(r.array) != nGets {
			return nil, nil, errors.New("redis: MGET: unexpected reply shape")
		}
		getVals = make([]int64, nGets)
		for i := 0; i < nGets; i++ {
			e := r.array[i]
			if e.kind == '$' && e.null {
				continue
			}
			if e.kind != '$' {
				return nil, nil, errors.New("redis: MGET: unexpected element type " + strconv.QuoteRune(rune(e.kind)))
			}
			v, err := strconv.ParseInt(e.str, 10, 64)
			if err != nil {
				return nil, nil, errors.New("redis: MGET: counter " + strconv.Itoa(i) + " is not an integer")
			}
			getVals[i] = v
		}
	}
	return incrVals, getVals, nil
}

// checkRESPBatch compares the batch reader and applyResult on data with
// the generic parser and refApplyResult: the same values, the same
// errors, the same bytes consumed.
func checkRESPBatch(t *testing.T, data []byte, nIncrs, nGets int) {
	t.Helper()
	n := 2 * nIncrs
	if nGets > 0 {
		n++
	}
	refBR := bufio.NewReaderSize(bytes.NewReader(data), respBufSize)
	replies := make([]respValue, n)
	var refErr error
	for i := 0; i < n && refErr == nil; i++ {
		replies[i], refErr = readRESPReply(refBR, 0)
	}
	br := bufio.NewReaderSize(bytes.NewReader(data), respBufSize)
	bt := &respBatch{incrVals: make([]int64, nIncrs)}
	if nGets > 0 {
		bt.gets = make([]int64, nGets)
	}
	err := readRESPBatch(br, bt)
	if (err == nil) != (refErr == nil) || err != nil && err.Error() != refErr.Error() {
		t.Fatalf("%q (%d incrs, %d gets): batch error %v, generic error %v", data, nIncrs, nGets, err, refErr)
	}
	if err != nil {
		return
	}
	rest, _ := io.ReadAll(br)
	refRest, _ := io.ReadAll(refBR)
	if string(rest) != string(refRest) {
		t.Fatalf("%q: left %q, generic left %q", data, rest, refRest)
	}
	iv, gv, err := applyResult(bt)
	riv, rgv, rerr := refApplyResult(replies, nIncrs, nGets)
	if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
		t.Fatalf("%q (%d incrs, %d gets): result error %v, want %v", data, nIncrs, nGets, err, rerr)
	}
	if err == nil && (!reflect.DeepEqual(iv, riv) || !reflect.DeepEqual(gv, rgv)) {
		t.Fatalf("%q (%d incrs, %d gets): %v %v, want %v %v", data, nIncrs, nGets, iv, gv, riv, rgv)
	}
}

var respBatchSeeds = []struct {
	data          string
	nIncrs, nGets int
}{
	{":5\r\n:1\r\n", 1, 0},
	{":1234567\r\n:0\r\n:-3\r\n:1\r\n", 2, 0},
	{":9223372036854775807\r\n:1\r\n:-9223372036854775808\r\n:1\r\n", 2, 0},
	{":-0\r\n:007\r\n", 1, 0},
	{":9223372036854775808\r\n:1\r\n", 1, 0},
	{":+5\r\n:1\r\n", 1, 0},
	{":\r\n:1\r\n", 1, 0},
	{":-\r\n:1\r\n", 1, 0},
	{":x\r\n:1\r\n", 1, 0},
	{":5\n:1\r\n", 1, 0},
	{":5\r\n:1", 1, 0},
	{":5\r\n", 1, 0},
	{"-ERR value is not an integer or out of range\r\n:1\r\n", 1, 0},
	{":5\r\n-ERR boom\r\n", 1, 0},
	{"+OK\r\n:1\r\n:2\r\n-ERR x\r\n", 2, 0},
	{":2\r\n$3\r\nabc\r\n:3\r\n:1\r\n", 2, 0},
	{"*1\r\n:1\r\n:1\r\n", 1, 0},
	{"*2\r\n$1\r\n7\r\n$-1\r\n", 0, 2},
	{":1\r\n:1\r\n*3\r\n$7\r\n1234567\r\n$-1\r\n$2\r\n42\r\n", 1, 3},
	{"*1\r\n$20\r\n-9223372036854775808\r\n", 0, 1},
	{"*1\r\n$25\r\n+000000000000000000000042\r\n", 0, 1},
	{"*2\r\n$99\r\n" + strings.Repeat("1", 99) + "\r\n$1\r\nx\r\n", 0, 2},
	{"*1\r\n$100\r\n" + strings.Repeat("0", 100) + "\r\n", 0, 1},
	{"*1\r\n$05\r\n00042\r\n", 0, 1},
	{"*1\r\n$0\r\n\r\n", 0, 1},
	{"*1\r\n$+1\r\n1\r\n", 0, 1},
	{"*1\r\n$-2\r\n", 0, 1},
	{"*1\r\n$3\r\n12\n\r\n", 0, 1},
	{"*1\r\n$3\r\n123XY", 0, 1},
	{"*1\r\n$3\r\n12", 0, 1},
	{"*1\r\n$3\r\n", 0, 1},
	{"*2\r\n:5\r\n$1\r\nx\r\n", 0, 2},
	{"*2\r\n$1\r\nx\r\n:5\r\n", 0, 2},
	{"*2\r\n*-1\r\n$-1\r\n", 0, 2},
	{"*2\r\n*1\r\n$1\r\n1\r\n$1\r\n1\r\n", 0, 2},
	{"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", 0, 1},
	{"*3\r\n$1\r\n1\r\n", 0, 1},
	{"*1\r\n$1\r\n1\r\n", 0, 3},
	{"*-1\r\n", 0, 1},
	{"*+1\r\n$1\r\n1\r\n", 0, 1},
	{"*01\r\n$1\r\n1\r\n", 0, 1},
	{"-ERR wrong\r\n", 0, 1},
	{":1\r\n", 0, 1},
	{"-ERR a\r\n:1\r\n-ERR m\r\n", 1, 1},
	{":1\r\n:1\r\n:1\r\n", 1, 1},
	{"%1\r\n:1\r\n", 1, 0},
}

func TestRESPBatchReader(t *testing.T) {
	for i := 0; i < len(respBatchSeeds); i++ {
		sd := respBatchSeeds[i]
		checkRESPBatch(t, []byte(sd.data), sd.nIncrs, sd.nGets)
	}
	// A reply line longer than the buffer, in each section.
	huge := strings.Repeat("1", respBufSize)
	checkRESPBatch(t, []byte(":"+huge+"\r\n:1\r\n"), 1, 0)
	checkRESPBatch(t, []byte("*"+huge+"\r\n"), 0, 1)
	checkRESPBatch(t, []byte("*1\r\n$"+huge+"\r\n"), 0, 1)
}

func FuzzRESPBatch(f *testing.F) {
	for i := 0; i < len(respBatchSeeds); i++ {
		f.Add([]byte(respBatchSeeds[i].data), uint8(respBatchSeeds[i].nIncrs), uint8(respBatchSeeds[i].nGets))
	}
	f.Fuzz(func(t *testing.T, data []byte, nIncrs, nGets uint8) {
		checkRESPBatch(t, data, int(nIncrs%8), int(nGets%8))
	})
}
