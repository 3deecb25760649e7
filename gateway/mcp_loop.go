package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/store"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The tool-calling loop (groups.*.mcpLoop, decided by the caller's
// primary group). On the chat-shaped routes (/v1/chat/completions,
// /v1/messages, /v1/responses, /api/chat), a request that declares no
// tools of its own is offered the caller's federated MCP tools
// (federatedTools); when the model's answer calls some, the gateway runs
// them through federation (callFederatedTool), appends the assistant's
// turn and the results, and calls the model again — until an answer
// calls no tool, or maxTurns model calls were made.
//
// It is the call stage run once per turn (callStage), not a pipeline of
// its own: every turn walks the candidates with sendUpstream, always
// non-streaming and in the hub shape (the client's request converted
// once, with its hubConversion), and every turn after the first is
// limited and reserved for like a fresh request (count). A turn's usage
// is settled when the next one begins; the last turn's by the account
// stage. The respond stage delivers the final answer once, in the
// client's format, with the usage summed over the turns — streamed from
// that answer when the client asked for a stream.

const (
	defaultLoopTurns = 5
	maxLoopTurns     = 20
	// toolLoopHeader says how a loop that offered tools ended;
	// toolTurnsHeader how many model calls it made.
	toolLoopHeader  = "X-Llmgw-Tool-Loop"
	toolTurnsHeader = "X-Llmgw-Tool-Turns"
)

// How a tool loop ended (toolLoopHeader, the record's toolLoop).
const (
	loopDone     = "done"      // an answer without tool calls
	loopMaxTurns = "max-turns" // maxTurns reached: the last answer, with its tool calls
	loopTooLarge = "too-large" // the next turn's request would pass the request cap: the last answer, with its tool calls
	loopRefused  = "refused"   // the limiter refused a turn: its error
	loopFailed   = "failed"    // a turn failed (upstream, client gone): its error
)

var errNoChoice = errors.New("the answer has no choice")

// compileMcpLoop compiles a group's mcpLoop: its maxTurns when enabled
// (0: off).
func compileMcpLoop(field string, lc *McpLoopConfig) (int, error) {
	if lc == nil {
		return 0, nil
	}
	if lc.MaxTurns < 0 || lc.MaxTurns > maxLoopTurns {
		return 0, fmt.Errorf("config: %s.maxTurns: %d must be between 1 and %d (0: the default, %d)", field, lc.MaxTurns, maxLoopTurns, defaultLoopTurns)
	}
	if !lc.Enabled {
		return 0, nil
	}
	if lc.MaxTurns == 0 {
		return defaultLoopTurns, nil
	}
	return lc.MaxTurns, nil
}

// toolCallRecord is one tool call a loop ran (the request record's
// toolCalls).
type toolCallRecord struct {
	turn int // the model call (1, 2, …) whose answer asked for it
	// name is the federated name ("<server>_<tool>"), or the name the
	// model used when it is no offered tool; server is "" then.
	name     string
	server   string
	duration time.Duration
	// outcome is "ok", or why the model got an error result:
	// "tool_error" (the tool's isError), "call_failed" (the call did not
	// complete), "unknown_tool", "invalid_arguments", "too_many_calls".
	outcome string
}

// toolLoop is one request's loop state.
type toolLoop struct {
	maxTurns int
	// tools are the offered tools by the name the model sees.
	tools map[string]*federatedTool
	// conv converts the client's request to the hub and the final answer
	// back (nil on the chat route, whose request is the hub's).
	conv *hubConversion
	// hub is the next turn's request.
	hub   *jsonRequest
	turns int
	// total is every turn's usage so far; last the latest turn's, not
	// yet settled (the next turn settles it, or the account stage);
	// settledCost the cost of the turns settled.
	total       translate.Usage
	last        translate.Usage
	settledCost int64
	// provider and model served the latest turn, in turnTime (ttfb to
	// its response headers).
	provider *providerRuntime
	model    string
	turnTime time.Duration
	turnTTFB time.Duration
}

// toolLoopFor is the request's loop, or nil when none applies: the
// primary group's mcpLoop is off, the route is not chat-shaped, or the
// request declares tools of its own (it then passes untouched). A
// request with a loop skips the response cache: its answer depends on
// what the tools return to this caller.
func toolLoopFor(c *call) *toolLoop {
	p := c.user.primary
	if p == nil || p.loopTurns == 0 || !loopRoute(c.route.op) || clientSentTools(c.req.raw) {
		return nil
	}
	return &toolLoop{maxTurns: p.loopTurns}
}

