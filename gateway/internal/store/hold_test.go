package store

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/redistest"
)

// The same hold semantics against the in-process store (on a fake
// clock) and against a real redis-server running the scripts (on
// Redis's clock: expiry is waited for, with a deadline). The Redis half
// skips when redis-server is not installed, unless LLMGW_REQUIRE_REDIS=1.

// holdEnv is one Holder under test and how to let time pass.
type holdEnv struct {
	name  string
	h     Holder
	c     Counter
	ttl   time.Duration // the TTL holds get in the expiry cases
	await func(t *testing.T, d time.Duration)
}

func memoryHoldEnv() holdEnv {
	clk := &fakeClock{now: time.Unix(1700000000, 0)}
	m := NewMemory(clk.Now, nil)
	return holdEnv{name: "memory", h: m, c: m, ttl: time.Minute, await: func(t *testing.T, d time.Duration) { clk.Add(d) }}
}

func redisHoldEnv(t *testing.T) holdEnv {
	r := NewRedis(RedisSettings{Address: redistest.Start(t)})
	t.Cleanup(r.Close)
	return holdEnv{name: "redis", h: r, c: r, ttl: 300 * time.Millisecond, await: func(t *testing.T, d time.Duration) { time.Sleep(d) }}
}

func eachHolder(t *testing.T, run func(t *testing.T, e holdEnv)) {
	t.Run("memory", func(t *testing.T) { run(t, memoryHoldEnv()) })
	t.Run("redis", func(t *testing.T) { run(t, redisHoldEnv(t)) })
}

var testBudget = Budget{Holds: "t:holds", Sums: "t:sums"}

// tokenAdmission is one budget of limit, with one request counter
// limited to maxCount.
func tokenAdmission(limit, maxCount int64) *Admission {
	return &Admission{
		Counts:  []Incr{{Key: "t:req", Delta: 1, TTL: time.Minute}},
		Budgets: []Budget{testBudget},
		Checks: []Check{
			{Count: 1, Limit: maxCount},
			{Budget: 0, Used: []string{"t:in", "t:out"}, Limit: limit},
		},
	}
}

func tokenHold(id string, tokens int64, ttl time.Duration) Hold {
	return Hold{Member: HoldMember(id, tokens, 0), Tokens: tokens, TTL: ttl}
}

func usage(in, out int64) []Incr {
	return []Incr{{Key: "t:in", Delta: in, TTL: time.Hour}, {Key: "t:out", Delta: out, TTL: time.Hour}}
}

