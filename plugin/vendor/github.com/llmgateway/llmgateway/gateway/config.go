package gateway

// Config is the gateway's whole configuration: the plugin's dynamic
// configuration block and, hoisted to the top level, the binary's config
// file. JSON keys are the names the README's configuration table lists. A
// key this build does not implement yet is refused by both decoders (DecodeConfigJSON and
// ConfigFromMap), never accepted and ignored.
//
// Config is validated and compiled once by New; requests only read the
// compiled form.
type Config struct {
	// Providers maps a provider name (the routing prefix in
	// "provider/model" ids and native passthrough paths) to its settings.
	// Required: at least one entry.
	Providers map[string]*ProviderConfig `json:"providers"`
	// Groups maps a group name to its access lists. Optional.
	Groups map[string]*GroupConfig `json:"groups"`
	// Users holds the API-key holders. With none, every request gets 401.
	Users *UsersConfig `json:"users"`
	// Breaker tunes the per-provider discovery circuit breaker. Every
	// field is zero-means-default.
	Breaker *BreakerConfig `json:"breaker"`
	// ModelMeta overrides a model's context window and display cost, keyed
	// by exact "provider/model" or by bare model id. Display only, except
	// that free: true marks the model's cost as a known zero.
	ModelMeta map[string]*ModelMetaConfig `json:"modelMeta"`
	// ModelAliases maps a client-facing alias id to its targets (model
	// ids, bare or "provider/model"), resolved through the normal routing
	// rules. A value is one target (a string), several in priority order
	// (a []string or []interface{} of strings), or an object (AliasConfig,
	// *AliasConfig, or its decoded-JSON map[string]interface{} form). An
	// exact alias match wins over every other rule. Default: none.
	ModelAliases map[string]interface{} `json:"modelAliases"`
	// PassthroughUnknown sends a request that matches none of the
	// gateway's routes to the wrapped next handler instead of answering
	// it with a 404 envelope. Default false.
	PassthroughUnknown bool `json:"passthroughUnknown"`
	// RequestTimeout is the progress-based upstream timeout (Go duration,
	// default "5m"): the longest the gateway waits for response headers,
	// and the longest it waits between two reads of a response body.
	RequestTimeout string `json:"requestTimeout"`
	// Retry enables same-provider retry of transient upstream failures on
	// the unified and media routes. Default: off (one attempt).
	Retry *RetryConfig `json:"retry"`
	// Failover opts in to cross-provider failover (failover.go).
	Failover *FailoverConfig `json:"failover"`
	// MaxUpstreamAttempts bounds one request's outbound attempts, every
	// retry on every failover candidate included (default 6, 1–40).
	MaxUpstreamAttempts int `json:"maxUpstreamAttempts"`
	// FirstByteDeadline bounds the total time one request spends before
	// an upstream's response headers arrive, every attempt and retry wait
	// included (Go duration; default: no deadline).
	FirstByteDeadline string `json:"firstByteDeadline"`
	// Routing orders a model's candidates (strategy, session affinity)
	// and guards them (the request-path breaker). See routing.go.
	Routing *RoutingConfig `json:"routing"`
	// MaxInFlightBodyRequests caps how many unified/media requests may be
	// reading and decoding their body at once (0: self-tuned from
	// GOMAXPROCS; larger than 10000 is clamped to 10000).
	MaxInFlightBodyRequests int `json:"maxInFlightBodyRequests"`
	// Redis shares limit counters (and the response cache) across
	// replicas. Omitted: in-process counters only.
	Redis *RedisConfig `json:"redis"`
	// Cache is the opt-in response cache (requires Redis).
	Cache *CacheConfig `json:"cache"`
	// Pricing overrides per-model prices (USD per 1M tokens), keyed by
	// bare or "provider/model" id, over the built-in tables.
	Pricing map[string]*ModelPricing `json:"pricing"`
	// AllowUnpricedWithCostBudget serves a model with no known price to a
	// caller with a cost budget (billing it 0) instead of answering 402.
	AllowUnpricedWithCostBudget bool `json:"allowUnpricedWithCostBudget"`
	// TrustedProxies lists the proxies (IP addresses or CIDRs) whose
	// X-Forwarded-For the gateway believes, for the client address that
	// failed authentications are counted against. Default: none (the TCP
	// peer is the client).
	TrustedProxies []string `json:"trustedProxies"`
	// ReservationTTL is how long a budgeted request's reservation (its
	// worst-case tokens and cost, held against every token and cost
	// budget while it runs) lives unless renewed (Go duration, default
	// "5m", at least "1s"). A live request renews it every half TTL, so
	// only the reservations of a replica that died expire.
	ReservationTTL string `json:"reservationTTL"`
	// AccessLog writes one structured line per metered and passthrough
	// request, when its request record is emitted: method, route,
	// status, user, provider, model, attempts, timings, tokens, cost,
	// cache, request and trace ids, error code. Default false.
	AccessLog bool `json:"accessLog"`
	// Admin turns on the operator statistics (stats.go) the admin API
	// and /metrics read. Omitted or disabled: no statistics counter is
	// written.
	Admin *AdminConfig `json:"admin"`
	// AdminMaxKeysPerRequest bounds the counter keys one admin read may
	// fetch from the store (default 10000, 100-1000000); a read whose
	// estimate is larger is refused with a 400 before any store read.
	AdminMaxKeysPerRequest int `json:"adminMaxKeysPerRequest"`
	// Metrics is the Prometheus text-exposition endpoint (metrics.go).
	// Omitted or disabled: the route is not registered at all.
	Metrics *MetricsConfig `json:"metrics"`
	// McpServers are the MCP servers the gateway proxies (/mcp/{name}/)
	// and federates (POST /mcp), by name (targets.go).
	McpServers map[string]*TargetConfig `json:"mcpServers"`
	// Agents are the A2A agents the gateway proxies (/a2a/{name}/).
	Agents map[string]*AgentConfig `json:"agents"`
	// TargetHealth configures the active health probes of MCP servers and
	// agents (passive recording from traffic is always on).
	TargetHealth *TargetHealthConfig `json:"targetHealth"`
	// Cors allows browser pages of the listed origins to call the
	// gateway's routes (cors.go). Omitted: no CORS header is sent.
	Cors *CORSConfig `json:"cors"`
}

