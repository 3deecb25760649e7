package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// The events around the one under test in translateAnthropicEvent.
const (
	exactStartData = `{"type":"message_start","message":{"id":"msg_exact","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`
	exactTextData  = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`
	exactDeltaData = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`
)

// exactEventCases are message_start and message_delta data, and whether
// the exact read takes each (false: it leaves the data to the decode).
var exactEventCases = []struct {
	kind  string
	data  string
	taken bool
}{
	// As Anthropic sends them (the usage's nested and extra members are
	// not read), as loadbench's mock does, spaced out.
	{"message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":2,"service_tier":"standard"}}}`, true},
	{"message_start", `{"type":"message_start","message":{"id":"msg_mock_1","type":"message","role":"assistant","model":"claude-bench","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":1}}}`, true},
	{"message_start", " { \"type\" : \"message_start\" , \"message\" : { \"id\" : \"m\\u00e9\" , \"content\" : [ ] , \"usage\" : { \"input_tokens\" : -0 } } } ", true},
	{"message_start", `{"message":{"id":null,"usage":null,"content":null,"error":null,"stop_reason":"x"},"usage":null,"index":null}`, true},
	{"message_start", `{"message":{"id":"a\ud800b","usage":{"input_tokens":1,"input_tokens":null,"output_tokens":5,"output_tokens":6}}}`, true},
	{"message_start", `{"message":{"id":"ok","usage":{"input_tokens":9223372036854775807}}}`, true},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`, true},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":72,"server_tool_use":{"web_search_requests":1}}}`, true},
	{"message_delta", `{"delta":{"stop_reason":"a","stop_reason":null,"type":"x","text":null},"usage":null}`, true},
	{"message_delta", `{"delta":null}`, true},
	{"message_delta", `{}`, true},
	// Left to the decode: case variants and non-ASCII keys, duplicate
	// objects, values of the wrong kind, fields these events do not
	// carry, content, and what is not JSON.
	{"message_start", `{"message":{"ID":"x"}}`, false},
	{"message_start", `{"Message":{"id":"x"}}`, false},
	{"message_start", `{"message":{"id":"x","uſage":{}}}`, false},
	{"message_start", `{"message":{"id":"x"},"message":{"id":"y"}}`, false},
	{"message_start", `{"message":{"id":"x","id":"y"}}`, false},
	{"message_start", `{"message":{"id":7}}`, false},
	{"message_start", `{"message":null}`, false},
	{"message_start", `{"message":{"usage":{"input_tokens":1.5}}}`, false},
	{"message_start", `{"message":{"usage":{"input_tokens":1e3}}}`, false},
	{"message_start", `{"message":{"usage":{"input_tokens":9223372036854775808}}}`, false},
	{"message_start", `{"message":{"usage":{"input_tokens":"1"}}}`, false},
	{"message_start", `{"message":{"usage":{"Input_tokens":1}}}`, false},
	{"message_start", `{"message":{"usage":[]}}`, false},
	{"message_start", `{"message":{"content":[{"type":"text","text":"x"}]}}`, false},
	{"message_start", `{"message":{"error":{"type":"x"}}}`, false},
	{"message_start", `{"message":{"type":true}}`, false},
	{"message_start", `{"message":{},"usage":{"output_tokens":1}}`, false},
	{"message_start", `{"message":{},"index":0}`, false},
	{"message_start", `{"message":{},"delta":null}`, false},
	{"message_start", `{"message":{},"type":1}`, false},
	{"message_start", `{"message":{"id":"x"}`, false},
	{"message_start", `[{"message":{}}]`, false},
	{"message_start", ``, false},
	{"message_delta", `{"delta":{"stop_reason":"a"},"delta":{}}`, false},
	{"message_delta", `{"delta":{"stop_reason":"a"},"delta":null}`, false},
	{"message_delta", `{"usage":{"output_tokens":1},"usage":null}`, false},
	{"message_start", `{"message":{"id":"x"},"usage":null,"usage":null}`, false},
	{"message_start", `{"message":{"usage":{"input_tokens":1},"usage":null}}`, false},
	{"message_delta", `{"delta":{"stop_reason":1}}`, false},
	{"message_delta", `{"delta":{"Stop_reason":"a"}}`, false},
	{"message_delta", `{"delta":[]}`, false},
	{"message_delta", `{"usage":{"output_tokens":1},"usage":{}}`, false},
	{"message_delta", `{"message":{}}`, false},
	{"message_delta", `{"error":{"type":"overloaded_error"}}`, false},
	{"content_block_delta", exactTextData, false},
}

