package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAuthThrottleWindows: the 60th failure in a UTC minute throttles
// the address for the rest of that minute and the whole next one; other
// addresses are not affected; the counted addresses are bounded.
func TestAuthThrottleWindows(t *testing.T) {
	clock := time.Date(2026, 12, 1, 12, 0, 10, 0, time.UTC)
	th := newAuthThrottle(func() time.Time { return clock })
	for i := 1; i < authFailuresPerMinute; i++ {
		if th.failed("10.0.0.1") {
			t.Fatalf("failure %d throttled", i)
		}
	}
	if blocked, _ := th.blocked("10.0.0.1"); blocked || th.blockedCount.Load() != 0 {
		t.Fatal("throttled below the threshold")
	}
	if !th.failed("10.0.0.1") {
		t.Fatal("the 60th failure did not throttle")
	}
	if blocked, after := th.blocked("10.0.0.1"); !blocked || after != 110 {
		t.Fatalf("blocked %v, retry after %d s, want true and 110 (50 s of this minute + the next)", blocked, after)
	}
	if blocked, _ := th.blocked("10.0.0.2"); blocked {
		t.Fatal("another address was throttled")
	}
	clock = clock.Add(time.Minute) // 12:01:10
	if blocked, after := th.blocked("10.0.0.1"); !blocked || after != 50 || th.blockedCount.Load() != 1 {
		t.Fatalf("next minute: blocked %v, retry after %d, count %d", blocked, after, th.blockedCount.Load())
	}
	clock = clock.Add(time.Minute) // 12:02:10
	if blocked, _ := th.blocked("10.0.0.1"); blocked || th.blockedCount.Load() != 0 {
		t.Fatalf("still throttled two minutes on (count %d)", th.blockedCount.Load())
	}
	for i := 0; i < authThrottleMaxAddresses+50; i++ {
		th.failed("addr-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)))
	}
	if len(th.cur) > authThrottleMaxAddresses {
		t.Fatalf("%d addresses counted, bound %d", len(th.cur), authThrottleMaxAddresses)
	}
}

func TestClientAddress(t *testing.T) {
	trusted, err := compileTrustedProxies([]string{"10.0.0.0/8", "192.168.1.7"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, peer string
		xff        []string
		trusted    bool
		want       string
	}{
		{"no trusted proxies: the peer, whatever XFF says", "203.0.113.9:4000", []string{"1.2.3.4"}, false, "203.0.113.9"},
		{"untrusted peer: XFF is not believed", "203.0.113.9:4000", []string{"1.2.3.4"}, true, "203.0.113.9"},
		{"trusted peer: the right-most untrusted entry", "10.0.0.5:4000", []string{"6.6.6.6, 1.2.3.4, 10.0.0.9"}, true, "1.2.3.4"},
		{"a single trusted address", "192.168.1.7:80", []string{"1.2.3.4"}, true, "1.2.3.4"},
		{"several XFF headers read as one list", "10.0.0.5:4000", []string{"6.6.6.6", "1.2.3.4"}, true, "1.2.3.4"},
		{"every entry trusted: the left-most", "10.0.0.5:4000", []string{"10.0.0.7, 10.0.0.8"}, true, "10.0.0.7"},
		{"trusted peer without XFF: the peer", "10.0.0.5:4000", nil, true, "10.0.0.5"},
		{"IPv6 peer", "[2001:db8::1]:443", nil, true, "2001:db8::1"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		list := trusted
		if !tc.trusted {
			list = nil
		}
		if got := clientAddress(r, list); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := compileTrustedProxies([]string{"10.0.0.0/8", "nope"}); err == nil || !strings.Contains(err.Error(), `trustedProxies[1]: "nope"`) {
		t.Fatalf("a bad entry: %v", err)
	}
}

// TestFailedAuthThrottledEndToEnd: 20 bad keys from one address, and that
// address is refused with 429 even with a good key (before the key is
// looked at), without the refusals being logged one by one and without a
// key in any log line; another address is served; the throttle lifts.
func TestFailedAuthThrottledEndToEnd(t *testing.T) {
	cfg, err := DecodeConfigJSON([]byte(`{"providers":{"p":{"type":"openai","baseUrl":"http://127.0.0.1:1","models":["m1"]}},
		"groups":{"g":{}},"users":{"inline":[{"name":"alice","group":"g","apiKey":"` + testAliceKey + `"}]},
		"trustedProxies":["127.0.0.1"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	g, err := New(nil, cfg, Options{Name: "throttle", LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	g.throttle.now = func() time.Time { return clock }
	models := func(key, xff string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.RemoteAddr = "127.0.0.1:5000" // the trusted proxy
		r.Header.Set("X-Forwarded-For", xff)
		r.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		return rec
	}
	const badKey = "sk-guess-0123456789"
	for i := 0; i < authFailuresPerMinute; i++ {
		if rec := models(badKey, "198.51.100.7"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("bad key %d: %d", i, rec.Code)
		}
	}
	rec := models(testAliceKey, "198.51.100.7")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"auth_throttled"`) || rec.Header().Get("Retry-After") != "120" {
		t.Fatalf("throttled address with a good key: %d %s (Retry-After %q)", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	if rec := models(testAliceKey, "198.51.100.8"); rec.Code != http.StatusOK {
		t.Fatalf("another client behind the same proxy: %d %s", rec.Code, rec.Body)
	}
	for i := 0; i < 5; i++ {
		_ = models(badKey, "198.51.100.7")
	}
	out := logs.String()
	if n := strings.Count(out, "auth failed"); n != authFailuresPerMinute {
		t.Fatalf("%d failures logged, want %d (the throttled ones are not logged)", n, authFailuresPerMinute)
	}
	if !strings.Contains(out, "auth throttled client=198.51.100.7") || strings.Contains(out, badKey) || strings.Contains(out, testAliceKey) {
		t.Fatalf("logs:\n%s", out)
	}
	clock = clock.Add(2 * time.Minute)
	if rec := models(testAliceKey, "198.51.100.7"); rec.Code != http.StatusOK {
		t.Fatalf("after the throttle lifted: %d %s", rec.Code, rec.Body)
	}
}
