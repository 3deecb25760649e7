package integration_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/faultupstream"
)

// Upstream faults of the fault matrix: a connection reset mid-stream, a
// stall before the headers and mid-body, a 40 MiB answer. Each checks
// what the client sees, what the request record says (the access log
// line), that the user's counters equal what the client received, that
// no reservation is left held, and, for whole answers, that the cache
// kept nothing of the failure.

// ftStreamed is one streamed exchange as the client saw it.
type ftStreamed struct {
	status int
	header http.Header
	stream ftStream
	body   []byte // a non-stream answer's body
}

// ftStreamCall sends body to path and reads the answer as an event
// stream. hold, when not nil, is closed once the client has read
// holdAfter events carrying text (the fault upstream then strikes).
func ftStreamCall(t *testing.T, e *faultEnv, path string, u ftUser, body []byte, hold chan struct{}, holdAfter int) ftStreamed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ftWait)
	defer cancel()
	resp, err := ftRequest(ctx, t, e.gw.URL, path, u, body)
	require.NoError(t, err)
	defer resp.Body.Close()
	out := ftStreamed{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		out.body, _ = io.ReadAll(resp.Body)
		return out
	}
	seen := 0
	var once sync.Once
	out.stream = ftReadStream(resp.Body, func(ev ftEvent) {
		if hold != nil && (ftStream{events: []ftEvent{ev}}).text() > 0 {
			if seen++; seen == holdAfter {
				once.Do(func() { close(hold) })
			}
		}
	})
	return out
}

func TestFaultsUpstreamReset(t *testing.T) {
	e := startFaultEnv(t, nil)

	t.Run("chat_stream", func(t *testing.T) {
		u := e.user()
		hold := make(chan struct{})
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Reset, After: 3, Hold: hold}) // role + 2 content chunks
		body := ftChat(ftOpenAIModel, "reset the chat stream", true)
		got := ftStreamCall(t, e, "/v1/chat/completions", u, body, hold, 2)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Struck(), ftWait, "the upstream reset")

		require.Equal(t, http.StatusOK, got.status)
		require.NoError(t, got.stream.err, "the gateway ends a cut stream cleanly, with an error event")
		assert.Equal(t, 2, got.stream.contentEvents())
		assert.False(t, got.stream.has("[DONE]"), "a cut stream has no [DONE]")
		assert.Equal(t, "upstream_stream_interrupted", ftStreamErrorCode(got.stream.last()), "last event: %+v", got.stream.last())

		line := e.ftAccess(t, got.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_stream_interrupted", line["error"])
		e.assertAccounted(t, u, 1, ceil4(int64(len(body))), ceil4(got.stream.text()))
		ev := e.awaitEvent(t, u, "upstream")
		assert.Equal(t, "oa", ev.Provider)
	})

	t.Run("passthrough_stream", func(t *testing.T) {
		u := e.user()
		hold := make(chan struct{})
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Reset, After: 3, Hold: hold})
		body := ftChat(ftOpenAIModel, "reset the passthrough stream", true)
		got := ftStreamCall(t, e, "/oa/v1/chat/completions", u, body, hold, 2)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Struck(), ftWait, "the upstream reset")

		require.Equal(t, http.StatusOK, got.status)
		// Passthrough relays the upstream's bytes untouched: it cannot
		// add an event, so it aborts the client's connection — the
		// client's HTTP library reports an incomplete body.
		require.Error(t, got.stream.err, "a cut passthrough stream must not end like a complete one")
		assert.Equal(t, 2, got.stream.contentEvents())
		assert.False(t, got.stream.has("[DONE]"))

		line := e.ftAccess(t, got.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_stream_interrupted", line["error"])
		e.assertAccounted(t, u, 1, ceil4(int64(len(body))), ceil4(got.stream.text()))
	})

	t.Run("anthropic_to_openai_stream", func(t *testing.T) {
		u := e.user()
		hold := make(chan struct{})
		// message_start, content_block_start, ping, 2 text deltas.
		e.an.Set(faultupstream.Fault{Kind: faultupstream.Reset, After: 5, Hold: hold})
		body := ftChat(ftClaudeModel, "reset translated stream", true)
		got := ftStreamCall(t, e, "/v1/chat/completions", u, body, hold, 2)
		up := e.an.Next(t, ftWait)
		faultupstream.Await(t, up.Struck(), ftWait, "the upstream reset")

		require.Equal(t, http.StatusOK, got.status)
		require.NoError(t, got.stream.err)
		assert.Equal(t, 2, got.stream.contentEvents())
		assert.False(t, got.stream.has("[DONE]"))
		assert.Equal(t, "upstream_stream_interrupted", ftStreamErrorCode(got.stream.last()), "last event: %+v", got.stream.last())

		line := e.ftAccess(t, got.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_stream_interrupted", line["error"])
		// message_start reported the input (and 1 output token); the
		// output is at least what was streamed.
		e.assertAccounted(t, u, 1, ftAnthropicPrompt(3), max(1, ceil4(got.stream.text())))
	})

	t.Run("openai_to_messages_stream", func(t *testing.T) {
		u := e.user()
		hold := make(chan struct{})
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Reset, After: 3, Hold: hold})
		body := ftMessages(ftOpenAIModel, "reset the messages stream", true)
		got := ftStreamCall(t, e, "/v1/messages", u, body, hold, 2)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Struck(), ftWait, "the upstream reset")

		require.Equal(t, http.StatusOK, got.status)
		require.NoError(t, got.stream.err)
		assert.Equal(t, 2, got.stream.contentEvents())
		last := got.stream.last()
		assert.Equal(t, "error", last.name, "a cut Messages stream ends with an error event: %+v", last)
		assert.Contains(t, last.data, `"api_error"`)
		for _, ev := range got.stream.events {
			assert.NotEqual(t, "message_stop", ev.name, "a cut stream has no message_stop")
		}

		line := e.ftAccess(t, got.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_stream_interrupted", line["error"])
		e.assertAccounted(t, u, 1, ceil4(int64(len(body))), ceil4(got.stream.text()))
	})
}