// TargetConfig is one MCP server.
type TargetConfig struct {
	// URL is the server's endpoint (http or https). A path ending in
	// /sse marks a legacy HTTP+SSE server: proxied, never federated.
	URL string `json:"url"`
	// Headers are sent on every request to the server (a token the
	// server needs of its own); each value may use a secret form. None
	// by default: the gateway injects no credential.
	Headers map[string]string `json:"headers"`
}

// AgentConfig is one A2A agent.
type AgentConfig struct {
	// URL is the agent's JSON-RPC endpoint (http or https).
	URL string `json:"url"`
	// Card is the agent card's path under the agent's proxy URL
	// (default /.well-known/agent-card.json); it must start with "/".
	Card string `json:"card"`
	// Headers are as TargetConfig's.
	Headers map[string]string `json:"headers"`
}

// TargetHealthConfig is the targetHealth block.
type TargetHealthConfig struct {
	// Enabled turns the active probe sweep on: at most once per
	// probeInterval, triggered by a read of the health (never a timer).
	Enabled bool `json:"enabled"`
	// ProbeInterval is the least time between sweeps (10s-1h; 60s).
	ProbeInterval string `json:"probeInterval"`
	// FailureThreshold is the consecutive failed observations that mark
	// a target unhealthy (1-100; 3).
	FailureThreshold int `json:"failureThreshold"`
}

// MetricsConfig is the metrics block.
type MetricsConfig struct {
	Enabled bool `json:"enabled"`
	// Path is the served path (default "/metrics"; must start with "/").
	Path string `json:"path"`
	// AllowedCIDRs are the CIDR blocks whose TCP peer (RemoteAddr, never
	// a forwarded header) may scrape without an admin key.
	AllowedCIDRs []string `json:"allowedCIDRs"`
	// ModelLabel adds the per-(provider, model) attempt and failure
	// families.
	ModelLabel bool `json:"modelLabel"`
}

// AdminConfig is the admin block. Enabled turns on the always-on
// statistics families (and, with the admin routes, the dashboard API).
type AdminConfig struct {
	Enabled bool `json:"enabled"`
	// Stats opts in to the statistics families whose cardinality or
	// per-request cost is larger. Omitted: both off.
	Stats *AdminStatsConfig `json:"stats"`
}

