package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// Session affinity (routing.sessionAffinity): a conversation stays on the
// candidate that served it, so the upstream's prompt cache stays warm.
//
// The session key is the first of the session headers clients send
// (sessionHeaders), else a hash of the request's first system and first
// user message. A binding maps (the client's model id, the session key)
// to the candidate ("provider/model") that served the session last; its
// key is a SHA-256 of both, so neither appears in the store or in a log.
// With Redis the binding lives there (every replica reads and moves the
// same one; a replica keeps what it read for at most affinityCacheFor),
// else in process. Every read renews its idle TTL.

// sessionHeaders name the session in the headers clients send: a
// generic one, Open WebUI's chat id, Claude Code's session id, Codex
// CLI's session-id (its session_id spelling is accepted too).
var sessionHeaders = []string{"X-Session-Id", "X-Openwebui-Chat-Id", "X-Claude-Code-Session-Id", "Session-Id", "Session_id"}

// affinityCacheFor is how long a replica trusts a binding it read from
// Redis.
const affinityCacheFor = time.Second

// maxLocalBindings bounds the in-process bindings (and the Redis read
// cache); past it, expired ones are swept and new ones not kept.
const maxLocalBindings = 100000

// affinityStore is the shared binding store (the guarded Redis store).
type affinityStore interface {
	GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error)
	SwapBlob(ctx context.Context, key string, old, value []byte, ttl time.Duration) ([]byte, error)
}

// affinityBook holds the bindings.
type affinityBook struct {
	ttl    time.Duration
	shared affinityStore // nil: in process only
	now    func() time.Time
	log    *logger
	mu     sync.Mutex
	// local is the in-process bindings or, with a shared store, the
	// bindings read from it; at is when it was last used (in process) or
	// read (shared).
	local map[string]affinityEntry
}

type affinityEntry struct {
	target string
	at     time.Time
}

func newAffinityBook(ttl time.Duration, shared affinityStore, log *logger) *affinityBook {
	return &affinityBook{ttl: ttl, shared: shared, now: time.Now, log: log, local: map[string]affinityEntry{}}
}

// bindingKey is the store key of (model id, session key).
func bindingKey(model, session string) string {
	sum := sha256.Sum256([]byte(model + "\x00" + session))
	return "llmgw:aff:" + hex.EncodeToString(sum[:16])
}

// logName is a binding key's short form for logs.
func logName(key string) string {
	return key[len("llmgw:aff:") : len("llmgw:aff:")+12]
}

