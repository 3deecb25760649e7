package translate

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// JSON helpers shared by the hub translators (hub_anthropic*.go,
// hub_gemini*.go). The translators read the client's JSON one field at a
// time as json.RawMessage: polymorphic fields (a string or an array of
// parts) then need no UnmarshalJSON method, which Yaegi never calls. Every
// raw value they see comes out of a successful json.Unmarshal, so it is
// valid JSON without surrounding white space.

// encodeJSON marshals v without HTML escaping (so "<" stays "<" in
// prompts and answers) and without the encoder's trailing newline. It
// returns nil when v cannot be encoded, which only a json.RawMessage
// field holding invalid JSON can cause.
func encodeJSON(v interface{}) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	out := buf.Bytes()
	return out[:len(out)-1]
}

// jsonNull is the literal null, for a json.RawMessage field that must
// be present.
var jsonNull = json.RawMessage("null")

// quoteJSON returns s as a JSON string, HTML characters unescaped.
func quoteJSON(s string) json.RawMessage {
	return json.RawMessage(encodeJSON(s))
}

// isJSONNull reports whether raw is absent or the literal null.
func isJSONNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// isJSONNumber reports whether raw is a JSON number.
func isJSONNumber(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '-' || (c >= '0' && c <= '9')
}

// isJSONTruthy reports whether raw is set to something other than null,
// false, "", 0, [] or {}.
func isJSONTruthy(raw json.RawMessage) bool {
	s := string(raw)
	switch s {
	case "", "null", "false", `""`, "[]", "{}":
		return false
	}
	if isJSONNumber(raw) {
		f, err := strconv.ParseFloat(s, 64)
		return err != nil || f != 0
	}
	if raw[0] == '[' || raw[0] == '{' {
		return len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
	}
	return true
}

// parseJSONObject decodes raw when it is a JSON object.
func parseJSONObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

// parseJSONArray decodes raw when it is a JSON array.
func parseJSONArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, false
	}
	return a, true
}

// parseJSONOrderedObject decodes a JSON object keeping its key order,
// which a map loses.
func parseJSONOrderedObject(raw json.RawMessage) ([]string, []json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, false
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, nil, false
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key, isStr := kt.(string)
		if !isStr {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys = append(keys, key)
		vals = append(vals, v)
	}
	return keys, vals, true
}

// isJSONBool reports whether raw is true or false.
func isJSONBool(raw json.RawMessage) bool {
	return string(raw) == "true" || string(raw) == "false"
}

// isJSONStringArray reports whether raw is an array of strings.
func isJSONStringArray(raw json.RawMessage) bool {
	arr, ok := parseJSONArray(raw)
	if !ok {
		return false
	}
	for i := 0; i < len(arr); i++ {
		if len(arr[i]) == 0 || arr[i][0] != '"' {
			return false
		}
	}
	return true
}

// compactArguments renders a JSON object (a tool call's input or args)
// as the compact string OpenAI's "arguments" carries, numbers kept digit
// for digit; "{}" when it is absent or not JSON.
func compactArguments(args json.RawMessage) string {
	if isJSONNull(args) {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return "{}"
	}
	return buf.String()
}

// jsonSpecial are the bytes a JSON string may not hold unescaped: the
// quote, the backslash and the control bytes.
const jsonSpecial = "\"\\\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"

// decodeRequestObject decodes a client request body into its top-level
// fields; anything but a JSON object is a 400 invalid_json.
func decodeRequestObject(body []byte) (map[string]json.RawMessage, *apierr.Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if !json.Valid(body) {
			return nil, apierr.BadRequest("invalid_json", "request body is not valid JSON")
		}
		return nil, apierr.BadRequest("invalid_json", "request body must be a JSON object")
	}
	return fields, nil
}

// errInvalidRequest is a 400 invalid_request with msg.
func errInvalidRequest(msg string) *apierr.Error {
	return apierr.BadRequest("invalid_request", msg)
}

