package faultupstream

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

func post(ctx context.Context, t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// TestResetAfterEvents: the client reads exactly the events before the
// reset (held until it has them), then a read error, not a clean end.
func TestResetAfterEvents(t *testing.T) {
	s := New(t, mockupstream.Options{Chunks: 5})
	hold := make(chan struct{})
	s.Set(Fault{Kind: Reset, After: 2, Hold: hold})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := post(ctx, t, s.URL, streamBody)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for events := 0; events < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d events: %v", events, err)
		}
		if line == "\n" {
			events++
		}
	}
	close(hold)
	r := s.Next(t, time.Second)
	Await(t, r.Struck(), 5*time.Second, "struck")
	if rest, err := io.ReadAll(br); err == nil || len(rest) != 0 {
		t.Fatalf("after the reset: %q, %v (want nothing, and an error)", rest, err)
	}
	if r.Events.Load() != 2 {
		t.Fatalf("the upstream counted %d events", r.Events.Load())
	}
}

// TestStallUntilGone: a stalled answer sends its first bytes (the
// declared length kept), then nothing until the client goes away.
func TestStallUntilGone(t *testing.T) {
	s := New(t, mockupstream.Options{})
	s.Set(Fault{Kind: Stall, After: 10})
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(ctx, t, s.URL, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	if resp.ContentLength <= 10 {
		t.Fatalf("Content-Length %d: the declared length is kept", resp.ContentLength)
	}
	head := make([]byte, 10)
	if _, err := io.ReadFull(bufio.NewReader(resp.Body), head); err != nil {
		t.Fatal(err)
	}
	r := s.Next(t, time.Second)
	Await(t, r.Struck(), 5*time.Second, "struck")
	cancel()
	Await(t, r.Gone(), 5*time.Second, "gone after the client left")
}
