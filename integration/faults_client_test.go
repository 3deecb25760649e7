package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/faultupstream"
)

// Client faults of the fault matrix: a client that stops reading a
// stream (its TCP window fills while the connection stays open), and a
// client that goes away before the answer or in the middle of a stream.

// ftSlowClient is a client whose connections have a small receive
// buffer, so that a stream it stops reading fills its TCP window after
// a few KiB instead of megabytes.
func ftSlowClient() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// ftPromptEstimate is the prompt tokens of a stream that reported none:
// ceil(request bytes / 4).
func ftPromptEstimate(body []byte) int64 { return ceil4(int64(len(body))) }

var ftSeq atomic.Int64

// ftRequestID is a request id of the test's own, so that a request the
// client abandons before any answer can still be found in the log.
func ftRequestID(what string) string {
	return fmt.Sprintf("faults-%s-%d-%d", what, time.Now().UnixNano(), ftSeq.Add(1))
}

// TestFaultsClientSlowReader: a client that reads the first event of an
// endless stream and then nothing, its connection open. The relay blocks
// on the full window and stops reading the upstream, so the watchdog
// releases the upstream after requestTimeout; one timeout later the
// write to the client fails, and the stream is recorded (client gone)
// and accounted with the text relayed — what the client can still read
// from its buffers, give or take the one event being written when the
// connection was cut.
func TestFaultsClientSlowReader(t *testing.T) {
	e := startFaultEnv(t, nil)
	const eventText = 16 << 10

	cases := []struct {
		name, path, model string
		up                *faultupstream.Server
		prompt            func(body []byte) int64 // the input tokens accounted
	}{
		{"chat_stream", "/v1/chat/completions", ftOpenAIModel, e.oa, ftPromptEstimate},
		{"passthrough_stream", "/oa/v1/chat/completions", ftOpenAIModel, e.oa, ftPromptEstimate},
		{"anthropic_to_openai_stream", "/v1/chat/completions", ftClaudeModel, e.an,
			func([]byte) int64 { return faultupstream.AnthropicInputTokens }},
		{"openai_to_messages_stream", "/v1/messages", ftOpenAIModel, e.oa, ftPromptEstimate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := e.user()
			tc.up.Set(faultupstream.Fault{Kind: faultupstream.Endless, EventBytes: eventText})
			body := ftChat(tc.model, "a stream nobody reads "+tc.name, true)
			if strings.HasPrefix(tc.path, "/v1/messages") {
				body = ftMessages(tc.model, "a stream nobody reads "+tc.name, true)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*ftWait)
			defer cancel()
			resp, err := ftRequestVia(ctx, t, ftSlowClient(), e.gw.URL, tc.path, u, body, "")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			br := bufio.NewReaderSize(resp.Body, 4096)
			first := ftReadStreamN(t, br, 1)

			// The client reads nothing more; the upstream is released.
			up := tc.up.Next(t, ftWait)
			faultupstream.Await(t, up.Gone(), ftWait, "the upstream released while the client does not read")
			// The request ends while the client still holds its connection.
			line := e.ftAccess(t, resp.Header.Get("X-Request-ID"))
			assert.Equal(t, "200", line["status"])
			assert.Equal(t, "client_closed_request", line["error"])
			got := e.counters(t, u)
			assert.Zero(t, e.held(t, u), "no reservation left held")

			// What the client can still read ends in a cut, not in [DONE].
			rest := ftReadStream(br, nil)
			require.Error(t, rest.err, "the connection was cut: the body is incomplete")
			assert.False(t, rest.has("[DONE]"))
			received := first.text() + rest.text()
			assert.Equal(t, int64(1), got.Requests)
			assert.Equal(t, tc.prompt(body), got.TokensIn)
			assert.GreaterOrEqual(t, got.TokensOut, ceil4(received), "accounted at least what the client received")
			assert.LessOrEqual(t, got.TokensOut, ceil4(received+eventText), "and at most the one event being written more")
			assert.Less(t, received, up.Bytes.Load(), "the upstream sent more than the client took")
		})
	}
}

// TestFaultsClientGone: a client that goes away while the upstream is
// still thinking, or in the middle of a stream. The upstream request is
// cancelled at once — the provider here has a requestTimeout of a
// minute, so the watchdog cannot be what ended it — and the request is
// recorded as client_closed_request (499 when no answer had started)
// and accounted: nothing for an answer that never came, the text relayed
// for a stream.
func TestFaultsClientGone(t *testing.T) {
	e := startFaultEnv(t, nil)

	for _, stream := range []bool{false, true} {
		name := "before_headers"
		if stream {
			name += "_stream"
		}
		t.Run(name, func(t *testing.T) {
			u := e.user()
			e.ol.Set(faultupstream.Fault{Kind: faultupstream.StallHeaders})
			body := ftChat(ftLongModel, "leave before the answer "+name, stream)
			id := ftRequestID(name)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				resp, err := ftRequestVia(ctx, t, ftClient, e.gw.URL, "/v1/chat/completions", u, body, id)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			up := e.ol.Next(t, ftWait)
			faultupstream.Await(t, up.Struck(), ftWait, "the upstream holding the request")
			cancel()
			faultupstream.Await(t, up.Gone(), ftWait, "the upstream request cancelled after the client left")
			select {
			case err := <-errc:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(ftWait):
				t.Fatal("the client's request did not end")
			}

			line := e.ftAccess(t, id)
			assert.Equal(t, "499", line["status"])
			assert.Equal(t, "client_closed_request", line["error"])
			assert.Equal(t, "1", line["attempts"])
			e.assertAccounted(t, u, 1, 0, 0)
		})
	}

	t.Run("mid_stream", func(t *testing.T) {
		u := e.user()
		e.ol.Set(faultupstream.Fault{Kind: faultupstream.Stall, After: 3}) // role + 2 content chunks, then nothing
		body := ftChat(ftLongModel, "leave in the middle of the stream", true)
		ctx, cancel := context.WithTimeout(context.Background(), ftWait)
		defer cancel()
		resp, err := ftRequestVia(ctx, t, ftClient, e.gw.URL, "/v1/chat/completions", u, body, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var seen ftStream
		br := bufio.NewReader(resp.Body)
		for seen.contentEvents() < 2 {
			s := ftReadStreamN(t, br, 1)
			seen.events = append(seen.events, s.events...)
		}
		up := e.ol.Next(t, ftWait)
		faultupstream.Await(t, up.Struck(), ftWait, "the upstream stalling")
		resp.Body.Close() // the client leaves
		faultupstream.Await(t, up.Gone(), ftWait, "the upstream request cancelled after the client left")

		line := e.ftAccess(t, resp.Header.Get("X-Request-ID"))
		assert.Equal(t, "200", line["status"])
		assert.Equal(t, "client_closed_request", line["error"])
		e.assertAccounted(t, u, 1, ceil4(int64(len(body))), ceil4(seen.text()))
	})
}

// ftReadStreamN reads n events from br.
func ftReadStreamN(t *testing.T, br *bufio.Reader, n int) ftStream {
	t.Helper()
	var s ftStream
	var data []string
	name := ""
	for len(s.events) < n {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(data) > 0 || name != "" {
				s.events = append(s.events, ftEvent{name: name, data: strings.Join(data, "\n")})
			}
			name, data = "", nil
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return s
}
