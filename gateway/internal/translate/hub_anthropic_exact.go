package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
)

// An exact read of the two Anthropic stream events every stream carries
// and the translator must decode, message_start (the id, the input
// usage) and message_delta (the stop reason, the output usage): one
// validating pass (json.Valid) and a hop over the members
// (jsonscan.Member) instead of a decode, which scans the data twice and
// allocates the whole message. Compiled that is about half the decode's
// time and a third of its allocations (BenchmarkAnthropicEventRead);
// under Yaegi the hop is our own loop, so the translator keeps the
// decode there (anthropicStream.exact).
//
// The read fills the fields of anthropicWireEvent the translator uses,
// with the values json.Unmarshal would give them, and it answers false
// — leaving ev to the decode, which then gives the answer, error or
// not — for anything it cannot vouch for: a key that matches a field
// only case-insensitively (or holds a non-ASCII byte, which might fold
// onto one), a duplicate object, a value of a kind the field would
// refuse, or a field the translator does not read holding anything but
// null. FuzzAnthropicEventExact runs the translator both ways on every
// input and compares what comes out.

// The members the decode fills, by struct.
var (
	anthropicEventKeys    = []string{"type", "message", "index", "content_block", "delta", "usage", "error"}
	anthropicMessageKeys  = []string{"id", "type", "content", "stop_reason", "usage", "error"}
	anthropicDeltaKeys    = []string{"type", "text", "partial_json", "stop_reason"}
	anthropicUsageMembers = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
)

// readAnthropicEventExact fills ev from data, the data of a
// message_start or message_delta event (kind), as json.Unmarshal would
// for the fields the translator reads; false when it cannot vouch for
// the data, ev then to be decoded afresh.
func readAnthropicEventExact(kind string, data []byte, ev *anthropicWireEvent) bool {
	start := kind == "message_start"
	if !start && kind != "message_delta" || !json.Valid(data) {
		return false
	}
	o := jsonscan.SkipSpace(data, 0)
	if data[o] != '{' {
		return false
	}
	var message, delta, usage bool // seen once
	i := jsonscan.SkipSpace(data, o+1)
	for {
		key, v := jsonscan.Key(data, i)
		if key == nil {
			return true
		}
		name, ok := plainKey(key, anthropicEventKeys)
		if !ok {
			return false
		}
		end := v + len("null") // where a null ends
		switch name {
		case "":
			end = jsonscan.EndOfValue(data, v)
		case "type":
			if !stringOrNull(data[v]) {
				return false
			}
			end = jsonscan.EndOfValue(data, v)
		case "message": // message_start's, an object
			if !start || message || data[v] != '{' {
				return false
			}
			message = true
			ev.Message = &anthropicWireResponse{}
			if end, ok = readAnthropicMessageExact(data, v, ev.Message); !ok {
				return false
			}
		case "delta": // message_delta's, an object or null
			if start || delta || data[v] != '{' && data[v] != 'n' {
				return false
			}
			delta = true
			if data[v] == '{' {
				ev.Delta = &anthropicWireDelta{}
				if end, ok = readAnthropicDeltaExact(data, v, ev.Delta); !ok {
					return false
				}
			}
		case "usage": // message_delta's, an object or null; null in message_start
			if usage || data[v] != 'n' && (start || data[v] != '{') {
				return false
			}
			usage = true
			if data[v] == '{' {
				ev.Usage = &anthropicWireUsage{}
				if end, ok = readAnthropicUsageExact(data, v, ev.Usage); !ok {
					return false
				}
			}
		default: // index, content_block, error: never in these events
			if data[v] != 'n' {
				return false
			}
		}
		i = jsonscan.Next(data, end)
	}
}