func loopRoute(op operation) bool {
	return op == opChat || op == opMessages || op == opResponses || op == opOllamaChat
}

// callStage is the call stage: sendUpstream, or the tool loop's turns
// through it.
func callStage(c *call) (*exchange, *outbound, *apiError) {
	if c.loop == nil {
		return sendUpstream(c)
	}
	return runToolLoop(c)
}

// runToolLoop runs the loop's turns and returns the final answer as an
// exchange for the respond stage. With no tool to offer the request is
// sent as it is. A refused turn is answered here (nil, nil, nil); a
// failed one is returned as its error.
func runToolLoop(c *call) (*exchange, *outbound, *apiError) {
	l := c.loop
	if !offerTools(c, l) {
		c.loop = nil
		return sendUpstream(c)
	}
	for {
		if l.turns > 0 {
			settleTurn(c, l)
			if e := limitTurn(c, l); e != nil {
				endLoop(c, l, loopRefused)
				reject(c, e)
				return nil, nil, nil
			}
		}
		answer, e := sendTurn(c, l)
		if e != nil {
			endLoop(c, l, loopFailed)
			return nil, nil, e
		}
		content, calls, _ := answerToolCalls(answer)
		if len(calls) == 0 {
			return finalAnswer(c, l, answer, loopDone)
		}
		if l.turns >= l.maxTurns {
			return finalAnswer(c, l, answer, loopMaxTurns)
		}
		for i := 0; i < len(calls); i++ {
			if calls[i].ID == "" {
				calls[i].ID = "call_" + randomHex(12)
			}
			calls[i].Type = "function"
		}
		results := runToolCalls(c, l, calls)
		if err := c.r.Context().Err(); err != nil {
			settleTurn(c, l)
			endLoop(c, l, loopFailed)
			return nil, nil, upstreamFailure(apierr.ClassClientCancel, "client closed the request", err)
		}
		body, err := appendTurn(l.hub.raw, content, calls, results)
		if err != nil || len(body) > maxUnifiedRequestBytes {
			return finalAnswer(c, l, answer, loopTooLarge)
		}
		next, pe := parseJSONRequest(body)
		if pe != nil {
			return finalAnswer(c, l, answer, loopTooLarge)
		}
		l.hub = next
	}
}

// offerTools lists the caller's federated tools and builds the first
// turn's hub request with them; false when there is nothing to offer
// (no reachable server, no tool, a request the hub conversion refuses:
// the plain call then answers it).
func offerTools(c *call, l *toolLoop) bool {
	tools, err := c.g.federatedTools(c.r.Context(), c.user, c.trace)
	if err != nil {
		c.g.log.infof("tool loop: no MCP tool to offer (%v); the request goes to the model as it is%s", err, c.trace.logTail)
		return false
	}
	offered, byName, dropped := offeredTools(tools)
	if dropped > 0 {
		c.g.warnings.warnOnce("tool-loop-dropped", "tool loop: %d federated tools are not offered to the model "+
			"(a name over 64 bytes, a clash once the name is made provider-safe, or past the 128-tool cap)", dropped)
	}
	if len(offered) == 0 {
		return false
	}
	base := c.req.raw
	if c.route.op != opChat {
		conv, e := loopConversion(c)
		if e != nil {
			return false
		}
		l.conv = conv
		base = conv.hub.raw
	}
	body, err := loopHubRequest(base, offered)
	if err != nil {
		return false
	}
	hub, e := parseJSONRequest(body)
	if e != nil {
		return false
	}
	l.hub = hub
	l.tools = byName
	return true
}

// loopConversion is the hub conversion of a chat-shaped route's request.
func loopConversion(c *call) (*hubConversion, *apiError) {
	switch c.route.op {
	case opMessages:
		return anthropicToHub(c)
	case opResponses:
		return responsesToHub(c)
	}
	return ollamaChatToHub(c)
}