// AdminStatsConfig opts in to two statistics families, each on its own.
type AdminStatsConfig struct {
	// UserModel keeps per-(user, model) usage (the umodel family).
	UserModel bool `json:"userModel"`
	// Latency keeps latency histograms (total latency and time to first
	// byte) per provider and per model.
	Latency bool `json:"latency"`
}

// AliasConfig is a modelAliases value in its object form. Targets is
// required (non-empty, in priority order). Strategy is "" (the global
// routing strategy), "priority", "round-robin", "weighted",
// "least-latency" or "least-cost". Weights, only with "weighted", gives
// each target's weight (1-1000, one per target; omitted: all 1).
type AliasConfig struct {
	Targets  []string `json:"targets"`
	Strategy string   `json:"strategy,omitempty"`
	Weights  []int    `json:"weights,omitempty"`
}

// LimitsConfig bounds a group's or a user's traffic. Zero is unlimited.
// Windows are fixed UTC minutes, days and calendar months.
type LimitsConfig struct {
	RequestsPerMinute int64   `json:"requestsPerMinute"`
	RequestsPerDay    int64   `json:"requestsPerDay"`
	TokensPerDay      int64   `json:"tokensPerDay"`
	TokensPerMonth    int64   `json:"tokensPerMonth"`
	CostPerDayUSD     float64 `json:"costPerDayUSD"`
	CostPerMonthUSD   float64 `json:"costPerMonthUSD"`
}

// RedisConfig is the shared counter (and cache) store: Redis, Valkey or
// any RESP2 server.
type RedisConfig struct {
	// Address is host:port. Required when the block is present.
	Address string `json:"address"`
	// Password (a secret form) is sent with AUTH when set.
	Password string `json:"password"`
	// DB is selected on every new connection (>= 0).
	DB int `json:"db"`
	// FailOpen (default true): on a Redis error, count in process and go
	// on; false: answer 503.
	FailOpen *bool `json:"failOpen"`
	// PoolSize caps pooled connections (0: 4-8 from GOMAXPROCS; max 256).
	PoolSize int `json:"poolSize"`
	// TLS dials with TLS, verifying the certificate against the host.
	TLS bool `json:"tls"`
}

// CacheConfig is the opt-in response cache for non-streaming chat and
// embeddings.
type CacheConfig struct {
	Enabled bool `json:"enabled"`
	// TTL (Go duration, default "5m"); zero or negative is floored to 1s
	// with a warning.
	TTL string `json:"ttl"`
	// MaxBodyBytes is the largest cacheable response (default 1 MiB, at
	// most 8 MiB).
	MaxBodyBytes int64 `json:"maxBodyBytes"`
}

// ModelPricing is a price override in USD per 1,000,000 tokens.
type ModelPricing struct {
	InputPerM  float64 `json:"inputPerM"`
	OutputPerM float64 `json:"outputPerM"`
}

// RetryConfig configures same-provider retry.
type RetryConfig struct {
	// Enabled turns retry on. Default false: exactly one attempt.
	Enabled bool `json:"enabled"`
	// Attempts is the number of retries after the first try (1-3,
	// default 1; 0 means the default).
	Attempts int `json:"attempts"`
	// Backoff is the base wait before the first retry (Go duration,
	// default "250ms"); it doubles per retry, capped at 2s, with equal
	// jitter.
	Backoff string `json:"backoff"`
}

