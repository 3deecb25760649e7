package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLinearFit(t *testing.T) {
	f := linearFit([]float64{1000, 2500, 5000, 10000}, []float64{11 + 48, 11 + 120, 11 + 240, 11 + 480})
	if math.Abs(f.slope-0.048) > 1e-9 || math.Abs(f.intercept-11) > 1e-6 || math.Abs(f.r2-1) > 1e-9 {
		t.Fatalf("fit %+v, want slope 0.048, intercept 11, R² 1", f)
	}
	if f := linearFit([]float64{1, 2, 3, 4}, []float64{1, 4, 1, 4}); f.r2 > 0.5 {
		t.Fatalf("R² %v for a zigzag", f.r2)
	}
}

// waitFor polls cond until it holds or 10 s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The client opens streams (from several source addresses) that the drip
// upstream holds open, each getting the role chunk and then a chunk per
// drip, until the client closes them.
func TestDripUpstreamHoldsStreams(t *testing.T) {
	up := &dripUpstream{drip: 20 * time.Millisecond}
	srv := httptest.NewServer(up)
	defer srv.Close()
	c := newStreamClient(strings.TrimPrefix(srv.URL, "http://"), "sk-test", "m", 64, 3)
	if err := c.openMore(context.Background(), 6, 2); err != nil {
		t.Fatal(err)
	}
	if c.open() != 6 || up.active.Load() != 6 {
		t.Fatalf("open %d, upstream holds %d; want 6, 6", c.open(), up.active.Load())
	}
	waitFor(t, "three events per stream", func() bool { return c.events.Load() >= 18 })

	resp, err := http.Get(srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var stats map[string]int64
	err = json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	if err != nil || stats["active"] != 6 || stats["opened"] != 6 {
		t.Fatalf("stats %v (%v)", stats, err)
	}
	c.closeAll()
	waitFor(t, "the upstream to let go", func() bool { return up.active.Load() == 0 })
	if c.failed.Load() != 0 || c.firstError() != "" {
		t.Fatalf("%d streams failed: %s", c.failed.Load(), c.firstError())
	}
}

// A refused stream is an error naming the status and the body.
func TestOpenFailsOnRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"nope"}`, http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := newStreamClient(strings.TrimPrefix(srv.URL, "http://"), "sk-test", "m", 0, 1)
	err := c.openMore(context.Background(), 3, 1)
	if err == nil || !strings.Contains(err.Error(), "status 429") || !strings.Contains(err.Error(), "nope") || c.open() != 0 {
		t.Fatalf("err %v, %d open", err, c.open())
	}
}
