package integration_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// make release (scripts/release.sh) for a test version into a temp dir:
// the four archives and SBOMs exist and match SHA256SUMS, each archive
// holds a static binary for its platform, the linux/amd64 one (on such a
// host) runs and reports the stamped version, and each SBOM is CycloneDX
// JSON naming the main component at that version. It cross-compiles, so
// it runs under make integration (LLMGW_CROSS_BUILDS=1).

var releasePlatforms = []string{"linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"}

// makeRelease runs make release with VERSION=version into dir.
func makeRelease(ctx context.Context, t *testing.T, version, dir string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "make", "-C", repoRoot(t), "--no-print-directory", "release",
		"VERSION="+version, "RELEASE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestReleaseRefusesBadVersions: a missing, development, v-prefixed or
// non-semver VERSION stops make release before anything is built.
func TestReleaseRefusesBadVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := map[string]string{
		"0.0.0-dev": "0.0.0-dev marks development builds",
		"v1.2.3":    "without the leading v",
		"1.2":       "not a semantic version",
		"1.2.3.4":   "not a semantic version",
		"01.2.3":    "not a semantic version",
		"1.2.3-":    "not a semantic version",
	}
	for version, want := range cases {
		dir := t.TempDir()
		out, err := makeRelease(ctx, t, version, dir)
		require.Error(t, err, "make release VERSION=%s must fail:\n%s", version, out)
		assert.Contains(t, out, want, "VERSION=%s", version)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "VERSION=%s wrote nothing", version)
	}
}

func TestRelease(t *testing.T) {
	requireCrossBuilds(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, err := makeRelease(ctx, t, stampedTestVersion, dir)
	require.NoError(t, err, "make release:\n%s", out)
	t.Logf("make release:\n%s", lastLines(out, 10))

	sums := readSHA256SUMS(t, filepath.Join(dir, "SHA256SUMS"))
	var want []string
	for _, p := range releasePlatforms {
		base := "llmgateway-" + stampedTestVersion + "-" + p
		want = append(want, base+".tar.gz", base+".cdx.json")
	}
	names := make([]string, 0, len(sums))
	for name := range sums {
		names = append(names, name)
	}
	assert.ElementsMatch(t, want, names, "SHA256SUMS lists every artifact")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	assert.ElementsMatch(t, append(append([]string(nil), want...), "SHA256SUMS"), files, "the release directory holds the artifacts and nothing else")
	for name, sum := range sums {
		assert.Equal(t, sum, fileSHA256(t, filepath.Join(dir, name)), "%s checksum", name)
	}

	for _, p := range releasePlatforms {
		p := p
		t.Run(p, func(t *testing.T) {
			goos, goarch, _ := strings.Cut(p, "-")
			base := "llmgateway-" + stampedTestVersion + "-" + p
			members := readTarGz(t, filepath.Join(dir, base+".tar.gz"))
			assert.Equal(t, []string{base + "/", base + "/CHANGELOG.md", base + "/README.md", base + "/llmgateway"}, members.names)
			bin := members.files[base+"/llmgateway"]
			assert.Equal(t, int64(0o755), members.modes[base+"/llmgateway"])
			info, err := buildinfo.Read(strings.NewReader(string(bin)))
			require.NoError(t, err, "Go build information")
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			assert.Equal(t, goos, settings["GOOS"])
			assert.Equal(t, goarch, settings["GOARCH"])
			assert.Equal(t, "0", settings["CGO_ENABLED"])
			assert.Equal(t, "true", settings["-trimpath"])
			assert.NotContains(t, settings, "vcs.revision", "-buildvcs=false: the binary does not depend on the checkout's git state")
			assert.Contains(t, string(bin), stampedTestVersion, "the stamped version")
			if goos == "linux" {
				assertStaticBinary(t, bin, goarch, stampedTestVersion)
			}
			checkSBOM(t, filepath.Join(dir, base+".cdx.json"), goos, goarch)

			if goos != runtime.GOOS || goarch != runtime.GOARCH {
				return
			}
			path := filepath.Join(t.TempDir(), "llmgateway")
			require.NoError(t, os.WriteFile(path, bin, 0o755))
			// No config: the binary reports its version and telemetry
			// state, then stops at the config, before any connection.
			cmd := exec.CommandContext(ctx, path, "-config", filepath.Join(t.TempDir(), "missing.yaml"))
			cmd.Env = append(os.Environ(), "DO_NOT_TRACK=1")
			logs, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the binary exits non-zero without a config: %v\n%s", err, logs)
			assert.Equal(t, 1, exit.ExitCode())
			assert.Contains(t, string(logs), "llmgateway "+stampedTestVersion+" starting")
			assert.Contains(t, string(logs), "telemetry: disabled by DO_NOT_TRACK")
		})
	}
}

// readSHA256SUMS parses sha256sum's output: "<hex>  <name>" per line.
func readSHA256SUMS(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "SHA256SUMS line %q", sc.Text())
		require.Len(t, sum, 64, "SHA256SUMS line %q", sc.Text())
		sums[name] = sum
	}
	require.NoError(t, sc.Err())
	return sums
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// tarMembers is an archive's entries in order, with the regular files'
// contents and modes.
type tarMembers struct {
	names []string
	files map[string][]byte
	modes map[string]int64
}

func readTarGz(t *testing.T, path string) tarMembers {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	m := tarMembers{files: map[string][]byte{}, modes: map[string]int64{}}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, 0, h.Uid, "%s owner", h.Name)
		assert.Equal(t, 0, h.Gid, "%s group", h.Name)
		m.names = append(m.names, h.Name)
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			m.files[h.Name] = data
			m.modes[h.Name] = h.Mode & 0o7777
		}
	}
	assert.True(t, sort.StringsAreSorted(m.names), "archive entries sorted: %v", m.names)
	return m
}

// checkSBOM decodes a CycloneDX JSON SBOM: the main component is the
// binary's module at the release version, with the platform's build
// properties, and the components include the standard library.
func checkSBOM(t *testing.T, path, goos, goarch string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component struct {
				Type    string `json:"type"`
				Name    string `json:"name"`
				Version string `json:"version"`
				PURL    string `json:"purl"`
			} `json:"component"`
			Properties []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"properties"`
		} `json:"metadata"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &bom), "%s is JSON", path)
	assert.Equal(t, "CycloneDX", bom.BOMFormat)
	assert.NotEmpty(t, bom.SpecVersion)
	mainComponent := bom.Metadata.Component
	assert.Equal(t, "application", mainComponent.Type)
	assert.Equal(t, "github.com/llmgateway/llmgateway/cmd", mainComponent.Name)
	assert.Equal(t, "v"+stampedTestVersion, mainComponent.Version)
	assert.Contains(t, mainComponent.PURL, "goos="+goos)
	assert.Contains(t, mainComponent.PURL, "goarch="+goarch)
	props := map[string]string{}
	for _, p := range bom.Metadata.Properties {
		props[p.Name] = p.Value
	}
	assert.Equal(t, goos, props["cdx:gomod:build:env:GOOS"])
	assert.Equal(t, goarch, props["cdx:gomod:build:env:GOARCH"])
	assert.Equal(t, "0", props["cdx:gomod:build:env:CGO_ENABLED"])
	components := map[string]string{}
	for _, c := range bom.Components {
		components[c.Name] = c.Version
	}
	assert.Contains(t, components, "std", "the standard library is a component")
	assert.Contains(t, components, "github.com/llmgateway/llmgateway/gateway", "the core is a component")
}
