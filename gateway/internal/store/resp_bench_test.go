package store

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

// Store-level costs of the RESP client without network noise: encoding
// an accounting-sized batch, parsing its replies, and one whole Apply
// over an in-memory connection that answers with canned replies.

// benchIncrs is n increments with limiter-sized keys, cycling through
// four windows' TTLs as a limiter batch does.
func benchIncrs(n int) []Incr {
	ttls := []time.Duration{2 * time.Minute, 2 * time.Hour, 48 * time.Hour, 62 * 24 * time.Hour}
	incrs := make([]Incr, n)
	for i := 0; i < n; i++ {
		incrs[i] = Incr{Key: "llmgw:c:user:bench-user:tokens:day:" + strconv.Itoa(20261201+i), Delta: int64(180 + i*1000), TTL: ttls[i%len(ttls)]}
	}
	return incrs
}

// benchIntReplies is the wire form of n INCRBY+EXPIRE reply pairs.
func benchIntReplies(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(1000000+i*7919), 10)
		b = append(b, "\r\n:1\r\n"...)
	}
	return b
}

// respBenchConn is a net.Conn that swallows writes and answers every
// exchange with the same canned replies.
type respBenchConn struct {
	reply []byte
	r     *bytes.Reader
}

func (c *respBenchConn) Read(p []byte) (int, error) {
	if c.r.Len() == 0 {
		c.r.Reset(c.reply)
	}
	return c.r.Read(p)
}
func (c *respBenchConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *respBenchConn) Close() error                       { return nil }
func (c *respBenchConn) LocalAddr() net.Addr                { return nil }
func (c *respBenchConn) RemoteAddr() net.Addr               { return nil }
func (c *respBenchConn) SetDeadline(t time.Time) error      { return nil }
func (c *respBenchConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *respBenchConn) SetWriteDeadline(t time.Time) error { return nil }

// benchRedisStore is a Redis store whose only pooled connection is a
// respBenchConn answering with reply.
func benchRedisStore(reply []byte) *Redis {
	c := newRESPClient(respConfig{address: "bench:6379", poolSize: 1})
	nc := &respBenchConn{reply: reply, r: bytes.NewReader(nil)}
	c.slots <- struct{}{}
	c.idle <- &respConn{nc: nc, br: bufio.NewReaderSize(nc, respBufSize)}
	return &Redis{c: c}
}

// BenchmarkRESPApply is one accounting-sized Apply (27 incrs, no gets)
// and one check-sized Apply (12 incrs, 4 gets) over an in-memory
// connection.
func BenchmarkRESPApply(b *testing.B) {
	b.Run("account27", func(b *testing.B) {
		incrs := benchIncrs(27)
		s := benchRedisStore(benchIntReplies(27))
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, _, err := s.Apply(ctx, incrs, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one", func(b *testing.B) {
		incrs := benchIncrs(1)
		s := benchRedisStore(benchIntReplies(1))
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, _, err := s.Apply(ctx, incrs, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check12+4", func(b *testing.B) {
		incrs := benchIncrs(12)
		gets := []string{"llmgw:c:user:bench-user:tokens:day:x", "llmgw:c:user:bench-user:cost:day:x", "llmgw:c:group:bench-group:tokens:month:x", "llmgw:c:group:bench-group:cost:month:x"}
		reply := append(benchIntReplies(12), "*4\r\n$7\r\n1234567\r\n$-1\r\n$2\r\n42\r\n$10\r\n1234567890\r\n"...)
		s := benchRedisStore(reply)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, _, err := s.Apply(ctx, incrs, gets); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRESPWire is the encoding of a 27-incr batch and the parsing of
// its 54 integer replies, in memory.
func BenchmarkRESPWire(b *testing.B) {
	b.Run("encode27", func(b *testing.B) {
		incrs := benchIncrs(27)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if req := appendApply(nil, incrs, nil); len(req) == 0 {
				b.Fatal("empty request")
			}
		}
	})
	b.Run("parse54", func(b *testing.B) {
		data := benchIntReplies(27)
		rd := bytes.NewReader(data)
		br := bufio.NewReaderSize(rd, respBufSize)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rd.Reset(data)
			br.Reset(rd)
			if err := readRESPBatch(br, &respBatch{incrVals: make([]int64, 27)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
