package translate

import (
	"bytes"
	"regexp"
	"unicode/utf8"
)

// The fast path of the hub → Anthropic request translation: a
// conversation of plain text messages — every message exactly
// {"role": R, "content": "…"}, R one of system, developer, user or
// assistant, the text without a backslash — is spliced, not decoded and
// encoded again. Its texts are copied as the JSON strings they are into
// the Anthropic messages and system, which is what the general path
// (messages) makes of them, value for value: the same turns, merged the
// same way, the same blocks dropped, the same system text. Anything
// else, or anything the general path would refuse, takes the general
// path. FuzzAnthropicFastMessages holds the two to the same result.
//
// Most chat requests of OpenAI clients are this shape; on them the
// general path decodes the conversation twice (the array, each message)
// and encodes every text again, which costs more than all of the
// request's other work together.

// anthropicFastConversation is a conversation the fast path read: the
// Anthropic messages array and the system string, each as JSON (system
// nil when there is none).
type anthropicFastConversation struct {
	messages []byte
	system   []byte
}

var (
	fastTurnUser   = []byte(`{"role":"user","content":[`)
	fastTurnAsst   = []byte(`{"role":"assistant","content":[`)
	fastTextBlock  = []byte(`{"type":"text","text":`)
	fastMessagesAt = []byte(`,"messages":null`)
)

// anthropicFastMessages reads raw (the request's messages, valid JSON as
// the admission decode left it) on the fast path; false when it is not
// a plain text conversation the general path would accept. Each message
// is read by two compiled regular expressions (its start up to the
// text, its end) and two byte searches (the text's end, a backslash in
// it): under Yaegi each statement of ours costs about as much as a call
// into the standard library.
func anthropicFastMessages(raw []byte) (anthropicFastConversation, bool) {
	var conv anthropicFastConversation
	if len(raw) < 2 || raw[0] != '[' || !utf8.Valid(raw) {
		return conv, false
	}
	out := make([]byte, 0, len(raw)+64)
	out = append(out, '[')
	var system []byte
	last := "" // the role of the open turn
	p := raw[1:]
	for {
		head := fastMessageHead.FindSubmatchIndex(p)
		if head == nil {
			return conv, false
		}
		role := string(p[head[2]:head[3]])
		p = p[head[1]:]
		end := bytes.IndexByte(p, '"')
		if end < 0 || bytes.IndexByte(p[:end], '\\') >= 0 {
			return conv, false
		}
		inner := p[:end]
		tail := fastMessageTail.FindSubmatchIndex(p[end+1:])
		if tail == nil {
			return conv, false
		}
		closing := p[end+1+tail[2]]
		p = p[end+1+tail[1]:]
		switch {
		case len(bytes.TrimSpace(inner)) == 0:
			// No text: no block, as the general path drops it.
		case role == "system" || role == "developer":
			if system == nil {
				system = append(system, '"')
			} else {
				system = append(system, `\n\n`...)
			}
			system = append(system, inner...)
		default:
			if role == last {
				out = append(out, ',')
			} else {
				if last != "" {
					out = append(out, "]},"...)
				}
				if role == "user" {
					out = append(out, fastTurnUser...)
				} else {
					out = append(out, fastTurnAsst...)
				}
				last = role
			}
			out = append(out, fastTextBlock...)
			out = append(out, '"')
			out = append(out, inner...)
			out = append(out, '"', '}')
		}
		if closing == ']' {
			break
		}
	}
	if len(p) != 0 || last == "" {
		return conv, false
	}
	conv.messages = append(out, "]}]"...)
	if system != nil {
		conv.system = append(system, '"')
	}
	return conv, true
}

// fastMessageHead is a plain message's start, up to its text's opening
// quote: {"role": R, "content": " with R one of the four roles whose
// text becomes a block or the system (the general path names any other
// role in its error); fastMessageTail is its end, up to the comma
// before the next message or the array's end.
var (
	fastMessageHead = regexp.MustCompile(`^[ \t\r\n]*\{[ \t\r\n]*"role"[ \t\r\n]*:[ \t\r\n]*"(system|developer|user|assistant)"[ \t\r\n]*,[ \t\r\n]*"content"[ \t\r\n]*:[ \t\r\n]*"`)
	fastMessageTail = regexp.MustCompile(`^[ \t\r\n]*\}[ \t\r\n]*([,\]])`)
)

// spliceFastConversation puts conv into data, the request encoded
// without messages and system (its "messages" null, its system empty
// and so left out): the system string and the messages array take the
// place of `"messages":null`. Only model and max_tokens come before
// messages, and inside an encoded string every quote is escaped, so the
// first `,"messages":null` is the member itself.
func spliceFastConversation(data []byte, conv anthropicFastConversation) []byte {
	at := bytes.Index(data, fastMessagesAt)
	if at < 0 {
		return nil
	}
	out := make([]byte, 0, len(data)+len(conv.system)+len(conv.messages)+16)
	out = append(out, data[:at]...)
	if conv.system != nil {
		out = append(out, `,"system":`...)
		out = append(out, conv.system...)
	}
	out = append(out, `,"messages":`...)
	out = append(out, conv.messages...)
	return append(out, data[at+len(fastMessagesAt):]...)
}

// fastConversation reads the conversation on the fast path, when it is
// plain text (b.fast); false sends it to the general path.
func (b *anthropicRequestBuilder) fastConversation() bool {
	if b.general {
		return false
	}
	raw, ok := b.field("messages")
	if !ok {
		return false
	}
	conv, ok := anthropicFastMessages(raw)
	if !ok {
		return false
	}
	b.fast = &conv
	return true
}
