package mockupstream

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
)

// Tool-call replies (Anthropic and Gemini). The mock calls the first tool
// of the request (DefaultToolName when it forces a call on a request
// without tools) with ToolArguments.
const (
	// DefaultToolName is the tool called when X-Mock-Tool-Call forces a
	// call on a request that declares no tools.
	DefaultToolName = "get_weather"
	// ToolPreamble is the text block an Anthropic tool-call reply carries
	// before its tool_use block.
	ToolPreamble = "Let me check the weather."
	// ToolOutputTokens is the output token count of a tool-call reply.
	ToolOutputTokens = 17
)

// toolArgumentPieces are the input_json_delta fragments of a streamed
// Anthropic tool_use block: the first is empty (as the API sends it) and
// the others split keys and values mid-token.
var toolArgumentPieces = []string{"", `{"ci`, `ty": "Par`, `is", "un`, `it": "cel`, `sius"}`}

// ToolArgumentPieces returns the partial_json fragments of a streamed
// Anthropic tool call, in order; they concatenate to ToolArguments().
func ToolArgumentPieces() []string {
	return append([]string(nil), toolArgumentPieces...)
}

// ToolArguments is the JSON text of the tool-call arguments exactly as
// the streamed Anthropic fragments concatenate. Non-streamed Anthropic
// replies and Gemini replies carry the same object as JSON
// ({"city":"Paris","unit":"celsius"}), so compare semantically.
func ToolArguments() string {
	return strings.Join(toolArgumentPieces, "")
}

// toolArgumentsObject is ToolArguments as a compact JSON object.
const toolArgumentsObject = `{"city":"Paris","unit":"celsius"}`

// textReply is a deterministic assistant reply cut to the request's
// limits.
type textReply struct {
	chunks  []string
	reason  string // "end", "max_tokens" or "stop_sequence"
	matched string // the stop sequence that cut the reply
}

func (t textReply) text() string { return strings.Join(t.chunks, "") }

// buildReply returns the n chunks of ReplyText(n), truncated to
// maxTokens chunks (when maxTokens >= 0) and cut before the earliest stop
// sequence found in the text.
func buildReply(n, maxTokens int, stops []string) textReply {
	out := textReply{reason: "end"}
	if maxTokens >= 0 && maxTokens < n {
		n = maxTokens
		out.reason = "max_tokens"
	}
	full := ReplyText(n)
	cut := -1
	for _, s := range stops {
		if s == "" {
			continue
		}
		if i := strings.Index(full, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
			out.matched = s
		}
	}
	pos := 0
	for i := 0; i < n; i++ {
		c := ChunkText(i)
		if cut >= 0 && pos+len(c) > cut {
			if cut > pos {
				out.chunks = append(out.chunks, c[:cut-pos])
			}
			out.reason = "stop_sequence"
			return out
		}
		out.chunks = append(out.chunks, c)
		pos += len(c)
	}
	return out
}

// words counts whitespace-separated words: the mock's token count.
func words(s string) int { return len(strings.Fields(s)) }

// mentionsWeather reports whether s asks for the tool call.
func mentionsWeather(s string) bool {
	return strings.Contains(strings.ToLower(s), "weather")
}

// jsonString marshals s as a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// ImagePNG is the deterministic PNG the Imagen route returns as image i
// (0-based) of a prompt: 2x2 pixels whose colour derives from both.
func ImagePNG(prompt string, i int) []byte {
	h := fnv.New32a()
	_, _ = h.Write([]byte(prompt)) // a hash.Hash never returns an error
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(strconv.Itoa(i)))
	x := h.Sum32()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	c := color.NRGBA{R: uint8(x), G: uint8(x >> 8), B: uint8(x >> 16), A: 255}
	for y := 0; y < 2; y++ {
		for xx := 0; xx < 2; xx++ {
			img.SetNRGBA(xx, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic("mockupstream: encoding a 2x2 PNG: " + err.Error()) // cannot happen: an in-memory NRGBA image into a buffer
	}
	return buf.Bytes()
}
