package gateway

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Failed-authentication throttling: a client address that fails
// authentication authFailuresPerMinute times within a UTC minute is
// refused (429 auth_throttled, before any key is looked at) for the rest
// of that minute and the whole next one. Counted in process, per
// replica. The client address is the TCP peer, or — only when the peer is
// a trusted proxy (trustedProxies) — the right-most untrusted address of
// X-Forwarded-For.

const (
	// authFailuresPerMinute failed authentications from one address in
	// one UTC minute throttle it.
	authFailuresPerMinute = 60
	// authThrottleMaxAddresses bounds the addresses counted per minute;
	// beyond it new addresses are not counted (memory stays bounded
	// under a flood of distinct addresses).
	authThrottleMaxAddresses = 10000
)

// authThrottle counts failed authentications per client address in the
// current and the previous UTC minute.
type authThrottle struct {
	now func() time.Time
	// blockedCount is how many addresses the two windows throttle: the
	// request path looks an address up only while it is not zero.
	blockedCount atomic.Int64

	mu     sync.Mutex
	minute int64 // the current window's unix minute
	cur    map[string]int
	prev   map[string]int
}

func newAuthThrottle(now func() time.Time) *authThrottle {
	if now == nil {
		now = time.Now
	}
	return &authThrottle{now: now, cur: map[string]int{}, prev: map[string]int{}}
}

// rotateLocked moves the windows to minute (mu held).
func (t *authThrottle) rotateLocked(minute int64) {
	if minute == t.minute {
		return
	}
	if minute == t.minute+1 {
		t.prev = t.cur
	} else {
		t.prev = map[string]int{}
	}
	t.cur = map[string]int{}
	t.minute = minute
	n := int64(0)
	for _, c := range t.prev {
		if c >= authFailuresPerMinute {
			n++
		}
	}
	t.blockedCount.Store(n)
}

// blocked reports whether addr is throttled now, and the seconds until
// it is not.
func (t *authThrottle) blocked(addr string) (bool, int64) {
	now := t.now()
	minute := now.Unix() / 60
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotateLocked(minute)
	left := 60 - now.Unix()%60
	if t.cur[addr] >= authFailuresPerMinute {
		return true, left + 60
	}
	if t.prev[addr] >= authFailuresPerMinute {
		return true, left
	}
	return false, 0
}

// failed counts one failed authentication from addr and reports whether
// that made it throttled.
func (t *authThrottle) failed(addr string) bool {
	minute := t.now().Unix() / 60
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotateLocked(minute)
	c, known := t.cur[addr]
	if !known && len(t.cur) >= authThrottleMaxAddresses {
		return false
	}
	c++
	t.cur[addr] = c
	if c == authFailuresPerMinute && t.prev[addr] < authFailuresPerMinute {
		t.blockedCount.Add(1)
	}
	return c == authFailuresPerMinute
}

// errAuthThrottled is the 429 of a throttled client address.
func errAuthThrottled(retryAfter int64) *apiError {
	e := apierr.New(http.StatusTooManyRequests, "rate_limit_error", "auth_throttled",
		"too many failed authentications from your address; retry later")
	e.RetryAfter = strconv.FormatInt(retryAfter, 10)
	return e
}

// clientAddress is the address failed authentications are counted
// against: the TCP peer's IP, or, when the peer is a trusted proxy, the
// right-most X-Forwarded-For entry that is not a trusted proxy (the
// left-most entry when all are). Without trusted proxies X-Forwarded-For
// is never read: a client could write anything there.
func clientAddress(r *http.Request, trusted []*net.IPNet) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(trusted) == 0 || !isTrustedProxy(host, trusted) {
		return host
	}
	entries := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	client := host
	for i := len(entries) - 1; i >= 0; i-- {
		e := strings.TrimSpace(entries[i])
		if e == "" {
			continue
		}
		client = e
		if !isTrustedProxy(e, trusted) {
			return e
		}
	}
	return client
}

// isTrustedProxy reports whether addr is an IP inside one of trusted.
func isTrustedProxy(addr string, trusted []*net.IPNet) bool {
	ip := net.ParseIP(addr)
	if ip == nil {
		return false
	}
	for i := 0; i < len(trusted); i++ {
		if trusted[i].Contains(ip) {
			return true
		}
	}
	return false
}

// compileTrustedProxies parses trustedProxies: CIDRs, or single
// addresses (a /32 or /128).
func compileTrustedProxies(list []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for i := 0; i < len(list); i++ {
		s := strings.TrimSpace(list[i])
		if !strings.Contains(s, "/") {
			if ip := net.ParseIP(s); ip != nil {
				bits := 128
				if ip.To4() != nil {
					ip = ip.To4()
					bits = 32
				}
				out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
				continue
			}
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("config: trustedProxies[%d]: %q is not an IP address or CIDR", i, list[i])
		}
		out = append(out, n)
	}
	return out, nil
}