// TestFaultsUpstreamStall: an upstream that stops making progress is cut
// by the requestTimeout watchdog — a 502 upstream_timeout when nothing
// was sent to the client yet, an error event in a stream under way —
// and the upstream request is cancelled.
func TestFaultsUpstreamStall(t *testing.T) {
	e := startFaultEnv(t, nil)

	for _, stream := range []bool{false, true} {
		name := "before_headers"
		if stream {
			name += "_stream"
		}
		t.Run(name, func(t *testing.T) {
			u := e.user()
			e.oa.Set(faultupstream.Fault{Kind: faultupstream.StallHeaders})
			body := ftChat(ftOpenAIModel, "stall before the headers "+name, stream)
			res := ftCall(t, e.gw.URL, "/v1/chat/completions", u, body)
			up := e.oa.Next(t, ftWait)
			faultupstream.Await(t, up.Gone(), ftWait, "the stalled upstream request cancelled")

			require.NoError(t, res.err)
			require.Equal(t, http.StatusBadGateway, res.status, "%s", res)
			assert.Equal(t, "application/json", res.header.Get("Content-Type"), "no header went out: a plain error answer")
			assert.Equal(t, "upstream_timeout", rtErrorCode(t, res.body))
			assert.Contains(t, string(res.body), `provider \"oa\"`)
			assert.GreaterOrEqual(t, res.end.Sub(res.start), ftTimeout, "the watchdog cannot fire before requestTimeout")

			line := e.ftAccess(t, res.header.Get("X-Request-ID"))
			assert.Equal(t, "502", line["status"])
			assert.Equal(t, "upstream_timeout", line["error"])
			e.assertAccounted(t, u, 1, 0, 0)
			assert.Equal(t, http.StatusBadGateway, e.awaitEvent(t, u, "timeout").Status)
		})
	}

	t.Run("mid_body", func(t *testing.T) {
		u := e.user()
		// The mock's JSON answer declares its length; 40 bytes of it come.
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Stall, After: 40})
		body := ftChat(ftOpenAIModel, "stall in the middle of the body", false)
		res := ftCall(t, e.gw.URL, "/v1/chat/completions", u, body)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Gone(), ftWait, "the stalled upstream request cancelled")

		require.NoError(t, res.err)
		require.Equal(t, http.StatusBadGateway, res.status, "%s", res)
		assert.Equal(t, "upstream_timeout", rtErrorCode(t, res.body))
		line := e.ftAccess(t, res.header.Get("X-Request-ID"))
		assert.Equal(t, "502", line["status"])
		assert.Equal(t, "upstream_timeout", line["error"])
		e.assertAccounted(t, u, 1, 0, 0)

		ftAssertCacheUntouched(t, e, u, body, 1)
	})

	t.Run("mid_stream", func(t *testing.T) {
		u := e.user()
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Stall, After: 3})
		body := ftChat(ftOpenAIModel, "stall in the middle of the stream", true)
		got := ftStreamCall(t, e, "/v1/chat/completions", u, body, nil, 0)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Gone(), ftWait, "the stalled upstream request cancelled")

		require.Equal(t, http.StatusOK, got.status)
		require.NoError(t, got.stream.err)
		assert.Equal(t, 2, got.stream.contentEvents())
		assert.False(t, got.stream.has("[DONE]"))
		assert.Equal(t, "upstream_timeout", ftStreamErrorCode(got.stream.last()), "last event: %+v", got.stream.last())
		line := e.ftAccess(t, got.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_timeout", line["error"])
		e.assertAccounted(t, u, 1, ceil4(int64(len(body))), ceil4(got.stream.text()))
	})
}

