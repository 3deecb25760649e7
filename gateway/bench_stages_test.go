package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// BenchmarkStages splits one non-streaming 1 KB chat request into the
// pipeline's stages, each measured alone against the same gateway as
// BenchmarkChatNonStreaming, so `make bench-yaegi` shows where the
// interpreted time goes (a CPU profile of Traefik shows only the
// interpreter's own frames). "upstream" is the HTTP exchange with the
// loopback upstream (attempt), "respond" writes the read answer to a
// recorder, "record" is the end-of-request record and log work, and
// "trace-*" the request's ids (startTrace).
func BenchmarkStages(b *testing.B) {
	upstream := newBenchUpstream(b)
	g := newBenchGateway(b, upstream.URL)
	rt := routesByPath["/v1/chat/completions"]
	newReq := func() *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(benchChatBody))
		req.Header.Set("Authorization", "Bearer "+benchUserKey)
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	// A call that went through the stages once, for the later stages.
	first := newReq()
	c := newCall(g, httptest.NewRecorder(), first, rt, startTrace(httptest.NewRecorder(), first))
	if !identify(c) || !admitBody(c) || !resolve(c) {
		b.Fatalf("setting up the call failed: %d %s", c.rec.statusCode, c.rec.errorCode)
	}
	prepare := backendFor(c.target.candidates[0].provider.kind).ops[rt.op]
	o, e := prepare(c, c.target.candidates[0])
	if e != nil {
		b.Fatal(e.Error())
	}
	x, e := attempt(g, c.r, o, o.provider.timeout, c.trace, 1)
	if e != nil {
		b.Fatal(e.Error())
	}
	exchangeDone(x)
	data := x.data
	resp := x.resp

	// The fixed cost around the stages: a 404 (table lookup, the model
	// listing and passthrough checks, the error write) and a 401 (the
	// call's creation, identify failing, reject, the record). The
	// failed-authentication throttle counts the 401s too; its clock moves
	// two minutes every 30 of them, so the address is never throttled
	// (a 429 would measure the wrong path) and later stages still
	// authenticate from it.
	var failures int64
	base := time.Now()
	g.throttle = newAuthThrottle(func() time.Time {
		failures++
		return base.Add(time.Duration(failures/30) * 2 * time.Minute)
	})
	for _, tc := range []struct {
		name, path, key string
		status          int
	}{{"serve-404", "/nope", benchUserKey, http.StatusNotFound}, {"serve-401", "/v1/chat/completions", "sk-wrong", http.StatusUnauthorized}} {
		tc := tc
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(benchChatBody))
				req.Header.Set("Authorization", "Bearer "+tc.key)
				rec := httptest.NewRecorder()
				g.ServeHTTP(rec, req)
				if rec.Code != tc.status {
					b.Fatalf("status %d, want %d", rec.Code, tc.status)
				}
			}
		})
	}
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = newReq()
		}
	})
	// The request's ids: read, validated (or generated) and set on the
	// response, for a client that sends none and for one that sends an
	// X-Request-ID, a traceparent and a tracestate.
	for _, tc := range []struct {
		name    string
		headers map[string]string
	}{{"trace-new", nil}, {"trace-client", map[string]string{"X-Request-Id": "req-0123456789abcdef0123456789abcdef",
		"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Tracestate": "congo=t61rcWkgMzE"}}} {
		tc := tc
		b.Run(tc.name, func(b *testing.B) {
			r := newReq()
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if t := startTrace(w, r); t.requestID == "" {
					b.Fatal("no request id")
				}
			}
		})
	}
	b.Run("identify", func(b *testing.B) {
		r := newReq()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, e := authenticate(g, r, c.trace); e != nil {
				b.Fatal(e.Error())
			}
		}
	})
	b.Run("admitBody", func(b *testing.B) {
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r := newReq()
			if _, e := readAdmitted(g, w, r, rt); e != nil {
				b.Fatal(e.Error())
			}
		}
	})
	b.Run("resolve", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, e := resolveModel(g, c.user, c.req.model); e != nil {
				b.Fatal(e.Error())
			}
		}
	})
	b.Run("limit", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			tokens, cost := reservationFor(c)
			if e := admit(c, c.target.provider.name, c.target.model, tokens, cost); e != nil {
				b.Fatal(e.Error())
			}
			if c.resv != nil {
				c.resv.settle(translate.Usage{}, 0)
				c.resv = nil
			}
		}
	})
	b.Run("prepare", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, e := prepare(c, c.target.candidates[0]); e != nil {
				b.Fatal(e.Error())
			}
		}
	})
	b.Run("upstream", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			x, e := attempt(g, c.r, o, o.provider.timeout, c.trace, 1)
			if e != nil {
				b.Fatal(e.Error())
			}
			exchangeDone(x)
		}
	})
	b.Run("respond", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c.w = httptest.NewRecorder()
			c.rec = requestRecord{}
			out := respondWhole(c, &exchange{resp: resp, body: bytes.NewReader(data), data: data}, o, data)
			if out.status != http.StatusOK || !out.usage.Reported {
				b.Fatalf("respond: %d %+v", out.status, out.usage)
			}
		}
	})
	b.Run("account", func(b *testing.B) {
		u := translate.Usage{PromptTokens: 180, CompletionTokens: 6, Reported: true}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			accountUsage(g, c.user, u, costOf(g, c.target.provider.name, c.target.model, u), nil, c.trace.logTail)
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			cc := newCall(g, nil, c.r, rt, c.trace)
			finish(cc)
		}
	})
}
