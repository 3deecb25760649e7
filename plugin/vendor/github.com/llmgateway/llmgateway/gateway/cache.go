package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// The opt-in response cache for the unified, non-streaming
// /v1/chat/completions and /v1/embeddings routes (README "Caching").
//
// This file holds the pieces the config compiler and the unified route
// call: compileCache / compileGroupCache validate the config, cacheKey
// derives the Redis key of a request, and responseCache reads and writes
// entries through a store.Blob, turning every store failure into a miss.

const (
	cacheKeyPrefix = "llmgw:cache:"

	// cacheEndpointChat and cacheEndpointEmbeddings are the two endpoint
	// names cacheKey accepts.
	cacheEndpointChat       = "chat"
	cacheEndpointEmbeddings = "embeddings"

	defaultCacheTTL          = 5 * time.Minute
	minCacheTTL              = time.Second
	defaultCacheMaxBodyBytes = int64(1 << 20) // 1 MiB
	maxCacheMaxBodyBytes     = int64(8 << 20) // 8 MiB

	// cacheErrorLogInterval rate-limits the log line for store errors.
	cacheErrorLogInterval = 30 * time.Second
)

// cacheSettings is the compiled top-level cache block.
type cacheSettings struct {
	// enabled is true only when cache.enabled is true AND Redis is
	// configured.
	enabled bool
	// ttl is the global entry TTL, at least minCacheTTL.
	ttl time.Duration
	// maxBodyBytes is the largest cacheable response body.
	maxBodyBytes int64
}

// compileCache validates the top-level cache block. Every field that is
// set is validated even when the block is disabled (a malformed ttl is a
// construction error either way). It returns the settings and the
// construction warnings to log:
//
//   - nil block or enabled:false: caching off, no warning;
//   - enabled:true without Redis: caching off, one warning and nothing
//     else (the ttl warning below is not raised on top of it);
//   - enabled:true with Redis and a zero or negative ttl: caching on, ttl
//     floored to 1s, one warning.
func compileCache(cc *CacheConfig, hasRedis bool) (cacheSettings, []string, error) {
	s := cacheSettings{ttl: defaultCacheTTL, maxBodyBytes: defaultCacheMaxBodyBytes}
	if cc == nil {
		return s, nil, nil
	}
	var warnings []string
	ttlFloored := false
	if cc.TTL != "" {
		d, err := time.ParseDuration(cc.TTL)
		if err != nil {
			return cacheSettings{}, nil, fmt.Errorf("config: cache.ttl: %q is not a Go duration (e.g. \"30s\", \"5m\")", cc.TTL)
		}
		if d < minCacheTTL {
			// Zero/negative is accepted (README): the store floors it. A
			// positive sub-second ttl is floored too (the store's minimum),
			// silently: it is not a misunderstanding of "0 disables".
			ttlFloored = d <= 0
			d = minCacheTTL
		}
		s.ttl = d
	}
	if cc.MaxBodyBytes < 0 {
		return cacheSettings{}, nil, fmt.Errorf("config: cache.maxBodyBytes: %d must not be negative", cc.MaxBodyBytes)
	}
	if cc.MaxBodyBytes > maxCacheMaxBodyBytes {
		return cacheSettings{}, nil, fmt.Errorf("config: cache.maxBodyBytes: %d is above the maximum of %d (8 MiB)", cc.MaxBodyBytes, maxCacheMaxBodyBytes)
	}
	if cc.MaxBodyBytes > 0 {
		s.maxBodyBytes = cc.MaxBodyBytes
	}
	if !cc.Enabled {
		return s, nil, nil
	}
	if !hasRedis {
		warnings = append(warnings, "cache.enabled requires redis; the response cache stays off")
		return s, warnings, nil
	}
	s.enabled = true
	if ttlFloored {
		warnings = append(warnings, fmt.Sprintf("cache.ttl: %q is not positive; entries are stored for 1s (set cache.enabled: false to turn the cache off)", cc.TTL))
	}
	return s, warnings, nil
}

