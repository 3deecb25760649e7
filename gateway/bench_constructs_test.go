package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkConstruct prices single Go constructs, compiled and (under
// `make bench-yaegi`) interpreted, so docs/yaegi-performance.md's rules
// of thumb can be re-measured: the interpreted cost of a loop turn, a
// function or method call, an allocation, a map lookup, a call into the
// standard library and a call from it back into interpreted code.
func BenchmarkConstruct(b *testing.B) {
	body := benchChatBody
	needle := []byte(`"temperature"`)
	t := &constructT{a: 1}
	var iface constructI = t
	k := 3
	closure := func(x int) int { return x + k }
	sink := 0
	b.Run("loop", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink += i
		}
	})
	b.Run("func-call", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = constructF(t, i)
		}
	})
	b.Run("func-call-20-unused-locals", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = constructBig(t, i)
		}
	})
	b.Run("method-call", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = t.m(i)
		}
	})
	b.Run("interface-call", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = iface.m(i)
		}
	})
	b.Run("func-value-call", func(b *testing.B) {
		f := constructF
		for i := 0; i < b.N; i++ {
			sink = f(t, i)
		}
	})
	b.Run("func-field-call", func(b *testing.B) {
		h := &constructHolder{f: constructF}
		for i := 0; i < b.N; i++ {
			sink = h.f(t, i)
		}
	})
	b.Run("func-table-call", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = constructTable[0](t, i)
		}
	})
	b.Run("closure-call", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = closure(i)
		}
	})
	b.Run("struct-alloc", func(b *testing.B) {
		b.ReportAllocs()
		var p *constructT
		for i := 0; i < b.N; i++ {
			p = &constructT{a: i, s: "x"}
		}
		_ = p
	})
	b.Run("concat-3", func(b *testing.B) {
		x, y := "hello", "world"
		var s string
		for i := 0; i < b.N; i++ {
			s = x + ":" + y
		}
		_ = s
	})
	b.Run("sprintf", func(b *testing.B) {
		var s string
		for i := 0; i < b.N; i++ {
			s = fmt.Sprintf("auth ok user=%q method=%s", "bench", "POST")
		}
		_ = s
	})
	b.Run("concat-quote", func(b *testing.B) {
		var s string
		for i := 0; i < b.N; i++ {
			s = "auth ok user=" + strconv.Quote("bench") + " method=" + "POST"
		}
		_ = s
	})
	b.Run("map-lookup", func(b *testing.B) {
		m := map[string]int{"a": 1, "bench-model": 2}
		for i := 0; i < b.N; i++ {
			sink = m["bench-model"]
		}
	})
	b.Run("syncmap-load", func(b *testing.B) {
		var m sync.Map
		m.Store("bench-model", t)
		for i := 0; i < b.N; i++ {
			v, _ := m.Load("bench-model")
			sink = v.(*constructT).a
		}
	})
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		for i := 0; i < b.N; i++ {
			mu.Lock()
			sink = i
			mu.Unlock()
		}
	})
	b.Run("defer", func(b *testing.B) {
		var mu sync.Mutex
		for i := 0; i < b.N; i++ {
			constructDefer(&mu)
		}
	})
	b.Run("time-now", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = time.Now()
		}
	})
	b.Run("append-12-structs", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var xs []constructT
			for j := 0; j < 12; j++ {
				xs = append(xs, constructT{a: j})
			}
			sink = len(xs)
		}
	})
	b.Run("bytes-index-1KB", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = bytes.Index(body, needle)
		}
	})
	b.Run("bytes-index-1KB-literal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink = bytes.Index(body, []byte(`"temperature"`))
		}
	})
	b.Run("json-valid-1KB", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = json.Valid(body)
		}
	})
	b.Run("json-unmarshal-struct-1KB", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var s struct {
				Model  string          `json:"model"`
				Stream json.RawMessage `json:"stream"`
			}
			_ = json.Unmarshal(body, &s)
		}
	})
	b.Run("json-unmarshal-rawmap-1KB", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(body, &m)
		}
	})
	b.Run("read-direct", func(b *testing.B) {
		buf := make([]byte, len(body))
		for i := 0; i < b.N; i++ {
			_, _ = io.ReadFull(bytes.NewReader(body), buf)
		}
	})
	b.Run("read-via-interpreted-reader", func(b *testing.B) {
		buf := make([]byte, len(body))
		for i := 0; i < b.N; i++ {
			_, _ = io.ReadFull(&constructReader{r: bytes.NewReader(body)}, buf)
		}
	})
	b.Run("goroutine", func(b *testing.B) {
		var wg sync.WaitGroup
		for i := 0; i < b.N; i++ {
			wg.Add(1)
			go constructDone(&wg)
		}
		wg.Wait()
	})
	_ = sink
}

type constructT struct {
	a int
	s string
}

type constructI interface{ m(int) int }

// constructHolder holds a func in a field, as wireFormat and the backend
// capability tables do.
type constructHolder struct {
	f func(*constructT, int) int
}

var constructTable = [1]func(*constructT, int) int{constructF}

func (t *constructT) m(x int) int { return t.a + x }

func constructF(t *constructT, x int) int { return t.a + x }

// constructBig returns as early as constructF does, past 20 locals it
// never reaches: an interpreted call sets up every local of the callee.
func constructBig(t *constructT, x int) int {
	if x >= 0 {
		return t.a + x
	}
	v0, v1, v2, v3, v4 := x+0, x+1, x+2, x+3, x+4
	v5, v6, v7, v8, v9 := v0*2, v1*2, v2*2, v3*2, v4*2
	w0, w1, w2, w3, w4 := v5+v0, v6+v1, v7+v2, v8+v3, v9+v4
	u0, u1, u2, u3, u4 := w0-1, w1-1, w2-1, w3-1, w4-1
	return u0 + u1 + u2 + u3 + u4
}

func constructDefer(mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
}

func constructDone(wg *sync.WaitGroup) {
	defer func() { _ = recover() }()
	wg.Done()
}

// constructReader is our own io.Reader: the standard library calling it
// is a call from compiled code back into the interpreter.
type constructReader struct{ r io.Reader }

func (c *constructReader) Read(p []byte) (int, error) { return c.r.Read(p) }
