package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// A client's view of hub stream output, shared by the translator tests:
// the events framed as OpenAI SSE, and each chunk decoded with pointers
// where a strict client tells an absent field from an empty one.

// hubTestChunk is one chat.completion.chunk, or a mid-stream error.
type hubTestChunk struct {
	ID      string               `json:"id"`
	Object  string               `json:"object"`
	Created int64                `json:"created"`
	Model   string               `json:"model"`
	Choices []hubTestChunkChoice `json:"choices"` // nil when null or absent
	Usage   json.RawMessage      `json:"usage"`
	Error   *struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type hubTestChunkChoice struct {
	Index        int          `json:"index"`
	Delta        hubTestDelta `json:"delta"`
	FinishReason *string      `json:"finish_reason"`
}

type hubTestDelta struct {
	Role      *string           `json:"role"`
	Content   *string           `json:"content"`
	ToolCalls []hubTestToolCall `json:"tool_calls"`
}

type hubTestToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// hubTestCompletion is a client's view of a chat.completion.
type hubTestCompletion struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int    `json:"index"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
}

// hubTestPayloads returns the payloads of framed client output, failing
// unless it is a sequence of "data: <payload>\n\n" events.
func hubTestPayloads(t *testing.T, out []byte) []string {
	t.Helper()
	if len(out) == 0 {
		return nil
	}
	if !bytes.HasSuffix(out, []byte("\n\n")) {
		t.Fatalf("output does not end with a blank line: %q", out)
	}
	events := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	payloads := make([]string, 0, len(events))
	for i := 0; i < len(events); i++ {
		if !strings.HasPrefix(events[i], "data: ") || strings.Contains(events[i], "\n") {
			t.Fatalf("event %d is not one data line: %q", i, events[i])
		}
		payloads = append(payloads, events[i][len("data: "):])
	}
	return payloads
}

// checkHubFraming fails unless out is a sequence of complete
// "data: <payload>\n\n" events whose payload is JSON or [DONE].
func checkHubFraming(t *testing.T, out []byte) {
	t.Helper()
	for len(out) > 0 {
		end := bytes.Index(out, []byte("\n\n"))
		if end < 0 || !bytes.HasPrefix(out, []byte("data: ")) {
			t.Fatalf("badly framed output: %q", out)
		}
		payload := out[len("data: "):end]
		if bytes.IndexByte(payload, '\n') >= 0 || (string(payload) != "[DONE]" && !json.Valid(payload)) {
			t.Fatalf("bad event payload: %q", payload)
		}
		out = out[end+2:]
	}
}

// fuzzHubStream drives tr over arbitrary upstream bytes the way the
// pipeline does and checks what a client receives: well-framed events, a
// 502 with a code in place of [DONE] when the stream fails, [DONE]
// exactly when it ends cleanly, once, and nothing after it. With
// payloadsWithError false, the call that fails must append nothing.
func fuzzHubStream(t *testing.T, input []byte, tr StreamTranslator, payloadsWithError bool) []byte {
	t.Helper()
	reader := sse.NewReader(bytes.NewReader(input), 64<<10)
	var out []byte
	for {
		ev, err := reader.Next()
		if err != nil {
			if err != io.EOF && err != sse.ErrTooLarge {
				t.Fatalf("reader: %v", err)
			}
			break
		}
		chunk, e := translateEvent(tr, ev)
		checkHubFraming(t, chunk)
		out = append(out, chunk...)
		if e != nil {
			// A stream error is the gateway's 502, or the provider's own 429
			// or 503 (a Gemini error event keeps its code).
			if e.Status != 502 && e.Status != 429 && e.Status != 503 || e.Code == "" || bytes.Contains(chunk, doneEvent) || !payloadsWithError && len(chunk) != 0 {
				t.Fatalf("bad stream error %+v with %q", e, chunk)
			}
			return out
		}
	}
	tail, e := translateFinish(tr)
	checkHubFraming(t, tail)
	out = append(out, tail...)
	if done := bytes.HasSuffix(out, doneEvent); (e == nil) != done {
		t.Fatalf("finish: error %v but [DONE] %v in %q", e, done, out)
	}
	if n := bytes.Count(out, doneEvent); n > 1 {
		t.Fatalf("[DONE] sent %d times", n)
	}
	if i := bytes.Index(out, doneEvent); i >= 0 && i+len(doneEvent) != len(out) {
		t.Fatalf("events after [DONE]: %q", out[i:])
	}
	return out
}