// compileGroupCache resolves one group's cache override. global is the
// compileCache result; cacheBlockEnabled is whether the top-level cache
// block is present with enabled:true (whatever Redis says).
//
//   - gc.Cache nil inherits global.enabled; false turns the cache off for
//     the group; true turns it on, and is a construction error when the
//     block is absent or enabled:false (nothing to inherit ttl and
//     maxBodyBytes from). With the block enabled but Redis missing, true
//     is not an error: the cache simply stays off, as it does globally
//     (compileCache already warned once).
//   - gc.CacheTTL "" inherits global.ttl; a set value must parse as a
//     positive Go duration and requires the block to be enabled. It is the
//     TTL this group's own writes use (below 1s it is floored to 1s).
func compileGroupCache(group string, gc *GroupConfig, global cacheSettings, cacheBlockEnabled bool) (bool, time.Duration, error) {
	if gc == nil {
		return global.enabled, global.ttl, nil
	}
	field := "groups." + group
	enabled := global.enabled
	if gc.Cache != nil {
		if *gc.Cache {
			if !cacheBlockEnabled {
				return false, 0, fmt.Errorf("config: %s.cache: true requires the top-level cache block to be enabled", field)
			}
		} else {
			enabled = false
		}
	}
	ttl := global.ttl
	if gc.CacheTTL != "" {
		d, err := time.ParseDuration(gc.CacheTTL)
		if err != nil {
			return false, 0, fmt.Errorf("config: %s.cacheTTL: %q is not a Go duration (e.g. \"30s\", \"5m\")", field, gc.CacheTTL)
		}
		if d <= 0 {
			return false, 0, fmt.Errorf("config: %s.cacheTTL: %q must be a positive duration", field, gc.CacheTTL)
		}
		if !cacheBlockEnabled {
			return false, 0, fmt.Errorf("config: %s.cacheTTL: %q requires the top-level cache block to be enabled", field, gc.CacheTTL)
		}
		if d < minCacheTTL {
			d = minCacheTTL
		}
		ttl = d
	}
	return enabled, ttl, nil
}

// cacheKey derives the Redis key of a cacheable request:
// "llmgw:cache:" + hex SHA-256 over a length-prefixed encoding of
// provider, upstreamModel, requestedModel, endpoint and the canonical
// JSON of body. Every field is preceded by its length as 8 big-endian
// bytes, so no two field tuples encode the same way.
//
// The canonical JSON is the body decoded with UseNumber, top-level
// "stream_options" and "user" removed, and re-marshalled: key order and
// whitespace vanish, while numbers keep their text ("1.0" and "1" are
// different keys: a miss, never a wrong answer).
//
// It returns false (never cacheable) when endpoint is not "chat",
// "embeddings" or another cacheable route's name, when body is not exactly one JSON object, or when a
// decoded string holds U+FFFD: invalid UTF-8 and lone-surrogate escapes
// decode to U+FFFD, so two different bodies could otherwise canonicalize
// the same.
func cacheKey(provider, upstreamModel, requestedModel, endpoint string, body []byte) (string, bool) {
	if !cacheableEndpoint(endpoint) {
		return "", false
	}
	canonical, ok := canonicalCacheBody(body)
	if !ok {
		return "", false
	}
	h := sha256.New()
	writeCacheKeyField(h, []byte("llmgw-cache-key/1"))
	writeCacheKeyField(h, []byte(provider))
	writeCacheKeyField(h, []byte(upstreamModel))
	writeCacheKeyField(h, []byte(requestedModel))
	writeCacheKeyField(h, []byte(endpoint))
	writeCacheKeyField(h, canonical)
	return cacheKeyPrefix + hex.EncodeToString(h.Sum(nil)), true
}

func writeCacheKeyField(w io.Writer, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	_, _ = w.Write(n[:])
	_, _ = w.Write(b)
}

// canonicalCacheBody returns the canonical JSON described on cacheKey.
func canonicalCacheBody(body []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v interface{}
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	var extra interface{}
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, false
	}
	obj, ok := v.(map[string]interface{})
	if !ok {
		return nil, false
	}
	delete(obj, "stream_options")
	delete(obj, "user")
	if hasReplacementChar(obj) {
		return nil, false
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	return out, true
}

// hasReplacementChar reports whether any key or string in v holds U+FFFD.
func hasReplacementChar(v interface{}) bool {
	switch t := v.(type) {
	case string:
		return strings.ContainsRune(t, '\uFFFD')
	case map[string]interface{}:
		for k, e := range t {
			if strings.ContainsRune(k, '\uFFFD') || hasReplacementChar(e) {
				return true
			}
		}
	case []interface{}:
		for i := 0; i < len(t); i++ {
			if hasReplacementChar(t[i]) {
				return true
			}
		}
	}
	return false
}

// Stored value format (version 1): one ASCII header line, then the body
// exactly as the upstream sent it:
//
//	"llmgw-cache/1 <body length, decimal> <CRC-32 IEEE of body, 8 lowercase hex> <Content-Type>\n" + body
//
// The Content-Type is the rest of the line and may be empty (save stores
// ""; the caller then replays application/json). A value that does not
// parse, whose length or checksum disagrees with the body, is a miss.
const (
	cacheValueMagic        = "llmgw-cache/1 "
	maxCacheContentTypeLen = 200
	maxCacheHeaderLen      = 512
)

func encodeCacheValue(contentType string, body []byte) []byte {
	header := cacheValueMagic + strconv.Itoa(len(body)) + " " + fmt.Sprintf("%08x", crc32.ChecksumIEEE(body)) + " " + contentType + "\n"
	out := make([]byte, 0, len(header)+len(body))
	out = append(out, header...)
	out = append(out, body...)
	return out
}