// ProviderConfig describes one upstream provider.
type ProviderConfig struct {
	// Type is "openai", "anthropic" or "gemini". "openai" serves any
	// OpenAI-wire-compatible server through BaseURL.
	Type string `json:"type"`
	// BaseURL defaults per type (https://api.openai.com,
	// https://api.anthropic.com, https://generativelanguage.googleapis.com);
	// a trailing slash is trimmed.
	BaseURL string `json:"baseUrl"`
	// APIKey is a secret form: a literal, "env:VAR" or "file:/path".
	// An openai-type provider may resolve to empty (a keyless upstream,
	// no Authorization header sent); anthropic and gemini may not.
	APIKey string `json:"apiKey"`
	// Models lists the model ids this provider serves, combined with any
	// discovered ones.
	Models []string `json:"models"`
	// Discovery pulls the provider's own model listing at construction
	// and then, from the request path, no more often than
	// DiscoveryInterval. A failure is logged and keeps the last known set.
	Discovery bool `json:"discovery"`
	// DiscoveryInterval is the minimum time between discovery refreshes
	// (Go duration, default "1h").
	DiscoveryInterval string `json:"discoveryInterval"`
	// MetadataPath (openai type, with Discovery) is a second listing
	// fetched alongside discovery that reports per-model context length,
	// in LM Studio's shape (e.g. "/api/v0/models"). Must start with "/".
	MetadataPath string `json:"metadataPath"`
	// Passthrough enables the native passthrough route /{name}/...;
	// nil means enabled.
	Passthrough *bool `json:"passthrough"`
	// RequestTimeout overrides the top-level RequestTimeout for this
	// provider (Go duration). Empty inherits.
	RequestTimeout string `json:"requestTimeout"`
	// PassthroughHeaders names request headers that native passthrough
	// forwards although it drops them by default because they choose a
	// billing account or paid features (OpenAI-Organization,
	// OpenAI-Project, and anthropic-beta outside /v1/messages).
	PassthroughHeaders []string `json:"passthroughHeaders"`
	// ResponsesAPI says how /v1/responses reaches this provider:
	// "convert" (the default: converted to chat completions, as for every
	// provider type) or "native" (openai type only: forwarded with only
	// the model rewritten, for a server that implements the Responses
	// API).
	ResponsesAPI string `json:"responsesApi"`
	// MaxConcurrent caps this provider's upstream requests in flight
	// (0: no cap). A request over the cap waits in a queue of MaxQueue
	// for at most QueueTimeout, then moves to the next candidate
	// (failover on) or gets 429 provider_saturated.
	MaxConcurrent int `json:"maxConcurrent"`
	// MaxQueue is how many requests may wait for a slot (nil: as many as
	// MaxConcurrent; 0: none wait). Requires MaxConcurrent.
	MaxQueue *int `json:"maxQueue"`
	// QueueTimeout is the longest a request waits for a slot (Go
	// duration, default "1s"). Requires MaxConcurrent.
	QueueTimeout string `json:"queueTimeout"`
}

// GroupConfig is a named set of access lists. Every list is glob-matched
// with path.Match; an empty or omitted list means "all".
type GroupConfig struct {
	// Providers limits which configured provider names the group reaches.
	Providers []string `json:"providers"`
	// Models limits which model ids the group reaches; each pattern is
	// checked against both the bare and the "provider/model" form.
	Models []string `json:"models"`
	// PassthroughPaths limits which REST paths (the part after
	// "/{provider}/", e.g. "v1/files") the group's native passthrough
	// requests may address. "*" does not cross "/": leave the list empty
	// to allow every path.
	PassthroughPaths []string `json:"passthroughPaths"`
	// McpServers limits which MCP servers (globs over their configured
	// names) the group sees and reaches. Unioned across a user's groups:
	// any member group with an empty list allows all.
	McpServers []string `json:"mcpServers"`
	// Agents limits which A2A agents the group reaches, unioned the same
	// way as McpServers.
	Agents []string `json:"agents"`
	// McpTools limits which federated tools the group lists and calls
	// (globs over "<server>_<tool>"), unioned across a user's groups
	// like McpServers. Empty: every tool of a reachable server.
	McpTools []string `json:"mcpTools"`
	// McpLoop turns on the gateway-run tool-calling loop for requests
	// whose primary group this is (nil: off).
	McpLoop *McpLoopConfig `json:"mcpLoop"`
	// Limits bound the group's traffic (one scope per group).
	Limits *LimitsConfig `json:"limits"`
	// Cache overrides cache.enabled for this group's requests (nil:
	// inherit; true requires the top-level cache block to be enabled).
	Cache *bool `json:"cache"`
	// CacheTTL sets the TTL of entries this group's requests write.
	CacheTTL string `json:"cacheTTL"`
}

// McpLoopConfig is a group's tool-calling loop: on the chat-shaped
// routes, a request that carries no tools of its own is offered the
// caller's federated MCP tools, and the tool calls the model makes are
// run by the gateway until the model answers without one.
type McpLoopConfig struct {
	// Enabled turns the loop on. Default false.
	Enabled bool `json:"enabled"`
	// MaxTurns caps the model calls one request makes, 1-20 (0: the
	// default, 5).
	MaxTurns int `json:"maxTurns"`
}

