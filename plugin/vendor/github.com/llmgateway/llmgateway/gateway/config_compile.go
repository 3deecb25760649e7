package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Provider types the gateway knows.
const (
	providerOpenAI    = "openai"
	providerAnthropic = "anthropic"
	providerGemini    = "gemini"
)

// defaultReservationTTL is a budget reservation's life unless renewed.
const defaultReservationTTL = 5 * time.Minute

// defaultRequestTimeout applies when neither requestTimeout is set.
const defaultRequestTimeout = 5 * time.Minute

// defaultBaseURLs are the per-type upstream roots.
var defaultBaseURLs = map[string]string{
	providerOpenAI:    "https://api.openai.com",
	providerAnthropic: "https://api.anthropic.com",
	providerGemini:    "https://generativelanguage.googleapis.com",
}

// reservedNames would shadow the gateway's own fixed routes.
var reservedNames = map[string]bool{"v1": true, "mcp": true, "a2a": true, "admin": true, "api": true, "metrics": true}

// providerRuntime is one provider's compiled, immutable settings.
type providerRuntime struct {
	name        string
	kind        string
	baseURL     string
	base        *url.URL // baseURL parsed; passthrough targets copy it
	apiKey      string   // resolved; never logged
	models      []string
	modelSet    map[string]bool
	passthrough bool
	timeout     time.Duration
	// passthroughHeaders are the billing headers passthrough forwards for
	// this provider (canonical names; PassthroughHeaders).
	passthroughHeaders map[string]bool
	// responsesNative: /v1/responses is forwarded, not converted.
	responsesNative bool
	// jsonHeader is the header of a JSON request to the provider: its
	// content type and its credential, built once (a request clones it).
	// Never logged; nil in tests that build a providerRuntime by hand.
	jsonHeader http.Header
	// discoveryInterval is 0 when discovery is off.
	discoveryInterval time.Duration
	metadataPath      string
	// slots caps the provider's requests in flight (maxConcurrent); nil:
	// no cap. The one piece of runtime state in a providerRuntime.
	slots *providerSlots
}

// grant is one set of access lists that can authorize a request on its
// own: a group's, or a user's personal grant. Grants never merge.
type grant struct {
	name             string // "group NAME" or "personal grant"
	providers        []string
	models           []string
	passthroughPaths []string
	// mcpServers and agents are unioned across member groups instead;
	// a personal grant has neither and takes no part in that union.
	personal   bool
	mcpServers []string
	agents     []string
	mcpTools   []string
	// group is the group's own name ("" for a personal grant); limits
	// are its LimitsConfig (nil: unlimited).
	group  string
	limits *compiledLimits
	// cacheOverride and cacheTTLOverride are the group's raw cache
	// settings, resolved against the top-level cache block into
	// cacheOn/cacheTTL.
	cacheOverride    *bool
	cacheTTLOverride string
	cacheOn          bool
	cacheTTL         time.Duration
	// loopTurns is the group's mcpLoop.maxTurns when the loop is on
	// (0: off); it decides for users whose primary group this is.
	loopTurns int
}

// userRuntime is one authenticated identity. It holds no key material.
type userRuntime struct {
	name string
	// scopes are the limit scopes the user's requests count in;
	// costBudget is whether any of them has a cost limit (a price is then
	// required), worked out once.
	scopes     []limitScope
	costBudget bool
	// budgeted is whether any scope has a token or cost limit (its
	// requests then reserve, see reserve.go).
	budgeted bool
	// grants are the member groups' grants, primary group first, then the
	// personal grant when the user has one.
	grants []*grant
	// primary is the primary group's grant (the user's "group"): it
	// decides per-user settings such as caching.
	primary *grant
	// groups names the member groups, primary first.
	groups []string
	admin  bool
	// routes remembers resolveModel's answers per model id (*userRoute);
	// routeCount bounds it. A userRuntime is never copied.
	routes     sync.Map
	routeCount atomic.Int64
}

