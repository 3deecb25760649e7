package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// call is one metered request's state, created per request and never
// shared: what the stages learned so far and the request record they
// fill in.
type call struct {
	g      *Gateway
	w      http.ResponseWriter
	r      *http.Request
	route  *route
	format *wireFormat
	user   *userRuntime
	req    *jsonRequest
	// target is the resolved model: its candidates in order, the ones the
	// caller may not use already removed.
	target modelRoute
	// cacheKey is set when the response may be cached (a miss); the
	// entry is written with cacheTTL.
	cacheKey string
	cacheTTL time.Duration
	// resv is the request's budget reservation (nil: none), settled by
	// the account stage or released by finish.
	resv *reservation
	// peek is what a budgeted caller's passthrough body showed (nil: not
	// read), for its reservation.
	peek *passthroughPeek
	// hubConv is the request of a non-hub inbound API converted to the
	// hub (viaHub); nil until a candidate needs it.
	hubConv *hubConversion
	// cands is the routing stage's walk (routing.go): the candidates the
	// call stage tries, in order (routing: its second half is still to
	// run). forceFirst: every candidate was unhealthy and the first is
	// attempted anyway. aff is the session's binding (nil: no
	// affinity). deadline: firstByteDeadline is set.
	cands      []candidate
	routing    bool
	forceFirst bool
	aff        *callAffinity
	deadline   bool
	// trace is the request's ids (trace.go): its log lines, its record
	// and its upstream calls carry them.
	trace *requestTrace
	// admitted: the limit stage counted the request (its scopes' lastSeen
	// is written); saved is what a cache hit saved (micro-USD);
	// statsDone: its statistics were built (stats.go).
	admitted  bool
	saved     int64
	statsDone bool
	// loop is the request's tool loop (mcp_loop.go); nil: none.
	loop *toolLoop
	// sw writes a metered stream once startStream has written its
	// headers (stream_writer.go); nil until then.
	sw  *streamWriter
	rec requestRecord
}

func newCall(g *Gateway, w http.ResponseWriter, r *http.Request, rt *route, tr *requestTrace) *call {
	return &call{g: g, w: w, r: r, route: rt, format: rt.format, deadline: g.cfg.firstByteDeadline > 0, trace: tr,
		rec: requestRecord{route: rt.name, format: rt.format.name, method: r.Method, requestID: tr.requestID, traceID: tr.traceID, start: time.Now()}}
}

// serveMetered runs the stages every metered route shares:
//
//	identify → admit the body → resolve candidates → authorize → limit
//	→ cache → call (retry, watchdog, caps) → respond → account → record
//
// Each stage either passes the request on or ends it with an error
// written through the route's wire format. With the caller's tool loop
// (mcp_loop.go) the call stage runs once per turn, and the cache stage
// is skipped.
func serveMetered(g *Gateway, w http.ResponseWriter, r *http.Request, rt *route, tr *requestTrace) {
	c := newCall(g, w, r, rt, tr)
	defer finish(c)
	if r.Method != rt.method {
		w.Header().Set("Allow", rt.method)
		reject(c, errMethodNotAllowed(r.Method, rt.path, rt.method))
		return
	}
	if !identify(c) || !admitBody(c) || !resolve(c) || !limit(c) {
		return
	}
	c.loop = toolLoopFor(c)
	if c.loop == nil && serveCached(c) {
		return
	}
	x, o, e := callStage(c)
	dropDecodedFields(c)
	if e != nil {
		fail(c, e)
		return
	}
	if x == nil {
		return // answered already: a failover candidate's cached answer, or a tool loop's refused turn
	}
	defer exchangeDone(x)
	relayed := time.Now()
	out := respond(c, x, o)
	if o.stream {
		c.rec.upstream += time.Since(relayed)
	}
	account(c, out)
}

// dropDecodedFields lets go of the request's decoded top-level members
// once the call stage no longer prepares outbound requests from them.
func dropDecodedFields(c *call) {
	if c.req != nil {
		c.req.fields = nil
	}
	if c.hubConv != nil && c.hubConv.hub != nil {
		c.hubConv.hub.fields = nil
	}
}

// identify authenticates the caller (401 otherwise).
func identify(c *call) bool {
	user, e := authenticate(c.g, c.r, c.trace)
	if e != nil {
		reject(c, e)
		return false
	}
	c.user = user
	c.rec.user = user.name
	c.rec.groups = user.groups
	return true
}

// admitBody reads the request body under a body-admission slot: the
// whole body up to the route's cap, validated and its model located.
func admitBody(c *call) bool {
	req, e := readAdmitted(c.g, c.w, c.r, c.route)
	if e != nil {
		reject(c, e)
		return false
	}
	c.req = req
	c.rec.requestedModel = req.model
	c.rec.stream = req.stream
	return true
}

// resolve finds the model's candidates and authorizes the caller: 404
// when nothing serves it, 403 when the caller may not use its first
// candidate, 501 when that candidate's provider type cannot serve the
// route. Candidates the caller may not use are dropped; the routing
// stage then orders the rest (orderCandidates).
func resolve(c *call) bool {
	target, e := resolveModel(c.g, c.user, c.req.model)
	if e != nil {
		reject(c, e)
		return false
	}
	c.target = target
	first := target.candidates[0]
	c.rec.provider, c.rec.model = first.provider.name, first.model
	if backendFor(first.provider.kind).ops[c.route.op] == nil {
		reject(c, errNotSupported(first.provider, c.route))
		return false
	}
	orderCandidates(c)
	return true
}