// sendTurn is one model call: the turn's hub request through the call
// stage as a chat request (every provider type's chat operation, so its
// answer decodes to the hub), read whole. Its usage is added to the
// loop's (estimated from the request when the provider reported none).
func sendTurn(c *call, l *toolLoop) ([]byte, *apiError) {
	in, rt, start, tries := c.req, c.route, c.rec.start, c.rec.attempts
	c.req, c.route = l.hub, chatRoute
	// Each turn gets the request's attempt budget and firstByteDeadline
	// afresh; the record counts every attempt.
	c.rec.attempts = 0
	if l.turns > 0 {
		c.rec.start = time.Now()
	}
	began := time.Now()
	x, o, e := sendUpstream(c)
	c.req, c.route, c.rec.start = in, rt, start
	c.rec.attempts += tries
	if e != nil {
		return nil, e
	}
	if x == nil {
		return nil, errNoCandidate() // a turn is never answered from the cache (no cache key)
	}
	data := x.data
	var u translate.Usage
	if o.decode != nil {
		var de *apiError
		data, u, de = o.decode(x.data)
		if de != nil {
			exchangeDone(x)
			return nil, attributed(o.provider, de)
		}
	} else {
		translate.UsageFromJSON(data, &u)
	}
	l.turnTTFB = x.ttfb
	exchangeDone(x)
	if _, _, ok := answerToolCalls(data); !ok {
		return nil, errBadUpstreamResponse(o.provider.name, "answered a tool loop's turn without a chat completion")
	}
	if !u.Reported {
		u = estimateUsage(len(l.hub.raw))
	}
	l.turns++
	if l.turns == 1 {
		l.total = u
	} else {
		l.total = addUsage(l.total, u)
	}
	l.last = u
	l.provider, l.model = o.provider, o.model
	l.turnTime = time.Since(began)
	return data, nil
}

// limitTurn counts the next turn in the caller's scopes and reserves its
// worst case (its hub request's estimate plus output cap), as the limit
// stage does for a request.
func limitTurn(c *call, l *toolLoop) *apiError {
	in := c.req
	c.req = l.hub
	tokens, cost := reservationFor(c)
	c.req = in
	return count(c, tokens, cost, nil)
}

// settleTurn settles the latest turn's usage (its reservation, or the
// plain usage write), with its model statistics.
func settleTurn(c *call, l *toolLoop) {
	u := l.last
	var cost int64
	if u.PromptTokens > 0 || u.CompletionTokens > 0 {
		cost = costOf(c.g, l.provider.name, l.model, u)
	}
	l.settledCost += cost
	l.last = translate.Usage{}
	var extra []store.Incr
	if c.g.stats != nil {
		extra = turnStats(c, l, u, cost)
	}
	if r := c.resv; r != nil {
		c.resv = nil
		r.settleWith(u, cost, extra)
		return
	}
	accountUsage(c.g, c.user, u, cost, extra, c.trace.logTail)
}

// turnStats is a settled turn's model statistics: a request served by
// its model, with the turn's usage.
func turnStats(c *call, l *toolLoop, u translate.Usage, cost int64) []store.Incr {
	if c.rec.model == "" {
		return nil
	}
	now := c.g.limiter.now()
	sec := now.Unix()
	minute := sec / 60
	if sec%60 < 0 {
		minute--
	}
	f := statsFacts{served: true, usage: u, cost: cost, latency: l.turnTime, ttfb: l.turnTTFB}
	return servedIncrs(c, c.g.stats, &f, nil, now, minute, false)
}

// loopAccount is the account stage's share of a loop's answer: the last
// turn's usage and cost, which its reservation settles (the earlier
// turns settled their own); the record gets the sum over the turns.
func loopAccount(c *call) (translate.Usage, int64) {
	l := c.loop
	u := l.last
	var cost int64
	if u.PromptTokens > 0 || u.CompletionTokens > 0 {
		cost = costOf(c.g, l.provider.name, l.model, u)
	}
	c.rec.usage = l.total
	c.rec.costMicroUSD = l.settledCost + cost
	return u, cost
}

// runToolCalls runs an answer's tool calls in order, each one's result
// (or error) a tool message for the next turn, each one in the record.
func runToolCalls(c *call, l *toolLoop, calls []hubCall) []hubToolTurn {
	results := make([]hubToolTurn, 0, len(calls))
	for i := 0; i < len(calls); i++ {
		text, rec := runToolCall(c, l, &calls[i], i)
		c.rec.toolCalls = append(c.rec.toolCalls, rec)
		results = append(results, hubToolTurn{Role: "tool", ToolCallID: calls[i].ID, Content: text})
	}
	return results
}