// lookup is key's bound candidate ("" none). fresh skips the replica's
// read cache. ids ends a log line about the read (the request's ids).
func (b *affinityBook) lookup(ctx context.Context, key string, fresh bool, ids string) string {
	now := b.now()
	b.mu.Lock()
	e, ok := b.local[key]
	if b.shared == nil {
		if ok && now.Sub(e.at) < b.ttl {
			e.at = now
			b.local[key] = e
			b.mu.Unlock()
			return e.target
		}
		delete(b.local, key)
		b.mu.Unlock()
		return ""
	}
	b.mu.Unlock()
	if ok && !fresh && now.Sub(e.at) < affinityCacheFor {
		return e.target
	}
	v, found, err := b.shared.GetBlobRenew(ctx, key, b.ttl)
	if err != nil {
		b.log.warnf("session affinity: reading binding %s: %v (routing without it)%s", logName(key), err, ids)
		if ok {
			return e.target
		}
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !found {
		delete(b.local, key)
		return ""
	}
	b.keep(key, affinityEntry{target: string(v), at: now}, now)
	return string(v)
}

// cached is key's binding when it is known without a store read: in
// process, or read from the shared store less than affinityCacheFor ago.
func (b *affinityBook) cached(key string) (string, bool) {
	if b.shared == nil {
		return b.lookup(context.Background(), key, false, ""), true
	}
	now := b.now()
	b.mu.Lock()
	e, ok := b.local[key]
	b.mu.Unlock()
	if ok && now.Sub(e.at) < affinityCacheFor {
		return e.target, true
	}
	return "", false
}

// absorb takes a binding read folded into another round trip (peek.Done)
// into the replica's cache and returns it.
func (b *affinityBook) absorb(key string, peek *store.Peek) string {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !peek.Found {
		delete(b.local, key)
		return ""
	}
	b.keep(key, affinityEntry{target: string(peek.Value), at: now}, now)
	return string(peek.Value)
}

// move points key at target unless, in the shared store, another
// replica moved it away from old first; it returns where key points
// afterwards (target, or the other replica's choice). ids ends a log
// line about the write.
func (b *affinityBook) move(ctx context.Context, key, old, target, ids string) string {
	now := b.now()
	winner := target
	if b.shared != nil {
		v, err := b.shared.SwapBlob(ctx, key, []byte(old), []byte(target), b.ttl)
		if err != nil {
			b.log.warnf("session affinity: writing binding %s: %v%s", logName(key), err, ids)
		} else {
			winner = string(v)
		}
	}
	b.mu.Lock()
	b.keep(key, affinityEntry{target: winner, at: now}, now)
	b.mu.Unlock()
	return winner
}

// keep stores e under key within the size bound (b.mu held).
func (b *affinityBook) keep(key string, e affinityEntry, now time.Time) {
	if _, ok := b.local[key]; !ok && len(b.local) >= maxLocalBindings {
		life := b.ttl
		if b.shared != nil {
			life = affinityCacheFor
		}
		for k, old := range b.local {
			if now.Sub(old.at) >= life {
				delete(b.local, k)
			}
		}
		if len(b.local) >= maxLocalBindings {
			return
		}
	}
	b.local[key] = e
}

// callAffinity is one request's session binding.
type callAffinity struct {
	key   string // the binding key
	bound string // the candidate bound before the request ("" none)
	known bool   // bound is read
	// cached: bound is the replica's copy of a shared binding (read less
	// than affinityCacheFor ago), not read from the store for this request.
	cached bool
	// peek is the binding's read folded into the limiter's round trip
	// (nil: not needed).
	peek *store.Peek
}

// sessionKey is the request's session key: a session header, else the
// hash of its first system and first user message; "" when it has
// neither.
func sessionKey(c *call) string {
	for i := 0; i < len(sessionHeaders); i++ {
		if v := c.r.Header.Get(sessionHeaders[i]); v != "" {
			return sessionHeaders[i] + ":" + v
		}
	}
	return conversationSeed(c.req.raw)
}

// seedBody is what conversationSeed reads of a chat-shaped body, in any
// inbound format: OpenAI chat and Ollama chat (messages), Anthropic
// (system, messages), Responses (instructions, input), Ollama generate
// (system, prompt).
type seedBody struct {
	System       json.RawMessage `json:"system"`
	Instructions json.RawMessage `json:"instructions"`
	Prompt       json.RawMessage `json:"prompt"`
	Messages     []seedMessage   `json:"messages"`
	Input        json.RawMessage `json:"input"`
}

type seedMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// conversationSeed hashes the first system and first user message of
// body ("" when it has no user message).
func conversationSeed(body []byte) string {
	var b seedBody
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	msgs := b.Messages
	var user json.RawMessage
	if len(b.Input) > 0 && b.Input[0] == '"' {
		user = b.Input
	} else if len(b.Input) > 0 && b.Input[0] == '[' {
		var items []seedMessage
		if json.Unmarshal(b.Input, &items) == nil {
			msgs = append(items, msgs...)
		}
	}
	system := b.System
	if len(system) == 0 {
		system = b.Instructions
	}
	for i := 0; i < len(msgs); i++ {
		role := msgs[i].Role
		if len(system) == 0 && (role == "system" || role == "developer") {
			system = msgs[i].Content
		}
		if len(user) == 0 && role == "user" {
			user = msgs[i].Content
		}
	}
	if len(user) == 0 {
		user = b.Prompt
	}
	if len(user) == 0 {
		return ""
	}
	h := sha256.New()
	h.Write(system)
	h.Write([]byte{0})
	h.Write(user)
	return "conversation:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// startAffinity finds the request's session and, when the binding is
// known without a store read (in process, or read from Redis less than
// affinityCacheFor ago), its bound candidate; otherwise it prepares the
// read that the limiter's round trip carries (c.aff.peek).
func startAffinity(c *call) {
	book := c.g.router.affinity
	if book == nil || c.route.noOutput {
		return
	}
	session := sessionKey(c)
	if session == "" {
		return
	}
	a := &callAffinity{key: bindingKey(c.req.model, session)}
	c.aff = a
	if target, known := book.cached(a.key); known {
		a.bound, a.known, a.cached = target, true, book.shared != nil
		return
	}
	a.peek = &store.Peek{Key: a.key, TTL: book.ttl}
}

// pendingPeek is the binding read the limiter's round trip should carry
// (nil: none).
func pendingPeek(c *call) *store.Peek {
	if c.aff == nil || c.aff.known {
		return nil
	}
	return c.aff.peek
}

// applyAffinity moves the candidate the request's session is bound to
// to the front of ordered (the request's own slice), when it is there
// and healthy. peek is the binding read folded into the limiter's round
// trip; when it was not made (no limiter round trip, or a store that
// cannot fold) the binding is read now.
func applyAffinity(c *call, ordered []candidate, peek *store.Peek) {
	a := c.aff
	if a == nil {
		return
	}
	book := c.g.router.affinity
	if !a.known {
		if peek != nil && peek.Done {
			a.bound = book.absorb(a.key, peek)
		} else {
			a.bound = book.lookup(c.r.Context(), a.key, true, c.trace.logTail)
		}
		a.known = true
	}
	if a.bound == "" {
		return
	}
	h := c.g.router.health
	i := indexOfCandidate(ordered, a.bound)
	if i >= 0 && a.cached && h.standing(ordered[i], h.now()) != healthOK {
		// Unhealthy here: another replica may already have moved the
		// session, and the store has the last word.
		a.cached = false
		if fresh := book.lookup(c.r.Context(), a.key, true, c.trace.logTail); fresh != a.bound {
			a.bound = fresh
			i = indexOfCandidate(ordered, fresh)
		}
	}
	if i < 0 || h.standing(ordered[i], h.now()) != healthOK {
		return
	}
	first := ordered[i]
	copy(ordered[1:i+1], ordered[:i])
	ordered[0] = first
	c.rec.affinity = affinityBound
}

// indexOfCandidate is the index of the candidate named name in cands, or
// -1.
func indexOfCandidate(cands []candidate, name string) int {
	for i := 0; i < len(cands); i++ {
		if candidateName(cands[i]) == name {
			return i
		}
	}
	return -1
}

// Request record values of affinity.
const (
	affinityBound = "bound" // the bound candidate went first
	affinityNew   = "new"   // the session had no binding; one was made
	affinityMoved = "moved" // another candidate served; the binding moved to it
)

// candidateName is c's "provider/model".
func candidateName(c candidate) string {
	if c.name != "" {
		return c.name
	}
	return c.provider.name + "/" + c.model
}

// noteServed updates the session's binding after cand served it: made
// when there was none, moved when another candidate served — unless
// another replica moved it first, whose choice the session then follows.
func noteServed(c *call, cand candidate) {
	a := c.aff
	if a == nil {
		return
	}
	name := candidateName(cand)
	if name == a.bound {
		return
	}
	book := c.g.router.affinity
	winner := book.move(c.r.Context(), a.key, a.bound, name, c.trace.logTail)
	switch {
	case winner != name:
		book.log.infof("session affinity: session %s was moved to %q by another replica meanwhile%s", logName(a.key), winner, c.trace.logTail)
	case a.bound == "":
		c.rec.affinity = affinityNew
	default:
		c.rec.affinity = affinityMoved
		book.log.infof("session affinity: session %s moved from %q to %q%s", logName(a.key), a.bound, name, c.trace.logTail)
	}
	a.bound = winner
}

// rebound re-reads the session's binding from the store after its bound
// candidate cands[i] failed: when another replica already moved it to a
// later candidate, that one is tried next.
func rebound(c *call, cands []candidate, i int) {
	a := c.aff
	if a == nil || a.bound == "" || candidateName(cands[i]) != a.bound || c.g.router.affinity.shared == nil {
		return
	}
	now := c.g.router.affinity.lookup(c.r.Context(), a.key, true, c.trace.logTail)
	if now == "" || now == a.bound {
		return
	}
	if j := indexOfCandidate(cands, now); j > i {
		moved := cands[j]
		copy(cands[i+2:j+1], cands[i+1:j])
		cands[i+1] = moved
		a.bound = now
	}
}