// ftAssertCacheUntouched checks that a failed answer left nothing in the
// response cache: the same request, answered normally now, is a miss
// that succeeds, and the one after it a hit. before is how many requests
// u made so far (the failed one included, nothing accounted for it).
func ftAssertCacheUntouched(t *testing.T, e *faultEnv, u ftUser, body []byte, before int64) {
	t.Helper()
	e.oa.Set(faultupstream.Fault{})
	miss := ftCall(t, e.gw.URL, "/v1/chat/completions", u, body)
	require.NoError(t, miss.err)
	require.Equal(t, http.StatusOK, miss.status, "%s", miss)
	assert.Equal(t, "miss", miss.header.Get("X-Llmgw-Cache"), "the failed answer must not have been cached")
	usage := rlReportedUsage(t, miss.body, false)
	require.NotNil(t, usage)
	e.oa.Next(t, ftWait)
	e.ftAccess(t, miss.header.Get("X-Request-ID"))
	hit := ftCall(t, e.gw.URL, "/v1/chat/completions", u, body)
	require.NoError(t, hit.err)
	require.Equal(t, http.StatusOK, hit.status, "%s", hit)
	assert.Equal(t, "hit", hit.header.Get("X-Llmgw-Cache"))
	assert.JSONEq(t, string(miss.body), string(hit.body))
	e.ftAccess(t, hit.header.Get("X-Request-ID"))
	assert.Zero(t, e.oa.Pending(), "a hit never reaches the upstream")
	// The hit counts a request, no tokens.
	e.assertAccounted(t, u, before+2, usage.PromptTokens, usage.CompletionTokens)
}

// TestFaultsUpstreamHuge: a 40 MiB answer, over the 32 MiB response cap.
func TestFaultsUpstreamHuge(t *testing.T) {
	e := startFaultEnv(t, nil)
	const size = 40 << 20
	const capBytes = 32 << 20

	t.Run("chat", func(t *testing.T) {
		u := e.user()
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Huge, Size: size})
		body := ftChat(ftOpenAIModel, "a forty mebibyte answer", false)
		res := ftCall(t, e.gw.URL, "/v1/chat/completions", u, body)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Done(), ftWait, "the upstream handler ended")

		require.NoError(t, res.err)
		require.Equal(t, http.StatusBadGateway, res.status, "%.300s", res)
		assert.Equal(t, "upstream_response_too_large", rtErrorCode(t, res.body))
		assert.Contains(t, string(res.body), "32 MiB")
		assert.Less(t, up.Bytes.Load(), int64(size), "the gateway stopped reading at the cap")
		line := e.ftAccess(t, res.header.Get("X-Request-ID"))
		assert.Equal(t, "502", line["status"])
		assert.Equal(t, "upstream_response_too_large", line["error"])
		e.assertAccounted(t, u, 1, 0, 0)

		ftAssertCacheUntouched(t, e, u, body, 1)
	})

	t.Run("chat_stream", func(t *testing.T) {
		u := e.user()
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Huge, Stream: true, Size: size, EventBytes: 64 << 10})
		body := ftChat(ftOpenAIModel, "a forty mebibyte stream", true)
		got := ftStreamCall(t, e, "/v1/chat/completions", u, body, nil, 0)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Done(), ftWait, "the upstream handler ended")

		require.Equal(t, http.StatusOK, got.status)
		require.NoError(t, got.stream.err)
		assert.False(t, got.stream.has("[DONE]"))
		assert.Equal(t, "upstream_response_too_large", ftStreamErrorCode(got.stream.last()), "last event: %.300s", got.stream.last().data)
		text := got.stream.text()
		assert.Greater(t, text, int64(capBytes*9/10), "the stream is relayed up to the cap")
		assert.Less(t, text, int64(capBytes), "and no further")
		line := e.ftAccess(t, got.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_response_too_large", line["error"])
		e.assertAccounted(t, u, 1, ceil4(int64(len(body))), ceil4(text))
	})

	t.Run("passthrough_declared", func(t *testing.T) {
		u := e.user()
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Huge, Size: size})
		body := ftChat(ftOpenAIModel, "a forty mebibyte passthrough answer", false)
		res := ftCall(t, e.gw.URL, "/oa/v1/chat/completions", u, body)
		e.oa.Next(t, ftWait)

		require.NoError(t, res.err)
		require.Equal(t, http.StatusBadGateway, res.status, "%.300s", res)
		assert.Equal(t, "upstream_response_too_large", rtErrorCode(t, res.body))
		line := e.ftAccess(t, res.header.Get("X-Request-ID"))
		assert.Equal(t, "502", line["status"])
		assert.Equal(t, "upstream_response_too_large", line["error"])
		e.assertAccounted(t, u, 1, 0, 0)
	})

	t.Run("passthrough_undeclared", func(t *testing.T) {
		u := e.user()
		e.oa.Set(faultupstream.Fault{Kind: faultupstream.Huge, Size: size, Undeclared: true})
		body := ftChat(ftOpenAIModel, "a forty mebibyte chunked passthrough answer", false)
		res := ftCall(t, e.gw.URL, "/oa/v1/chat/completions", u, body)
		up := e.oa.Next(t, ftWait)
		faultupstream.Await(t, up.Done(), ftWait, "the upstream handler ended")

		require.Equal(t, http.StatusOK, res.status, "the headers went out before the cap was reached")
		require.Error(t, res.err, "an answer cut at the cap must not end like a complete one")
		assert.LessOrEqual(t, len(res.body), capBytes)
		line := e.ftAccess(t, res.header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "upstream_response_too_large", line["error"])
		e.assertAccounted(t, u, 1, 0, 0)
	})
}
