package gateway

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// Options carries the host's settings that are not part of Config.
type Options struct {
	// Name tags every log line as "llmgw[Name]". Default "gateway".
	Name string
	// LogOutput receives the gateway's log lines. Default os.Stderr.
	LogOutput io.Writer
	// SharedCounters makes the in-process counter stores (the limits
	// store without Redis, and the fallback store with Redis) the ones
	// of every other gateway built in this process with the same Name
	// and SharedCounters set, so a rebuilt instance keeps the counts: the
	// plugin sets it, because Traefik runs New again on every dynamic
	// configuration change. Off, each gateway counts on its own.
	SharedCounters bool
}

// Gateway is the LLM gateway as an http.Handler: it answers its own
// routes and hands everything else to the wrapped next handler (when
// passthroughUnknown is set) or answers 404. Build one with New; it is
// safe for concurrent use.
type Gateway struct {
	next        http.Handler
	cfg         *compiledConfig
	log         *logger
	users       *userDirectory
	warnings    *warningLog
	registry    atomic.Value // *modelRegistry
	discovery   *discoverer
	rebuildMu   sync.Mutex
	transport   *http.Transport
	admission   *bodyAdmission
	throttle    *authThrottle // failed authentications per client address
	limiter     *limiter
	pricer      *pricer
	redis       *store.Redis   // nil: no Redis
	cache       *responseCache // nil: no response cache
	stats       *statsWriter   // nil: admin (statistics) off
	metrics     *metricsBook   // nil: metrics off (the route is not registered)
	started     time.Time
	failoverLog failoverLog
	router      *router
	events      *eventFeed
	// mcp is the federated MCP endpoint's book: cached tool listings,
	// logged failures (mcp_client.go).
	mcp federationState
	// sweeper runs the targets' active health probes (targets_health.go).
	sweeper *targetSweeper
	// configView is the redacted Config GET /admin/api/config answers
	// (admin_config.go), taken in New; nil with admin off.
	configView map[string]interface{}
	// keepaliveEvery is the silence after which a translated stream gets
	// its format's keepalive event (keepaliveEvery; tests shorten it).
	keepaliveEvery time.Duration
	// recordHook, when set, receives every request record (record.go)
	// as its request ends.
	recordHook func(*requestRecord)
	// noNext: New got a nil next, so next is the gateway's own 404 and
	// every request is the gateway's to answer (edge.go).
	noNext bool
}

// New validates cfg, compiles it into the gateway's immutable runtime
// form and returns the gateway wrapping next. A nil next means "no
// downstream": unmatched routes get the 404 envelope even when
// passthroughUnknown is set. A configuration mistake is
// an error naming the field and value; New never panics on bad input and
// does no network I/O.
func New(next http.Handler, cfg *Config, opts Options) (*Gateway, error) {
	log := newLogger(opts.Name, opts.LogOutput)
	compiled, err := compileConfig(cfg)
	if err != nil {
		return nil, err
	}
	warnings := &warningLog{log: log}
	g := &Gateway{
		next:           next,
		cfg:            compiled,
		log:            log,
		users:          newUserDirectory(compiled, log),
		warnings:       warnings,
		transport:      newUpstreamTransport(),
		admission:      newBodyAdmission(compiled.bodySlots),
		throttle:       newAuthThrottle(nil),
		started:        time.Now(),
		keepaliveEvery: keepaliveEvery,
		sweeper:        newTargetSweeper(),
	}
	for i := 0; i < len(compiled.warnings); i++ {
		warnings.warnf("%s", compiled.warnings[i])
	}
	g.pricer = newPricer(compiled.pricing, compiled.modelMeta, warnings)
	var counters store.Counter = inProcessStore(opts, "limits")
	var affinityGuard *store.Guarded
	var fallback *store.Memory
	failOpen := true
	if rs := compiled.redis; rs != nil {
		// Lazy: nothing dials until the first request needs Redis.
		g.redis = store.NewRedis(rs.conn)
		guarded := store.NewGuarded(g.redis, store.GuardOptions{})
		counters = guarded
		affinityGuard = guarded
		fallback = inProcessStore(opts, "fallback")
		failOpen = rs.failOpen
		if compiled.cache.enabled {
			g.cache = newResponseCache(guarded, log, compiled.cache.maxBodyBytes)
		}
	}
	g.router = newRouter(compiled, log)
	if affinityGuard != nil {
		g.events = newEventFeed(opts.Name, affinityGuard, log)
	} else {
		g.events = newEventFeed(opts.Name, nil, log)
	}
	if compiled.routing.affinity {
		var shared affinityStore
		if g.redis != nil {
			shared = affinityGuard
		}
		g.router.affinity = newAffinityBook(compiled.routing.affinityTTL, shared, log)
	}
	g.limiter = newLimiter(counters, fallback, failOpen, nil, log)
	g.limiter.holdTTL = compiled.reservationTTL
	if g.metrics = newMetricsBook(compiled.metrics); g.metrics != nil {
		g.limiter.metrics = g.metrics
	}
	if g.stats = newStatsWriter(compiled.admin, g.cache != nil); g.stats != nil {
		g.limiter.health = adminHealthWindows
	}

	if next == nil {
		g.next = http.HandlerFunc(notFound)
		g.noNext = true
	}
	g.discovery = newDiscoverer(compiled, g.transport, log)
	g.discovery.onChange = func() { g.rebuildRegistry() }
	g.discovery.warmFill()
	g.rebuildRegistry()
	if compiled.admin.enabled {
		g.configView = captureConfigView(cfg, warnings)
	}
	warnings.seal()
	log.infof("ready: %d providers, %d groups, %d users", len(compiled.providers), len(compiled.groups), len(compiled.users))
	reportLoaded()
	return g, nil
}

// sharedStores are the in-process counter stores of the gateways built
// with Options.SharedCounters, by name and role. They live as long as
// the process (each sweeps its expired keys as it goes).
var (
	sharedStoresMu sync.Mutex
	sharedStores   = map[string]*store.Memory{}
)

// inProcessStore is a new in-process counter store, or with
// opts.SharedCounters the one shared by every gateway of that name.
func inProcessStore(opts Options, role string) *store.Memory {
	if !opts.SharedCounters {
		return newMemoryStore(nil)
	}
	key := opts.Name + "\x00" + role
	sharedStoresMu.Lock()
	defer sharedStoresMu.Unlock()
	m := sharedStores[key]
	if m == nil {
		m = newMemoryStore(nil)
		sharedStores[key] = m
	}
	return m
}

// Close releases the gateway's background resources (idle upstream
// connections, the Redis connections; a running target probe sweep is
// cancelled and waited for). Call it once the gateway serves no more
// requests: a request still in flight, or one arriving later, finds the
// Redis client closed (the binary closes after its server's shutdown,
// the plugin once Traefik has stopped routing to the instance).
func (g *Gateway) Close() error {
	g.discovery.close()
	g.sweeper.close()
	g.limiter.async.wait()
	if g.redis != nil {
		g.redis.Close()
	}
	g.transport.CloseIdleConnections()
	return nil
}

// models returns the model registry in force.
func (g *Gateway) models() *modelRegistry {
	r, _ := g.registry.Load().(*modelRegistry)
	return r
}

// rebuildRegistry swaps in a registry built from the configuration and
// the latest discovered sets.
func (g *Gateway) rebuildRegistry() {
	g.rebuildMu.Lock()
	defer g.rebuildMu.Unlock()
	g.registry.Store(newModelRegistry(g.cfg, g.discovery.discovered(), g.warnings, g.pricer))
}
