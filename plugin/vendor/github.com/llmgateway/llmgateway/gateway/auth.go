package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
)

// authStore maps API-key digests to users. It is immutable: a users-file
// reload builds a new one. Keys are held only as SHA-256 digests; a
// lookup hashes the presented key, finds the candidate by digest and
// confirms it with a constant-time comparison.
type authStore struct {
	byDigest map[string]int // digest bytes as string -> index
	users    []compiledUser
}

func newAuthStore(users []compiledUser) *authStore {
	a := &authStore{byDigest: make(map[string]int, len(users)), users: users}
	for i := 0; i < len(users); i++ {
		a.byDigest[string(users[i].digest[:])] = i
	}
	return a
}

// identifyKey returns the user whose key the request presents, or nil.
func identifyKey(a *authStore, r *http.Request) *userRuntime {
	key := presentedKey(r)
	if key == "" {
		return nil
	}
	digest := sha256.Sum256([]byte(key))
	i, ok := a.byDigest[string(digest[:])]
	if !ok {
		return nil
	}
	if subtle.ConstantTimeCompare(digest[:], a.users[i].digest[:]) != 1 {
		return nil
	}
	return a.users[i].user
}

// presentedKey reads the client's credential: "Authorization: Bearer"
// first, then "x-api-key".
func presentedKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			if key := strings.TrimSpace(h[7:]); key != "" {
				return key
			}
		}
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

// clientCredentialHeaders are stripped from every request that leaves
// the gateway: the client's gateway key never reaches an upstream.
var clientCredentialHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Cookie", "Proxy-Authorization"}

// authFailed logs a failed authentication (without key material),
// counts it against the client's address, and returns its 401.
func authFailed(g *Gateway, r *http.Request, tr *requestTrace) *apiError {
	addr := clientAddress(r, g.cfg.trustedProxies)
	g.log.line("WARN", "auth failed method="+r.Method+" path="+strconv.Quote(r.URL.Path)+" remote="+r.RemoteAddr+" client="+addr+tr.logTail)
	if g.throttle.failed(addr) {
		g.log.line("WARN", "auth throttled client="+addr+": "+strconv.Itoa(authFailuresPerMinute)+
			" failed authentications within a minute; its requests are refused until the next minute ends (not logged one by one)"+tr.logTail)
	}
	return errUnauthorized()
}

// throttled is the 429 for a request from a throttled client address
// (nil when its address is not throttled). Refused before any key is
// looked at, and not logged.
func throttled(g *Gateway, r *http.Request) *apiError {
	if blocked, retryAfter := g.throttle.blocked(clientAddress(r, g.cfg.trustedProxies)); blocked {
		return errAuthThrottled(retryAfter)
	}
	return nil
}

// authenticate identifies the caller and logs the attempt without any
// key material, with the request's ids. A failure is a 401 for the
// caller's route to write.
func authenticate(g *Gateway, r *http.Request, tr *requestTrace) (*userRuntime, *apiError) {
	if g.throttle.blockedCount.Load() > 0 {
		if e := throttled(g, r); e != nil {
			return nil, e
		}
	}
	if g.users.path != "" {
		g.users.maybeReload()
	}
	store, _ := g.users.store.Load().(*authStore)
	user := identifyKey(store, r)
	if user == nil {
		return nil, authFailed(g, r, tr)
	}
	g.log.line("INFO", "auth ok user="+strconv.Quote(user.name)+" method="+r.Method+" path="+strconv.Quote(r.URL.Path)+tr.logTail)
	return user, nil
}
