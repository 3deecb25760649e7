package gateway

import "net/http"

// serveCached is the cache stage: it answers a cacheable request from
// the response cache when it holds the answer (X-Llmgw-Cache: hit), and
// otherwise marks the request for caching (X-Llmgw-Cache: miss).
// Cacheable: non-streaming requests on a cacheable route, when the
// caller's primary group has caching on.
func serveCached(c *call) bool {
	g := c.g
	if g.cache == nil || !c.route.cacheable || c.req.stream || c.user.primary == nil || !c.user.primary.cacheOn {
		return false
	}
	return lookupCached(c)
}

// lookupCached is serveCached for a cacheable request (its own function:
// under Yaegi a call pays for every local of the callee, run or not).
func lookupCached(c *call) bool {
	return lookupCachedFor(c, c.target.provider.name, c.target.model)
}

// lookupCachedFor answers the request from the cache entry of one
// candidate (provider, upstream model) when there is one; on a miss it
// marks the request to be saved under that candidate's key. Failover
// checks each candidate it moves to (lookupCandidateCache).
func lookupCachedFor(c *call, provider, model string) bool {
	g := c.g
	// The endpoint keeps each route's answers apart: one body can be a
	// valid request to several routes (chat, /v1/messages, /api/chat),
	// whose answers have different shapes.
	endpoint := c.route.name
	switch c.route.op {
	case opChat:
		endpoint = cacheEndpointChat
	case opEmbeddings:
		endpoint = cacheEndpointEmbeddings
	}
	key, ok := cacheKey(provider, model, c.req.model, endpoint, c.req.raw)
	if !ok {
		return false
	}
	if contentType, body, hit := g.cache.lookup(c.r.Context(), key); hit {
		if contentType == "" {
			contentType = "application/json"
		}
		c.rec.cache = "hit"
		if g.stats != nil {
			c.saved = savedByHit(g, provider, model, body)
		}
		noteWrite(&c.rec, http.StatusOK)
		c.w.Header().Set("X-Llmgw-Cache", "hit")
		c.w.Header().Set("Content-Type", contentType)
		writeJSONResponse(c.w, http.StatusOK, body)
		return true
	}
	c.rec.cache = "miss"
	c.w.Header().Set("X-Llmgw-Cache", "miss")
	c.cacheKey = key
	c.cacheTTL = c.user.primary.cacheTTL
	return false
}

// saveCached stores a 200 answer of a cacheable request (after it was
// written to the client). Oversized bodies are skipped by the cache.
func saveCached(c *call, out *outcome) {
	if c.cacheKey == "" || out.status != http.StatusOK || out.body == nil || out.err != nil {
		return
	}
	c.g.cache.save(c.r.Context(), c.cacheKey, out.contentType, out.body, c.cacheTTL)
}

// lookupCandidateCache is the cache check of a failover candidate, in try
// order: only for a request the cache stage marked (a miss on the first
// candidate).
func lookupCandidateCache(c *call, cand candidate) bool {
	if c.cacheKey == "" {
		return false
	}
	return lookupCachedFor(c, cand.provider.name, cand.model)
}