// errInvalidField is the 400 for a client value of the wrong type or
// value: `"<path>" must be <want>`.
func errInvalidField(path, want string) *apierr.Error {
	return errInvalidRequest(`"` + path + `" must be ` + want)
}

// The read* functions return a client value as a Go value, or the
// errInvalidField 400 naming path when it has another type.

func readString(raw json.RawMessage, path string) (string, *apierr.Error) {
	// A string without an escape, a control byte or invalid UTF-8 (which
	// the decoder would replace) is its bytes between the quotes: no
	// second scan by the decoder.
	if n := len(raw); n > 1 && raw[0] == '"' && raw[n-1] == '"' && !bytes.ContainsAny(raw[1:n-1], jsonSpecial) && utf8.Valid(raw) {
		return string(raw[1 : n-1]), nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", errInvalidField(path, "a string")
	}
	return s, nil
}

func readBool(raw json.RawMessage, path string) (bool, *apierr.Error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errInvalidField(path, "a boolean")
}

// readFloat reads a number as a float64; one beyond float64's range is
// refused.
func readFloat(raw json.RawMessage, path string) (float64, *apierr.Error) {
	if !isJSONNumber(raw) {
		return 0, errInvalidField(path, "a number")
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, errInvalidField(path, "a number")
	}
	return f, nil
}

// readNumberText returns a number's exact text, for passing it on
// unchanged.
func readNumberText(raw json.RawMessage, path string) (json.RawMessage, *apierr.Error) {
	if !isJSONNumber(raw) {
		return nil, errInvalidField(path, "a number")
	}
	return raw, nil
}

// readInteger reads an integer: any int64 written as digits, or a number
// with an integral value within ±1e15 (such as 2.0 or 1e3).
func readInteger(raw json.RawMessage, path string) (int64, *apierr.Error) {
	if !isJSONNumber(raw) {
		return 0, errInvalidField(path, "an integer")
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e15 {
		return 0, errInvalidField(path, "an integer")
	}
	return int64(f), nil
}

func readObject(raw json.RawMessage, path string) (map[string]json.RawMessage, *apierr.Error) {
	m, ok := parseJSONObject(raw)
	if !ok {
		return nil, errInvalidField(path, "an object")
	}
	return m, nil
}

func readArray(raw json.RawMessage, path string) ([]json.RawMessage, *apierr.Error) {
	a, ok := parseJSONArray(raw)
	if !ok {
		return nil, errInvalidField(path, "an array")
	}
	return a, nil
}

// readContentPart reads one part of a message's content array: an
// object with a string "type".
func readContentPart(raw json.RawMessage, path string) (map[string]json.RawMessage, string, *apierr.Error) {
	m, e := readObject(raw, path)
	if e != nil {
		return nil, "", e
	}
	kind, e := readString(m["type"], path+".type")
	if e != nil {
		return nil, "", e
	}
	return m, kind, nil
}

// readStopSequences reads a non-null stop field, a string or an array of
// strings, leaving out empty strings. indexPaths names a bad element
// "stop[i]" in the error rather than "stop".
func readStopSequences(raw json.RawMessage, indexPaths bool) ([]string, *apierr.Error) {
	if raw[0] == '"' {
		s, e := readString(raw, "stop")
		if e != nil || s == "" {
			return nil, e
		}
		return []string{s}, nil
	}
	list, ok := parseJSONArray(raw)
	if !ok {
		return nil, errInvalidField("stop", "a string or an array of strings")
	}
	var stop []string
	for i := 0; i < len(list); i++ {
		path := "stop"
		if indexPaths {
			path = "stop[" + strconv.Itoa(i) + "]"
		}
		s, e := readString(list[i], path)
		if e != nil {
			return nil, e
		}
		if s != "" {
			stop = append(stop, s)
		}
	}
	return stop, nil
}
