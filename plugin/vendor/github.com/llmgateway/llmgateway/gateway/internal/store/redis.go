package store

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// MaxPoolSize is the largest RedisSettings.PoolSize: configuration
// validation refuses more, and the client clamps to it.
const MaxPoolSize = 256

// decimalDigits maps a one-digit length to its ASCII digit.
const decimalDigits = "0123456789"

// RedisSettings says how to reach Redis: the validated redis block of
// the configuration, with the password resolved.
type RedisSettings struct {
	// Address is host:port.
	Address string
	// Password is the resolved secret, sent with AUTH when set. It is
	// never logged and is redacted from error text.
	Password string
	// DB is the database number; SELECT is sent when it is not 0.
	DB int
	// TLS dials with TLS and verifies the server against the system
	// roots.
	TLS bool
	// PoolSize caps the open connections. 0 self-tunes (2×GOMAXPROCS
	// within [4, 8]); at most MaxPoolSize.
	PoolSize int
}

// Redis is the shared Counter and Blob store over the RESP2 client.
// Every method is one pipelined round trip; dial and I/O are each
// bounded by 2 s (and by the caller's context).
type Redis struct {
	c *respClient
	// scripts notes, per hold script (redis_hold.go), that Redis has
	// loaded it: calls then name it by its SHA-1 alone.
	scripts [numScripts]atomic.Bool
}

// NewRedis returns the store for s. It never dials: the first operation
// connects.
func NewRedis(s RedisSettings) *Redis {
	return &Redis{c: newRESPClient(respConfig{
		address:  s.Address,
		password: s.Password,
		db:       s.DB,
		tls:      s.TLS,
		poolSize: s.PoolSize,
	})}
}

// Close releases the store's idle connections; a connection in use is
// closed when its operation ends. Operations after Close fail at once.
func (s *Redis) Close() { s.c.close() }

// RoundTrips reports how many pipelined round trips the store has
// started: one per Apply, GetBlob or SetBlob with work to do, failed or
// not (a resend on a fresh connection after a stale pooled one counts
// once).
func (s *Redis) RoundTrips() int64 { return s.c.roundTripCount() }

// ttlSeconds rounds ttl up to whole seconds, at least 1.
func ttlSeconds(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 1
	}
	n := int64(ttl / time.Second)
	if ttl%time.Second != 0 {
		n++
	}
	if n < 1 {
		n = 1
	}
	return n
}

// redisReplyError turns an error reply to cmd into a Go error. It names
// the command and carries the server's message (never a key's value).
func redisReplyError(cmd string, v respValue) error {
	return errors.New("redis: " + cmd + ": " + v.str)
}

// Apply sends, in ONE pipeline, INCRBY key delta (SET key delta for a
// Set incr) + EXPIRE key seconds per incr and then one MGET of every get key (when there are any).
func (s *Redis) Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	return s.ApplyPeek(ctx, incrs, gets, nil)
}

// ApplyPeek is Apply with p's GET and EXPIRE after its commands, in the
// same round trip (p nil: Apply).
func (s *Redis) ApplyPeek(ctx context.Context, incrs []Incr, gets []string, p *Peek) ([]int64, []int64, error) {
	if len(incrs) == 0 && len(gets) == 0 && p == nil {
		return nil, nil, nil
	}
	bt := &respBatch{req: appendApply(nil, incrs, gets), incrVals: make([]int64, len(incrs)), incrs: incrs}
	if len(gets) > 0 {
		bt.gets = make([]int64, len(gets))
	}
	if p != nil {
		bt.req = appendPeek(bt.req, p)
		bt.replies = make([]respValue, 2)
	}
	if err := respDo(ctx, s.c, bt); err != nil {
		return nil, nil, err
	}
	if p != nil {
		if err := peekResult(p, bt.replies[0], bt.replies[1]); err != nil {
			return nil, nil, err
		}
	}
	return applyResult(bt)
}

// appendPeek appends p's GET and EXPIRE commands.
func appendPeek(b []byte, p *Peek) []byte {
	b = appendRESPCommand(b, []string{"GET", p.Key})
	return appendRESPCommand(b, []string{"EXPIRE", p.Key, strconv.FormatInt(ttlSeconds(p.TTL), 10)})
}

// peekResult reads p's two replies into it.
func peekResult(p *Peek, get, expire respValue) error {
	if get.kind == '-' {
		return redisReplyError("GET", get)
	}
	if expire.kind == '-' {
		return redisReplyError("EXPIRE", expire)
	}
	if get.kind != '$' {
		return errors.New("redis: GET: unexpected reply type " + strconv.QuoteRune(rune(get.kind)))
	}
	p.Done, p.Found = true, !get.null
	if p.Found {
		p.Value = []byte(get.str)
	}
	return nil
}

