package gateway

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// redisStore is the shared counterStore and blobStore over the RESP2
// client. Every method is one pipelined round trip.
type redisStore struct {
	c *respClient
}

// newRedisStore builds the store from the validated redis block
// (compileRedis, which resolved the password). It never dials.
func newRedisStore(rs *redisSettings) *redisStore {
	return &redisStore{c: newRESPClient(respConfig{
		address:     rs.address,
		password:    rs.password,
		db:          rs.db,
		tls:         rs.tls,
		poolSize:    rs.poolSize,
		dialTimeout: 2 * time.Second,
		ioTimeout:   2 * time.Second,
	})}
}

// close releases the store's idle connections.
func (s *redisStore) close() { s.c.close() }

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

// apply sends, in ONE pipeline, INCRBY key delta + EXPIRE key seconds per
// incr and then one MGET of every get key (when there are any).
func (s *redisStore) apply(ctx context.Context, incrs []counterIncr, gets []string) ([]int64, []int64, error) {
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
		cmds = append(cmds, []string{"INCRBY", in.key, strconv.FormatInt(in.delta, 10)})
		cmds = append(cmds, []string{"EXPIRE", in.key, strconv.FormatInt(ttlSeconds(in.ttl), 10)})
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

// getBlob is GET key; a missing key is (nil, false, nil).
func (s *redisStore) getBlob(ctx context.Context, key string) ([]byte, bool, error) {
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

// setBlob is SET key value EX seconds (rounded up, at least 1).
func (s *redisStore) setBlob(ctx context.Context, key string, value []byte, ttl time.Duration) error {
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
