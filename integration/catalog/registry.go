package catalog

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RegistryHost is the plugin registry Traefik's downloader calls
// (https://plugins.traefik.io/public/, hard-coded in Traefik).
const RegistryHost = "plugins.traefik.io"

// Registry stands in for the Plugin Catalog's registry on loopback, so
// that a real Traefik installs the plugin through its own remote-plugin
// path (experimental.plugins): Traefik's HTTP client honours HTTPS_PROXY
// and SSL_CERT_FILE, so Env points it at a CONNECT proxy that tunnels
// RegistryHost:443 — and nothing else — to a TLS server holding a
// certificate for RegistryHost from a throwaway CA. The server answers
// download/<module>/<version> with the archive and validate/... by the
// archive's hash, like the registry. No connection leaves loopback: the
// proxy refuses every other host and never resolves a name.
type Registry struct {
	// Version is the plugin version served.
	Version string

	archive []byte
	hash    string
	tlsSrv  *httptest.Server
	proxy   *httptest.Server
	caFile  string

	downloads atomic.Int64
	validated atomic.Int64
	mu        sync.Mutex
	refused   []string
}

// StartRegistry serves archive as Module@version. dir holds the CA file.
func StartRegistry(dir, version string, archive []byte) (*Registry, error) {
	r := &Registry{Version: version, archive: archive, hash: Hash(archive)}
	caPEM, leaf, err := issueCert(RegistryHost)
	if err != nil {
		return nil, err
	}
	r.caFile = filepath.Join(dir, "registry-ca.pem")
	if err := os.WriteFile(r.caFile, caPEM, 0o644); err != nil {
		return nil, err
	}
	r.tlsSrv = httptest.NewUnstartedServer(http.HandlerFunc(r.serveRegistry))
	r.tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
	r.tlsSrv.StartTLS()
	r.proxy = httptest.NewServer(http.HandlerFunc(r.serveConnect))
	return r, nil
}

// Env is what Traefik's environment needs to reach the registry.
func (r *Registry) Env() []string {
	return []string{"HTTPS_PROXY=" + r.proxy.URL, "https_proxy=" + r.proxy.URL, "NO_PROXY=", "no_proxy=", "SSL_CERT_FILE=" + r.caFile}
}

// Downloads is how many times the archive was served.
func (r *Registry) Downloads() int64 { return r.downloads.Load() }

// Validations is how many hash validations succeeded.
func (r *Registry) Validations() int64 { return r.validated.Load() }

// Refused lists the CONNECT targets the proxy refused.
func (r *Registry) Refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refused...)
}

// Close stops both servers.
func (r *Registry) Close() {
	r.proxy.Close()
	r.tlsSrv.Close()
}

func (r *Registry) serveRegistry(w http.ResponseWriter, req *http.Request) {
	want := "/" + Module + "/" + r.Version
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/public/download"+want:
		if req.Header.Get("X-Plugin-Hash") == r.hash {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		r.downloads.Add(1)
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(r.archive)
	case req.Method == http.MethodGet && req.URL.Path == "/public/validate"+want:
		if req.Header.Get("X-Plugin-Hash") != r.hash {
			http.Error(w, "hash mismatch", http.StatusForbidden)
			return
		}
		r.validated.Add(1)
		w.WriteHeader(http.StatusOK)
	default:
		http.Error(w, "unknown plugin or version", http.StatusNotFound)
	}
}

// serveConnect tunnels CONNECT RegistryHost:443 to the TLS server.
func (r *Registry) serveConnect(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodConnect || req.Host != RegistryHost+":443" {
		r.mu.Lock()
		r.refused = append(r.refused, req.Method+" "+req.Host)
		r.mu.Unlock()
		http.Error(w, "only the plugin registry is reachable", http.StatusForbidden)
		return
	}
	upstream, err := net.DialTimeout("tcp", strings.TrimPrefix(r.tlsSrv.URL, "https://"), 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	_, _ = client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	done := make(chan struct{}, 2)
	go func() {
		if buf.Reader.Buffered() > 0 {
			_, _ = io.CopyN(upstream, buf, int64(buf.Reader.Buffered()))
		}
		_, _ = io.Copy(upstream, client)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
	client.Close()
	upstream.Close()
	<-done
}

// issueCert makes a CA and a leaf certificate for host signed by it; it
// returns the CA's PEM and the leaf as a tls.Certificate.
func issueCert(host string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "llmgateway test registry CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}, nil
}
