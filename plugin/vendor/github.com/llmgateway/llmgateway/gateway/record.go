package gateway

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// requestRecord is what happened to one metered request, filled in by
// the stages as they run and emitted once, when the request ends, to the
// gateway's record hook (metrics, admin statistics and the events feed
// read it; today only tests do).
type requestRecord struct {
	route  string   // the route's name: "chat/completions", "embeddings", …, "passthrough"
	format string   // the inbound wire format: "openai"
	method string   // the request's HTTP method
	user   string   // "" when the caller was not identified
	groups []string // the user's member groups, primary first
	// requestID and traceID are the request's ids (trace.go): the
	// X-Request-ID its response carries, and its W3C trace id.
	requestID string
	traceID   string
	// requestedModel is the model string the client sent ("" when none
	// was read).
	requestedModel string
	// provider and model are the candidate that served the request (or,
	// when none answered, the last one tried or the first resolved); ""
	// when the request ended before resolution.
	provider string
	model    string
	stream   bool // the client asked for a stream
	// statusCode is the HTTP status the client got; 499 when the client
	// went away before an answer was written.
	statusCode int
	// errorCode is "" for a clean success, else the error's code
	// ("model_not_found", "rate_limit_exceeded", "upstream_timeout",
	// "upstream_stream_truncated", "client_closed_request", …) — also
	// when the failure came after a 200 (a cut stream).
	errorCode string
	// errorClass is the upstream failure class ("connect", "stall",
	// "server", "truncated", …; see failures.go), "" for the gateway's
	// own refusals and for successes.
	errorClass string
	// errorMessage is that error's message, as the client saw it (the
	// events feed's message).
	errorMessage string
	attempts     int // upstream attempts, retries included (0: none made)
	start        time.Time
	// firstByte is when the response headers went to the client (for
	// passthrough: when the upstream's arrived); zero if never. ttfb is
	// the time from start to it (0 if never), set when the record is
	// emitted, with latency.
	firstByte time.Time
	ttfb      time.Duration
	latency   time.Duration
	// upstream is the time spent in upstream calls: every attempt's
	// exchange up to its headers (and its body, read whole), plus the
	// relay of a streamed answer; for passthrough the whole proxied
	// exchange. latency minus upstream is the gateway's added latency.
	upstream time.Duration
	usage    translate.Usage // as accounted (reported, estimated, or none)
	// costMicroUSD is the usage's cost as accounted (0: none, unpriced,
	// or an unpriced route).
	costMicroUSD int64
	cache        string // "hit", "miss", or "" when the request was not cacheable
	// strategy is the routing strategy that ordered the candidates (""
	// when routing had no choice to make); affinity is "bound", "new",
	// "moved" or "" (session affinity did not decide); skipped names the
	// candidates ("provider/model") left out as unhealthy; tried is
	// every candidate the call stage reached, in order.
	strategy string
	affinity string
	skipped  []string
	tried    []triedCandidate
	// toolTurns is the model calls of the request's tool loop (0: no
	// loop offered tools), toolLoop how it ended ("done", "max-turns",
	// "too-large", "refused", "failed"), toolCalls every tool call it
	// ran, in order (mcp_loop.go).
	toolTurns int
	toolLoop  string
	toolCalls []toolCallRecord
}

// triedCandidate is one candidate's turn in the call stage: how many
// upstream attempts it got and how it ended ("served", the error code,
// or "skipped" when its half-open probe was already running).
type triedCandidate struct {
	candidate string
	attempts  int
	outcome   string
}

// noteError records e as the request's error: the first error wins, and
// the status is the one the client saw (a stream's 200 stays).
func noteError(r *requestRecord, e *apiError) {
	if r.errorCode == "" {
		r.errorCode = e.Code
		r.errorMessage = e.Message
		if e.Class != apierr.ClassNone {
			r.errorClass = policy(e).name
		}
	}
	if r.statusCode == 0 {
		r.statusCode = e.Status
	}
}

// wroteHeader notes the first write to the client: its time and the
// status the client got.
func noteWrite(r *requestRecord, status int) {
	if r.firstByte.IsZero() {
		r.firstByte = time.Now()
	}
	if r.statusCode == 0 {
		r.statusCode = status
	}
}

