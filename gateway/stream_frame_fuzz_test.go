package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// streamFormats are the formats a stream is written in: OpenAI's and
// Anthropic's and the Responses API's SSE, Ollama's NDJSON.
var streamFormats = []*wireFormat{openAIFormat, anthropicFormat, responsesFormat, ollamaFormat}

// FuzzStreamFraming drives each format's stream writer: translator
// payloads (one-line JSON, as every translator emits; several, split at
// NUL bytes), then a mid-stream error with an arbitrary message, then the
// format's terminator. Read back — with the SSE reader, or line by line
// for NDJSON — the client sees exactly the payloads, in order and
// named, then one error that carries the message (as JSON encodes it)
// in the format's envelope, then the terminator, and nothing else.
func FuzzStreamFraming(f *testing.F) {
	seeds := []struct{ name, data, message string }{
		{"", `{"id":"c","choices":[{"delta":{"content":"hi"}}]}`, "upstream closed the stream"},
		{"content_block_delta", `{"type":"content_block_delta","delta":{"text":"a\nb"}}` + "\x00" + `{"type":"message_stop"}`, "overloaded"},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"delta":"x"}`, "line\nbreak \"quoted\" \u2028"},
		{"", `{"model":"m","message":{"role":"assistant","content":"x"},"done":false}` + "\x00" + `{"done":true}`, "\xff invalid utf-8"},
		{"", "", ""},
	}
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i].name, []byte(seeds[i].data), seeds[i].message, uint8(i))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte, message string, which uint8) {
		if strings.ContainsAny(name, "\r\n") {
			return
		}
		ft := streamFormats[int(which)%len(streamFormats)]
		var payloads []translate.Payload
		parts := bytes.Split(data, []byte{0})
		for i := 0; i < len(parts); i++ {
			if len(parts[i]) == 0 {
				continue
			}
			if bytes.ContainsAny(parts[i], "\r\n") || !json.Valid(parts[i]) {
				return
			}
			payloads = append(payloads, translate.Payload{Name: name, Data: parts[i]})
		}
		e := apierr.New(502, "api_error", "upstream_stream_failed", message)
		out := ft.framePayloads(nil, payloads)
		out = ft.streamError(out, e)
		out = append(out, ft.streamEnd...)
		if limit := 256 + 6*len(message) + (32+len(name))*len(payloads) + 2*len(data) + len(ft.streamEnd); len(out) > limit {
			t.Fatalf("%s wrote %d bytes for %d of input", ft.name, len(out), len(data)+len(message))
		}
		// JSON carries the message with each invalid UTF-8 byte replaced.
		var want string
		quoted, _ := json.Marshal(message)
		_ = json.Unmarshal(quoted, &want)
		if ft == ollamaFormat {
			checkNDJSON(t, out, payloads, want)
			return
		}
		checkSSEFraming(t, ft, out, payloads, want)
	})
}

// checkNDJSON reads an NDJSON stream: one payload per line, then the
// {"error":…} line.
func checkNDJSON(t *testing.T, out []byte, payloads []translate.Payload, message string) {
	t.Helper()
	if len(out) == 0 || out[len(out)-1] != '\n' {
		t.Fatalf("NDJSON does not end with a newline: %q", out)
	}
	lines := strings.Split(string(out[:len(out)-1]), "\n")
	if len(lines) != len(payloads)+1 {
		t.Fatalf("%d lines for %d payloads and an error: %q", len(lines), len(payloads), out)
	}
	for i := 0; i < len(payloads); i++ {
		if lines[i] != string(payloads[i].Data) {
			t.Fatalf("line %d is %q, want %q", i, lines[i], payloads[i].Data)
		}
	}
	var last struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Error == nil || *last.Error != message {
		t.Fatalf("the error line %q does not carry %q", lines[len(lines)-1], message)
	}
}

// checkSSEFraming reads an SSE stream: the payloads as events, the
// error event, the terminator.
func checkSSEFraming(t *testing.T, ft *wireFormat, out []byte, payloads []translate.Payload, message string) {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out), int64(len(out))+1)
	var events []sse.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: reading back: %v in %q", ft.name, err, out)
		}
		events = append(events, sse.Event{Name: ev.Name, Data: append([]byte(nil), ev.Data...)})
	}
	want := len(payloads) + 1
	if len(ft.streamEnd) > 0 {
		want++
	}
	if len(events) != want {
		t.Fatalf("%s: %d events for %d payloads: %q", ft.name, len(events), len(payloads), out)
	}
	for i := 0; i < len(payloads); i++ {
		name := payloads[i].Name
		if ft == openAIFormat {
			name = ""
		}
		if events[i].Name != name || !bytes.Equal(events[i].Data, payloads[i].Data) || ft == openAIFormat && ft.isStreamEnd(events[i]) {
			t.Fatalf("%s: event %d is %q %q, want %q %q", ft.name, i, events[i].Name, events[i].Data, name, payloads[i].Data)
		}
	}
	errEv := events[len(payloads)]
	if got := sseErrorMessage(ft, errEv); got == nil || *got != message {
		t.Fatalf("%s: the error event %q %q does not carry %q", ft.name, errEv.Name, errEv.Data, message)
	}
	if len(ft.streamEnd) > 0 && !ft.isStreamEnd(events[len(events)-1]) {
		t.Fatalf("%s: the last event %q is not the terminator", ft.name, events[len(events)-1].Data)
	}
}

// sseErrorMessage is the message of a format's mid-stream error event,
// nil when the event is not one.
func sseErrorMessage(ft *wireFormat, ev sse.Event) *string {
	switch ft {
	case openAIFormat:
		var env struct {
			Error *struct {
				Message *string `json:"message"`
			} `json:"error"`
		}
		if ev.Name != "" || json.Unmarshal(ev.Data, &env) != nil || env.Error == nil {
			return nil
		}
		return env.Error.Message
	case anthropicFormat:
		var env struct {
			Type  string `json:"type"`
			Error *struct {
				Message *string `json:"message"`
			} `json:"error"`
		}
		if ev.Name != "error" || json.Unmarshal(ev.Data, &env) != nil || env.Type != "error" || env.Error == nil {
			return nil
		}
		return env.Error.Message
	}
	var env struct {
		Type    string  `json:"type"`
		Message *string `json:"message"`
	}
	if ev.Name != "error" || json.Unmarshal(ev.Data, &env) != nil || env.Type != "error" {
		return nil
	}
	return env.Message
}
