package integration_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/llmgateway/llmgateway/integration/cliproc"
	"github.com/llmgateway/llmgateway/integration/gwproc"
	"github.com/llmgateway/llmgateway/integration/imageproc"
	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// The container image (Containerfile, make image) built with podman or
// docker, read back without running a container — these machines' sandbox
// refuses to run one — and the binary it carries run from the extracted
// root filesystem against the quickstart config. Without podman or a
// working docker the tests skip, unless LLMGW_REQUIRE_IMAGE=1 (.ci/run,
// which installs podman) makes that a failure.

const (
	imageRequireEnv = "LLMGW_REQUIRE_IMAGE"
	// stampedTestVersion is the release version the image and release
	// tests stamp (the same one, so the second reuses the first's build).
	stampedTestVersion = "0.18.0-test.1"
	// imageRootFiles is every regular file the image's root filesystem
	// holds: no shell, no package manager, nothing else.
	imageRootFiles = "/etc/group /etc/passwd /etc/ssl/certs/ca-certificates.crt /llmgateway"
)

// requireImageTool returns podman's or docker's path, or skips t.
func requireImageTool(t *testing.T) string {
	t.Helper()
	return cliproc.Require(t, imageproc.Tool, imageRequireEnv, "a container tool (podman or docker)", "apt-get install -y podman")
}

// gitHead is the revision the image's label must carry.
func gitHead(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	require.NoError(t, err, "git rev-parse HEAD")
	return strings.TrimSpace(string(out))
}

// testImageName is a tag no one else uses: the test removes it at the end.
func testImageName(suffix string) string {
	return fmt.Sprintf("localhost/llmgateway-imagetest:%s-%d%s", stampedTestVersion, os.Getpid(), suffix)
}

func TestContainerImage(t *testing.T) {
	tool := requireImageTool(t)
	root := repoRoot(t)
	image := testImageName("")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		assert.NoError(t, imageproc.Remove(cctx, tool, image), "removing %s", image)
	})
	out, err := imageproc.Build{Root: root, Tool: tool, Image: image, Version: stampedTestVersion, Context: t.TempDir()}.Run(ctx)
	require.NoError(t, err)
	t.Logf("make image:\n%s", lastLines(out, 3))

	dir := t.TempDir()
	saved := filepath.Join(dir, "image.tar")
	require.NoError(t, imageproc.Save(ctx, tool, image, saved))
	logImageSize(t, saved)
	a, err := imageproc.ReadArchive(saved)
	require.NoError(t, err)

	t.Run("config", func(t *testing.T) {
		c := a.Config
		assert.Equal(t, "linux", c.OS)
		assert.Equal(t, runtime.GOARCH, c.Architecture)
		assert.Equal(t, []string{"/llmgateway"}, c.Config.Entrypoint)
		assert.Empty(t, c.Config.Cmd, "the binary's defaults apply: /etc/llmgateway/config.yaml, :8080")
		assert.Equal(t, "65532:65532", c.Config.User)
		assert.Equal(t, map[string]struct{}{"8080/tcp": {}}, c.Config.ExposedPorts)
		labels := c.Config.Labels
		assert.Equal(t, "llmgateway", labels["org.opencontainers.image.title"])
		assert.Equal(t, stampedTestVersion, labels["org.opencontainers.image.version"])
		assert.Equal(t, gitHead(t, root), labels["org.opencontainers.image.revision"])
		assert.Equal(t, "https://github.com/llmgateway/llmgateway", labels["org.opencontainers.image.source"])
		assert.NotEmpty(t, labels["org.opencontainers.image.licenses"])
		assert.NotEmpty(t, labels["org.opencontainers.image.description"])
	})

	t.Run("root filesystem", func(t *testing.T) {
		var regular []string
		for _, p := range a.Paths() {
			f := a.Files[p]
			switch f.Type {
			case tar.TypeReg:
				regular = append(regular, p)
			case tar.TypeDir:
			default:
				t.Errorf("%s: unexpected entry type %q (links, devices...)", p, f.Type)
			}
		}
		assert.Equal(t, strings.Fields(imageRootFiles), regular)
		for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/sh"} {
			assert.NotContains(t, a.Files, sh, "the image has no shell")
		}
		bin := a.Files["/llmgateway"]
		assert.Equal(t, int64(0o755), bin.Mode, "/llmgateway mode")
		assert.Equal(t, 0, bin.UID, "/llmgateway belongs to root, so the non-root user cannot replace it")
		assertStaticBinary(t, bin.Data, runtime.GOARCH, stampedTestVersion)

		assert.Contains(t, string(a.Files["/etc/passwd"].Data), "\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n")
		assert.Contains(t, string(a.Files["/etc/group"].Data), "\nnonroot:x:65532:\n")
		bundle := a.Files["/etc/ssl/certs/ca-certificates.crt"].Data
		host, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
		require.NoError(t, err)
		assert.Equal(t, host, bundle, "the image carries the build machine's CA bundle")
		assert.Greater(t, countCertificates(bundle), 50, "CA certificates in the bundle")
	})

	t.Run("extracted binary serves the quickstart", func(t *testing.T) {
		bin := filepath.Join(dir, "llmgateway")
		require.NoError(t, os.WriteFile(bin, a.Files["/llmgateway"].Data, 0o755))
		ca := filepath.Join(dir, "ca-certificates.crt")
		require.NoError(t, os.WriteFile(ca, a.Files["/etc/ssl/certs/ca-certificates.crt"].Data, 0o644))
		runQuickstart(t, bin, ca, stampedTestVersion)
	})
}

