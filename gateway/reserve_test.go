package gateway

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Reserve and settle in process: concurrent requests cannot outrun a
// budget, a reservation is released however the request ends, and the
// reservation is the prompt estimate plus the output cap.

// postChat is one chat request, safe from any goroutine.
func postChat(client *http.Client, base, key, body string) (int, string, error) {
	req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, string(b), err
}

// The whole burst reaches the gateway while every admitted request is
// held at the upstream: only as many are admitted as reservations fit.
// When every answer uses exactly its reservation, the accounted usage
// stays within the budget; when each uses more than its reservation (a
// prompt longer than its bytes / 4), the budget is passed by exactly that
// excess per admitted request — the documented bound.
func TestReservationsHoldUnderConcurrency(t *testing.T) {
	t.Run("exact", func(t *testing.T) { testReservationBurst(t, 0) })
	t.Run("estimate error", func(t *testing.T) { testReservationBurst(t, 40) })
}

func testReservationBurst(t *testing.T, excess int) {
	const fired = 40
	release := make(chan struct{})
	arrived := make(chan struct{}, fired)
	// Each answer uses its reservation (19 + 150 tokens) plus excess
	// prompt tokens.
	answer := `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":` + strconv.Itoa(19+excess) + `,"completion_tokens":150,"total_tokens":` + strconv.Itoa(169+excess) + `}}`
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	})
	body := `{"model":"m1","max_tokens":150,"messages":[{"role":"user","content":"hi"}]}`
	reserve := (len(body)+3)/4 + 150 // 169
	if reserve != 169 {
		t.Fatalf("reservation %d, want 169", reserve)
	}
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
	base, g := limitsGateway(t, up.URL, `"groups": {"free": {"limits": {"tokensPerDay": 2000}}},
  "users": {"inline": [{"name": "bob", "group": "free", "apiKey": "`+testBobKey+`"}]}`, clock)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: fired}}
	type result struct {
		status int
		body   string
		err    error
	}
	results := make(chan result, fired)
	for i := 0; i < fired; i++ {
		go func() {
			s, b, err := postChat(client, base, testBobKey, body)
			results <- result{s, b, err}
		}()
	}
	// 11 × 169 = 1859 ≤ 2000 < 12 × 169: eleven reach the upstream; the
	// other 29 are refused while those are held.
	admitted := 2000 / reserve
	refused := 0
	timeout := time.After(20 * time.Second)
	for refused < fired-admitted {
		select {
		case r := <-results:
			if r.err != nil || r.status != 429 || !strings.Contains(r.body, "over its tokensPerDay limit (2000 tokens): this request reserves up to 169") {
				t.Fatalf("while %d are held: %d %v %s", admitted, r.status, r.err, r.body)
			}
			refused++
		case <-timeout:
			t.Fatalf("only %d refusals arrived", refused)
		}
	}
	for i := 0; i < admitted; i++ {
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("only %d requests reached the upstream", i)
		}
	}
	close(release)
	for i := 0; i < admitted; i++ {
		select {
		case r := <-results:
			if r.err != nil || r.status != 200 {
				t.Fatalf("admitted request: %d %v %s", r.status, r.err, r.body)
			}
		case <-timeout:
			t.Fatal("admitted requests did not finish")
		}
	}
	if up.count() != admitted {
		t.Fatalf("upstream saw %d, want %d", up.count(), admitted)
	}
	now := clock.Now()
	_, got, _ := g.limiter.counters.Apply(context.Background(), nil, []string{
		counterKey("group", "free", "tokin", dayWindow, now), counterKey("group", "free", "tokout", dayWindow, now)})
	total := got[0] + got[1]
	if total != int64(admitted*(169+excess)) || total > int64(2000+admitted*excess) {
		t.Fatalf("accounted %d tokens, want %d (≤ 2000 + %d × %d)", total, admitted*(169+excess), admitted, excess)
	}
	t.Logf("excess %d per answer: %d admitted, %d refused, %d accounted (budget 2000, bound %d)", excess, admitted, refused, total, 2000+admitted*excess)
	// Everything settled: nothing is reserved any more, and a 169-token
	// reservation does not fit what is left.
	s, b, err := postChat(client, base, testBobKey, body)
	if err != nil || s != 429 || !strings.Contains(b, strconv.FormatInt(total, 10)+" used, 0 reserved by requests in flight") {
		t.Fatalf("after the burst: %d %v %s", s, err, b)
	}
	if !strings.Contains(b, "tokensPerDay") {
		t.Fatal(b)
	}
}