func TestHoldAdmitSettle(t *testing.T) {
	eachHolder(t, func(t *testing.T, e holdEnv) {
		ctx := context.Background()
		admit := func(id string, tokens int64) Verdict {
			t.Helper()
			v, err := e.h.Admit(ctx, tokenAdmission(1000, 100), tokenHold(id, tokens, time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		for i := 0; i < 3; i++ {
			if v := admit("r"+strconv.Itoa(i), 300); v.Refused != -1 {
				t.Fatalf("admit %d = %+v, want admitted", i, v)
			}
		}
		// 900 held: another 300 would pass 1000.
		if v := admit("r3", 300); v.Refused != 1 || v.Used != 0 || v.Held != 900 {
			t.Fatalf("4th admit = %+v, want refused by check 1 with used 0, held 900", v)
		}
		// r0 used 100 of its 300: 100 used + 600 held + 300 fits exactly.
		err := e.h.Settle(ctx, &Settlement{Incrs: usage(60, 40), Budgets: []Budget{testBudget},
			Hold: Hold{Member: HoldMember("r0", 300, 0), Tokens: 300}})
		if err != nil {
			t.Fatal(err)
		}
		if v := admit("r4", 300); v.Refused != -1 {
			t.Fatalf("admit after settle = %+v, want admitted", v)
		}
		if v := admit("r5", 1); v.Refused != 1 || v.Used != 100 || v.Held != 900 {
			t.Fatalf("admit at the limit = %+v, want refused with used 100, held 900", v)
		}
		// A second settle of the same hold subtracts nothing.
		_ = e.h.Settle(ctx, &Settlement{Budgets: []Budget{testBudget}, Hold: Hold{Member: HoldMember("r0", 300, 0), Tokens: 300}})
		if v := admit("r6", 1); v.Refused != 1 || v.Held != 900 {
			t.Fatalf("after a repeated settle = %+v, want held still 900", v)
		}
		// The request-rate check refuses first and holds nothing.
		if v, err := e.h.Admit(ctx, tokenAdmission(1000, 3), tokenHold("r7", 1, time.Minute)); err != nil || v.Refused != 0 {
			t.Fatalf("rate-limited admit = %+v, %v; want refused by check 0", v, err)
		}
		// Every Admit counted, refused or not.
		_, got, _ := e.c.Apply(ctx, nil, []string{"t:req"})
		if got[0] != 8 {
			t.Fatalf("request counter = %d, want 8", got[0])
		}
	})
}

func TestHoldCostCheck(t *testing.T) {
	eachHolder(t, func(t *testing.T, e holdEnv) {
		ctx := context.Background()
		a := &Admission{
			Budgets: []Budget{testBudget, {Holds: "g:holds", Sums: "g:sums"}},
			Checks: []Check{
				{Budget: 0, Used: []string{"t:in", "t:out"}, Limit: 1 << 40},
				{Budget: 1, Cost: true, Used: []string{"g:cost"}, Limit: 5000},
			},
		}
		for i, want := range []int{-1, -1, 1} {
			id := "c" + strconv.Itoa(i)
			v, err := e.h.Admit(ctx, a, Hold{Member: HoldMember(id, 10, 2000), Tokens: 10, Cost: 2000, TTL: time.Minute})
			if err != nil || v.Refused != want {
				t.Fatalf("admit %d = %+v, %v; want refused %d", i, v, err, want)
			}
			if want == 1 && (v.Held != 4000 || v.Used != 0) {
				t.Fatalf("cost refusal = %+v, want held 4000", v)
			}
		}
	})
}

func TestHoldExpiresAndRenews(t *testing.T) {
	eachHolder(t, func(t *testing.T, e holdEnv) {
		ctx := context.Background()
		admit := func(id string) Verdict {
			t.Helper()
			v, err := e.h.Admit(ctx, tokenAdmission(1000, 1000), tokenHold(id, 600, e.ttl))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		adm := tokenAdmission(1000, 1000)
		dead := tokenHold("dead", 600, e.ttl)
		if v, err := e.h.Admit(ctx, adm, dead); err != nil || v.Refused != -1 {
			t.Fatalf("first admit = %+v, %v", v, err)
		}
		if v := admit("blocked"); v.Refused != 1 || v.Held != 600 {
			t.Fatalf("second admit = %+v, want refused with 600 held", v)
		}
		// The holder dies: no settle, no renew. Its hold expires.
		e.await(t, e.ttl+e.ttl/2)
		live := tokenHold("live", 600, e.ttl)
		if v, err := e.h.Admit(ctx, adm, live); err != nil || v.Refused != -1 {
			t.Fatalf("admit after expiry = %+v, %v; want admitted", v, err)
		}
		// A settle of the expired hold subtracts nothing.
		if err := e.h.Settle(ctx, &Settlement{Budgets: adm.Budgets, Hold: dead}); err != nil {
			t.Fatal(err)
		}
		// The live one renews before it would expire, and keeps holding.
		for i := 0; i < 3; i++ {
			e.await(t, e.ttl/2)
			if err := e.h.Renew(ctx, adm.Budgets, live); err != nil {
				t.Fatal(err)
			}
		}
		if v := admit("still-blocked"); v.Refused != 1 || v.Held != 600 {
			t.Fatalf("admit beside a renewed hold = %+v, want refused with 600 held", v)
		}
		// A renewal after expiry holds again.
		e.await(t, e.ttl+e.ttl/2)
		if err := e.h.Renew(ctx, adm.Budgets, live); err != nil {
			t.Fatal(err)
		}
		if v := admit("re-held"); v.Refused != 1 || v.Held != 600 {
			t.Fatalf("admit after a late renewal = %+v, want refused with 600 held", v)
		}
		if err := e.h.Settle(ctx, &Settlement{Budgets: adm.Budgets, Hold: live}); err != nil {
			t.Fatal(err)
		}
		if v := admit("free"); v.Refused != -1 {
			t.Fatalf("admit after the last settle = %+v, want admitted", v)
		}
	})
}

// Concurrent admissions never hold more than the budget.
func TestHoldConcurrentAdmissions(t *testing.T) {
	eachHolder(t, func(t *testing.T, e holdEnv) {
		const n = 60
		var wg sync.WaitGroup
		verdicts := make([]Verdict, n)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				verdicts[i], errs[i] = e.h.Admit(context.Background(), tokenAdmission(2000, 1000), tokenHold("c"+strconv.Itoa(i), 150, time.Minute))
			}(i)
		}
		wg.Wait()
		admitted := 0
		for i := 0; i < n; i++ {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if verdicts[i].Refused == -1 {
				admitted++
			}
		}
		if admitted != 13 { // 13 × 150 = 1950 ≤ 2000 < 14 × 150
			t.Fatalf("admitted %d of %d, want 13", admitted, n)
		}
	})
}

// A Redis without the script cached (SCRIPT FLUSH) gets it by EVAL.
func TestHoldScriptReload(t *testing.T) {
	e := redisHoldEnv(t)
	r := e.h.(*Redis)
	ctx := context.Background()
	if v, err := r.Admit(ctx, tokenAdmission(10, 10), tokenHold("a", 1, time.Minute)); err != nil || v.Refused != -1 {
		t.Fatalf("admit = %+v, %v", v, err)
	}
	if _, err := r.c.pipeline(ctx, [][]string{{"SCRIPT", "FLUSH"}}); err != nil {
		t.Fatal(err)
	}
	before := r.RoundTrips()
	if v, err := r.Admit(ctx, tokenAdmission(10, 10), tokenHold("b", 1, time.Minute)); err != nil || v.Refused != -1 {
		t.Fatalf("admit after SCRIPT FLUSH = %+v, %v", v, err)
	}
	if n := r.RoundTrips() - before; n != 2 {
		t.Fatalf("round trips after a flush = %d, want 2 (EVALSHA, then EVAL)", n)
	}
	// The first call of a fresh store loads the script in the same round
	// trip.
	fresh := &Redis{c: r.c}
	before = r.RoundTrips()
	if err := fresh.Renew(ctx, []Budget{testBudget}, Hold{Member: "x:1:0", Tokens: 1, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if n := r.RoundTrips() - before; n != 1 {
		t.Fatalf("round trips of a first call = %d, want 1 (SCRIPT LOAD and EVALSHA pipelined)", n)
	}
	before = r.RoundTrips()
	if _, err := r.Admit(ctx, tokenAdmission(10, 10), tokenHold("c", 1, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := r.RoundTrips() - before; n != 1 {
		t.Fatalf("round trips once cached = %d, want 1", n)
	}
}

// A Peek rides the counter and admission round trips: GET and EXPIRE
// after the operation's own commands, one round trip in all, including
// the admission's first call (which also loads the script).
func TestRedisPeekFolded(t *testing.T) {
	r := NewRedis(RedisSettings{Address: redistest.Start(t)})
	t.Cleanup(r.Close)
	ctx := context.Background()
	if err := r.SetBlob(ctx, "t:bind", []byte("p/m"), time.Hour); err != nil {
		t.Fatal(err)
	}
	before := r.RoundTrips()
	p := &Peek{Key: "t:bind", TTL: 5 * time.Second}
	if _, _, err := r.ApplyPeek(ctx, []Incr{{Key: "t:n", Delta: 1, TTL: time.Minute}}, nil, p); err != nil {
		t.Fatal(err)
	}
	if !p.Done || !p.Found || string(p.Value) != "p/m" || r.RoundTrips()-before != 1 {
		t.Fatalf("apply peek: %+v, %d round trips", p, r.RoundTrips()-before)
	}
	missing := &Peek{Key: "t:none", TTL: time.Second}
	before = r.RoundTrips()
	v, err := r.AdmitPeek(ctx, tokenAdmission(1000, 10), tokenHold("h1", 10, time.Minute), missing)
	if err != nil || v.Refused != -1 {
		t.Fatalf("admit: %+v %v", v, err)
	}
	if !missing.Done || missing.Found || r.RoundTrips()-before != 1 {
		t.Fatalf("admit peek: %+v, %d round trips", missing, r.RoundTrips()-before)
	}
	// The read renewed the binding's TTL to the peek's.
	replies, err := r.c.pipeline(ctx, [][]string{{"TTL", "t:bind"}})
	if err != nil || replies[0].int < 1 || replies[0].int > 5 {
		t.Fatalf("TTL after the peek: %+v %v", replies, err)
	}
}