// compiledConfig is the validated, immutable form of Config that
// requests read.
type compiledConfig struct {
	providers          map[string]*providerRuntime
	providerNames      []string // sorted
	groups             map[string]*grant
	inlineUsers        []compiledUser // resolved once, at construction
	usersFile          string
	usersFileModTime   time.Time // as stat'ed just before the construction-time read
	usersFileSize      int64
	usersFileHash      [32]byte       // SHA-256 of the content read at construction
	users              []compiledUser // inline merged with the users file at construction
	passthroughUnknown bool
	accessLog          bool
	requestTimeout     time.Duration
	aliases            map[string]*aliasSpec
	aliasNames         []string // sorted
	breaker            breakerSettings
	modelMeta          map[string]*ModelMetaConfig
	retry              retrySettings
	failover           failoverSettings
	maxAttempts        int           // maxUpstreamAttempts
	firstByteDeadline  time.Duration // 0: none
	routing            routingSettings
	redis              *redisSettings // nil: no Redis
	allowUnpriced      bool
	trustedProxies     []*net.IPNet // whose X-Forwarded-For names the client (auth throttling)
	reservationTTL     time.Duration
	admin              adminSettings
	metrics            metricsSettings
	cache              cacheSettings
	pricing            map[string]modelPrice
	// MCP servers and agents (targets.go), by name, and their names
	// sorted; targetHealth is the targetHealth block.
	mcpServers   map[string]*targetRuntime
	mcpNames     []string
	agents       map[string]*targetRuntime
	agentNames   []string
	targetHealth targetHealthSettings
	// cors is the compiled cors block (cors.go); nil: CORS off.
	cors *corsPolicy
	// warnings are logged once the gateway has a logger.
	warnings  []string
	bodySlots int // body-admission semaphore size
}

// compileConfig validates cfg and builds its runtime form. Every error
// names the offending field and value (never a secret's value).
func compileConfig(cfg *Config) (*compiledConfig, error) {
	if cfg == nil {
		return nil, errors.New("config: missing configuration")
	}
	c := &compiledConfig{passthroughUnknown: cfg.PassthroughUnknown, accessLog: cfg.AccessLog}
	admin, err := compileAdmin(cfg.Admin, cfg.AdminMaxKeysPerRequest)
	if err != nil {
		return nil, err
	}
	c.admin = admin
	timeout, err := parseTimeout("requestTimeout", cfg.RequestTimeout, defaultRequestTimeout)
	if err != nil {
		return nil, err
	}
	c.requestTimeout = timeout
	if err := c.compileProviders(cfg.Providers); err != nil {
		return nil, err
	}
	metrics, metricsWarnings, err := compileMetrics(cfg.Metrics, c.providers)
	if err != nil {
		return nil, err
	}
	c.metrics = metrics
	c.warnings = append(c.warnings, metricsWarnings...)
	if c.retry, err = compileRetry(cfg.Retry); err != nil {
		return nil, err
	}
	if c.failover, err = compileFailover(cfg.Failover); err != nil {
		return nil, err
	}
	if c.maxAttempts, err = compileMaxUpstreamAttempts(cfg.MaxUpstreamAttempts); err != nil {
		return nil, err
	}
	if c.firstByteDeadline, err = parseTimeout("firstByteDeadline", cfg.FirstByteDeadline, 0); err != nil {
		return nil, err
	}
	if c.routing, err = compileRouting(cfg.Routing); err != nil {
		return nil, err
	}
	if w := composedAttemptsWarning(c); w != "" {
		c.warnings = append(c.warnings, w)
	}
	if c.redis, err = compileRedis(cfg.Redis); err != nil {
		return nil, err
	}
	c.allowUnpriced = cfg.AllowUnpricedWithCostBudget
	if c.reservationTTL, err = parseTimeout("reservationTTL", cfg.ReservationTTL, defaultReservationTTL); err != nil {
		return nil, err
	}
	if c.reservationTTL < time.Second {
		return nil, fmt.Errorf("config: reservationTTL: %q must be at least 1s", cfg.ReservationTTL)
	}
	if c.trustedProxies, err = compileTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, err
	}
	if c.cors, err = compileCORS(cfg.Cors); err != nil {
		return nil, err
	}
	if c.pricing, err = compilePricing(cfg.Pricing); err != nil {
		return nil, err
	}
	clamped := false
	if c.bodySlots, clamped, err = compileBodySlots(cfg.MaxInFlightBodyRequests); err != nil {
		return nil, err
	}
	if clamped {
		c.warnings = append(c.warnings, fmt.Sprintf("maxInFlightBodyRequests is above %d; clamped to %d", maxBodySlots, maxBodySlots))
	}
	if c.breaker, err = compileBreaker("breaker", cfg.Breaker, discoveryBreakerDefaults); err != nil {
		return nil, err
	}
	if c.modelMeta, err = compileModelMeta(cfg.ModelMeta); err != nil {
		return nil, err
	}
	if err := c.compileAliases(cfg.ModelAliases); err != nil {
		return nil, err
	}
	if err := c.compileGroups(cfg.Groups); err != nil {
		return nil, err
	}
	if err := c.compileTargets(cfg); err != nil {
		return nil, err
	}
	if err := c.compileCaching(cfg); err != nil {
		return nil, err
	}
	if cfg.Users != nil {
		c.usersFile = cfg.Users.File
		c.inlineUsers, err = compileUserList("users.inline", cfg.Users.Inline, c.groups)
		if err != nil {
			return nil, fmt.Errorf("config: %v", err)
		}
	}
	c.users, err = mergeUsers(c.inlineUsers, nil)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	if c.usersFile != "" {
		// Stat before reading: a change racing the read is then seen as a
		// newer mtime by the first reload check, never missed.
		if info, statErr := os.Stat(c.usersFile); statErr == nil {
			c.usersFileModTime, c.usersFileSize = info.ModTime(), info.Size()
		}
		fileUsers, sum, err := loadUsersFile(c.usersFile, c.groups)
		c.usersFileHash = sum
		if err != nil {
			return nil, fmt.Errorf("config: users.file: %v", err)
		}
		if c.users, err = mergeUsers(c.inlineUsers, fileUsers); err != nil {
			return nil, fmt.Errorf("config: users.file: %v", err)
		}
	}
	return c, nil
}

