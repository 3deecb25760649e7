package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// Translation benchmarks: the pure translators (no HTTP), so the numbers
// are the translation cost alone. The stream benchmarks push a 500-delta
// upstream stream through the SSE reader and the translator one event at
// a time, as the pipeline does, and report bytes of output per op; the
// gateway's BenchmarkRelaySSE500 is the same number of events relayed
// untranslated, for comparison.

var benchTranslateRequest = []byte(`{"model":"m","messages":[{"role":"system","content":"Be terse."},` +
	`{"role":"user","content":"What is the weather in Paris and in Rome? Answer briefly, please."},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21}"},` +
	`{"role":"user","content":[{"type":"text","text":"And Rome?"}]}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],` +
	`"temperature":0.2,"max_tokens":512}`)

var benchPlainRequest = []byte(`{"model":"m","stream":true,"messages":[{"role":"system","content":"Be terse."},` +
	`{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 34) + `"}],"temperature":0.2}`)

const benchAnthropicResponse = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Rome is sunny, 24 degrees."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Rome"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":64}}`

const benchGeminiResponse = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Rome is sunny, 24 degrees."},{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":30,"totalTokenCount":150},"modelVersion":"gemini-x"}`

func benchTC() Context {
	return Context{RequestedModel: "alias", UpstreamModel: "m", Created: 1700000000, IncludeUsage: true, IDFallback: "chatcmpl-bench"}
}

func BenchmarkTranslateRequest(b *testing.B) {
	b.Run("anthropic", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := AnthropicChatRequest(benchTranslateRequest, "claude-x"); e != nil {
				b.Fatal(e)
			}
		}
	})
	// A plain text conversation (loadbench's translated stream), decoded
	// at admission as the pipeline does: the fast path
	// (hub_anthropic_fast.go), and the general path it stands in for.
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(benchPlainRequest, &fields); err != nil {
		b.Fatal(err)
	}
	b.Run("anthropic_plain", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := AnthropicChatRequestFields(fields, "claude-x"); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("anthropic_plain_general", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := anthropicChatRequest(fields, "claude-x", true); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("gemini", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := GeminiChatRequest(benchTranslateRequest); e != nil {
				b.Fatal(e)
			}
		}
	})
	// An Anthropic client's request to the hub: the same conversation,
	// and a Claude Code-shaped one (~45 KB, 12 tools).
	b.Run("anthropic_client", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := HubFromAnthropicRequest(benchAnthropicClientRequest); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("anthropic_client_claude_code", func(b *testing.B) {
		body, _, _ := claudeCodeRequest()
		raw := []byte(body)
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for i := 0; i < b.N; i++ {
			if _, _, e := HubFromAnthropicRequest(raw); e != nil {
				b.Fatal(e)
			}
		}
	})
}

var benchAnthropicClientRequest = []byte(`{"model":"m","max_tokens":512,"system":"Be terse.","temperature":0.2,"messages":[` +
	`{"role":"user","content":"What is the weather in Paris and in Rome? Answer briefly, please."},` +
	`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"temp\":21}"},{"type":"text","text":"And Rome?"}]}],` +
	`"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`)

func BenchmarkTranslateResponse(b *testing.B) {
	b.Run("anthropic", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := AnthropicChatResponse([]byte(benchAnthropicResponse), benchTC()); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("gemini", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, e := GeminiChatResponse([]byte(benchGeminiResponse), benchTC()); e != nil {
				b.Fatal(e)
			}
		}
	})
}

// benchAnthropicStream is a 500-delta Anthropic stream.
var benchAnthropicStream = func() []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < 500; i++ {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token" + strconv.Itoa(i) + " \"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":500}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}()

