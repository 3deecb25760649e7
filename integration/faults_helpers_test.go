package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/faultupstream"
	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
	"github.com/llmgateway/llmgateway/integration/redisproc"
)

// The fault matrix (README "Hardening"): the real binary, a real
// redis-server and fault-injecting upstreams (integration/faultupstream).
// Every scenario has a user of its own, so that its counters, read
// through the admin API, are exactly what its requests accounted; every
// wait has a deadline and waits on an event (the upstream's channels,
// the request's access log line), never on a sleep.

const (
	ftOpenAIModel = "gpt-5-mini"
	ftClaudeModel = "claude-sonnet-4-5"
	ftLongModel   = "gpt-4o-mini"
	ftLongTimeout = time.Minute
	ftAdminKey    = "sk-faults-admin"
	// ftTimeout is the gateway's requestTimeout in these tests: small,
	// so that the stalls the matrix waits for cost a second each.
	ftTimeout = time.Second
	// ftWait bounds every wait for something the gateway or the
	// upstream must do within a few timeouts; generous, for a loaded
	// machine.
	ftWait = 20 * time.Second
	// ftUsers is how many scenario users the configuration holds.
	ftUsers = 32
)

// faultEnv is one gateway in front of two fault-injecting upstreams: an
// openai-type provider "oa" and an anthropic-type provider "an".
type faultEnv struct {
	t      *testing.T
	rs     *redisproc.Server
	rd     *rlRedis
	gw     *gwproc.Process
	oa, an *faultupstream.Server
	// ol is a third openai-type provider, serving ftLongModel with a
	// requestTimeout of ftLongTimeout: an upstream that ends before that
	// was released by something other than the watchdog.
	ol   *faultupstream.Server
	next int
}

// ftUser is one scenario's caller.
type ftUser struct{ name, key string }

func ftUserN(i int) ftUser {
	name := fmt.Sprintf("fault%02d", i)
	return ftUser{name: name, key: "sk-faults-" + name}
}

// startFaultEnv runs redis-server, the two upstreams and the gateway
// (requestTimeout ftTimeout, a token budget so every request reserves,
// the response cache, the admin API, the access log).
func startFaultEnv(t *testing.T, extra map[string]interface{}) *faultEnv {
	t.Helper()
	rs := redisproc.Start(t)
	env := &faultEnv{t: t, rs: rs, rd: rlDialRedis(t, rs.Addr),
		oa: faultupstream.New(t, mockupstream.Options{Models: []string{ftOpenAIModel}, Chunks: 6, RecordLimit: -1}),
		an: faultupstream.New(t, mockupstream.Options{Chunks: 6, RecordLimit: -1}),
		ol: faultupstream.New(t, mockupstream.Options{Models: []string{ftLongModel}, Chunks: 6, RecordLimit: -1})}
	users := []map[string]interface{}{{"name": "ops", "group": "team", "apiKey": ftAdminKey, "admin": true}}
	for i := 0; i < ftUsers; i++ {
		u := ftUserN(i)
		users = append(users, map[string]interface{}{"name": u.name, "group": "team", "apiKey": u.key})
	}
	cfg := map[string]interface{}{
		"requestTimeout": ftTimeout.String(),
		"providers": map[string]interface{}{
			"oa": map[string]interface{}{"type": "openai", "baseUrl": env.oa.URL, "apiKey": "sk-upstream-oa", "models": []string{ftOpenAIModel}},
			"an": map[string]interface{}{"type": "anthropic", "baseUrl": env.an.URL, "apiKey": "sk-upstream-an", "models": []string{ftClaudeModel}},
			"ol": map[string]interface{}{"type": "openai", "baseUrl": env.ol.URL, "apiKey": "sk-upstream-ol", "models": []string{ftLongModel},
				"requestTimeout": ftLongTimeout.String()},
		},
		"groups": map[string]interface{}{"team": map[string]interface{}{"providers": []string{},
			"limits": map[string]interface{}{"tokensPerDay": 1000000000}}},
		"users":     map[string]interface{}{"inline": users},
		"redis":     map[string]interface{}{"address": rs.Addr, "failOpen": false},
		"cache":     map[string]interface{}{"enabled": true, "ttl": "5m", "maxBodyBytes": 1 << 20},
		"admin":     map[string]interface{}{"enabled": true},
		"accessLog": true,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	env.gw = startGateway(t, routingBinary(t), cfg)
	// The day's counters are read as a whole: keep every scenario on
	// one side of midnight UTC.
	rlAwaitHeadroom(t, 24*time.Hour, 5*time.Minute)
	return env
}

// user hands out the next unused scenario user.
func (e *faultEnv) user() ftUser {
	e.t.Helper()
	require.Less(e.t, e.next, ftUsers, "faultEnv: out of scenario users")
	for _, up := range []*faultupstream.Server{e.oa, e.an, e.ol} {
		require.Zero(e.t, up.Pending(), "a scenario left an upstream request it did not look at (%s)", up.URL)
	}
	u := ftUserN(e.next)
	e.next++
	return u
}

// --- requests ---

// ftRequest starts a POST to path as u with a request id of the test's
// own; the caller reads and closes the response. ctx bounds the whole
// exchange.
func ftRequest(ctx context.Context, t *testing.T, base, path string, u ftUser, body []byte) (*http.Response, error) {
	t.Helper()
	return ftRequestVia(ctx, t, ftClient, base, path, u, body, "")
}

// ftRequestVia is ftRequest through client, with request id id ("": the
// gateway makes one).
func ftRequestVia(ctx context.Context, t *testing.T, client *http.Client, base, path string, u ftUser, body []byte, id string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	req.Header.Set("Authorization", "Bearer "+u.key)
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(path, "/v1/messages") {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	return client.Do(req)
}

// ftClient has no overall timeout of its own: every exchange runs under
// a context with a deadline.
var ftClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}}

