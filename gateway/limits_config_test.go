package gateway

import (
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/store"
)

func TestCompileRedis(t *testing.T) {
	if rs, err := compileRedis(nil); rs != nil || err != nil {
		t.Fatalf("no redis block: %+v %v", rs, err)
	}
	setenv(t, "LLMGW_TEST_REDIS_PASSWORD", "  from-env-PW \n")
	rs, err := compileRedis(&RedisConfig{Address: "redis.internal:6380", Password: "env:LLMGW_TEST_REDIS_PASSWORD", DB: 5, PoolSize: 7, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	want := store.RedisSettings{Address: "redis.internal:6380", Password: "from-env-PW", DB: 5, TLS: true, PoolSize: 7}
	if rs.conn != want || !rs.failOpen {
		t.Fatalf("compiled %+v (failOpen %v), want %+v and failOpen by default", rs.conn, rs.failOpen, want)
	}
	closed := false
	if rs, err = compileRedis(&RedisConfig{Address: "h:1", FailOpen: &closed}); err != nil || rs.failOpen {
		t.Fatalf("failOpen false: %+v %v", rs, err)
	}
	if rs, err = compileRedis(&RedisConfig{Address: "h:1", PoolSize: store.MaxPoolSize}); err != nil || rs.conn.PoolSize != 256 {
		t.Fatalf("the largest pool: %+v %v", rs, err)
	}

	bad := []struct {
		cfg  *RedisConfig
		want string
	}{
		{&RedisConfig{}, "config: redis.address: required when the redis block is present (host:port)"},
		{&RedisConfig{Address: "h"}, `config: redis.address: "h" is not host:port`},
		{&RedisConfig{Address: "h:0"}, `config: redis.address: "h:0" has an invalid port`},
		{&RedisConfig{Address: "h:1", DB: -1}, "config: redis.db: -1 must be >= 0"},
		{&RedisConfig{Address: "h:1", PoolSize: -1}, "config: redis.poolSize: -1 is out of range (0 self-tunes; at most 256)"},
		{&RedisConfig{Address: "h:1", PoolSize: 257}, "config: redis.poolSize: 257 is out of range (0 self-tunes; at most 256)"},
		{&RedisConfig{Address: "h:1", Password: "env:LLMGW_TEST_REDIS_UNSET_VAR"}, "config: redis.password: environment variable LLMGW_TEST_REDIS_UNSET_VAR is unset or empty"},
	}
	for _, tc := range bad {
		_, err := compileRedis(tc.cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
