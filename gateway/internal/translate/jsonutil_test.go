package translate

import (
	"encoding/json"
	"testing"
)

// readStringDecoded is readString by the decoder alone.
func readStringDecoded(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

var readStringCases = []string{`"plain"`, `""`, `"é日本 😀"`, `"a\"b"`, `"a\\b"`, `"\u00e9"`, `"bad ` + "\xff" + `"`, `"tab` + "\t" + `"`,
	`"a"b"`, `"`, `"open`, `nope"`, `12`, `null`, `"` + "\u2028" + `"`, `"/<>&"`}

// The fast path of readString answers what the decoder does.
func TestReadStringMatchesDecoder(t *testing.T) {
	for _, c := range readStringCases {
		checkReadString(t, []byte(c))
	}
}

func FuzzReadString(f *testing.F) {
	for _, c := range readStringCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkReadString(t, raw) })
}

func checkReadString(t *testing.T, raw []byte) {
	t.Helper()
	want, ok := readStringDecoded(raw)
	got, e := readString(raw, "x")
	if (e == nil) != ok || got != want {
		t.Fatalf("%q: readString %q (error %v), the decoder %q (ok %v)", raw, got, e, want, ok)
	}
}
