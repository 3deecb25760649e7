// Package jsonscan reads JSON that json.Valid has already accepted by
// hopping between its structural bytes (bytes.IndexByte for a string's
// end, bytes.IndexAny within a nested value) instead of decoding it: a
// reader that needs a few values of a document finds them in one
// validation pass and a hop per string or bracket. Every function here
// assumes valid JSON; on anything else its answers are unspecified.
//
// Compiled, the hops cost a fraction of a decode. Under Yaegi they are
// our own loop and cost more than the decode, which runs compiled there:
// callers keep a decode for Interpreted.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// SkipSpace returns the index of the first non-whitespace byte at or
// after i.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// EndOfString returns the index of the closing quote of the string whose
// opening quote is at i: the first quote after it not escaped by an odd
// run of backslashes.
func EndOfString(data []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return len(data) - 1
		}
		q := j + k
		escaped := false
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			escaped = !escaped
		}
		if !escaped {
			return q
		}
		j = q + 1
	}
}

// EndOfValue returns the index just past the value starting at i.
func EndOfValue(data []byte, i int) int {
	if i >= len(data) {
		return len(data)
	}
	switch data[i] {
	case '"':
		return EndOfString(data, i) + 1
	case '{', '[':
		depth := 0
		j := i
		for {
			k := bytes.IndexAny(data[j:], "\"{}[]")
			if k < 0 {
				return len(data)
			}
			j += k
			switch data[j] {
			case '"':
				j = EndOfString(data, j)
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
	}
	k := bytes.IndexAny(data[i:], ",}] \t\r\n")
	if k < 0 {
		return len(data)
	}
	return i + k
}

// DecodeKey turns a quoted JSON string (a key, or a string value) into
// its string, as a decode would: escapes undone, invalid UTF-8 replaced
// by U+FFFD.
func DecodeKey(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1])
	}
	var key string
	_ = json.Unmarshal(quoted, &key)
	return key
}

// Key reads the key of the object member at i (the key's opening quote,
// or the object's closing brace): the key, quoted, and the index of its
// value. At the closing brace key is nil. An object's first member is
// at SkipSpace(data, o+1), o its opening brace; the member after a
// value ending at end is at Next(data, end).
func Key(data []byte, i int) ([]byte, int) {
	if i >= len(data) || data[i] != '"' {
		return nil, i
	}
	keyEnd := EndOfString(data, i)
	return data[i : keyEnd+1 : keyEnd+1], SkipSpace(data, SkipSpace(data, keyEnd+1)+1) // past ':'
}

// Next returns the index of the next member's key (or of the closing
// brace) of the object whose member's value ends just before end.
func Next(data []byte, end int) int {
	next := SkipSpace(data, end)
	if next < len(data) && data[next] == ',' {
		next = SkipSpace(data, next+1)
	}
	return next
}

// Empty reports whether value, an array or object, holds nothing ("[]",
// "{ }").
func Empty(value []byte) bool {
	return len(value) >= 2 && SkipSpace(value, 1) == len(value)-1
}