// compileCaching compiles the cache block and every group's override.
func (c *compiledConfig) compileCaching(cfg *Config) error {
	settings, warnings, err := compileCache(cfg.Cache, c.redis != nil)
	if err != nil {
		return err
	}
	c.cache = settings
	c.warnings = append(c.warnings, warnings...)
	blockEnabled := cfg.Cache != nil && cfg.Cache.Enabled
	for name, gc := range cfg.Groups {
		on, ttl, err := compileGroupCache(name, gc, settings, blockEnabled)
		if err != nil {
			return err
		}
		g := c.groups[name]
		g.cacheOn = on && settings.enabled
		g.cacheTTL = ttl
	}
	return nil
}

func (c *compiledConfig) compileProviders(providers map[string]*ProviderConfig) error {
	if len(providers) == 0 {
		return errors.New("config: providers: at least one provider is required")
	}
	c.providers = make(map[string]*providerRuntime, len(providers))
	for name, pc := range providers {
		field := "providers." + name
		if err := validateTargetName(name); err != nil {
			return fmt.Errorf("config: providers: %v", err)
		}
		if pc == nil {
			return fmt.Errorf("config: %s: nil value (give the provider a type)", field)
		}
		p, err := compileProvider(field, name, pc, c.requestTimeout)
		if err != nil {
			return err
		}
		c.providers[name] = p
		c.providerNames = append(c.providerNames, name)
	}
	sort.Strings(c.providerNames)
	return nil
}