// maxRecordedToolName caps a tool name the record keeps (the model's
// own, when it names no offered tool).
const maxRecordedToolName = 128

// runToolCall runs the i-th tool call of an answer through federation:
// the text the model gets back (an error result starts with "Error: ")
// and the call's record.
func runToolCall(c *call, l *toolLoop, hc *hubCall, i int) (string, toolCallRecord) {
	name := hc.Function.Name
	rec := toolCallRecord{turn: l.turns, name: name}
	if len(rec.name) > maxRecordedToolName {
		rec.name = rec.name[:maxRecordedToolName]
	}
	if i >= maxLoopToolCalls {
		rec.outcome = "too_many_calls"
		return "Error: not run: the gateway runs at most " + strconv.Itoa(maxLoopToolCalls) + " tool calls per turn", rec
	}
	t := l.tools[name]
	if t == nil {
		rec.outcome = "unknown_tool"
		return "Error: there is no tool named " + strconv.Quote(rec.name), rec
	}
	rec.name, rec.server = t.name, t.server
	args := json.RawMessage(strings.TrimSpace(hc.Function.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		rec.outcome = "invalid_arguments"
		return "Error: the arguments are not a JSON object", rec
	}
	started := time.Now()
	res, err := c.g.callFederatedTool(c.r.Context(), c.user, t.name, args, c.trace)
	rec.duration = time.Since(started)
	if err != nil {
		rec.outcome = "call_failed"
		return "Error: the tool call failed: " + err.Error(), rec
	}
	text, isErr := toolResultText(res)
	if isErr {
		rec.outcome = "tool_error"
		return "Error: " + text, rec
	}
	rec.outcome = "ok"
	return text, rec
}

// endLoop notes how the loop ended: the response headers, and the
// record (its usage and cost so far, for an answer the account stage
// does not settle).
func endLoop(c *call, l *toolLoop, end string) {
	h := c.w.Header()
	h.Set(toolLoopHeader, end)
	h.Set(toolTurnsHeader, strconv.Itoa(l.turns))
	c.rec.toolLoop = end
	c.rec.toolTurns = l.turns
	c.rec.usage = l.total
	c.rec.costMicroUSD = l.settledCost
}

// finalAnswer is the loop's last answer as an exchange the respond stage
// delivers like an upstream's: the hub answer with the summed usage,
// converted to the client's format — whole, or as the stream a
// streaming upstream would have sent (hubStreamOf), relayed or
// translated like one.
func finalAnswer(c *call, l *toolLoop, answer []byte, end string) (*exchange, *outbound, *apiError) {
	endLoop(c, l, end)
	body, err := withLoopUsage(answer, l.total)
	if err != nil {
		return nil, nil, errBadUpstreamResponse(l.provider.name, "answered a tool loop's turn without a chat completion")
	}
	total := l.total
	total.Reported = true
	tc := translateContext(c, l.model)
	conv := l.conv
	o := &outbound{provider: l.provider, model: l.model}
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}
	resp.Header.Set("Content-Type", "application/json")
	_, wd := startWatchdog(context.Background(), time.Hour)
	wd.stop()
	x := &exchange{resp: resp, body: http.NoBody, data: body, wd: wd}
	if !c.req.stream {
		o.decode = func(data []byte) ([]byte, translate.Usage, *apiError) {
			if conv == nil {
				return data, total, nil
			}
			out, _, e := conv.decode(data, tc)
			return out, total, e
		}
		return x, o, nil
	}
	events, err := hubStreamOf(body, l.total)
	if err != nil {
		return nil, nil, errBadUpstreamResponse(l.provider.name, "answered a tool loop's turn without a chat completion")
	}
	rd := bytes.NewReader(events)
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Body = io.NopCloser(rd)
	x.body = rd
	x.data = nil
	o.stream = true
	if conv == nil {
		o.stripUsage = !c.req.includeUsage
	} else {
		o.translator = func() translate.StreamTranslator { return conv.stream(nil, tc) }
	}
	return x, o, nil
}