// applyResult is Apply's outcome from its exchanged batch: the first
// unexpected reply, in command order, is the error.
func applyResult(bt *respBatch) ([]int64, []int64, error) {
	if bt.bad >= 0 {
		cmd := "INCRBY"
		if bt.bad&1 == 1 {
			cmd = "EXPIRE"
		}
		r := bt.badReply
		if r.kind == '-' {
			return nil, nil, redisReplyError(cmd, r)
		}
		return nil, nil, errors.New("redis: " + cmd + ": unexpected reply type " + strconv.QuoteRune(rune(r.kind)))
	}
	if bt.gets != nil {
		if !bt.getsShape {
			// Not an array of one element per key.
			if bt.mget.kind == '-' {
				return nil, nil, redisReplyError("MGET", bt.mget)
			}
			return nil, nil, errors.New("redis: MGET: unexpected reply shape")
		}
		if i := bt.getsBad; i >= 0 {
			if bt.getsBadKind != '$' {
				return nil, nil, errors.New("redis: MGET: unexpected element type " + strconv.QuoteRune(rune(bt.getsBadKind)))
			}
			return nil, nil, errors.New("redis: MGET: counter " + strconv.Itoa(i) + " is not an integer")
		}
	}
	return bt.incrVals, bt.gets, nil
}

// appendApply appends Apply's commands to b: INCRBY key delta and EXPIRE
// key seconds per incr, then MGET of every get key when there are any.
// The bytes are exactly appendRESPCommand's for those commands. The loop
// is written for the interpreter, where every statement counts and
// calls into the standard library (append, strconv.AppendInt) run
// compiled: each key argument is encoded once and copied into its
// EXPIRE, and each distinct TTL's argument (a batch has one per window)
// is encoded once and copied after that.
func appendApply(b []byte, incrs []Incr, gets []string) []byte {
	if b == nil {
		b = make([]byte, 0, 160*len(incrs)+64*len(gets)+32)
	}
	// The TTL arguments already in b: ttls[j]'s is b[ttlAt[j]:ttlEnd[j]].
	var ttls [4]time.Duration
	var ttlAt, ttlEnd [4]int
	nTTL := 0
	for i := 0; i < len(incrs); i++ {
		in := &incrs[i]
		key := in.Key
		if in.Set {
			b = append(b, "*3\r\n$3\r\nSET\r\n$"...)
		} else {
			b = append(b, "*3\r\n$6\r\nINCRBY\r\n$"...)
		}
		ks := len(b) - 1 // the key argument starts at its '$'
		kl := len(key)
		if kl < 10 {
			b = append(b, byte('0'+kl), '\r', '\n')
		} else if kl < 100 {
			b = append(b, byte('0'+kl/10), byte('0'+kl%10), '\r', '\n')
		} else {
			b = strconv.AppendInt(b, int64(kl), 10)
			b = append(b, '\r', '\n')
		}
		b = append(b, key...)
		b = append(b, "\r\n$0\r\n"...)
		ke := len(b) - 4 // the key argument ends after its CRLF
		dl := len(b) - 3 // the delta's length digit
		b = strconv.AppendInt(b, in.Delta, 10)
		if nd := len(b) - dl - 3; nd < 10 {
			b[dl] = decimalDigits[nd]
		} else {
			b = b[:dl]
			b = strconv.AppendInt(b, int64(nd), 10)
			b = append(b, '\r', '\n')
			b = strconv.AppendInt(b, in.Delta, 10)
		}
		b = append(b, "\r\n*3\r\n$6\r\nEXPIRE\r\n"...)
		b = append(b, b[ks:ke]...)
		j := 0
		for j < nTTL && ttls[j] != in.TTL {
			j++
		}
		if j < nTTL {
			b = append(b, b[ttlAt[j]:ttlEnd[j]]...)
			continue
		}
		at := len(b)
		b = append(b, "$0\r\n"...)
		b = strconv.AppendInt(b, ttlSeconds(in.TTL), 10)
		if nd := len(b) - at - 4; nd < 10 {
			b[at+1] = decimalDigits[nd]
			b = append(b, '\r', '\n')
		} else {
			secs := string(b[at+4:])
			b = b[:at+1]
			b = strconv.AppendInt(b, int64(nd), 10)
			b = append(b, '\r', '\n')
			b = append(b, secs...)
			b = append(b, '\r', '\n')
		}
		if nTTL < len(ttls) {
			ttls[nTTL] = in.TTL
			ttlAt[nTTL] = at
			ttlEnd[nTTL] = len(b)
			nTTL++
		}
	}
	if len(gets) > 0 {
		b = append(b, '*')
		b = strconv.AppendInt(b, int64(len(gets)+1), 10)
		b = append(b, "\r\n$4\r\nMGET\r\n$"...)
		for i := 0; i < len(gets); i++ {
			kl := len(gets[i])
			if kl < 10 {
				b = append(b, byte('0'+kl), '\r', '\n')
			} else if kl < 100 {
				b = append(b, byte('0'+kl/10), byte('0'+kl%10), '\r', '\n')
			} else {
				b = strconv.AppendInt(b, int64(kl), 10)
				b = append(b, '\r', '\n')
			}
			b = append(b, gets[i]...)
			b = append(b, "\r\n$"...)
		}
		b = b[:len(b)-1]
	}
	return b
}

