package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The content chunk, the one payload nearly every event of a translated
// stream becomes, built without the hub structs: under Yaegi, filling a
// hubChunk (struct literals, a slice literal, a pointer) and encoding it
// costs several times the translation itself. The chunk's bytes before
// and after the content string are fixed for a stream, so they are
// built once; each chunk is then that prefix, the content encoded as a
// JSON string by a reused encoder, and the suffix — byte for byte what
// hubDeltaPayload(tc, id, hubDelta{Content: &text}, nil) encodes
// (TestTextChunkMatchesHubChunk).

// textChunkSuffix closes a content chunk after its content string.
const textChunkSuffix = `},"finish_reason":null}]}`

// textChunker builds one stream's content chunks; the zero value is
// ready to use.
type textChunker struct {
	head   []byte // the chunk up to its delta, for id
	prefix []byte // the chunk up to its content string, for id
	id     string
	q      bytes.Buffer
	enc    *json.Encoder
}

// textPayload is the payload of the chunk adding text to the content of
// choice 0 of the stream id. It is a function, not a method: under Yaegi
// a method call costs several plain ones.
func textPayload(t *textChunker, tc Context, id string, text string) Payload {
	textPrefix(t, tc, id)
	return textChunk(t, quoteWith(t, text))
}

// quotedTextPayload is textPayload for a text already encoded as a JSON
// string exactly as quoteWith encodes it (quotes included).
func quotedTextPayload(t *textChunker, tc Context, id string, quoted []byte) Payload {
	textPrefix(t, tc, id)
	return textChunk(t, quoted)
}

// textPrefix builds the chunk's bytes up to its content string, once per
// stream id.
func textPrefix(t *textChunker, tc Context, id string) {
	if t.prefix == nil || t.id != id {
		p := append([]byte(nil), `{"id":`...)
		p = append(p, quoteWith(t, id)...)
		p = append(p, `,"object":"chat.completion.chunk","created":`...)
		p = strconv.AppendInt(p, tc.Created, 10)
		p = append(p, `,"model":`...)
		p = append(p, quoteWith(t, tc.RequestedModel)...)
		p = append(p, `,"choices":[{"index":0,"delta":`...)
		t.head = p
		t.prefix = append(p[:len(p):len(p)], `{"content":`...)
		t.id = id
	}
}

// rolePayload is the stream's first chunk, the role with an empty
// content: byte for byte hubDeltaPayload(tc, id, hubDelta{Role:
// "assistant", Content: &empty}, nil).
func rolePayload(t *textChunker, tc Context, id string) Payload {
	textPrefix(t, tc, id)
	data := make([]byte, 0, len(t.head)+len(roleChunkTail))
	data = append(data, t.head...)
	return Payload{Data: append(data, roleChunkTail...)}
}

// finishPayload is the chunk with an empty delta and finish_reason
// reason: byte for byte hubDeltaPayload(tc, id, hubDelta{}, &reason).
func finishPayload(t *textChunker, tc Context, id, reason string) Payload {
	textPrefix(t, tc, id)
	q := quoteWith(t, reason)
	data := make([]byte, 0, len(t.head)+len(q)+len(finishChunkOpen)+3)
	data = append(data, t.head...)
	data = append(data, finishChunkOpen...)
	data = append(data, q...)
	return Payload{Data: append(data, '}', ']', '}')}
}

// The role chunk after its delta's opening, and the finish chunk's
// bytes between the head and the reason.
const (
	roleChunkTail   = `{"role":"assistant","content":""},"finish_reason":null}]}`
	finishChunkOpen = `{},"finish_reason":`
)

// textChunk is the chunk for a quoted content string.
func textChunk(t *textChunker, quoted []byte) Payload {
	data := make([]byte, 0, len(t.prefix)+len(quoted)+len(textChunkSuffix))
	data = append(data, t.prefix...)
	data = append(data, quoted...)
	data = append(data, textChunkSuffix...)
	return Payload{Data: data}
}

// quoteWith encodes s as a JSON string with t's encoder (HTML characters
// unescaped, as encodeJSON does); the result is valid until t's next
// use.
func quoteWith(t *textChunker, s string) []byte {
	t.q.Reset()
	// A string the encoder would escape nothing in (the ids, models and
	// finish reasons, most texts) is its bytes between quotes.
	if !strings.ContainsAny(s, jsonSpecial) && utf8.ValidString(s) &&
		(strings.IndexByte(s, 0xE2) < 0 || !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")) {
		t.q.WriteByte('"')
		t.q.WriteString(s)
		t.q.WriteByte('"')
		return t.q.Bytes()
	}
	if t.enc == nil {
		t.enc = json.NewEncoder(&t.q)
		t.enc.SetEscapeHTML(false)
	}
	if t.enc.Encode(s) != nil { // a string always encodes
		return []byte(`""`)
	}
	b := t.q.Bytes()
	return b[:len(b)-1]
}