func compileProvider(field, name string, pc *ProviderConfig, globalTimeout time.Duration) (*providerRuntime, error) {
	p := &providerRuntime{name: name, kind: pc.Type, passthrough: pc.Passthrough == nil || *pc.Passthrough}
	base, known := defaultBaseURLs[pc.Type]
	if !known {
		return nil, fmt.Errorf("config: %s.type: unknown provider type %q (want openai, anthropic or gemini)", field, pc.Type)
	}
	if pc.BaseURL != "" {
		base = pc.BaseURL
	}
	base = strings.TrimRight(base, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("config: %s.baseUrl: %q is not an http(s) URL with a host", field, pc.BaseURL)
	}
	p.baseURL = base
	p.base = u
	key, err := resolveSecret(pc.APIKey)
	if err != nil {
		return nil, fmt.Errorf("config: %s.apiKey: %v", field, err)
	}
	if key == "" && pc.Type != providerOpenAI {
		return nil, fmt.Errorf("config: %s.apiKey: required for a %s provider", field, pc.Type)
	}
	p.apiKey = key
	p.passthroughHeaders = map[string]bool{}
	for i := 0; i < len(pc.PassthroughHeaders); i++ {
		name := http.CanonicalHeaderKey(strings.TrimSpace(pc.PassthroughHeaders[i]))
		if !billingHeaders[name] {
			return nil, fmt.Errorf("config: %s.passthroughHeaders[%d]: %q is not a header passthrough drops (OpenAI-Organization, OpenAI-Project, Anthropic-Beta)", field, i, pc.PassthroughHeaders[i])
		}
		p.passthroughHeaders[name] = true
	}
	switch pc.ResponsesAPI {
	case "", "convert":
	case "native":
		if pc.Type != providerOpenAI {
			return nil, fmt.Errorf("config: %s.responsesApi: \"native\" needs an openai provider (a %s provider's /v1/responses is converted)", field, pc.Type)
		}
		p.responsesNative = true
	default:
		return nil, fmt.Errorf("config: %s.responsesApi: %q must be \"convert\" or \"native\"", field, pc.ResponsesAPI)
	}
	p.jsonHeader = http.Header{"Content-Type": {"application/json"}}
	p.injectAuth(p.jsonHeader)
	p.modelSet = make(map[string]bool, len(pc.Models))
	for i := 0; i < len(pc.Models); i++ {
		m := pc.Models[i]
		if strings.TrimSpace(m) == "" || hasControlChar(m) {
			return nil, fmt.Errorf("config: %s.models[%d]: %q is not a usable model id", field, i, m)
		}
		if p.modelSet[m] {
			return nil, fmt.Errorf("config: %s.models[%d]: duplicate model %q", field, i, m)
		}
		p.modelSet[m] = true
		p.models = append(p.models, m)
	}
	sort.Strings(p.models)
	p.timeout, err = parseTimeout(field+".requestTimeout", pc.RequestTimeout, globalTimeout)
	if err != nil {
		return nil, err
	}
	if p.slots, err = compileSlots(field, pc); err != nil {
		return nil, err
	}
	interval, err := parseTimeout(field+".discoveryInterval", pc.DiscoveryInterval, defaultDiscoveryInterval)
	if err != nil {
		return nil, err
	}
	if pc.Discovery {
		p.discoveryInterval = interval
	}
	if pc.MetadataPath != "" {
		if !strings.HasPrefix(pc.MetadataPath, "/") {
			return nil, fmt.Errorf("config: %s.metadataPath: %q must start with \"/\"", field, pc.MetadataPath)
		}
		if pc.Type != providerOpenAI || !pc.Discovery {
			return nil, fmt.Errorf("config: %s.metadataPath: only an openai-type provider with discovery: true reads it", field)
		}
		p.metadataPath = pc.MetadataPath
	}
	return p, nil
}

func (c *compiledConfig) compileGroups(groups map[string]*GroupConfig) error {
	c.groups = make(map[string]*grant, len(groups))
	for name, gc := range groups {
		field := "groups." + name
		if strings.TrimSpace(name) == "" {
			return errors.New("config: groups: a group name is empty")
		}
		if gc == nil {
			return fmt.Errorf("config: %s: nil value (write an allow-all group as {providers: []})", field)
		}
		if err := validateGlobs(field+".providers", gc.Providers); err != nil {
			return fmt.Errorf("config: %v", err)
		}
		if err := validateGlobs(field+".models", gc.Models); err != nil {
			return fmt.Errorf("config: %v", err)
		}
		if err := validateGlobs(field+".passthroughPaths", gc.PassthroughPaths); err != nil {
			return fmt.Errorf("config: %v", err)
		}
		if err := validateGlobs(field+".mcpServers", gc.McpServers); err != nil {
			return fmt.Errorf("config: %v", err)
		}
		if err := validateGlobs(field+".mcpTools", gc.McpTools); err != nil {
			return fmt.Errorf("config: %v", err)
		}
		if err := validateGlobs(field+".agents", gc.Agents); err != nil {
			return fmt.Errorf("config: %v", err)
		}
		limits, err := compileLimits(field+".limits", gc.Limits)
		if err != nil {
			return err
		}
		loopTurns, err := compileMcpLoop(field+".mcpLoop", gc.McpLoop)
		if err != nil {
			return err
		}
		c.groups[name] = &grant{loopTurns: loopTurns, name: "group " + name, providers: gc.Providers, models: gc.Models, passthroughPaths: gc.PassthroughPaths,
			mcpServers: gc.McpServers, agents: gc.Agents, mcpTools: gc.McpTools, group: name, limits: limits,
			cacheOverride: gc.Cache, cacheTTLOverride: gc.CacheTTL}
	}
	return nil
}