// checkAnthropicEventExact compares the exact read of data with the
// decode: where the read takes it, the decode succeeds and gives the
// fields the translator uses the same values, and the translator gives
// the same stream and usage both ways.
func checkAnthropicEventExact(t *testing.T, kind string, data []byte) bool {
	t.Helper()
	var exact anthropicWireEvent
	taken := readAnthropicEventExact(kind, data, &exact)
	if taken {
		var decoded anthropicWireEvent
		if err := json.Unmarshal(data, &decoded); err != nil {
			t.Fatalf("%s %q: read exactly, but the decode fails: %v", kind, data, err)
		}
		if got, want := exactProjection(&exact), exactProjection(&decoded); got != want {
			t.Fatalf("%s %q: read %s, decoded %s", kind, data, got, want)
		}
	}
	exactOut, exactUsage := translateAnthropicEvent(kind, data, true)
	decodedOut, decodedUsage := translateAnthropicEvent(kind, data, false)
	if !bytes.Equal(exactOut, decodedOut) || exactUsage != decodedUsage {
		t.Fatalf("%s %q: with the exact read\n%s%+v\nwith the decode\n%s%+v", kind, data, exactOut, exactUsage, decodedOut, decodedUsage)
	}
	return taken
}

// exactProjection is what the translator reads of a decoded event, as
// text (under Yaegi reflect.DeepEqual sees the interpreter's wrappers of
// pointers, not what they point to).
func exactProjection(ev *anthropicWireEvent) string {
	p := fmt.Sprintf("message %v delta %v usage %s", ev.Message != nil, ev.Delta != nil, usageText(ev.Usage))
	if ev.Message != nil {
		p += fmt.Sprintf(" id %q message usage %s", ev.Message.ID, usageText(ev.Message.Usage))
	}
	if ev.Delta != nil {
		p += " stop_reason " + stringPtrText(ev.Delta.StopReason)
	}
	return p
}

func usageText(u *anthropicWireUsage) string {
	if u == nil {
		return "nil"
	}
	counts := []*int64{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens}
	s := "{"
	for _, c := range counts {
		if c == nil {
			s += " nil"
		} else {
			s += fmt.Sprintf(" %d", *c)
		}
	}
	return s + " }"
}

func stringPtrText(p *string) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *p)
}

// translateAnthropicEvent runs a stream through the translator, the
// event under test in its place (message_start first, message_delta
// after a text delta), the exact read on or off: the stream's framed
// output, its error, and its usage.
func translateAnthropicEvent(kind string, data []byte, exact bool) ([]byte, Usage) {
	events := []sse.Event{{Name: "message_start", Data: []byte(exactStartData)}, {Name: "content_block_delta", Data: []byte(exactTextData)}, {Name: "message_delta", Data: []byte(exactDeltaData)}, {Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)}}
	if kind == "message_start" {
		events[0].Data = data
	} else {
		events[2] = sse.Event{Name: kind, Data: data}
	}
	st := NewAnthropicStream(anthropicTestContext(true)).(*anthropicStream)
	st.exact = exact
	var out []byte
	for _, ev := range events {
		chunk, e := translateEvent(st, ev)
		out = append(out, chunk...)
		if e != nil {
			return append(out, fmt.Sprintf("error %+v", *e)...), st.Usage()
		}
	}
	tail, e := translateFinish(st)
	out = append(out, tail...)
	if e != nil {
		out = append(out, fmt.Sprintf("error %+v", *e)...)
	}
	return out, st.Usage()
}

func TestAnthropicEventExact(t *testing.T) {
	for _, c := range exactEventCases {
		if taken := checkAnthropicEventExact(t, c.kind, []byte(c.data)); taken != c.taken {
			t.Errorf("%s %q: taken by the exact read %v, want %v", c.kind, c.data, taken, c.taken)
		}
	}
}

// The translator reads both events exactly compiled and decodes them
// under Yaegi (where the hop is the costlier).
func TestAnthropicStreamExactByDefault(t *testing.T) {
	if st := NewAnthropicStream(anthropicTestContext(false)).(*anthropicStream); st.exact == jsonscan.Interpreted {
		t.Fatalf("exact = %v, interpreted = %v", st.exact, jsonscan.Interpreted)
	}
}

// FuzzAnthropicEventExact: the same for any data of either event.
func FuzzAnthropicEventExact(f *testing.F) {
	for _, c := range exactEventCases {
		f.Add(c.kind == "message_start", []byte(c.data))
	}
	f.Fuzz(func(t *testing.T, start bool, data []byte) {
		kind := "message_delta"
		if start {
			kind = "message_start"
		}
		checkAnthropicEventExact(t, kind, data)
	})
}

// BenchmarkAnthropicEventRead: the two events of every stream, read
// exactly and decoded.
func BenchmarkAnthropicEventRead(b *testing.B) {
	events := []struct{ kind, data string }{{"message_start", exactEventCases[0].data}, {"message_delta", exactEventCases[6].data}}
	for _, ev := range events {
		data := []byte(ev.data)
		b.Run(ev.kind+"/exact", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var e anthropicWireEvent
				if !readAnthropicEventExact(ev.kind, data, &e) {
					b.Fatal("not taken")
				}
			}
		})
		b.Run(ev.kind+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var e anthropicWireEvent
				if err := json.Unmarshal(data, &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