// readAnthropicMessageExact is readAnthropicEventExact for the message
// of a message_start, the object at o: its id and usage; its content
// must be empty. It returns the index past the object.
func readAnthropicMessageExact(data []byte, o int, m *anthropicWireResponse) (int, bool) {
	var id, usage bool
	i := jsonscan.SkipSpace(data, o+1)
	for {
		key, v := jsonscan.Key(data, i)
		if key == nil {
			return i + 1, true
		}
		name, ok := plainKey(key, anthropicMessageKeys)
		if !ok {
			return 0, false
		}
		c := data[v]
		end := jsonscan.EndOfValue(data, v)
		switch name {
		case "":
		case "id":
			if id || !stringOrNull(c) {
				return 0, false
			}
			id = true
			if c == '"' {
				m.ID = jsonscan.DecodeKey(data[v:end])
			}
		case "type", "stop_reason":
			if !stringOrNull(c) {
				return 0, false
			}
		case "content":
			if c != 'n' && (c != '[' || !jsonscan.Empty(data[v:end])) {
				return 0, false
			}
		case "usage":
			if usage || c != 'n' && c != '{' {
				return 0, false
			}
			usage = true
			if c == '{' {
				m.Usage = &anthropicWireUsage{}
				if _, ok := readAnthropicUsageExact(data, v, m.Usage); !ok {
					return 0, false
				}
			}
		default: // error
			if c != 'n' {
				return 0, false
			}
		}
		i = jsonscan.Next(data, end)
	}
}

// readAnthropicDeltaExact is readAnthropicEventExact for the delta of a
// message_delta, the object at o: its stop reason. It returns the index
// past the object.
func readAnthropicDeltaExact(data []byte, o int, d *anthropicWireDelta) (int, bool) {
	i := jsonscan.SkipSpace(data, o+1)
	for {
		key, v := jsonscan.Key(data, i)
		if key == nil {
			return i + 1, true
		}
		name, ok := plainKey(key, anthropicDeltaKeys)
		if !ok || name != "" && !stringOrNull(data[v]) {
			return 0, false
		}
		end := jsonscan.EndOfValue(data, v)
		if name == "stop_reason" {
			// The last of duplicate keys wins, as in the decode.
			d.StopReason = nil
			if data[v] == '"' {
				reason := jsonscan.DecodeKey(data[v:end])
				d.StopReason = &reason
			}
		}
		i = jsonscan.Next(data, end)
	}
}

// readAnthropicUsageExact reads the usage object at o: integer counts,
// the last of duplicate keys winning and a null count absent, as in the
// decode. It returns the index past the object.
func readAnthropicUsageExact(data []byte, o int, u *anthropicWireUsage) (int, bool) {
	i := jsonscan.SkipSpace(data, o+1)
	for {
		key, v := jsonscan.Key(data, i)
		if key == nil {
			return i + 1, true
		}
		name, ok := plainKey(key, anthropicUsageMembers)
		if !ok {
			return 0, false
		}
		end := jsonscan.EndOfValue(data, v)
		i = jsonscan.Next(data, end)
		if name == "" {
			continue
		}
		var count *int64
		if data[v] != 'n' {
			c, err := strconv.ParseInt(string(data[v:end]), 10, 64)
			if err != nil {
				return 0, false
			}
			count = &c
		}
		switch name {
		case "input_tokens":
			u.InputTokens = count
		case "output_tokens":
			u.OutputTokens = count
		case "cache_creation_input_tokens":
			u.CacheCreationInputTokens = count
		default:
			u.CacheReadInputTokens = count
		}
	}
}

// plainKey is a quoted member key's name when it is one of fields (all
// lower-case ASCII), "" when it matches none of them even
// case-insensitively (the decode ignores it), and false when it matches
// one only case-insensitively or holds a byte outside ASCII (which
// Unicode folding might match to one).
func plainKey(quoted []byte, fields []string) (string, bool) {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		name = []byte(jsonscan.DecodeKey(quoted))
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	for _, f := range fields {
		if string(name) == f {
			return f, true
		}
		if foldsTo(name, f) {
			return "", false
		}
	}
	return "", true
}

// foldsTo reports whether ASCII name equals lower-case field once its
// upper-case letters are lowered.
func foldsTo(name []byte, field string) bool {
	if len(name) != len(field) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != field[i] {
			return false
		}
	}
	return true
}

// stringOrNull reports whether a valid JSON value starting with c is a
// string or null: what a string field (or a pointer to one) decodes
// without error.
func stringOrNull(c byte) bool {
	return c == '"' || c == 'n'
}