// benchGeminiStream is a 500-delta Gemini stream.
var benchGeminiStream = func() []byte {
	var b bytes.Buffer
	for i := 0; i < 500; i++ {
		b.WriteString("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"token" + strconv.Itoa(i) + " \"}]},\"index\":0}]}\n\n")
	}
	b.WriteString("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"\"}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":500,\"totalTokenCount\":512}}\n\n")
	return b.Bytes()
}()

// benchOpenAIStream is a 500-delta OpenAI stream with a usage chunk.
var benchOpenAIStream = func() []byte {
	var b bytes.Buffer
	const head = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-x\",\"choices\":["
	b.WriteString(head + "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n")
	for i := 0; i < 500; i++ {
		b.WriteString(head + "{\"index\":0,\"delta\":{\"content\":\"token" + strconv.Itoa(i) + " \"},\"finish_reason\":null}],\"usage\":null}\n\n")
	}
	b.WriteString(head + "{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n")
	b.WriteString(head + "],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":500,\"total_tokens\":512}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}()

// translateStream drives one stream through the reader and translator the
// way relayTranslated does, writing each translated batch out at once.
func translateStream(b *testing.B, in []byte, st StreamTranslator) int {
	rd := sse.NewReader(bytes.NewReader(in), 32<<20)
	n := 0
	// Reused across events, as the pipeline's relay does.
	var payloads []Payload
	var buf []byte
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			out, e := st.Finish(payloads[:0])
			if e != nil {
				b.Fatal(e)
			}
			buf = framePayloads(buf[:0], out)
			return n + len(buf) + len(doneEvent)
		}
		if err != nil {
			b.Fatal(err)
		}
		out, e := st.Event(ev, payloads[:0])
		if e != nil {
			b.Fatal(e)
		}
		payloads = out
		buf = framePayloads(buf[:0], out)
		n += len(buf)
	}
}

func BenchmarkTranslateStream500(b *testing.B) {
	b.Run("anthropic", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchAnthropicStream)))
		for i := 0; i < b.N; i++ {
			if translateStream(b, benchAnthropicStream, NewAnthropicStream(benchTC())) == 0 {
				b.Fatal("no output")
			}
		}
	})
	b.Run("gemini", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchGeminiStream)))
		for i := 0; i < b.N; i++ {
			if translateStream(b, benchGeminiStream, NewGeminiStream(benchTC())) == 0 {
				b.Fatal("no output")
			}
		}
	})
	// An Anthropic client: an OpenAI upstream's chunks, and a Gemini
	// upstream through its translator, into Anthropic events.
	b.Run("anthropic_client_openai", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchOpenAIStream)))
		for i := 0; i < b.N; i++ {
			if translateStream(b, benchOpenAIStream, NewAnthropicOutStream(nil, benchTC(), AnthropicInbound{}, 12)) == 0 {
				b.Fatal("no output")
			}
		}
	})
	b.Run("anthropic_client_gemini", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchGeminiStream)))
		for i := 0; i < b.N; i++ {
			if translateStream(b, benchGeminiStream, NewAnthropicOutStream(NewGeminiStream(benchTC()), benchTC(), AnthropicInbound{}, 12)) == 0 {
				b.Fatal("no output")
			}
		}
	})
}

// benchAnthropicShortStream is a short reply as Anthropic streams it (12
// events: loadbench's and the gateway benchmark's): the per-stream work
// (message_start, the block's start, message_delta, the role, finish and
// usage chunks) outweighs the four deltas.
var benchAnthropicShortStream = func() []byte {
	var b bytes.Buffer
	ev := func(name, data string) { b.WriteString("event: " + name + "\ndata: " + data + "\n\n") }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"bench-claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":180,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type": "ping"}`)
	for _, t := range []string{"Hello", " from", " the", " bench."} {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+t+`"}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.Bytes()
}()

func BenchmarkTranslateStreamShort(b *testing.B) {
	b.Run("anthropic", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if translateStream(b, benchAnthropicShortStream, NewAnthropicStream(benchTC())) == 0 {
				b.Fatal("no output")
			}
		}
	})
}
