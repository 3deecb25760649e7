package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// target is one endpoint under load.
type target struct {
	name string
	url  string
	pid  int // 0 when not a separate process of interest
	// model, when set, replaces the scenario's model in the request body
	// (the gateway's anthropic-type provider serves another model id).
	model string
	// streamOnly: the target runs the streaming scenario only.
	streamOnly bool
	// anthropic: the target is asked the scenario as an Anthropic
	// Messages request (the bare proxy relaying the mock's Anthropic
	// stream: the floor of a translated stream's upstream side).
	anthropic bool
	// debugAddr is the process's pprof listener ("" : none).
	debugAddr string
}

// runResult is one (scenario, concurrency, target) run.
type runResult struct {
	scenario    string
	concurrency int
	target      string
	round       int
	ok          int
	errors      int
	firstError  string
	elapsed     time.Duration
	latencies   []time.Duration
	ttfbs       []time.Duration
	// cpu is the CPU time the target's process, the mock's and this
	// client used during the measured run (zero when not read).
	cpu, mockCPU, clientCPU time.Duration
}

// cpuPerRequest is d per request served, in µs.
func (r *runResult) cpuPerRequest(d time.Duration) float64 {
	if r.ok == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(r.ok)
}

func (r *runResult) rps() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// scenario is one request shape.
type scenario struct {
	name   string
	body   []byte
	stream bool
	// wantSuffix must end every successful response body.
	wantSuffix []byte
	// path is the request path; anthropic sends the Messages headers.
	path      string
	anthropic bool
}

// chatBody is a ~1 KB chat request for model.
func chatBody(stream bool, model string) []byte {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 34)
	s := `{"model":"` + model + `",`
	if stream {
		s += `"stream":true,`
	}
	s += `"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"` + filler + `"}],"temperature":0.2}`
	return []byte(s)
}

func nonStreaming() scenario {
	return scenario{name: "chat", body: chatBody(false, benchModel), wantSuffix: []byte(`}}`), path: "/v1/chat/completions"}
}

func streaming() scenario {
	return scenario{name: "chat-stream", body: chatBody(true, benchModel), stream: true, wantSuffix: []byte("data: [DONE]\n\n"), path: "/v1/chat/completions"}
}

// messagesBody is chatBody as an Anthropic Messages request (what the
// gateway's translation of it carries).
func messagesBody(stream bool, model string) []byte {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 34)
	s := `{"model":"` + model + `","max_tokens":4096,"system":"Be terse.",`
	if stream {
		s += `"stream":true,`
	}
	s += `"messages":[{"role":"user","content":[{"type":"text","text":"` + filler + `"}]}],"temperature":0.2}`
	return []byte(s)
}

// load drives tg with conc workers for d (or maxRequests requests).
func load(ctx context.Context, client *http.Client, tg target, sc scenario, conc int, d time.Duration, maxRequests int) *runResult {
	res := &runResult{scenario: sc.name, concurrency: conc, target: tg.name}
	if tg.model != "" {
		sc.body = chatBody(sc.stream, tg.model)
	}
	if tg.anthropic {
		model := tg.model
		if model == "" {
			model = anthropicModel
		}
		sc.body, sc.path, sc.anthropic = messagesBody(sc.stream, model), "/v1/messages", true
		sc.wantSuffix = []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		remaining = maxRequests
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if remaining <= 0 {
			return false
		}
		remaining--
		return true
	}
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			var lat, ttfb []time.Duration
			errs, ok := 0, 0
			firstErr := ""
			for runCtx.Err() == nil && take() {
				l, f, err := oneRequest(client, tg.url, sc, buf)
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				ok++
				lat = append(lat, l)
				if sc.stream {
					ttfb = append(ttfb, f)
				}
			}
			mu.Lock()
			res.ok += ok
			res.errors += errs
			if res.firstError == "" {
				res.firstError = firstErr
			}
			res.latencies = append(res.latencies, lat...)
			res.ttfbs = append(res.ttfbs, ttfb...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	sortDurations(res.latencies)
	sortDurations(res.ttfbs)
	return res
}

// oneRequest sends one chat request and reads the whole response. It
// returns the total latency and the time to the first body byte. Requests
// are not bound to the run's context, so a run's end never cuts one short.
func oneRequest(client *http.Client, base string, sc scenario, buf []byte) (time.Duration, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, base+sc.path, bytes.NewReader(sc.body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+userKey)
	if sc.anthropic {
		req.Header.Set("X-Api-Key", upstreamKey)
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var first time.Duration
	var tail []byte
	total := 0
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if total == 0 {
				first = time.Since(start)
			}
			total += n
			tail = append(tail, buf[:n]...)
			if len(tail) > 64 {
				tail = tail[len(tail)-64:]
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, fmt.Errorf("reading body after %d bytes: %v", total, rerr)
		}
	}
	latency := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %d: %q", resp.StatusCode, tail)
	}
	if !bytes.HasSuffix(tail, sc.wantSuffix) {
		return 0, 0, fmt.Errorf("truncated or unexpected body (%d bytes), ends %q", total, tail)
	}
	return latency, first, nil
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1)+0.5)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