// compileAliases validates modelAliases: a non-empty alias without
// control characters, not shadowed by a configured provider's prefix, not
// equal to any provider's explicit model, and a value of one of the forms
// aliasValue reads whose targets are non-empty, distinct and not
// themselves aliases. A target no provider knows is accepted: it
// resolves once a provider serves it.
func (c *compiledConfig) compileAliases(aliases map[string]interface{}) error {
	c.aliases = make(map[string]*aliasSpec, len(aliases))
	names := make([]string, 0, len(aliases))
	for alias := range aliases {
		names = append(names, alias)
	}
	sort.Strings(names)
	for n := 0; n < len(names); n++ {
		alias := names[n]
		field := fmt.Sprintf("modelAliases[%q]", alias)
		if strings.TrimSpace(alias) == "" || hasControlChar(alias) {
			return fmt.Errorf("config: %s: an alias must be non-empty and contain no control characters", field)
		}
		if i := strings.IndexByte(alias, '/'); i > 0 {
			if _, shadowed := c.providers[alias[:i]]; shadowed {
				return fmt.Errorf("config: %s: the prefix %q names a configured provider, so \"provider/model\" routing would shadow the alias", field, alias[:i])
			}
		}
		for i := 0; i < len(c.providerNames); i++ {
			if c.providers[c.providerNames[i]].modelSet[alias] {
				return fmt.Errorf("config: %s: provider %q already serves a model with this id", field, c.providerNames[i])
			}
		}
		in, err := aliasValue(field, aliases[alias])
		if err != nil {
			return fmt.Errorf("config: %v", err)
		}
		spec, err := compileAliasSpec(field, in, aliases)
		if err != nil {
			return fmt.Errorf("config: %v", err)
		}
		c.aliases[alias] = spec
	}
	c.aliasNames = names
	return nil
}

// personalGrant compiles a user's own providers/models grant. It has no
// passthroughPaths of its own and borrows the primary group's, so adding
// a personal grant never widens which REST paths the user reaches.
func personalGrant(field string, uc *UserConfig, primary *grant) (*grant, error) {
	if len(uc.Providers) == 0 {
		if len(uc.Models) > 0 {
			return nil, fmt.Errorf("%s.models: a personal grant needs providers too (models alone would reach every provider)", field)
		}
		return nil, nil
	}
	if err := validateGlobs(field+".providers", uc.Providers); err != nil {
		return nil, err
	}
	if err := validateGlobs(field+".models", uc.Models); err != nil {
		return nil, err
	}
	return &grant{name: "personal grant", personal: true, providers: uc.Providers, models: uc.Models, passthroughPaths: primary.passthroughPaths}, nil
}

// validateTargetName enforces the naming rule for providers and other
// routable targets: ^[a-zA-Z0-9._-]+$, not "." or "..", not reserved.
func validateTargetName(name string) error {
	if name == "" {
		return errors.New("a name is empty")
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-'
		if !ok {
			return fmt.Errorf("name %q must match ^[a-zA-Z0-9._-]+$", name)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("name %q is not a usable path segment", name)
	}
	if reservedNames[name] {
		return fmt.Errorf("name %q is reserved (v1, mcp, a2a and admin are the gateway's own routes)", name)
	}
	return nil
}

// validateGlobs checks every pattern is well-formed for path.Match.
func validateGlobs(field string, patterns []string) error {
	for i := 0; i < len(patterns); i++ {
		if _, err := path.Match(patterns[i], ""); err != nil {
			return fmt.Errorf("%s[%d]: malformed pattern %q", field, i, patterns[i])
		}
	}
	return nil
}

// parseTimeout parses a positive Go duration; empty yields fallback.
func parseTimeout(field, value string, fallback time.Duration) (time.Duration, error) {
	if value == "" {
		return fallback, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("config: %s: %q is not a Go duration (e.g. \"90s\", \"5m\")", field, value)
	}
	if d <= 0 {
		return 0, fmt.Errorf("config: %s: %q must be positive", field, value)
	}
	return d, nil
}

func hasControlChar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