// account is the account stage: the one place usage is settled. A
// priced route's answer without reported usage is estimated: a
// successful answer read whole as ceil(request bytes / 4) prompt tokens;
// a stream that started (whether it ended cleanly, was cut, or the
// client left) as that plus ceil(streamed text bytes / 4) completion
// tokens (estimateStream). Unpriced routes (media) are request-counted
// only. The tokens and cost go to every scope of the request in one
// store round trip, and a cacheable answer is saved.
func account(c *call, out *outcome) {
	if c.rec.statusCode == 0 {
		c.rec.statusCode = out.status
	}
	u := out.usage
	switch {
	case !c.route.priced:
		u = translate.Usage{}
	case u.Reported && out.streamed && out.err != nil:
		// Cut after the upstream reported some usage (an Anthropic stream
		// reports its input in message_start, its output only at the end):
		// what was streamed is accounted at least.
		if est := (out.contentBytes + 3) / 4; est > u.CompletionTokens {
			u.CompletionTokens = est
		}
	case u.Reported || out.status < 200 || out.status > 299:
	case out.streamed:
		u = estimateStream(c, out)
	case out.err == nil:
		u = estimateUsage(out.requestBytes)
	}
	c.rec.usage = u
	var cost int64
	if c.loop != nil {
		u, cost = loopAccount(c)
	} else if u.PromptTokens > 0 || u.CompletionTokens > 0 {
		cost = costOf(c.g, c.rec.provider, c.rec.model, u)
		c.rec.costMicroUSD = cost
	}
	var extra []store.Incr
	if c.g.stats != nil {
		extra = accountStats(c, out, u, cost)
	}
	if r := c.resv; r != nil {
		c.resv = nil
		r.settleWith(u, cost, extra)
	} else {
		accountUsage(c.g, c.user, u, cost, extra, c.trace.logTail)
	}
	saveCached(c, out)
}

// accountStats is the statistics increments (stats.go) of a request the
// account stage settles: they ride its usage write.
func accountStats(c *call, out *outcome, u translate.Usage, cost int64) []store.Incr {
	c.statsDone = true
	f := statsFacts{served: out.status >= 200 && out.status <= 299, usage: u, latency: time.Since(c.rec.start), cost: cost}
	if !c.rec.firstByte.IsZero() {
		f.ttfb = c.rec.firstByte.Sub(c.rec.start)
	}
	return statsIncrs(c, &f)
}

// finishStats is the statistics increments of a request that ended
// before the account stage (refused, failed, answered from the cache).
func finishStats(c *call) []store.Incr {
	c.statsDone = true
	f := statsFacts{latency: time.Since(c.rec.start)}
	return statsIncrs(c, &f)
}

// estimateStream is the estimate of a stream without reported usage. On
// a unified route, a stream that ended cleanly without it says the
// provider ignores stream_options.include_usage (or reports usage no
// other way): that is logged once per provider. (On native passthrough
// the client chose what to ask for.)
func estimateStream(c *call, out *outcome) translate.Usage {
	u := estimateUsage(out.requestBytes)
	u.CompletionTokens = (out.contentBytes + 3) / 4
	if out.err == nil && c.route != passthroughRoute {
		c.g.warnings.warnOnce("stream-usage:"+c.rec.provider, "provider %q: its streams report no usage; they are estimated "+
			"(ceil(request bytes / 4) prompt, ceil(streamed text bytes / 4) completion tokens)", c.rec.provider)
	}
	return u
}

// finish is the record stage: it completes the request record and hands
// it to the hook. Deferred first by every route that builds a call, it
// also contains a panic of the request's handling (recover.go).
func finish(c *call) {
	abort := false
	if v := recover(); v != nil {
		abort = containCallPanic(c, v)
	}
	var extra []store.Incr
	if c.g.stats != nil && !c.statsDone {
		extra = finishStats(c)
	}
	if r := c.resv; r != nil {
		// Ended before the account stage (refused after admission, an
		// upstream failure, a cache hit): nothing was used.
		c.resv = nil
		r.settleWith(translate.Usage{}, 0, extra)
	} else if len(extra) > 0 {
		writeStats(c.g.limiter, extra)
	}
	emitRecord(c.g, &c.rec)
	if abort {
		abortAnswer()
	}
}

