package gateway

import (
	"bytes"
	"io"
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/jsonscan"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The verbatim relay of an upstream event stream, built on the one SSE
// codec (internal/sse), which the passthrough usage sniffer and the
// translated streams read with too.

// sseRelayResult says how a relayed event stream ended.
type sseRelayResult struct {
	bytes    int64
	events   int   // events with at least one field
	sawEnd   bool  // the stream's terminator arrived (isEnd)
	err      error // read or write failure, or the size cap; nil for a clean end
	tooLarge bool
	partial  bool // the stream ended inside an event, which was dropped
	// clientGone: err is a failed write to the client (it left, or
	// stopped taking the stream: writeGuard).
	clientGone bool
}

// usageMark is in every event that can carry usage ("usage",
// "usageMetadata"): translate.UsageFromJSON's own gate.
var usageMark = []byte("sage")

// relaySSE copies an event stream to w verbatim, one complete event at a
// time, flushing after each, so every token reaches the client as soon
// as the upstream produced it. An event is held back until its blank
// line; one cut short by the end of the stream is dropped, so an error
// event appended afterwards is always parseable on its own. w must be
// the writer the host handed the gateway: its Flush is what pushes bytes
// to the client. isEnd recognises the terminator; onEvent, when not nil,
// sees every event with a field before it is written.
func relaySSE(w http.ResponseWriter, body io.Reader, limit int64, isEnd func(sse.Event) bool, onEvent func(sse.Event)) sseRelayResult {
	return relayEventStream(w, body, limit, nil, isEnd, onEvent, nil)
}

// relayAccount is what a relay of an openai-type stream reads for the
// account stage, and how it treats the stream's usage
// (relayEventStream's acct).
type relayAccount struct {
	usage translate.Usage
	// content is the bytes of the text the client was sent: each event's
	// first "content" string (or, when that is absent or empty, its tool
	// call "arguments" or "reasoning_content"/"reasoning" string),
	// counted as sent, JSON escapes included. It is the completion
	// estimate of a stream that reports no usage.
	content int64
	// strip: the gateway added stream_options.include_usage, so the
	// client gets the stream it asked for: the usage-only chunk (with
	// "choices":[]) is read and dropped, and the "usage":null member of
	// every other chunk is removed.
	strip bool
	// startModel, when set, is written as the model of the first
	// message_start event (a Messages stream relayed with the upstream's
	// model id replaced by the client's), then cleared.
	startModel []byte
}

// relayEventStream is relaySSE made cheap for the interpreter, which
// runs the core inside Traefik at 10–100× the cost of compiled code for
// every loop turn, call and struct of ours, but runs the standard
// library compiled. So it takes what one upstream Read delivered as a
// single run of complete events (sse.Reader.Events), cuts it into events
// with bytes.Index, and looks inside an event only when a compiled
// bytes.Contains says it may matter: isEnd sees only the events holding
// endMark (every event when endMark is nil), and, when acct is not nil,
// an event holding usageMark has its usage merged into acct.usage, each
// event's text is counted into acct.content with one bytes.Index and one
// bytes.IndexByte, and with acct.strip the usage the gateway asked for is
// taken out of what the client sees (only runs holding usageNull pay for
// that). A run's events, as the client gets them, are compacted in place
// in the run and written and flushed together, once the run is
// relayed: one write and one flush per upstream read, as a bare
// httputil.ReverseProxy makes, never holding an event back for one that
// has not arrived.
func relayEventStream(w http.ResponseWriter, body io.Reader, limit int64, endMark []byte, isEnd func(sse.Event) bool, onEvent func(sse.Event), acct *relayAccount) sseRelayResult {
	var res sseRelayResult
	flusher, _ := w.(http.Flusher)
	rd := sse.NewReader(body, limit)
	rd.Verbatim = true
	count := acct != nil
	for {
		run, err := rd.Events()
		if err != nil {
			res.bytes = rd.BytesRead()
			res.partial = rd.Partial()
			if err != io.EOF {
				res.err = err
				res.tooLarge = err == sse.ErrTooLarge
			}
			return res
		}
		// Without a '\r' in the run, every event ends at the first "\n\n"
		// (or is a lone blank line). A mark absent from the run is absent
		// from each of its events.
		lfOnly := bytes.IndexByte(run, '\r') < 0
		mayEnd := isEnd != nil && (endMark == nil || bytes.Contains(run, endMark))
		mayUsage := count && bytes.Contains(run, usageMark)
		mayNull := mayUsage && acct.strip && bytes.Contains(run, usageNull)
		mayStart := count && acct.startModel != nil && bytes.Contains(run, messageStartMark)
		// compact: an event of the run may be dropped, cut or replaced,
		// so run[:kept] is what the client gets of the events before pos
		// (otherwise that is the whole run); wrote: some of the run went
		// out already (writeRelayed).
		compact := mayNull || mayStart || mayUsage && acct.strip
		kept, pos := 0, 0
		wrote := false
		for pos < len(run) {
			rest := run[pos:]
			n := 0
			if lfOnly && rest[0] != '\n' {
				n = bytes.Index(rest, lf2) + 2
			} else {
				n = sse.EventLen(rest)
			}
			raw := rest[:n:n]
			pos += n
			// An event has a field unless all its lines are comments or it
			// is a lone blank line; only those start with ':', '\n' or '\r'
			// (a field line starting with '\r' is possible, and checked).
			field := true
			if c := raw[0]; c == ':' || c == '\n' || c == '\r' {
				field = sse.ParseEvent(raw).HasField
			}
			replaced := false
			if field {
				res.events++
				if count {
					// The needle skips the key's opening quote: '"' is in
					// every key, 'c' much rarer, so bytes.Index has fewer
					// false starts. The text's closing quote is the first '"'
					// after the key's, unless an escape precedes it
					// (jsonscan.EndOfString then).
					q := 0
					if k := bytes.Index(raw, contentKey[1:]) + len(contentKey) - 1; k >= len(contentKey) && raw[k-len(contentKey)] == '"' {
						q = bytes.IndexByte(raw[k:], '"')
						if q > 0 && raw[k+q-1] == '\\' {
							q = jsonscan.EndOfString(raw, k-1) - k
						}
					}
					if q <= 0 && (bytes.Contains(raw, argumentsMark) || bytes.Contains(raw, reasoningMark) || bytes.Contains(raw, textMark)) {
						q = otherTextLen(raw)
					}
					acct.content += int64(q)
				}
				if mayNull {
					raw = dropUsageNull(raw) // in place: shorter, same start
				}
				if mayStart && acct.startModel != nil && bytes.Contains(raw, messageStartMark) {
					if moved := withStartModel(raw, acct.startModel); !bytes.Equal(moved, raw) {
						raw, replaced = moved, true
					}
					acct.startModel = nil
				}
				if onEvent != nil || mayEnd && (endMark == nil || bytes.Contains(raw, endMark)) ||
					mayUsage && bytes.Contains(raw, usageMark) && !onlyNullUsage(raw) && translate.MayHoldUsage(raw) {
					ev := sse.ParseEvent(raw)
					if mayEnd && isEnd(ev) {
						res.sawEnd = true
					}
					if mayUsage {
						translate.UsageFromJSON(ev.Data, &acct.usage)
						if acct.strip && bytes.Contains(ev.Data, emptyChoices) && translate.MayHoldUsage(ev.Data) {
							continue // the usage-only chunk the client did not ask for
						}
					}
					if onEvent != nil {
						onEvent(ev)
					}
				}
			}
			if !compact {
				continue
			}
			if replaced {
				// Longer than its place in the run (message_start, once per
				// stream): what came before goes out first, then the event,
				// and the rest of the run is compacted from its start.
				if werr := writeRelayed(w, run[:kept], raw); werr != nil {
					return relayWriteFailed(res, rd, werr)
				}
				run, pos, kept = run[pos:], 0, 0
				wrote = true
				continue
			}
			// Compact: the event moves down over what was dropped or cut
			// from the events before it (copy handles the overlap).
			at := pos - n
			if kept != at {
				copy(run[kept:], raw)
			}
			kept += len(raw)
		}
		if !compact {
			kept = len(run)
		}
		if kept > 0 {
			if _, werr := w.Write(run[:kept]); werr != nil {
				return relayWriteFailed(res, rd, werr)
			}
		}
		if flusher != nil && (kept > 0 || wrote) {
			flusher.Flush()
		}
	}
}

// writeRelayed writes a run's kept events and then one event of its own
// (unflushed: the run's flush follows).
func writeRelayed(w http.ResponseWriter, kept, event []byte) error {
	if len(kept) > 0 {
		if _, err := w.Write(kept); err != nil {
			return err
		}
	}
	_, err := w.Write(event)
	return err
}

// relayWriteFailed is the result of a relay whose write to the client
// failed (it left, or stopped taking the stream: writeGuard).
func relayWriteFailed(res sseRelayResult, rd *sse.Reader, err error) sseRelayResult {
	res.bytes = rd.BytesRead()
	res.err = err
	res.clientGone = true
	return res
}

// dropUsageNull removes the top-level ,"usage":null member OpenAI puts
// last in every chunk of a stream with include_usage, in place (the run
// is the relay's until the next read). A chunk that has it anywhere else
// is left as it is.
func dropUsageNull(raw []byte) []byte {
	k := bytes.LastIndex(raw, usageNull)
	if k < 1 || raw[k-1] != ',' || raw[k+len(usageNull)] != '}' {
		return raw
	}
	if c := raw[k+len(usageNull)+1]; c != '\n' && c != '\r' {
		return raw
	}
	copy(raw[k-1:], raw[k+len(usageNull):])
	return raw[:len(raw)-len(usageNull)-1]
}

// onlyNullUsage says an event's one usage mark is the "usage":null that
// closes it (every chunk of an include_usage stream but the usage chunk):
// two compiled calls instead of MayHoldUsage's interpreted scan.
func onlyNullUsage(raw []byte) bool {
	if bytes.Count(raw, usageMark) != 1 {
		return false
	}
	k := bytes.LastIndex(raw, usageNull) + len(usageNull)
	return k >= len(usageNull) && raw[k] == '}' && len(raw)-k <= 5
}

// otherTextLen is the length of an event's text once a caller's gate
// (one of the marks below) let it through: an Anthropic text delta's
// text, else the content string, else the tool-call arguments, reasoning
// or other text; 0 when it has none. An Anthropic text
// delta — most events of a relayed or translated Messages stream, which
// hold no "content" string — is found with one look (under Yaegi, 3
// calls instead of 8).
func otherTextLen(raw []byte) int {
	if k := bytes.Index(raw, anthropicTextDelta) + len(anthropicTextDelta); k >= len(anthropicTextDelta) {
		return jsonscan.EndOfString(raw, k-1) - k
	}
	if k := bytes.Index(raw, contentKey) + len(contentKey); k >= len(contentKey) {
		if q := jsonscan.EndOfString(raw, k-1) - k; q > 0 {
			return q
		}
	}
	keys := otherTextKeys
	for i := 0; i < len(keys); i++ {
		if k := bytes.Index(raw, keys[i]) + len(keys[i]); k >= len(keys[i]) {
			return jsonscan.EndOfString(raw, k-1) - k
		}
	}
	return 0
}

var (
	// contentKey starts a chunk's delta text; the other keys start a
	// tool call's arguments and the two spellings of reasoning text.
	contentKey = []byte(`"content":"`)
	// Anthropic's text, partial_json and thinking deltas and Gemini's
	// text parts count too (a relayed Messages stream, a translated
	// stream's upstream events).
	otherTextKeys = [][]byte{[]byte(`"arguments":"`), []byte(`"reasoning_content":"`), []byte(`"reasoning":"`),
		[]byte(`"text":"`), []byte(`"partial_json":"`), []byte(`"thinking":"`)}
	// argumentsMark and reasoningMark (with textMark) gate otherTextLen:
	// an event without any (the role, finish and usage chunks, [DONE])
	// costs a few compiled calls, not a call of ours.
	argumentsMark = []byte(`"arguments"`)
	reasoningMark = []byte(`"reasoning`)
	// textMark gates the Anthropic and Gemini keys: every one of their
	// text-bearing events holds it ("text", "partial_json" and
	// "thinking" deltas say "type":"…_delta"; Gemini parts say "text").
	textMark = []byte(`_delta"`)
	// usageNull is in every chunk of an include_usage stream but the
	// usage chunk; emptyChoices marks the usage chunk.
	usageNull    = []byte(`"usage":null`)
	emptyChoices = []byte(`"choices":[]`)
)

// lf2 ends an event: a line's "\n", then the blank line.
var lf2 = []byte("\n\n")

// eventTextLen is the text an upstream event carries, in bytes as sent
// (JSON escapes included): what relayEventStream counts per event, for
// the translated relay. 0 when it carries none.
func eventTextLen(raw []byte) int {
	// The translated upstreams' text marks first: an Anthropic or Gemini
	// text event passes the gate with one look.
	if !bytes.Contains(raw, textMark) && !bytes.Contains(raw, geminiTextMark) && !bytes.Contains(raw, contentKey) &&
		!bytes.Contains(raw, argumentsMark) && !bytes.Contains(raw, reasoningMark) {
		return 0
	}
	return otherTextLen(raw)
}

// anthropicTextDelta starts an Anthropic text delta's text.
var anthropicTextDelta = []byte(`{"type":"text_delta","text":"`)

// geminiTextMark is in a Gemini event with a text part.
var geminiTextMark = []byte(`"text":"`)