// TestContainerImageMultiarch builds the manifest list over linux/amd64
// and linux/arm64 (make image-multiarch, podman) and checks each entry:
// its config's platform and the architecture of the binary inside.
// It cross-compiles, so it runs under make integration (LLMGW_CROSS_BUILDS=1).
func TestContainerImageMultiarch(t *testing.T) {
	requireCrossBuilds(t)
	tool := requireImageTool(t)
	if filepath.Base(tool) != "podman" {
		t.Skip("the multi-arch check reads a podman manifest list; docker's buildx needs a registry to push to")
	}
	root := repoRoot(t)
	image := testImageName("-multi")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	var ids []string
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		assert.NoError(t, imageproc.RemoveManifest(cctx, tool, image), "removing the manifest list %s", image)
		assert.NoError(t, imageproc.Remove(cctx, tool, ids...), "removing the platform images")
	})
	_, err := imageproc.Build{Root: root, Tool: tool, Image: image, Version: stampedTestVersion,
		Context: t.TempDir(), Platforms: "linux/amd64,linux/arm64"}.Run(ctx)
	require.NoError(t, err)

	entries, err := imageproc.InspectManifest(ctx, tool, image)
	require.NoError(t, err)
	var platforms []string
	for _, e := range entries {
		platforms = append(platforms, e.Platform.OS+"/"+e.Platform.Architecture)
	}
	assert.ElementsMatch(t, []string{"linux/amd64", "linux/arm64"}, platforms)
	ref := strings.SplitN(image, ":", 2)[0]
	for _, e := range entries {
		ref := ref + "@" + e.Digest
		id, err := imageproc.ImageID(ctx, tool, ref)
		require.NoError(t, err)
		ids = append(ids, id)
		saved := filepath.Join(t.TempDir(), "image.tar")
		require.NoError(t, imageproc.Save(ctx, tool, ref, saved))
		a, err := imageproc.ReadArchive(saved)
		require.NoError(t, err)
		arch := e.Platform.Architecture
		assert.Equal(t, arch, a.Config.Architecture, "%s config", ref)
		assert.Equal(t, "65532:65532", a.Config.Config.User)
		assert.Equal(t, stampedTestVersion, a.Config.Config.Labels["org.opencontainers.image.version"])
		assertStaticBinary(t, a.Files["/llmgateway"].Data, arch, stampedTestVersion)
	}
}

// requireCrossBuilds skips tests that cross-compile for other platforms
// unless LLMGW_CROSS_BUILDS=1 (make integration sets it).
func requireCrossBuilds(t *testing.T) {
	t.Helper()
	if os.Getenv("LLMGW_CROSS_BUILDS") != "1" {
		t.Skip("cross-compiles for other platforms (minutes on a cold build cache): runs under make integration, or with LLMGW_CROSS_BUILDS=1")
	}
}

// assertStaticBinary checks an ELF binary for goarch: no program
// interpreter (static), built with CGO_ENABLED=0 and -trimpath, and the
// version stamped into gateway.Version (the build information omits
// -ldflags under -trimpath, so the stamped string itself is looked for;
// runQuickstart checks what the running binary reports).
func assertStaticBinary(t *testing.T, data []byte, goarch, version string) {
	t.Helper()
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	f, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err, "the binary is an ELF file")
	assert.Equal(t, machines[goarch], f.Machine, "ELF machine for %s", goarch)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no program interpreter")
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	require.NoError(t, err, "Go build information")
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	assert.Equal(t, "0", settings["CGO_ENABLED"])
	assert.Equal(t, "true", settings["-trimpath"])
	assert.Equal(t, goarch, settings["GOARCH"])
	assert.True(t, bytes.Contains(data, []byte(version)), "the binary holds the stamped version %q", version)
	assert.Equal(t, "github.com/llmgateway/llmgateway/cmd/llmgateway", info.Path)
}

