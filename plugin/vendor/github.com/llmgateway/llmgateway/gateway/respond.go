package gateway

import (
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// outcome is what the respond stage delivered: the account and record
// stages read it.
type outcome struct {
	status      int
	contentType string
	// body is a whole answer as written (the cacheable form); nil for a
	// streamed one.
	body     []byte
	streamed bool
	usage    translate.Usage
	// requestBytes is the size of the client's request, and
	// contentBytes the text a stream relayed (relayAccount.content), for
	// the usage estimate.
	requestBytes int
	contentBytes int64
	// err is what ended the answer badly, when it did: an error written
	// instead of the answer, or one written into a stream already under
	// way.
	err *apiError
}

// respond is the respond stage: it delivers the upstream's answer to the
// client through the route's wire format — a whole body, an event
// stream event by event (relayed, or translated to hub payloads and
// framed), or binary bytes as they arrive — and reports what it
// delivered.
func respond(c *call, x *exchange, o *outbound) *outcome {
	if o.stream {
		g := startWriteGuard(c.w, x.wd)
		defer stopWriteGuard(g)
		defer stopCallStream(c)
	}
	switch {
	case o.binary:
		return relayBinary(c, x, o)
	case !o.stream:
		return respondWhole(c, x, o, x.data)
	case !isEventStream(x.resp.Header):
		return respondNotAStream(c, x, o)
	case o.translator != nil:
		return relayTranslated(c, x, o, o.translator())
	}
	return relayEvents(c, x, o)
}

// respondNotAStream answers a stream request the upstream answered with
// a plain body: relayed whole when it speaks the client's shape, an error
// when it had to be translated.
func respondNotAStream(c *call, x *exchange, o *outbound) *outcome {
	if o.translator != nil {
		return failed(c, errBadUpstreamResponse(o.provider.name, "answered a streaming request without an event stream"))
	}
	data, tooBig, err := readCapped(x.body, maxUpstreamResponseBytes)
	if err != nil {
		return failed(c, exchangeFailure(o.provider.name, x.wd, c.r.Context(), err))
	}
	if tooBig {
		return failed(c, errUpstreamTooLarge(o.provider.name))
	}
	return respondWhole(c, x, o, data)
}

// failed writes e in place of the answer.
func failed(c *call, e *apiError) *outcome {
	fail(c, e)
	return &outcome{status: e.Status, err: e}
}

// respondWhole writes a whole answer: decoded to the hub shape when the
// backend translates, else the upstream's body with its relayed headers
// and status.
func respondWhole(c *call, x *exchange, o *outbound, data []byte) *outcome {
	out := &outcome{status: x.resp.StatusCode, contentType: x.resp.Header.Get("Content-Type"), body: data, requestBytes: len(c.req.raw)}
	if o.decode != nil {
		if e := decodeWhole(o, data, out); e != nil {
			return failed(c, attributed(o.provider, e))
		}
	} else {
		translate.UsageFromJSON(data, &out.usage)
		copyResponseHeaders(c.w.Header(), x.resp.Header)
	}
	noteWrite(&c.rec, out.status)
	writeJSONResponse(c.w, out.status, out.body)
	return out
}

// decodeWhole translates a whole 2xx answer into out (the hub shape,
// always a 200 JSON body).
func decodeWhole(o *outbound, data []byte, out *outcome) *apiError {
	body, u, e := o.decode(data)
	if e != nil {
		return e
	}
	out.status = http.StatusOK
	out.contentType = "application/json"
	out.body = body
	out.usage = u
	return nil
}

// stopCallStream ends the timer of c's stream, if any (stopStream).
func stopCallStream(c *call) {
	stopStream(c.sw)
}

// startStream writes and flushes an event stream's headers, so the
// client sees the response start before the first token, and starts the
// stream's writer (c.sw); keepalive, when not nil, is the format's
// keepalive event, written while the stream is silent (streamWriter).
// The flush is here, not in the relay: net/http writes the headers in
// it, which would grow a held stream's goroutine stack if done deeper.
func startStream(c *call, status int, keepalive []byte) {
	h := c.w.Header()
	if ct := c.format.streamContentType; ct != "" {
		h.Set("Content-Type", ct)
	} else if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	noteWrite(&c.rec, status)
	c.w.WriteHeader(status)
	f, _ := c.w.(http.Flusher)
	if f != nil {
		f.Flush()
	}
	c.sw = startStreamWriter(c, f, keepalive)
	if panicProbe != nil {
		panicProbe("stream", c.trace.requestID)
	}
}

// releaseRequestBodies lets go of the request's bodies once its stream
// is being relayed: no attempt follows, and the account stage reads only
// their size (outcome.requestBytes). A stream can stay open for many
// minutes, and thousands of them each holding their prompt two or three
// times (as read, as converted, as sent; attempt's sentBody lets go of
// the copy the transport holds) would cost more than the streams
// themselves. A tool loop keeps them for its next turn.
func releaseRequestBodies(c *call, o *outbound) {
	if c.loop != nil {
		return
	}
	c.req.raw = nil
	c.req.fields = nil
	if c.hubConv != nil && c.hubConv.hub != nil {
		c.hubConv.hub.raw = nil
		c.hubConv.hub.fields = nil
	}
	o.body = nil
}

// relayEvents relays an upstream event stream in the client's own wire
// shape, verbatim and event by event (relayEventStream), and, when it does not
// end cleanly (read error, stall, size cap, no terminator), appends the
// format's mid-stream error so the client can tell a cut stream from a
// finished one.
func relayEvents(c *call, x *exchange, o *outbound) *outcome {
	p := o.provider
	copyResponseHeaders(c.w.Header(), x.resp.Header)
	startStream(c, x.resp.StatusCode, nil)
	out := &outcome{status: x.resp.StatusCode, streamed: true, requestBytes: len(c.req.raw)}
	releaseRequestBodies(c, o)
	acct := &relayAccount{strip: o.stripUsage, startModel: o.startModel}
	res := relayEventStream(c.w, x.body, maxUpstreamResponseBytes, c.format.streamEndMark, c.format.isStreamEnd, nil, acct)
	out.usage = acct.usage
	out.contentBytes = acct.content
	if c.r.Context().Err() != nil || res.clientGone {
		clientLeft(c, out, p, res.events)
		return out
	}
	var e *apiError
	switch {
	case res.err != nil:
		e = streamReadFailure(p.name, x.wd, c.r.Context(), res.err)
	case res.partial:
		e = streamReadFailure(p.name, x.wd, c.r.Context(), io.EOF)
	case !res.sawEnd:
		e = errStreamTruncated(p.name, "ended without "+c.format.streamEndName)
	}
	endStream(c, c.sw, out, e, res.events)
	return out
}

// relayTranslated relays an upstream event stream of another wire shape:
// one upstream event in, its hub payloads out, framed by the client's
// format; what one upstream read brought is written and flushed at once.
func relayTranslated(c *call, x *exchange, o *outbound, st translate.StreamTranslator) *outcome {
	p := o.provider
	startStream(c, http.StatusOK, c.format.keepalive)
	out := &outcome{status: http.StatusOK, streamed: true, requestBytes: len(c.req.raw)}
	releaseRequestBodies(c, o)
	sw := c.sw
	rd := sse.NewReader(x.body, maxUpstreamResponseBytes)
	var payloads []translate.Payload
	frame := c.format.frame
	events := 0
	var e *apiError
	inBand := false // the translator wrote its own failure event (translatedFailure)
	for {
		ev, err := rd.Next()
		if err != nil {
			if c.r.Context().Err() != nil {
				out.usage = st.Usage()
				clientLeft(c, out, p, events)
				return out
			}
			if err == io.EOF && !rd.Partial() {
				payloads, e = st.Finish(payloads[:0])
				sw.buf = c.format.framePayloads(sw.buf, payloads)
				inBand = e != nil
				if e = attributed(p, e); e == nil {
					sw.buf = append(sw.buf, c.format.streamEnd...)
				}
				if len(sw.buf) > 0 {
					_ = streamWrite(sw, sw.buf)
				}
			} else {
				e = streamReadFailure(p.name, x.wd, c.r.Context(), err)
			}
			break
		}
		events++
		out.contentBytes += int64(eventTextLen(ev.Data))
		payloads, e = st.Event(ev, payloads[:0])
		// Framed here, not through framePayloads: under Yaegi each method
		// call costs more than the framing. The frames of the events one
		// upstream read completed are written and flushed together, once
		// the reader has no more of them (an in-band failure goes at once);
		// when that read also brought the body's end, they go with the
		// stream's end, written at once by the end's branch above.
		if len(payloads) > 0 {
			buf := sw.buf
			for i := 0; i < len(payloads); i++ {
				buf = frame(buf, payloads[i])
			}
			sw.buf = buf
		}
		if len(sw.buf) > 0 && (e != nil || !rd.Buffered() && !rd.Ended()) {
			werr := streamWrite(sw, sw.buf)
			sw.buf = sw.buf[:0]
			if werr != nil {
				// The client is gone, or stopped taking the stream (writeGuard).
				out.usage = st.Usage()
				clientLeft(c, out, p, events)
				return out
			}
		}
		if e != nil {
			e = attributed(p, e)
			inBand = true
			break
		}
	}
	out.usage = st.Usage()
	if e != nil {
		stopStream(sw)
		if fail := c.format.translatedFailure; fail != nil {
			// The format's failure event is the translator's: written in
			// band already, or asked for now.
			if !inBand {
				sw.buf = c.format.framePayloads(sw.buf[:0], fail(st, e, nil))
				sw.write(sw.buf)
			}
			out.err = e
			noteError(&c.rec, e)
			c.g.log.errorf("%s (after %d events)%s", e.Error(), events, c.trace.logTail)
			return out
		}
		endStream(c, sw, out, e, events)
	}
	return out
}

// endStream closes a stream that is still open towards the client: on a
// clean end nothing is left to write (a relayed stream carried its own
// terminator); on a failure the format's mid-stream error is written.
func endStream(c *call, sw *streamWriter, out *outcome, e *apiError, events int) {
	if e == nil {
		return
	}
	out.err = e
	noteError(&c.rec, e)
	c.g.log.errorf("%s (after %d events)%s", e.Error(), events, c.trace.logTail)
	sw.buf = c.format.streamError(sw.buf[:0], e)
	sw.write(sw.buf)
}

// clientLeft notes a stream the client abandoned.
func clientLeft(c *call, out *outcome, p *providerRuntime, events int) {
	e := upstreamFailure(apierr.ClassClientCancel, "client closed the request", nil)
	out.err = e
	noteError(&c.rec, e)
	c.g.log.infof("client closed the stream from provider %q after %d events%s", p.name, events, c.trace.logTail)
}

// relayBinary streams a binary answer (audio/speech) to the client as it
// arrives. A response over the size cap, or one cut by the upstream,
// aborts the client connection: there is no in-band way to signal it.
func relayBinary(c *call, x *exchange, o *outbound) *outcome {
	p := o.provider
	if x.resp.ContentLength > maxUpstreamResponseBytes {
		return failed(c, errUpstreamTooLarge(p.name))
	}
	h := c.w.Header()
	if ct := x.resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	if x.resp.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(x.resp.ContentLength, 10))
	}
	out := &outcome{status: x.resp.StatusCode, streamed: true}
	noteWrite(&c.rec, x.resp.StatusCode)
	c.w.WriteHeader(x.resp.StatusCode)
	flusher, _ := c.w.(http.Flusher)
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := x.body.Read(buf)
		if n > 0 {
			total += int64(n)
			if total > maxUpstreamResponseBytes {
				abort(c, out, errUpstreamTooLarge(p.name))
			}
			if _, werr := c.w.Write(buf[:n]); werr != nil {
				return out
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			if c.r.Context().Err() != nil {
				clientLeft(c, out, p, 0)
				return out
			}
			abort(c, out, streamReadFailure(p.name, x.wd, c.r.Context(), err))
		}
	}
}

