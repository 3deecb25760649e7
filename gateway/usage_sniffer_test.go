package gateway

import (
	"io"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// pieceReader returns its data step bytes per Read.
type pieceReader struct {
	data string
	step int
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := p.step
	if n > len(p.data) {
		n = len(p.data)
	}
	n = copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}

func (p *pieceReader) Close() error { return nil }

// TestUsageSnifferPieces: however the stream is cut into Reads, the
// sniffer passes every byte on and finds the same usage.
func TestUsageSnifferPieces(t *testing.T) {
	streams := []struct {
		name string
		in   string
		want translate.Usage
		text int64
	}{
		{"anthropic", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			": ping\n\nevent: content_block_delta\ndata: {\"delta\":{\"text\":\"usage\"}}\n\n" +
			"event: message_delta\r\ndata: {\"type\":\"message_delta\",\r\ndata: \"usage\":{\"output_tokens\":30}}\r\n\r\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			translate.Usage{PromptTokens: 10, CompletionTokens: 30, CacheReadTokens: 5, Reported: true}, 5},
		{"openai", "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":null}\n\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n",
			translate.Usage{PromptTokens: 7, CompletionTokens: 3, Reported: true}, 1},
		{"gemini_text", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\\\"b\"}]}}]}\r\n\r\n" +
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"cd\"},{\"text\":\"e\"}]}}]}\n\n", translate.Usage{}, 7},
		{"unfinished", "data: {\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n", translate.Usage{}, 0},
	}
	for _, st := range streams {
		for step := 1; step <= len(st.in); step++ {
			var got translate.Usage
			var text int64
			calls := 0
			s := newUsageSniffer(&pieceReader{data: st.in, step: step}, "text/event-stream", func(u translate.Usage, streamed bool, n int64) {
				got = u
				text = n
				calls++
			})
			out, err := io.ReadAll(s)
			if err != nil || string(out) != st.in {
				t.Fatalf("%s step %d: relayed %q, %v", st.name, step, out, err)
			}
			_ = s.Close()
			if calls != 1 || got != st.want || text != st.text {
				t.Fatalf("%s step %d: usage %+v, text %d (%d finishes), want %+v, %d", st.name, step, got, text, calls, st.want, st.text)
			}
		}
	}
}