// countCertificates counts the PEM certificates in a bundle.
func countCertificates(bundle []byte) int {
	n := 0
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return n
		}
		if block.Type == "CERTIFICATE" {
			n++
		}
	}
}

// logImageSize logs the saved image's size as a tar and gzip-compressed
// (what a registry stores and a pull transfers, roughly).
func logImageSize(t *testing.T, saved string) {
	t.Helper()
	raw, err := os.ReadFile(saved)
	require.NoError(t, err)
	var counter countingWriter
	gz, err := gzip.NewWriterLevel(&counter, gzip.DefaultCompression)
	require.NoError(t, err)
	_, err = gz.Write(raw)
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	t.Logf("image size: %d bytes as a docker-archive tar, %d bytes gzip-compressed", len(raw), counter.n)
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// runQuickstart runs bin (a release-stamped build: DO_NOT_TRACK=1 keeps it
// from pinging) with examples/quickstart.yaml pointed at an in-process
// mock upstream, the admin API switched on for the demo user, and checks
// the probes, a chat completion on the openai provider and one translated
// to the anthropic provider, and the version it reports.
func runQuickstart(t *testing.T, bin, caBundle, version string) {
	t.Helper()
	mock := mockupstream.New(mockupstream.Options{})
	upstream := httptest.NewServer(mock)
	defer upstream.Close()

	raw, err := os.ReadFile(filepath.Join("..", "examples", "quickstart.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(raw), "http://127.0.0.1:9099")
	var cfg map[string]interface{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.ReplaceAll(string(raw), "http://127.0.0.1:9099", upstream.URL)), &cfg))
	cfg["admin"] = map[string]interface{}{"enabled": true}
	users := cfg["users"].(map[string]interface{})["inline"].([]interface{})
	users[0].(map[string]interface{})["admin"] = true
	cfgYAML, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, cfgYAML, 0o600))

	p, err := gwproc.Start(gwproc.Config{
		Binary: bin,
		Args:   []string{"-config", cfgPath, "-listen", "{addr}"},
		Env:    []string{"DO_NOT_TRACK=1", "SSL_CERT_FILE=" + caBundle, "LLMGW_DRAIN_DELAY=0s", "LLMGW_SHUTDOWN_TIMEOUT=2s"},
	})
	require.NoError(t, err)
	defer func() {
		assert.NoError(t, p.Stop())
		if t.Failed() {
			t.Logf("gateway output:\n%s", p.Logs())
		}
	}()

	client := &http.Client{Timeout: 30 * time.Second}
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := client.Get(p.URL + probe)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, probe)
	}

	for _, model := range []string{"gpt-5-mini", "claude-sonnet-4-5"} {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
		req, err := http.NewRequest(http.MethodPost, p.URL+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-llmgw-demo")
		req.Header.Set("Content-Type", "application/json")
		status, answer := doJSON(t, client, req)
		require.Equal(t, http.StatusOK, status, "%s: %v", model, answer)
		var chat struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		remarshal(t, answer, &chat)
		require.Len(t, chat.Choices, 1, model)
		assert.Equal(t, "assistant", chat.Choices[0].Message.Role, model)
		assert.Equal(t, mockupstream.ReplyText(5), chat.Choices[0].Message.Content, model)
	}
	paths := map[string]bool{}
	for _, r := range mock.Requests() {
		paths[r.Path] = true
	}
	assert.True(t, paths["/v1/chat/completions"], "the openai provider was called: %v", paths)
	assert.True(t, paths["/v1/messages"], "the anthropic provider was called: %v", paths)

	req, err := http.NewRequest(http.MethodGet, p.URL+"/admin/api/overview", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-llmgw-demo")
	status, overview := doJSON(t, client, req)
	require.Equal(t, http.StatusOK, status, "%v", overview)
	assert.Equal(t, version, overview["version"], "admin overview version")

	logs := p.Logs()
	assert.Contains(t, logs, "llmgateway "+version+" starting")
	assert.Contains(t, logs, "telemetry: disabled by DO_NOT_TRACK")
}

// doJSON sends req and decodes the JSON object it answers.
func doJSON(t *testing.T, client *http.Client, req *http.Request) (int, map[string]interface{}) {
	t.Helper()
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]interface{}
	require.NoError(t, json.Unmarshal(raw, &out), "%s %s answered %d: %s", req.Method, req.URL.Path, resp.StatusCode, raw)
	return resp.StatusCode, out
}

// remarshal decodes a generic JSON value into out.
func remarshal(t *testing.T, in interface{}, out interface{}) {
	t.Helper()
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out))
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