// abort ends a binary answer whose headers are out: the record and the
// account stage still run (the deferred finish, and the request counted
// as made), then the connection is cut.
func abort(c *call, out *outcome, e *apiError) {
	out.err = e
	noteError(&c.rec, e)
	c.g.log.errorf("%s: aborting the binary stream%s", e.Error(), c.trace.logTail)
	account(c, out)
	panic(http.ErrAbortHandler)
}

// relayedResponseHeaders are the upstream headers a relayed answer
// passes on, under the names in relayedResponseNames (the upstream's
// X-Request-Id becomes X-Upstream-Request-Id: the client's X-Request-ID
// is the gateway's); everything else (cookies, provider account headers)
// stays behind.
var (
	relayedResponseHeaders = []string{"Content-Type", "X-Request-Id", "Openai-Processing-Ms", "Openai-Version"}
	relayedResponseNames   = []string{"Content-Type", "X-Upstream-Request-Id", "Openai-Processing-Ms", "Openai-Version"}
)

func copyResponseHeaders(dst, src http.Header) {
	for i := 0; i < len(relayedResponseHeaders); i++ {
		if v := src.Get(relayedResponseHeaders[i]); v != "" {
			dst.Set(relayedResponseNames[i], v)
		}
	}
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(h.Get("Content-Type"))), "text/event-stream")
}
