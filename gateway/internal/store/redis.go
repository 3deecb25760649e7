package store

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// MaxPoolSize is the largest RedisSettings.PoolSize: configuration
// validation refuses more, and the client clamps to it.
const MaxPoolSize = 256

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

// Apply sends, in ONE pipeline, INCRBY key delta + EXPIRE key seconds per
// incr and then one MGET of every get key (when there are any).
func (s *Redis) Apply(ctx context.Context, incrs []Incr, gets []string) ([]int64, []int64, error) {
	n := 2 * len(incrs)
	if len(gets) > 0 {
		n++
	}
	if n == 0 {
		return nil, nil, nil
	}
	cmds := make([][]string, 0, n)
	for i := 0; i < len(incrs); i++ {
		in := incrs[i]
		cmds = append(cmds, []string{"INCRBY", in.Key, strconv.FormatInt(in.Delta, 10)})
		cmds = append(cmds, []string{"EXPIRE", in.Key, strconv.FormatInt(ttlSeconds(in.TTL), 10)})
	}
	if len(gets) > 0 {
		mget := make([]string, 0, len(gets)+1)
		mget = append(mget, "MGET")
		mget = append(mget, gets...)
		cmds = append(cmds, mget)
	}
	replies, err := s.c.pipeline(ctx, cmds)
	if err != nil {
		return nil, nil, err
	}
	incrVals := make([]int64, len(incrs))
	for i := 0; i < len(incrs); i++ {
		r := replies[2*i]
		if r.kind == '-' {
			return nil, nil, redisReplyError("INCRBY", r)
		}
		if r.kind != ':' {
			return nil, nil, errors.New("redis: INCRBY: unexpected reply type " + strconv.QuoteRune(rune(r.kind)))
		}
		incrVals[i] = r.int
		e := replies[2*i+1]
		if e.kind == '-' {
			return nil, nil, redisReplyError("EXPIRE", e)
		}
		if e.kind != ':' {
			return nil, nil, errors.New("redis: EXPIRE: unexpected reply type " + strconv.QuoteRune(rune(e.kind)))
		}
	}
	var getVals []int64
	if len(gets) > 0 {
		r := replies[len(replies)-1]
		if r.kind == '-' {
			return nil, nil, redisReplyError("MGET", r)
		}
		if r.kind != '*' || r.null || len(r.array) != len(gets) {
			return nil, nil, errors.New("redis: MGET: unexpected reply shape")
		}
		getVals = make([]int64, len(gets))
		for i := 0; i < len(gets); i++ {
			e := r.array[i]
			if e.kind == '$' && e.null {
				continue // missing key reads 0
			}
			if e.kind != '$' {
				return nil, nil, errors.New("redis: MGET: unexpected element type " + strconv.QuoteRune(rune(e.kind)))
			}
			v, err := strconv.ParseInt(e.str, 10, 64)
			if err != nil {
				return nil, nil, errors.New("redis: MGET: counter " + strconv.Itoa(i) + " is not an integer")
			}
			getVals[i] = v
		}
	}
	return incrVals, getVals, nil
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
