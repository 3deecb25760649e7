package store

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The hold scripts run atomically in Redis (EVALSHA, falling back to
// EVAL once when Redis does not have the script cached). Expiry is on
// Redis's own clock (TIME), so replicas' clocks need not agree. Amounts
// are integers below 2^53 (Lua numbers are doubles); a hold's amounts are
// read back from its member ("id:tokens:cost") when it expires. The hold
// keys live for the hold's TTL plus holdKeySlack after their last write,
// by which time every hold in them has expired.

// holdKeySlackMs is how much longer than a hold's TTL its keys live, in
// milliseconds (a script literal).
const holdKeySlackMs = "60000"

// admitScript: KEYS are the counters, then each budget's holds and sums,
// then every budget check's used counters. ARGV: the number of counters,
// budgets and checks; per counter its delta and TTL (s); per check its
// 1-based counter index (0: a budget check), 1-based budget index, 1 for
// cost, limit, number of used keys; then the request's own: hold TTL
// (ms), member, tokens, cost (last, so the rest is encoded once per
// Admission). It returns {0, 0, 0} when admitted, else {check
// (1-based), used, held}.
const admitScript = `redis.replicate_commands()
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local n = #ARGV
local ttl, member, htok, hcost = tonumber(ARGV[n - 3]), ARGV[n - 2], ARGV[n - 1], ARGV[n]
local nc, nb, nk = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local a = 4
local counts = {}
for i = 1, nc do
  counts[i] = redis.call('INCRBY', KEYS[i], ARGV[a])
  redis.call('EXPIRE', KEYS[i], ARGV[a + 1])
  a = a + 2
end
local held = {}
for b = 1, nb do
  local z, h = KEYS[nc + 2 * b - 1], KEYS[nc + 2 * b]
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, m in ipairs(dead) do
    local dt, dc = string.match(m, ':(%d+):(%d+)$')
    if dt then
      redis.call('HINCRBY', h, 't', 0 - tonumber(dt))
      redis.call('HINCRBY', h, 'c', 0 - tonumber(dc))
    end
    redis.call('ZREM', z, m)
  end
  local s = redis.call('HMGET', h, 't', 'c')
  held[b] = {tonumber(s[1]) or 0, tonumber(s[2]) or 0}
end
local k = nc + 2 * nb + 1
for c = 1, nk do
  local ci, bi, cost, limit, nu = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2] == '1', tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  a = a + 5
  if ci > 0 then
    if counts[ci] > limit then
      return {c, 0, 0}
    end
  else
    local used = 0
    for u = 1, nu do
      used = used + (tonumber(redis.call('GET', KEYS[k])) or 0)
      k = k + 1
    end
    local mine, have = tonumber(htok), held[bi][1]
    if cost then
      mine, have = tonumber(hcost), held[bi][2]
    end
    if used + have + mine > limit or used + have >= limit then
      return {c, used, have}
    end
  end
end
for b = 1, nb do
  local z, h = KEYS[nc + 2 * b - 1], KEYS[nc + 2 * b]
  redis.call('ZADD', z, now + ttl, member)
  redis.call('HINCRBY', h, 't', htok)
  redis.call('HINCRBY', h, 'c', hcost)
  redis.call('PEXPIRE', z, ttl + ` + holdKeySlackMs + `)
  redis.call('PEXPIRE', h, ttl + ` + holdKeySlackMs + `)
end
return {0, 0, 0}
`

// releaseScript: KEYS are each budget's holds and sums; ARGV the member
// and the negated amounts. A hold already gone (expired) is not
// subtracted twice.
const releaseScript = `for b = 1, #KEYS, 2 do
  if redis.call('ZREM', KEYS[b], ARGV[1]) == 1 then
    redis.call('HINCRBY', KEYS[b + 1], 't', ARGV[2])
    redis.call('HINCRBY', KEYS[b + 1], 'c', ARGV[3])
  end
end
return 0
`

// renewScript: KEYS are each budget's holds and sums; ARGV the member,
// its amounts and the TTL (ms).
const renewScript = `redis.replicate_commands()
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local ttl = tonumber(ARGV[4])
for b = 1, #KEYS, 2 do
  if not redis.call('ZSCORE', KEYS[b], ARGV[1]) then
    redis.call('HINCRBY', KEYS[b + 1], 't', ARGV[2])
    redis.call('HINCRBY', KEYS[b + 1], 'c', ARGV[3])
  end
  redis.call('ZADD', KEYS[b], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[b], ttl + ` + holdKeySlackMs + `)
  redis.call('PEXPIRE', KEYS[b + 1], ttl + ` + holdKeySlackMs + `)
end
return 0
`

// luaScript is a script with its SHA-1 (what EVALSHA names it by) and
// its index in Redis.scripts.
type luaScript struct {
	src, sha string
	id       int
}

func newLuaScript(src string, id int) *luaScript {
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, sha: hex.EncodeToString(sum[:]), id: id}
}