func decodeCacheValue(value []byte) (string, []byte, bool) {
	limit := len(value)
	if limit > maxCacheHeaderLen {
		limit = maxCacheHeaderLen
	}
	nl := bytes.IndexByte(value[:limit], '\n')
	if nl < 0 {
		return "", nil, false
	}
	line := string(value[:nl])
	body := value[nl+1:]
	if !strings.HasPrefix(line, cacheValueMagic) {
		return "", nil, false
	}
	parts := strings.SplitN(line[len(cacheValueMagic):], " ", 3)
	if len(parts) != 3 {
		return "", nil, false
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n != len(body) {
		return "", nil, false
	}
	if len(parts[1]) != 8 || parts[1] != fmt.Sprintf("%08x", crc32.ChecksumIEEE(body)) {
		return "", nil, false
	}
	if hasControlChar(parts[2]) {
		return "", nil, false
	}
	return parts[2], body, true
}

// responseCache reads and writes cache entries through a store.Blob. A
// store error is a miss (lookup) or a no-op (save) and never fails the
// request; it is logged at most once per cacheErrorLogInterval, with the
// count of errors swallowed since the previous line. A nil
// *responseCache always misses and never stores.
type responseCache struct {
	blobs        store.Blob
	log          *logger
	maxBodyBytes int64
	now          func() time.Time // injectable for tests

	mu         sync.Mutex
	lastLog    time.Time
	logged     bool
	suppressed int
}

// newResponseCache wraps blobs. maxBodyBytes <= 0 means the 1 MiB
// default; bodies above it are never stored.
func newResponseCache(blobs store.Blob, log *logger, maxBodyBytes int64) *responseCache {
	if maxBodyBytes <= 0 {
		maxBodyBytes = defaultCacheMaxBodyBytes
	}
	return &responseCache{blobs: blobs, log: log, maxBodyBytes: maxBodyBytes, now: time.Now}
}

// lookup returns the cached body for key and its stored upstream
// Content-Type ("" when none was saved); a store error, a missing entry
// or a corrupted value is a miss.
func (c *responseCache) lookup(ctx context.Context, key string) (string, []byte, bool) {
	if c == nil || c.blobs == nil {
		return "", nil, false
	}
	value, found, err := c.blobs.GetBlob(ctx, key)
	if err != nil {
		c.storeError(ctx, "read", err)
		return "", nil, false
	}
	if !found {
		return "", nil, false
	}
	ct, body, ok := decodeCacheValue(value)
	if !ok || int64(len(body)) > c.maxBodyBytes {
		return "", nil, false
	}
	return ct, body, true
}

// save stores body and its upstream Content-Type under key for ttl
// (floored to 1s). A body above maxBodyBytes is skipped; a Content-Type
// with control characters or longer than 200 bytes is dropped (stored as
// ""). It is synchronous: ctx must still be live.
func (c *responseCache) save(ctx context.Context, key, contentType string, body []byte, ttl time.Duration) {
	if c == nil || c.blobs == nil {
		return
	}
	if int64(len(body)) > c.maxBodyBytes {
		return
	}
	if len(contentType) > maxCacheContentTypeLen || hasControlChar(contentType) {
		contentType = ""
	}
	if ttl < minCacheTTL {
		ttl = minCacheTTL
	}
	if err := c.blobs.SetBlob(ctx, key, encodeCacheValue(contentType, body), ttl); err != nil {
		c.storeError(ctx, "write", err)
	}
}

// storeError logs a store failure, rate-limited. A failure on a context
// the caller already cancelled is the client going away, not the store:
// it is not logged.
func (c *responseCache) storeError(ctx context.Context, op string, err error) {
	if ctx != nil && ctx.Err() != nil {
		return
	}
	if c.log == nil {
		return
	}
	now := c.now()
	c.mu.Lock()
	if c.logged && now.Sub(c.lastLog) < cacheErrorLogInterval {
		c.suppressed++
		c.mu.Unlock()
		return
	}
	suppressed := c.suppressed
	c.suppressed = 0
	c.logged = true
	c.lastLog = now
	c.mu.Unlock()
	if suppressed > 0 {
		c.log.warnf("response cache: store %s failed, treated as a miss: %v (%d more store errors since the previous report)", op, err, suppressed)
		return
	}
	c.log.warnf("response cache: store %s failed, treated as a miss: %v", op, err)
}

// cacheableEndpoint reports whether endpoint names answers the cache may
// hold: chat, embeddings, and every other cacheable route, by its name.
func cacheableEndpoint(endpoint string) bool {
	if endpoint == cacheEndpointChat || endpoint == cacheEndpointEmbeddings {
		return true
	}
	rt := routesByName[endpoint]
	return rt != nil && rt.cacheable
}