// limit counts the request and checks the caller's limits (429/503),
// finishes the routing stage (its binding read rides the limiter's round
// trip), and checks a cost budget's need for a price (402) on the
// candidate that goes first. Only priced routes need one; an unlimited
// route (count_tokens) is only routed.
func limit(c *call) bool {
	peek := pendingPeek(c)
	if c.route.unlimited {
		finishRouting(c, nil)
		return true
	}
	tokens, cost := reservationFor(c)
	if e := count(c, tokens, cost, peek); e != nil {
		reject(c, e)
		return false
	}
	finishRouting(c, peek)
	priced := ""
	if c.route.priced {
		priced = c.target.model
	}
	if e := checkPriced(c, c.target.provider.name, priced); e != nil {
		reject(c, e)
		return false
	}
	return true
}

// resolveModel routes a client model id (alias, "provider/model" or
// bare): 404 when nothing serves it, 403 when the caller's grants may not
// use its first candidate. The candidates the caller may not use are
// removed, so no later stage can reach them.
func resolveModel(g *Gateway, user *userRuntime, id string) (modelRoute, *apiError) {
	reg, _ := g.registry.Load().(*modelRegistry)
	v, seen := user.routes.Load(id)
	if seen {
		if ur := v.(*userRoute); ur.reg == reg {
			return ur.target, nil
		}
	}
	target, e := resolveForUser(reg, user, id)
	// Only what the user may use is remembered: the ids the registry
	// resolves, so the memory is bounded by its size (and maxUserRoutes).
	if e == nil && (seen || user.routeCount.Add(1) <= maxUserRoutes) {
		user.routes.Store(id, &userRoute{reg: reg, target: target})
	}
	return target, e
}

// userRoute is a user's remembered resolution of one model id, valid
// while reg is the current registry snapshot (grants never change for a
// userRuntime; a users-file reload builds new ones). target.candidates
// is shared by every request that reads it: read-only.
type userRoute struct {
	reg    *modelRegistry
	target modelRoute
}

// maxUserRoutes bounds each user's remembered resolutions.
const maxUserRoutes = 1024

// resolveForUser is resolveModel without the per-user memory.
func resolveForUser(reg *modelRegistry, user *userRuntime, id string) (modelRoute, *apiError) {
	target, e := reg.route(id)
	if e != nil {
		return modelRoute{}, e
	}
	if !user.canUseRoute(target) {
		return modelRoute{}, apierr.New(http.StatusForbidden, "permission_error", "model_not_allowed",
			"model \""+id+"\" is not available to your group")
	}
	if len(target.candidates) == 1 {
		return target, nil // the first candidate is target itself
	}
	allowed := make([]candidate, 0, len(target.candidates))
	for i := 0; i < len(target.candidates); i++ {
		cand := target.candidates[i]
		if i == 0 || user.canUseRoute(modelRoute{provider: cand.provider, model: cand.model, alias: target.alias}) {
			allowed = append(allowed, cand)
		}
	}
	target.candidates = allowed
	return target, nil
}

// reject ends the request with the gateway's own refusal (written
// through the route's format, not logged as a failure).
func reject(c *call, e *apiError) {
	noteWrite(&c.rec, e.Status)
	noteError(&c.rec, e)
	if c.req == nil && c.r.ContentLength != 0 || e.Status == http.StatusRequestEntityTooLarge {
		// A refusal before the body was read (or of an oversized one):
		// the rest of the body is never read, so the connection cannot
		// carry another request, and net/http must not wait to discard a
		// slow client's remaining body before it answers.
		c.w.Header().Set("Connection", "close")
	}
	c.format.writeError(c.w, e)
}

// fail logs an upstream-side failure and writes it, unless the client
// already went away.
func fail(c *call, e *apiError) {
	if e.Status == 499 {
		noteError(&c.rec, e)
		c.g.log.infof("client closed the request: %s %s%s", c.r.Method, c.r.URL.Path, c.trace.logTail)
		return
	}
	c.g.log.errorf("%s %s: %s%s", c.r.Method, c.r.URL.Path, e.Error(), c.trace.logTail)
	reject(c, e)
}

// translateContext builds the response translators' context.
func translateContext(c *call, upstreamModel string) translate.Context {
	return translate.Context{
		RequestedModel: c.req.model,
		UpstreamModel:  upstreamModel,
		Created:        time.Now().Unix(),
		IncludeUsage:   c.req.includeUsage || c.req.hubUsage,
		IDFallback:     c.format.idPrefix + randomHex(12),
	}
}

func errNotSupported(p *providerRuntime, rt *route) *apiError {
	return apierr.New(http.StatusNotImplemented, "invalid_request_error", "provider_not_supported",
		"provider \""+p.name+"\" is of type "+p.kind+", which has no "+rt.path+" endpoint")
}

// randomHex returns n random bytes hex-encoded (ids for responses the
// gateway builds itself).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