// swapScript is SwapBlob: KEYS[1] is set to ARGV[2] for ARGV[3] seconds
// when it is missing or holds ARGV[1]; the reply is the value it holds
// afterwards.
const swapScript = `
local cur = redis.call('GET', KEYS[1])
if cur == false or cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return ARGV[2]
end
return cur
`

var (
	admitLua   = newLuaScript(admitScript, 0)
	releaseLua = newLuaScript(releaseScript, 1)
	renewLua   = newLuaScript(renewScript, 2)
	swapLua    = newLuaScript(swapScript, 3)
)

// numScripts is the number of scripts (the size of Redis.scripts).
const numScripts = 4

// SwapBlob sets key to value (for ttl) when it is missing or holds old,
// atomically, in one round trip, and returns what key holds afterwards:
// value, or the other value that was there.
func (s *Redis) SwapBlob(ctx context.Context, key string, old, value []byte, ttl time.Duration) ([]byte, error) {
	_, v, err := evalBatch(ctx, s, nil, swapLua, []string{key}, []string{string(old), string(value), strconv.FormatInt(ttlSeconds(ttl), 10)})
	if err != nil {
		return nil, err
	}
	if v.kind != '$' || v.null {
		return nil, scriptError("swap script", v)
	}
	return []byte(v.str), nil
}

