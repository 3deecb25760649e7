package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log"
	"math/big"
	mathrand "math/rand"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// dripUpstream is a minimal OpenAI-compatible chat completions server
// whose streams never end on their own: the first chunk (the assistant
// role) goes out at once, then one content chunk every drip, until the
// client goes away. Each stream's first content chunk comes after a
// random part of drip, so the chunks of thousands of streams are spread
// evenly instead of arriving together.
type dripUpstream struct {
	drip   time.Duration
	active atomic.Int64
	opened atomic.Int64
}

func (u *dripUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/readyz":
		w.WriteHeader(http.StatusOK)
		return
	case "/stats":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"active": u.active.Load(), "opened": u.opened.Load()})
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, `{"error":{"message":"streamed chat completions only","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	u.active.Add(1)
	u.opened.Add(1)
	defer u.active.Add(-1)
	model, _ := json.Marshal(req.Model)
	prefix := `data: {"id":"chatcmpl-drip","object":"chat.completion.chunk","created":` + strconv.FormatInt(time.Now().Unix(), 10) +
		`,"model":` + string(model) + `,"choices":[{"index":0,"delta":`
	first := []byte(prefix + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	tick := []byte(prefix + `{"content":"tick "},"finish_reason":null}]}` + "\n\n")

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	if _, err := w.Write(first); err != nil {
		return
	}
	flusher.Flush()
	timer := time.NewTimer(time.Duration(mathrand.Int63n(int64(u.drip))))
	defer timer.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-timer.C:
		}
		if _, err := w.Write(tick); err != nil {
			return
		}
		flusher.Flush()
		timer.Reset(u.drip)
	}
}

// serveUpstream runs the drip upstream as a child process: plain HTTP/1.1
// on addr (also the readiness probe), and, with tlsAddr, HTTP/2 over TLS
// (what the big hosted providers negotiate) with the given key pair.
func serveUpstream(addr, tlsAddr, certFile, keyFile string, drip time.Duration) {
	u := &dripUpstream{drip: drip}
	plain := &http.Server{Handler: u, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 2)
	ln := mustListen(addr)
	go func() { errs <- plain.Serve(ln) }()
	servers := []*http.Server{plain}
	if tlsAddr != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			log.Fatalf("streambench upstream: %v", err)
		}
		// ServeTLS offers h2 by ALPN next to http/1.1.
		secure := &http.Server{Handler: u, ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
		tln := mustListen(tlsAddr)
		go func() { errs <- secure.ServeTLS(tln, "", "") }()
		servers = append(servers, secure)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case err := <-errs:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("streambench upstream: %v", err)
		}
	}
	for _, srv := range servers {
		srv.Close()
	}
}

func mustListen(addr string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("streambench: listen %s: %v", addr, err)
	}
	return ln
}

// writeTestCert writes a self-signed ECDSA certificate for 127.0.0.1 and
// its key into dir. The gateway trusts it through SSL_CERT_FILE, which
// Go's crypto/x509 reads in place of the system roots.
func writeTestCert(dir string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "streambench upstream"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile := filepath.Join(dir, "upstream-cert.pem")
	keyFile := filepath.Join(dir, "upstream-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}
