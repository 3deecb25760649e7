package gateway

import (
	"net/http"
	"strings"
)

// operation is what a metered route asks a backend to do; each provider
// type's capability table (backends.go) has one row per operation.
type operation int

const (
	opChat operation = iota
	opEmbeddings
	opImages
	opSpeech
	opTranscriptions
	opMessages
	opCountTokens
	opOllamaChat
	opOllamaGenerate
	opOllamaEmbed
	opOllamaEmbeddings
	opResponses
	operationCount
)

// bodyKind says how a metered route's request body is read.
type bodyKind int

const (
	bodyJSON      bodyKind = iota // a JSON object with a top-level "model"
	bodyMultipart                 // multipart/form-data with a "model" field
)

// route is one row of the route table: everything that distinguishes one
// metered route from another. The stages are shared (pipeline.go).
type route struct {
	path   string // the client-facing path; also the openai upstream path
	method string
	format *wireFormat
	op     operation
	name   string // the accounting and request-record name
	body   bodyKind
	// maxBodyBytes caps the request body (413 over it).
	maxBodyBytes int64
	// cacheable: a non-streaming answer may be served from and saved to
	// the response cache.
	cacheable bool
	// priced: tokens and cost are accounted (and a cost budget needs the
	// model's price). Unpriced routes are request-counted only.
	priced bool
	// failover: a failed first candidate may be replaced by another
	// (failover.enabled).
	failover bool
	// noOutput: the route generates no output tokens (embeddings): its
	// reservation is the prompt estimate alone.
	noOutput bool
	// unlimited: the limit stage is skipped (the request is neither
	// counted nor refused by a limit; count_tokens, which Claude Code
	// sends by the dozen).
	unlimited bool
}

const maxMediaRequestBytes = 10 << 20

// routeTable lists the metered routes. /v1/models, native passthrough
// (/{provider}/...) and unmatched paths are dispatched by ServeHTTP after
// it, in that order.
var routeTable = []*route{
	{path: "/v1/chat/completions", method: http.MethodPost, format: openAIFormat, op: opChat, name: "chat/completions",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, failover: true},
	{path: "/v1/embeddings", method: http.MethodPost, format: openAIFormat, op: opEmbeddings, name: "embeddings",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, noOutput: true, failover: true},
	{path: "/v1/images/generations", method: http.MethodPost, format: openAIFormat, op: opImages, name: "images",
		body: bodyJSON, maxBodyBytes: maxMediaRequestBytes},
	{path: "/v1/audio/speech", method: http.MethodPost, format: openAIFormat, op: opSpeech, name: "audio/speech",
		body: bodyJSON, maxBodyBytes: maxMediaRequestBytes},
	{path: "/v1/audio/transcriptions", method: http.MethodPost, format: openAIFormat, op: opTranscriptions, name: "audio/transcriptions",
		body: bodyMultipart, maxBodyBytes: maxMediaRequestBytes},
	{path: "/v1/messages", method: http.MethodPost, format: anthropicFormat, op: opMessages, name: "messages",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, failover: true},
	{path: "/v1/messages/count_tokens", method: http.MethodPost, format: anthropicFormat, op: opCountTokens, name: "messages/count_tokens",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, unlimited: true},
	{path: "/v1/responses", method: http.MethodPost, format: responsesFormat, op: opResponses, name: "responses",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, failover: true},
	{path: "/api/chat", method: http.MethodPost, format: ollamaFormat, op: opOllamaChat, name: "ollama/chat",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, failover: true},
	{path: "/api/generate", method: http.MethodPost, format: ollamaFormat, op: opOllamaGenerate, name: "ollama/generate",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, failover: true},
	{path: "/api/embed", method: http.MethodPost, format: ollamaFormat, op: opOllamaEmbed, name: "ollama/embed",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, noOutput: true, failover: true},
	{path: "/api/embeddings", method: http.MethodPost, format: ollamaFormat, op: opOllamaEmbeddings, name: "ollama/embeddings",
		body: bodyJSON, maxBodyBytes: maxUnifiedRequestBytes, cacheable: true, priced: true, noOutput: true, failover: true},
}