// GetBlob is GET key; a missing key is (nil, false, nil).
func (s *Redis) GetBlob(ctx context.Context, key string) ([]byte, bool, error) {
	replies, err := s.c.pipeline(ctx, [][]string{{"GET", key}})
	if err != nil {
		return nil, false, err
	}
	r := replies[0]
	if r.kind == '-' {
		return nil, false, redisReplyError("GET", r)
	}
	if r.kind != '$' {
		return nil, false, errors.New("redis: GET: unexpected reply type " + strconv.QuoteRune(rune(r.kind)))
	}
	if r.null {
		return nil, false, nil
	}
	return []byte(r.str), true, nil
}

// PushList is LPUSH key values... then LTRIM key 0 keep-1, in one round
// trip: the values go to the head of a list bounded by size alone (no
// expiry). The last value ends up first.
func (s *Redis) PushList(ctx context.Context, key string, values []string, keep int) error {
	if len(values) == 0 {
		return nil
	}
	push := append([]string{"LPUSH", key}, values...)
	replies, err := s.c.pipeline(ctx, [][]string{push, {"LTRIM", key, "0", strconv.Itoa(keep - 1)}})
	if err != nil {
		return err
	}
	if replies[0].kind != ':' {
		return redisReplyError("LPUSH", replies[0])
	}
	if replies[1].kind != '+' {
		return redisReplyError("LTRIM", replies[1])
	}
	return nil
}

// ListRange is LRANGE key 0 n-1: the list's first n entries.
func (s *Redis) ListRange(ctx context.Context, key string, n int) ([]string, error) {
	replies, err := s.c.pipeline(ctx, [][]string{{"LRANGE", key, "0", strconv.Itoa(n - 1)}})
	if err != nil {
		return nil, err
	}
	r := replies[0]
	if r.kind != '*' {
		return nil, redisReplyError("LRANGE", r)
	}
	out := make([]string, 0, len(r.array))
	for i := 0; i < len(r.array); i++ {
		out = append(out, r.array[i].str)
	}
	return out, nil
}

// GetBlobRenew is GET key and EXPIRE key seconds in one round trip: the
// value, and a renewed idle time to live (a missing key stays missing).
func (s *Redis) GetBlobRenew(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error) {
	replies, err := s.c.pipeline(ctx, [][]string{{"GET", key}, {"EXPIRE", key, strconv.FormatInt(ttlSeconds(ttl), 10)}})
	if err != nil {
		return nil, false, err
	}
	r := replies[0]
	if r.kind == '-' {
		return nil, false, redisReplyError("GET", r)
	}
	if replies[1].kind == '-' {
		return nil, false, redisReplyError("EXPIRE", replies[1])
	}
	if r.kind != '$' {
		return nil, false, errors.New("redis: GET: unexpected reply type " + strconv.QuoteRune(rune(r.kind)))
	}
	if r.null {
		return nil, false, nil
	}
	return []byte(r.str), true, nil
}

// SetBlob is SET key value EX seconds (rounded up, at least 1).
func (s *Redis) SetBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	replies, err := s.c.pipeline(ctx, [][]string{{"SET", key, string(value), "EX", strconv.FormatInt(ttlSeconds(ttl), 10)}})
	if err != nil {
		return err
	}
	r := replies[0]
	if r.kind == '-' {
		return redisReplyError("SET", r)
	}
	if r.kind != '+' {
		return errors.New("redis: SET: unexpected reply type " + strconv.QuoteRune(rune(r.kind)))
	}
	return nil
}