// emitRecord completes the record's timings and emits it: the access
// log line (accessLog) and the record hook.
func emitRecord(g *Gateway, rec *requestRecord) {
	rec.latency = time.Since(rec.start)
	if !rec.firstByte.IsZero() {
		rec.ttfb = rec.firstByte.Sub(rec.start)
	}
	if g.cfg.accessLog {
		g.log.line("INFO", accessLine(rec))
	}
	if g.metrics != nil {
		observeRecord(g.metrics, rec)
	}
	recordEvents(g.events, rec)
	if g.recordHook != nil {
		g.recordHook(rec)
	}
}

// accountUsage adds u's tokens and cost to every scope of user. extra
// are the request's statistics increments (stats.go), written in the
// same round trip (or, with no usage to add, by writeStats); ids ends a
// log line about a failed write.
func accountUsage(g *Gateway, user *userRuntime, u translate.Usage, cost int64, extra []store.Incr, ids string) {
	if user == nil || len(user.scopes) == 0 || (u.PromptTokens == 0 && u.CompletionTokens == 0) {
		writeStats(g.limiter, extra)
		return
	}
	// No deadline of its own: the in-process store never blocks, and the
	// guarded Redis store bounds every operation with its own timeout.
	g.limiter.accountWith(context.Background(), user.scopes, u, cost, extra, ids)
}

// estimateUsage is the fallback for an answer without usage:
// ceil(request bytes / 4) prompt tokens.
func estimateUsage(requestBytes int) translate.Usage {
	return translate.Usage{PromptTokens: int64((requestBytes + 3) / 4), Estimated: true}
}

// accessLine is the access log's line for one request, from its record
// alone (never a key, never a body): key=value pairs in a fixed order,
// a value quoted when it is empty or holds a space, a quote, "=", a
// backslash or a control character; the user always quoted, as in the
// auth lines.
func accessLine(rec *requestRecord) string {
	return "access method=" + logValue(rec.method) + " route=" + logValue(rec.route) +
		" status=" + strconv.Itoa(rec.statusCode) + " user=" + strconv.Quote(rec.user) +
		" provider=" + logValue(rec.provider) + " model=" + logValue(rec.model) +
		" attempts=" + strconv.Itoa(rec.attempts) + " ttfb_ms=" + logMillis(rec.ttfb) + " duration_ms=" + logMillis(rec.latency) +
		" prompt_tokens=" + strconv.FormatInt(rec.usage.PromptTokens, 10) +
		" completion_tokens=" + strconv.FormatInt(rec.usage.CompletionTokens, 10) +
		" cost_micro_usd=" + strconv.FormatInt(rec.costMicroUSD, 10) + " cache=" + logValue(rec.cache) +
		" request_id=" + rec.requestID + " trace_id=" + rec.traceID + " error=" + logValue(rec.errorCode) + toolLoopLog(rec)
}

// toolLoopLog is the access line's tail for a request whose tool loop
// offered tools (nothing otherwise): its turns, how it ended, and each
// tool call as name:server:outcome:milliseconds.
func toolLoopLog(rec *requestRecord) string {
	if rec.toolTurns == 0 {
		return ""
	}
	s := " tool_turns=" + strconv.Itoa(rec.toolTurns) + " tool_loop=" + logValue(rec.toolLoop)
	if len(rec.toolCalls) == 0 {
		return s
	}
	calls := make([]string, 0, len(rec.toolCalls))
	for i := 0; i < len(rec.toolCalls); i++ {
		t := &rec.toolCalls[i]
		calls = append(calls, t.name+":"+t.server+":"+t.outcome+":"+logMillis(t.duration))
	}
	return s + " tool_calls=" + logValue(strings.Join(calls, ","))
}

// logValue is s as a log line's value: as it is, or quoted
// (strconv.Quote) when it is empty or holds a byte that would make the
// line ambiguous.
func logValue(s string) string {
	if s != "" && !strings.ContainsAny(s, logQuotedChars) {
		return s
	}
	return strconv.Quote(s)
}

// logQuotedChars are the bytes that make logValue quote a value: space,
// quote, "=", backslash, and every control character.
const logQuotedChars = " \"=\\\t\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0a\x0b\x0c\x0d\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

// logMillis is d in milliseconds with microsecond precision ("12.345").
func logMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}
