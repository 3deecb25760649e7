package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

var scanCases = []string{
	`{}`,
	` { } `,
	`{"a":1,"b":"x","c":null,"d":true,"e":[1,{"f":"}"}],"g":{"h":{"i":[]}}}`,
	`{"q":"a\"b","r":"\\","s":"\\\"","t":"\\\\","u":"x\\\\\"y"}`,
	"{ \"a\" :\t-1.5e3 ,\n\"b\" : [ ] , \"c\":{ }\r}",
	`{"\u0061":1,"a\"":"]","é":"}{"}`,
	`{"k":"v","k":"w"}`,
}

// members lists the members of the object data, by the hops.
func members(data []byte) ([]string, [][]byte) {
	var keys []string
	var values [][]byte
	i := SkipSpace(data, SkipSpace(data, 0)+1)
	for {
		key, v := Key(data, i)
		if key == nil {
			return keys, values
		}
		end := EndOfValue(data, v)
		keys = append(keys, DecodeKey(key))
		values = append(values, data[v:end])
		i = Next(data, end)
	}
}

// checkMembers compares the hops over a valid JSON object with a
// decoder's tokens: the same keys in order, each value the bytes the
// decoder reads as that value.
func checkMembers(t *testing.T, data []byte) {
	t.Helper()
	if !json.Valid(data) || data[SkipSpace(data, 0)] != '{' {
		return
	}
	keys, values := members(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		t.Fatalf("%q: %v", data, err)
	}
	n := 0
	for ; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if n >= len(keys) || keys[n] != tok.(string) || !bytes.Equal(values[n], raw) {
			t.Fatalf("%q: member %d is %q: %s, the hops found keys %q values %q", data, n, tok, raw, keys, values)
		}
	}
	if n != len(keys) {
		t.Fatalf("%q: %d members, the hops found %d", data, n, len(keys))
	}
	if k := bytes.LastIndexByte(data, '}'); Empty(data[SkipSpace(data, 0):k+1]) != (len(keys) == 0) {
		t.Fatalf("%q: Empty disagrees with %d members", data, len(keys))
	}
}

func TestMembers(t *testing.T) {
	for _, c := range scanCases {
		checkMembers(t, []byte(c))
	}
	keys, values := members([]byte(scanCases[3]))
	if len(keys) != 5 || string(values[4]) != `"x\\\\\"y"` {
		t.Fatalf("escapes: keys %q values %q", keys, values)
	}
}

// FuzzMembers: the same for any valid JSON object.
func FuzzMembers(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkMembers)
}
