package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestMemoryApply(t *testing.T) {
	m := NewMemory(nil, nil)
	ctx := context.Background()
	iv, gv, err := m.Apply(ctx, []Incr{
		{Key: "a", Delta: 5, TTL: time.Minute},
		{Key: "b", Delta: -2, TTL: time.Minute},
		{Key: "a", Delta: 1, TTL: time.Minute},
	}, []string{"a", "missing", "b"})
	if err != nil || !reflect.DeepEqual(iv, []int64{5, -2, 6}) || !reflect.DeepEqual(gv, []int64{6, 0, -2}) {
		t.Fatalf("Apply = %v %v %v, want [5 -2 6] [6 0 -2]", iv, gv, err)
	}
	iv, gv, err = m.Apply(ctx, nil, nil)
	if err != nil || len(iv) != 0 || len(gv) != 0 {
		t.Fatalf("empty Apply = %v %v %v", iv, gv, err)
	}
}

func TestMemoryExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	m := NewMemory(clock.Now, nil)
	ctx := context.Background()
	incr := func(key string, ttl time.Duration) int64 {
		v, _, _ := m.Apply(ctx, []Incr{{Key: key, Delta: 1, TTL: ttl}}, nil)
		return v[0]
	}
	get := func(key string) int64 {
		_, v, _ := m.Apply(ctx, nil, []string{key})
		return v[0]
	}
	incr("a", time.Minute)
	clock.Add(30 * time.Second)
	if v := incr("a", time.Minute); v != 2 {
		t.Fatalf("a = %d, want 2", v)
	}
	// Each increment restarts the TTL: 59s after the last one, still there.
	clock.Add(59 * time.Second)
	if v := get("a"); v != 2 {
		t.Fatalf("a = %d before its TTL ran out, want 2", v)
	}
	clock.Add(time.Second)
	if v := get("a"); v != 0 {
		t.Fatalf("an expired key reads %d, want 0", v)
	}
	if v := incr("a", time.Minute); v != 1 {
		t.Fatalf("an expired key kept its value: %d", v)
	}
}

func TestMemoryRetention(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	var asked []time.Duration
	retention := func(ttl time.Duration) time.Duration {
		asked = append(asked, ttl)
		if ttl > time.Hour {
			return time.Hour
		}
		return ttl
	}
	m := NewMemory(clock.Now, retention)
	ctx := context.Background()
	if _, _, err := m.Apply(ctx, []Incr{{Key: "long", Delta: 1, TTL: 30 * 24 * time.Hour}, {Key: "short", Delta: 1, TTL: time.Minute}}, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asked, []time.Duration{30 * 24 * time.Hour, time.Minute}) {
		t.Fatalf("retention asked for %v", asked)
	}
	clock.Add(time.Hour - time.Nanosecond)
	if _, v, _ := m.Apply(ctx, nil, []string{"long", "short"}); !reflect.DeepEqual(v, []int64{1, 0}) {
		t.Fatalf("before the retention cap: %v, want [1 0]", v)
	}
	clock.Add(time.Nanosecond)
	if _, v, _ := m.Apply(ctx, nil, []string{"long"}); v[0] != 0 {
		t.Fatal("a key outlived the retention the store was given")
	}
}

func TestMemorySweepDropsExpiredKeys(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	m := NewMemory(clock.Now, nil)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		_, _, _ = m.Apply(ctx, []Incr{{Key: "old" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Delta: 1, TTL: time.Second}}, nil)
	}
	_, _, _ = m.Apply(ctx, []Incr{{Key: "live", Delta: 1, TTL: time.Hour}}, nil)
	if n := m.size(); n != 101 {
		t.Fatalf("%d keys, want 101", n)
	}
	clock.Add(time.Second)
	for m.ops%memorySweepEvery != 0 {
		_, _, _ = m.Apply(ctx, nil, nil)
	}
	if n := m.size(); n != 1 {
		t.Fatalf("%d keys after a sweep, want only the live one", n)
	}
}

// size reports the number of keys held, expired or not (tests).
func (m *Memory) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

func TestMemorySetIncr(t *testing.T) {
	m := NewMemory(nil, nil)
	ctx := context.Background()
	iv, _, _ := m.Apply(ctx, []Incr{{Key: "seen", Delta: 100, TTL: time.Hour, Set: true}, {Key: "n", Delta: 2, TTL: time.Hour}}, nil)
	if iv[0] != 0 || iv[1] != 2 {
		t.Fatalf("apply = %v, want [0 2] (a Set reads 0)", iv)
	}
	if _, _, err := m.Apply(ctx, []Incr{{Key: "seen", Delta: 90, TTL: time.Hour, Set: true}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, gv, _ := m.Apply(ctx, nil, []string{"seen"}); gv[0] != 90 {
		t.Fatalf("seen = %d, want 90 (the last write wins)", gv[0])
	}
}