// appendEval appends EVALSHA sha numkeys keys... args... (or EVAL with
// the script's source when src is set).
func appendEval(b []byte, s *luaScript, src bool, keys, args []string) []byte {
	n := 3 + len(keys) + len(args)
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\r', '\n')
	if src {
		b = appendBulk(b, "EVAL")
		b = appendBulk(b, s.src)
	} else {
		b = appendBulk(b, "EVALSHA")
		b = appendBulk(b, s.sha)
	}
	b = appendBulk(b, strconv.Itoa(len(keys)))
	for i := 0; i < len(keys); i++ {
		b = appendBulk(b, keys[i])
	}
	for i := 0; i < len(args); i++ {
		b = appendBulk(b, args[i])
	}
	return b
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// isNoScript reports an error reply saying Redis lacks the script.
func isNoScript(v respValue) bool {
	return v.kind == '-' && strings.HasPrefix(v.str, "NOSCRIPT")
}

// evalBatch runs prefix (commands whose replies are read as incrs, see
// appendApply) followed by one script call, as one round trip. Until
// the store has seen Redis load the script, the same pipeline carries a
// SCRIPT LOAD before the EVALSHA, so the first call costs no extra round
// trip; when Redis has lost it since (a restart, SCRIPT FLUSH), the call
// is sent again with the script's source (a second round trip, once).
func evalBatch(ctx context.Context, s *Redis, prefix []Incr, script *luaScript, keys, args []string) (*respBatch, respValue, error) {
	var req []byte
	if len(prefix) > 0 {
		req = appendApply(nil, prefix, nil)
	}
	load := !s.scripts[script.id].Load()
	if load {
		req = appendRESPCommand(req, []string{"SCRIPT", "LOAD", script.src})
	}
	req = appendEval(req, script, false, keys, args)
	return runScript(ctx, s, script, req, len(prefix), prefix, load, func() []byte { return appendEval(nil, script, true, keys, args) })
}

func scriptError(name string, v respValue) error {
	if v.kind == '-' {
		return redisReplyError(name, v)
	}
	return errors.New("redis: " + name + ": unexpected reply type " + strconv.QuoteRune(rune(v.kind)))
}

// holdTTLMillis is the hold's TTL in whole milliseconds, at least 1.
func holdTTLMillis(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	return ms
}

// admitPrefix is a's EVALSHA command up to its per-request tail (the
// array header counts the tail's 4 arguments), built once per Admission.
func admitPrefix(a *Admission) []byte {
	a.encOnce.Do(func() {
		nKeys := len(a.Counts) + 2*len(a.Budgets)
		for i := 0; i < len(a.Checks); i++ {
			nKeys += len(a.Checks[i].Used)
		}
		nArgs := 3 + 2*len(a.Counts) + 5*len(a.Checks) + 4
		b := []byte{'*'}
		b = strconv.AppendInt(b, int64(3+nKeys+nArgs), 10)
		b = append(b, '\r', '\n')
		b = appendBulk(b, "EVALSHA")
		b = appendBulk(b, admitLua.sha)
		b = appendBulk(b, strconv.Itoa(nKeys))
		for i := 0; i < len(a.Counts); i++ {
			b = appendBulk(b, a.Counts[i].Key)
		}
		for i := 0; i < len(a.Budgets); i++ {
			b = appendBulk(b, a.Budgets[i].Holds)
			b = appendBulk(b, a.Budgets[i].Sums)
		}
		for i := 0; i < len(a.Checks); i++ {
			for j := 0; j < len(a.Checks[i].Used); j++ {
				b = appendBulk(b, a.Checks[i].Used[j])
			}
		}
		b = appendBulk(b, strconv.Itoa(len(a.Counts)))
		b = appendBulk(b, strconv.Itoa(len(a.Budgets)))
		b = appendBulk(b, strconv.Itoa(len(a.Checks)))
		for i := 0; i < len(a.Counts); i++ {
			b = appendBulk(b, strconv.FormatInt(a.Counts[i].Delta, 10))
			b = appendBulk(b, strconv.FormatInt(ttlSeconds(a.Counts[i].TTL), 10))
		}
		for i := 0; i < len(a.Checks); i++ {
			c := &a.Checks[i]
			cost := "0"
			if c.Cost {
				cost = "1"
			}
			b = appendBulk(b, strconv.Itoa(c.Count))
			b = appendBulk(b, strconv.Itoa(c.Budget+1))
			b = appendBulk(b, cost)
			b = appendBulk(b, strconv.FormatInt(c.Limit, 10))
			b = appendBulk(b, strconv.Itoa(len(c.Used)))
		}
		a.enc = b
	})
	return a.enc
}

// Admit runs the admission script: one round trip. The command is a's
// cached prefix and the hold's 4 arguments.
func (s *Redis) Admit(ctx context.Context, a *Admission, h Hold) (Verdict, error) {
	return s.AdmitPeek(ctx, a, h, nil)
}

// AdmitPeek is Admit with p's GET and EXPIRE after the script call, in
// the same round trip (p nil: Admit).
func (s *Redis) AdmitPeek(ctx context.Context, a *Admission, h Hold, p *Peek) (Verdict, error) {
	prefix := admitPrefix(a)
	req := make([]byte, 0, len(prefix)+len(h.Member)+80)
	load := !s.scripts[admitLua.id].Load()
	if load {
		req = appendRESPCommand(req, []string{"SCRIPT", "LOAD", admitLua.src})
	}
	req = append(req, prefix...)
	req = appendBulk(req, strconv.FormatInt(holdTTLMillis(h.TTL), 10))
	req = appendBulk(req, h.Member)
	req = appendBulk(req, strconv.FormatInt(h.Tokens, 10))
	req = appendBulk(req, strconv.FormatInt(h.Cost, 10))
	trailing := 0
	if p != nil {
		req = appendPeek(req, p)
		trailing = 2
	}
	bt, v, err := runScriptThen(ctx, s, admitLua, req, 0, nil, load, trailing, func() []byte { return admitEval(a, h) })
	if err != nil {
		return Verdict{}, err
	}
	if p != nil {
		n := len(bt.replies)
		if err := peekResult(p, bt.replies[n-2], bt.replies[n-1]); err != nil {
			return Verdict{}, err
		}
	}
	if v.kind != '*' || len(v.array) != 3 || v.array[0].kind != ':' || v.array[1].kind != ':' || v.array[2].kind != ':' {
		return Verdict{}, scriptError("admit script", v)
	}
	at := v.array[0].int
	if at == 0 {
		return Verdict{Refused: -1}, nil
	}
	if at < 1 || at > int64(len(a.Checks)) {
		return Verdict{}, errors.New("redis: admit script: check index out of range")
	}
	return Verdict{Refused: int(at - 1), Used: v.array[1].int, Held: v.array[2].int}, nil
}

// admitEval is the admission as EVAL with the script's source (after a
// NOSCRIPT): the cached EVALSHA command with its name and SHA-1 swapped.
func admitEval(a *Admission, h Hold) []byte {
	prefix := admitPrefix(a)
	// prefix: "*N\r\n" "$7\r\nEVALSHA\r\n" "$40\r\n<sha>\r\n" rest…
	head := bytes.IndexByte(prefix, '\n') + 1
	rest := prefix[head+len("$7\r\nEVALSHA\r\n")+len("$40\r\n")+40+2:]
	b := append([]byte(nil), prefix[:head]...)
	b = appendBulk(b, "EVAL")
	b = appendBulk(b, admitLua.src)
	b = append(b, rest...)
	b = appendBulk(b, strconv.FormatInt(holdTTLMillis(h.TTL), 10))
	b = appendBulk(b, h.Member)
	b = appendBulk(b, strconv.FormatInt(h.Tokens, 10))
	return appendBulk(b, strconv.FormatInt(h.Cost, 10))
}

// runScript sends req — prefix INCRBY+EXPIRE pairs (appendApply), a
// SCRIPT LOAD of script when load is set, then one call of it — in one
// round trip, and returns the exchanged batch (the prefix's replies) and
// the call's reply; on NOSCRIPT it sends eval() (the call with the
// script's source) once more.
func runScript(ctx context.Context, s *Redis, script *luaScript, req []byte, prefix int, incrs []Incr, load bool, eval func() []byte) (*respBatch, respValue, error) {
	return runScriptThen(ctx, s, script, req, prefix, incrs, load, 0, eval)
}

// runScriptThen is runScript whose req ends with trailing more commands
// after the call (their replies end bt.replies; a NOSCRIPT resend
// carries the call alone).
func runScriptThen(ctx context.Context, s *Redis, script *luaScript, req []byte, prefix int, incrs []Incr, load bool, trailing int, eval func() []byte) (*respBatch, respValue, error) {
	n := 1
	if load {
		n = 2
	}
	bt := &respBatch{req: req, incrVals: make([]int64, prefix), incrs: incrs, replies: make([]respValue, n+trailing)}
	if err := respDo(ctx, s.c, bt); err != nil {
		return nil, respValue{}, err
	}
	v := bt.replies[n-1]
	if load && bt.replies[0].kind == '$' && bt.replies[0].str == script.sha {
		s.scripts[script.id].Store(true)
	}
	if !isNoScript(v) {
		return bt, v, nil
	}
	s.scripts[script.id].Store(false)
	again := &respBatch{req: eval(), replies: make([]respValue, 1)}
	if err := respDo(ctx, s.c, again); err != nil {
		return nil, respValue{}, err
	}
	return bt, again.replies[0], nil
}

// holdKeys is every budget's holds and sums key, in order.
func holdKeys(budgets []Budget) []string {
	keys := make([]string, 0, 2*len(budgets))
	for i := 0; i < len(budgets); i++ {
		keys = append(keys, budgets[i].Holds, budgets[i].Sums)
	}
	return keys
}

// Settle sends the usage (INCRBY + EXPIRE per incr, as Apply does) and
// the release script in ONE pipeline: Redis runs them in order, so the
// usage is counted before the hold goes.
func (s *Redis) Settle(ctx context.Context, st *Settlement) error {
	if len(st.Budgets) == 0 {
		_, _, err := s.Apply(ctx, st.Incrs, nil)
		return err
	}
	args := []string{st.Hold.Member, strconv.FormatInt(-st.Hold.Tokens, 10), strconv.FormatInt(-st.Hold.Cost, 10)}
	bt, v, err := evalBatch(ctx, s, st.Incrs, releaseLua, holdKeys(st.Budgets), args)
	if err != nil {
		return err
	}
	if _, _, err := applyResult(bt); err != nil {
		return err
	}
	if v.kind != ':' {
		return scriptError("release script", v)
	}
	return nil
}

// Renew runs the renewal script: one round trip.
func (s *Redis) Renew(ctx context.Context, budgets []Budget, h Hold) error {
	if len(budgets) == 0 {
		return nil
	}
	args := []string{h.Member, strconv.FormatInt(h.Tokens, 10), strconv.FormatInt(h.Cost, 10), strconv.FormatInt(holdTTLMillis(h.TTL), 10)}
	_, v, err := evalBatch(ctx, s, nil, renewLua, holdKeys(budgets), args)
	if err != nil {
		return err
	}
	if v.kind != ':' {
		return scriptError("renew script", v)
	}
	return nil
}