// ftCall sends body and reads the whole answer within ftWait.
func ftCall(t *testing.T, base, path string, u ftUser, body []byte) rlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ftWait)
	defer cancel()
	res := rlResult{start: time.Now()}
	resp, err := ftRequest(ctx, t, base, path, u, body)
	if err != nil {
		res.err, res.end = err, time.Now()
		return res
	}
	defer resp.Body.Close()
	res.status, res.header = resp.StatusCode, resp.Header
	res.body, res.err = io.ReadAll(resp.Body)
	res.end = time.Now()
	return res
}

// ftChat is an OpenAI chat body; ftMessages a Messages one.
func ftChat(model, content string, stream bool) []byte {
	return rlChatBody(model, content, stream, false)
}

func ftMessages(model, content string, stream bool) []byte {
	b, _ := json.Marshal(map[string]interface{}{
		"model": model, "max_tokens": 256, "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": content}},
	})
	return b
}

// --- event streams as the client read them ---

// ftStream is an event stream read by the client: its events, and how
// the read ended (nil: a clean end of the body).
type ftStream struct {
	events []ftEvent
	err    error
}

type ftEvent struct {
	name string
	data string
}

// ftReadStream reads an event stream to its end (or error); onEvent, when
// not nil, sees each event as it arrives.
func ftReadStream(body io.Reader, onEvent func(ftEvent)) ftStream {
	var s ftStream
	br := bufio.NewReaderSize(body, 64<<10)
	var ev ftEvent
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			switch {
			case err != io.EOF:
				s.err = err
			case line != "":
				s.err = io.ErrUnexpectedEOF // the body ended inside a line
			}
			return s
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if len(data) > 0 || ev.name != "" {
				ev.data = strings.Join(data, "\n")
				s.events = append(s.events, ev)
				if onEvent != nil {
					onEvent(ev)
				}
			}
			ev, data = ftEvent{}, nil
		case strings.HasPrefix(line, "event:"):
			ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// text is the bytes of text the client received: every OpenAI chunk's
// delta content, every Messages text delta (as sent; the fault
// upstreams' text needs no JSON escape).
func (s ftStream) text() int64 {
	var n int64
	for _, ev := range s.events {
		var doc struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal([]byte(ev.data), &doc) != nil {
			continue
		}
		for _, c := range doc.Choices {
			n += int64(len(c.Delta.Content))
		}
		if doc.Delta.Type == "text_delta" {
			n += int64(len(doc.Delta.Text))
		}
	}
	return n
}

// contentEvents counts the events that carried text.
func (s ftStream) contentEvents() int {
	n := 0
	for _, ev := range s.events {
		if strings.Contains(ev.data, `"content":"`) && !strings.Contains(ev.data, `"content":""`) || strings.Contains(ev.data, `"text_delta"`) {
			n++
		}
	}
	return n
}

// last is the stream's last event.
func (s ftStream) last() ftEvent {
	if len(s.events) == 0 {
		return ftEvent{}
	}
	return s.events[len(s.events)-1]
}

// has says whether an event's data is data exactly (e.g. "[DONE]").
func (s ftStream) has(data string) bool {
	for _, ev := range s.events {
		if ev.data == data {
			return true
		}
	}
	return false
}

// ftStreamErrorCode is the code of an OpenAI mid-stream error event
// ("" when the event is none).
func ftStreamErrorCode(ev ftEvent) string {
	var doc rlEnvelope
	if json.Unmarshal([]byte(ev.data), &doc) != nil {
		return ""
	}
	return doc.Error.Code
}

// --- what the gateway recorded and accounted ---

// ftAccess waits for the access log line of the request with id and
// returns its fields. The line is written when the request's record is
// emitted, after its accounting: once it is there, the counters hold the
// request.
func (e *faultEnv) ftAccess(t *testing.T, id string) map[string]string {
	t.Helper()
	require.NotEmpty(t, id, "the answer carried no X-Request-ID")
	deadline := time.Now().Add(ftWait)
	for {
		for _, line := range strings.Split(e.gw.Logs(), "\n") {
			if strings.Contains(line, " access ") && strings.Contains(line, "request_id="+id) {
				return parseAccessLine(t, line)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line for request %s within %v", id, ftWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parseAccessLine reads key=value pairs, a value possibly quoted.
func parseAccessLine(t *testing.T, line string) map[string]string {
	t.Helper()
	out := map[string]string{}
	rest := line[strings.Index(line, " access ")+len(" access "):]
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		require.Greater(t, eq, 0, "access line: %s", line)
		key := rest[:eq]
		rest = rest[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			require.NoError(t, err, "access line: %s", line)
			val, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else if sp := strings.IndexByte(rest, ' '); sp >= 0 {
			val, rest = rest[:sp], rest[sp:]
		} else {
			val, rest = rest, ""
		}
		out[key] = val
		rest = strings.TrimLeft(rest, " ")
	}
	return out
}

// ftCounters is a user's current-day counters, from the admin API.
type ftCounters struct {
	Requests  int64 `json:"requestsPerDay"`
	TokensIn  int64 `json:"tokensInPerDay"`
	TokensOut int64 `json:"tokensOutPerDay"`
}

// adminGet reads an admin API route with the admin key (200 required).
func (e *faultEnv) adminGet(t *testing.T, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ftWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.gw.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ftAdminKey)
	resp, err := ftClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, raw)
	return raw
}

// counters reads u's row of GET /admin/api/usage.
func (e *faultEnv) counters(t *testing.T, u ftUser) ftCounters {
	t.Helper()
	raw := e.adminGet(t, "/admin/api/usage")
	var doc struct {
		Users []struct {
			Name string `json:"name"`
			ftCounters
		} `json:"users"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc), "%s", raw)
	for _, row := range doc.Users {
		if row.Name == u.name {
			return row.ftCounters
		}
	}
	t.Fatalf("no usage row for %s: %s", u.name, raw)
	return ftCounters{}
}

// held is the tokens u's reservations in flight hold (the held hash).
func (e *faultEnv) held(t *testing.T, u ftUser) int64 {
	t.Helper()
	v, _, err := e.rd.c.Int("HGET", "llmgw:user:"+u.name+":held", "t")
	require.NoError(t, err)
	return v
}

// assertAccounted checks, once the request's record is out, that u's
// counters hold requests requests and exactly in and out tokens, and
// that no reservation is left behind.
func (e *faultEnv) assertAccounted(t *testing.T, u ftUser, requests, in, out int64) {
	t.Helper()
	got := e.counters(t, u)
	require.Equal(t, ftCounters{Requests: requests, TokensIn: in, TokensOut: out}, got, "%s's counters", u.name)
	require.Zero(t, e.held(t, u), "%s: a reservation was left held", u.name)
}

// ceil4 is ceil(n / 4), the gateway's bytes-to-tokens estimate.
func ceil4(n int64) int64 { return (n + 3) / 4 }

// ftAnthropicPrompt is the hub prompt tokens of an Anthropic mock
// answer to a prompt of words words (input + cache creation + cache
// read).
func ftAnthropicPrompt(words int) int64 {
	return int64(words + mockupstream.AnthropicCacheCreationTokens + mockupstream.AnthropicCacheReadTokens)
}

// ftOpEvent is one operational event of the admin events feed.
type ftOpEvent struct {
	Kind     string `json:"kind"`
	User     string `json:"user"`
	Provider string `json:"provider"`
	Status   int    `json:"status"`
	Message  string `json:"message"`
}

// awaitEvent waits for u's event of kind in the admin events feed (the
// events of a request are derived from its record, so they are there
// once its access line is) and returns it.
func (e *faultEnv) awaitEvent(t *testing.T, u ftUser, kind string) ftOpEvent {
	t.Helper()
	deadline := time.Now().Add(ftWait)
	for {
		raw := e.adminGet(t, "/admin/api/events?limit=200")
		var doc struct {
			Events []ftOpEvent `json:"events"`
		}
		require.NoError(t, json.Unmarshal(raw, &doc), "%s", raw)
		for _, ev := range doc.Events {
			if ev.User == u.name && ev.Kind == kind {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q event for %s within %v: %s", kind, u.name, ftWait, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