// A reservation is released when the request ends without usage (an
// upstream error) and settled to the usage of a cut stream.
func TestReservationReleasedOnFailure(t *testing.T) {
	fail := true
	var mu sync.Mutex
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := fail
		mu.Unlock()
		if f {
			http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, http.StatusInternalServerError)
			return
		}
		okJSON(chatOK)(w, r)
	})
	body := `{"model":"m1","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	reserve := (len(body)+3)/4 + 100
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
	// Room for one reservation at a time.
	base, _ := limitsGateway(t, up.URL, `"groups": {"free": {"limits": {"tokensPerDay": `+strconv.Itoa(reserve+reserve/2)+`}}},
  "users": {"inline": [{"name": "bob", "group": "free", "apiKey": "`+testBobKey+`"}]}`, clock)
	client := &http.Client{}
	for i := 0; i < 3; i++ {
		if s, b, err := postChat(client, base, testBobKey, body); err != nil || s != 500 {
			t.Fatalf("failing request %d: %d %v %s (a leaked reservation would refuse the second)", i, s, err, b)
		}
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if s, b, err := postChat(client, base, testBobKey, body); err != nil || s != 200 {
		t.Fatalf("after failures: %d %v %s", s, err, b)
	}
}

// Without an output cap the reservation is the model's maximum output
// from model metadata, else 4096; max_completion_tokens wins over
// max_tokens.
func TestReservationOutputCap(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
	users := `"groups": {"free": {"limits": {"tokensPerDay": 100}}},
  "users": {"inline": [{"name": "bob", "group": "free", "apiKey": "` + testBobKey + `"}]}`
	plain, _ := limitsGateway(t, up.URL, users, clock)
	withMeta, _ := limitsGateway(t, up.URL, `"modelMeta": {"m1": {"maxOutputTokens": 50}}, `+users, clock)
	uncapped := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}` // 15 prompt-estimate tokens
	client := &http.Client{}
	s, b, err := postChat(client, plain, testBobKey, uncapped)
	if err != nil || s != 429 || !strings.Contains(b, "reserves up to 4111 ") {
		t.Fatalf("no cap, no metadata: %d %v %s, want a 4111-token reservation refused", s, err, b)
	}
	if s, b, err := postChat(client, withMeta, testBobKey, uncapped); err != nil || s != 200 {
		t.Fatalf("no cap, model max 50 (65 ≤ 100): %d %v %s", s, err, b)
	}
	both := `{"model":"m1","max_completion_tokens":9,"max_tokens":5000,"messages":[]}` // 18 + 9
	if s, b, err := postChat(client, plain, testBobKey, both); err != nil || s != 200 {
		t.Fatalf("max_completion_tokens 9: %d %v %s", s, err, b)
	}
}

// With failOpen, a reservation the primary store cannot take is taken
// in process, and settled there.
func TestReservationFallsBackInProcess(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)}
	l, primary, fallback := testLimiter(clock, true)
	scopes := scopesWith(nil, &compiledLimits{tokensPerDay: 1000})
	primary.fail.Store(true)
	r, e := l.reserve(context.Background(), scopes, 600, 0)
	if e != nil || r == nil {
		t.Fatalf("reserve with the primary down = %v, %+v", e, r)
	}
	// The fallback holds it: a second 600 does not fit.
	if _, e := l.reserve(context.Background(), scopes, 600, 0); e == nil || !strings.Contains(e.Message, "600 reserved by requests in flight") {
		t.Fatalf("second reservation = %v", e)
	}
	r.settle(translate.Usage{PromptTokens: 100, CompletionTokens: 50}, 0)
	_, got, _ := fallback.Apply(context.Background(), nil, []string{counterKey(scopes[0].kind, scopes[0].id, "tokin", dayWindow, clock.Now())})
	if got[0] != 100 {
		t.Fatalf("usage in the fallback = %d, want 100", got[0])
	}
	// failOpen off: 503.
	l2, p2, _ := testLimiter(clock, false)
	p2.fail.Store(true)
	if _, e := l2.reserve(context.Background(), scopes, 1, 0); e == nil || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("failOpen off, store down = %v", e)
	}
}
