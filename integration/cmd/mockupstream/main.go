// Command mockupstream serves the deterministic mock upstream (package
// mockupstream) on a loopback address until interrupted: the OpenAI routes
// (the Responses API's POST /v1/responses among them), the Anthropic
// Messages API (/v1/messages; GET /v1/models answers in the
// Anthropic shape when the request carries anthropic-version) and the
// Gemini v1beta API (/v1beta/models/...), all on the same address. -models
// sets the OpenAI list; the Anthropic and Gemini lists are the package
// defaults (mockupstream.DefaultAnthropicModels, DefaultGeminiModels).
//
//	mockupstream -listen 127.0.0.1:9099 -chunks 5 -chunk-delay 20ms -models gpt-5-mini,text-embedding-3-small
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9099", "address to listen on")
	delay := flag.Duration("chunk-delay", 0, "delay between SSE events")
	chunks := flag.Int("chunks", 5, "number of content chunks in a reply")
	models := flag.String("models", strings.Join(mockupstream.DefaultModels, ","), "comma-separated model ids for GET /v1/models")
	record := flag.Int("record", 16, "requests kept in memory (negative disables)")
	flag.Parse()

	var ids []string
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			ids = append(ids, m)
		}
	}
	if *chunks < 0 {
		log.Fatal("mockupstream: -chunks must be >= 0")
	}
	if *chunks == 0 {
		// Options treats 0 as "default"; use the header for zero chunks.
		log.Fatal("mockupstream: -chunks 0 is not supported; send X-Mock-Chunks: 0 per request")
	}
	h := mockupstream.New(mockupstream.Options{Models: ids, Chunks: *chunks, ChunkDelay: *delay, RecordLimit: *record})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("mockupstream: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// The line below is what scripts wait for.
	fmt.Fprintf(os.Stderr, "mockupstream listening on http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("mockupstream: %v", err)
		}
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
}
