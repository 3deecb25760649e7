package gateway

import (
	"fmt"
	"net"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

// redisSettings is RedisConfig validated, with the password resolved.
type redisSettings struct {
	conn     store.RedisSettings // how to reach Redis; the password is never logged
	failOpen bool                // on a Redis error, count in process (true) or answer 503
}

// compileRedis validates the redis block; nil means no Redis.
func compileRedis(rc *RedisConfig) (*redisSettings, error) {
	if rc == nil {
		return nil, nil
	}
	if rc.Address == "" {
		return nil, fmt.Errorf("config: redis.address: required when the redis block is present (host:port)")
	}
	host, port, err := net.SplitHostPort(rc.Address)
	if err != nil || host == "" {
		return nil, fmt.Errorf("config: redis.address: %q is not host:port", rc.Address)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("config: redis.address: %q has an invalid port", rc.Address)
	}
	if rc.DB < 0 {
		return nil, fmt.Errorf("config: redis.db: %d must be >= 0", rc.DB)
	}
	if rc.PoolSize < 0 || rc.PoolSize > store.MaxPoolSize {
		return nil, fmt.Errorf("config: redis.poolSize: %d is out of range (0 self-tunes; at most %d)", rc.PoolSize, store.MaxPoolSize)
	}
	password := ""
	if rc.Password != "" {
		if password, err = resolveSecret(rc.Password); err != nil {
			return nil, fmt.Errorf("config: redis.password: %v", err)
		}
	}
	s := &redisSettings{
		conn:     store.RedisSettings{Address: rc.Address, Password: password, DB: rc.DB, TLS: rc.TLS, PoolSize: rc.PoolSize},
		failOpen: true,
	}
	if rc.FailOpen != nil {
		s.failOpen = *rc.FailOpen
	}
	return s, nil
}