// passthroughRoute is the accounting row of native passthrough: any
// method, the body forwarded untouched, errors in the OpenAI envelope.
var passthroughRoute = &route{path: "/{provider}/", format: openAIFormat, name: "passthrough",
	maxBodyBytes: maxPassthroughRequestBytes, priced: true}

// defaultFormat answers what matches no route and the model listing.
var defaultFormat = openAIFormat

// routesByPath indexes routeTable (built once; routes never change);
// routesByName by their names.
var (
	routesByPath = indexRoutes(routeTable)
	routesByName = indexRouteNames(routeTable)
)

func indexRouteNames(table []*route) map[string]*route {
	m := make(map[string]*route, len(table))
	for i := 0; i < len(table); i++ {
		m[table[i].name] = table[i]
	}
	return m
}

func indexRoutes(table []*route) map[string]*route {
	m := make(map[string]*route, len(table))
	for i := 0; i < len(table); i++ {
		m[table[i].path] = table[i]
	}
	return m
}

// ServeHTTP dispatches by path: a metered route from the table, the model
// listing, native passthrough to a configured provider, and then either
// the wrapped next handler (passthroughUnknown) or a 404. Every gateway
// route authenticates on its own; a request matching no route never
// reaches authentication. Every answer the gateway writes itself carries
// the request's ids (startTrace) and the edge headers, a CORS preflight
// is answered before any route authenticates (edge.go), and a panic is
// contained (recover.go); a request handed to next is untouched.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(g.discovery.states) > 0 {
		g.discovery.maybeRefresh()
	}
	if g.cfg.passthroughUnknown && !g.noNext && !g.ownsPath(r) {
		g.next.ServeHTTP(w, r)
		return
	}
	// The edge stage (edge.go), written out: under the interpreter every
	// call on the request path costs allocations.
	h := w.Header()
	h["X-Content-Type-Options"] = nosniffValue
	if r.TLS != nil || len(g.cfg.trustedProxies) > 0 && forwardedTLS(r, g.cfg) {
		h["Strict-Transport-Security"] = hstsValue
	}
	if g.cfg.cors != nil && g.cfg.cors.apply(w, r) {
		return // a CORS preflight, answered before any route authenticates
	}
	defer recoverRequest(g, w, r)
	p := r.URL.Path
	m := g.metrics
	if rt := routesByPath[p]; rt != nil && (m == nil || p != m.settings.path) {
		if m != nil {
			m.inFlight.Add(1)
			defer m.inFlight.Add(-1)
		}
		serveMetered(g, w, r, rt, startTrace(w, r))
		return
	}
	serveUnmetered(g, w, r, p)
}

// serveUnmetered is ServeHTTP past the metered routes (its own function:
// under Yaegi a call pays for the callee's whole body, and a metered
// request need not pay for these): /metrics, the model listings, the
// Ollama metadata, the per-target routes, the admin API, passthrough,
// the next handler and the 404. ServeHTTP's deferred recovery covers it.
func serveUnmetered(g *Gateway, w http.ResponseWriter, r *http.Request, p string) {
	if m := g.metrics; m != nil && p == m.settings.path {
		g.serveMetrics(w, r)
		return
	}
	if p == "/v1/models" || strings.HasPrefix(p, "/v1/models/") {
		g.serveModels(w, r, startTrace(w, r))
		return
	}
	if (p == "/" && !g.cfg.passthroughUnknown || strings.HasPrefix(p, "/api/")) && g.serveOllamaMeta(w, r) {
		return
	}
	if g.serveTargetRoute(w, r, p) {
		return
	}
	if g.cfg.admin.enabled && isAdminPath(p) {
		g.serveAdmin(w, r)
		return
	}
	if provider, rest, ok := g.passthroughTarget(p); ok {
		if m := g.metrics; m != nil {
			m.inFlight.Add(1)
			defer m.inFlight.Add(-1)
		}
		g.servePassthrough(w, r, provider, rest, startTrace(w, r))
		return
	}
	if g.cfg.passthroughUnknown {
		g.next.ServeHTTP(w, r)
		return
	}
	notFound(w, r)
}

// notFound is the 404 of a path no route matches (and the nil next
// handler's answer).
func notFound(w http.ResponseWriter, r *http.Request) {
	startTrace(w, r)
	defaultFormat.writeError(w, errRouteNotFound(r.Method, r.URL.Path))
}