// UsersConfig holds the API-key holders.
type UsersConfig struct {
	// File is the path of a JSON users file ({"users": [UserConfig...]})
	// merged over Inline (a file user replaces the inline user of the same
	// name) and hot-reloaded: its mtime is checked at most every 5 s from
	// the request path. A bad edit keeps the last good set.
	File string `json:"file"`
	// Inline users, resolved once at construction.
	Inline []*UserConfig `json:"inline"`
}

// UserConfig is one API-key holder.
type UserConfig struct {
	// Name identifies the user in logs. Required and unique.
	Name string `json:"name"`
	// Group is the user's primary group.
	Group string `json:"group"`
	// Groups lists further member groups. Effective membership is Group
	// first, then Groups, de-duplicated; at least one is required.
	Groups []string `json:"groups"`
	// APIKey is a secret form; it must resolve non-empty and be unique.
	APIKey string `json:"apiKey"`
	// Providers is the user's personal grant: providers (globs) this user
	// reaches in addition to what their groups allow. The personal grant
	// exists only when Providers is non-empty.
	Providers []string `json:"providers"`
	// Models narrows the personal grant to these model globs (empty: every
	// model on Providers). Requires Providers.
	Models []string `json:"models"`
	// Admin marks the user as an administrator (for the admin routes).
	Admin bool `json:"admin"`
	// Limits are the user's own, enforced in addition to every member
	// group's.
	Limits *LimitsConfig `json:"limits"`
}

// BreakerConfig tunes the discovery circuit breaker.
type BreakerConfig struct {
	// FailureThreshold is how many consecutive failed discovery refreshes
	// open the breaker (1-100, default 3; 0 means the default).
	FailureThreshold int `json:"failureThreshold"`
	// OpenDuration is the first backoff before a half-open probe (Go
	// duration, default "1m"); it doubles on every failed probe.
	OpenDuration string `json:"openDuration"`
	// MaxOpenDuration caps the backoff (default "6h"; at least
	// OpenDuration, at most "24h").
	MaxOpenDuration string `json:"maxOpenDuration"`
}

// FailoverConfig turns failover on.
type FailoverConfig struct {
	// Enabled opts in (default false).
	Enabled bool `json:"enabled"`
	// MaxAttempts is how many candidates one request may try, the first
	// included (default 3, 1–10).
	MaxAttempts int `json:"maxAttempts"`
}

// RoutingConfig orders and guards a model's candidates.
type RoutingConfig struct {
	// Strategy orders the candidates of a bare id or of an alias with
	// several targets: "priority" (the default: registry order),
	// "round-robin", "weighted", "least-latency" or "least-cost". An
	// alias's own strategy wins.
	Strategy string `json:"strategy"`
	// Breaker tunes the per-provider request-path breaker (defaults:
	// failureThreshold 3, openDuration "30s", maxOpenDuration "10m").
	Breaker *BreakerConfig `json:"breaker"`
	// SessionAffinity keeps a conversation on the provider that served it.
	SessionAffinity *AffinityConfig `json:"sessionAffinity"`
}

// AffinityConfig is session affinity (opt-in).
type AffinityConfig struct {
	Enabled bool `json:"enabled"`
	// TTL is a binding's idle life (Go duration, default "24h"): every
	// use renews it.
	TTL string `json:"ttl"`
}

// ModelMetaConfig overrides one model's metadata. A zero field falls
// through to the next layer (discovery, then the built-in table).
type ModelMetaConfig struct {
	// ContextTokens is the context window in tokens (0: not overridden).
	ContextTokens int64 `json:"contextTokens"`
	// MaxOutputTokens is the most output tokens one response may carry
	// (0: not overridden): what a request that names no output cap may
	// produce.
	MaxOutputTokens int64 `json:"maxOutputTokens"`
	// InputCostPerMTokMicroUsd is the input price per 1,000,000 tokens in
	// micro-USD (0: not overridden, unless Free).
	InputCostPerMTokMicroUsd int64 `json:"inputCostPerMTokMicroUsd"`
	// OutputCostPerMTokMicroUsd is the output price, likewise.
	OutputCostPerMTokMicroUsd int64 `json:"outputCostPerMTokMicroUsd"`
	// Free sets both prices to a known zero; contradicts a non-zero price.
	Free bool `json:"free"`
}
