package imageproc

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarEntry is one entry of a tar built by buildTar.
type tarEntry struct {
	name, link string
	typ        byte
	mode       int64
	uid        int
	data       string
}

func buildTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Size: int64(len(e.data))}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(e.data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	_, err := gz.Write(data)
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// TestReadArchiveLayersAndWhiteouts reads a two-layer docker-archive in
// podman's shape (the first layer reached through a symlinked
// dir/layer.tar, the second gzip-compressed): the upper layer's whiteout
// removes a file, its opaque marker empties a directory, and the config
// is decoded.
func TestReadArchiveLayersAndWhiteouts(t *testing.T) {
	lower := buildTar(t, []tarEntry{
		{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		{name: "etc/passwd", typ: tar.TypeReg, mode: 0o644, data: "nonroot:x:65532:65532::/:/sbin/nologin\n"},
		{name: "bin/sh", typ: tar.TypeReg, mode: 0o755, data: "ELF"},
		{name: "opt/a/old", typ: tar.TypeReg, mode: 0o600, data: "old"},
		{name: "app", typ: tar.TypeReg, mode: 0o4755, uid: 7, data: "binary"},
	})
	upper := gzipped(t, buildTar(t, []tarEntry{
		{name: "bin/.wh.sh", typ: tar.TypeReg},
		{name: "opt/a/.wh..wh..opq", typ: tar.TypeReg},
		{name: "opt/a/new", typ: tar.TypeReg, mode: 0o644, data: "new"},
		{name: "lib", typ: tar.TypeSymlink, link: "usr/lib"},
	}))
	config := `{"architecture":"arm64","os":"linux","config":{"User":"65532:65532",` +
		`"ExposedPorts":{"8080/tcp":{}},"Entrypoint":["/app"],"Labels":{"k":"v"}}}`
	manifest := `[{"Config":"cfg.json","RepoTags":["x:1"],"Layers":["l1/layer.tar","blob2.tar"]}]`
	outer := buildTar(t, []tarEntry{
		{name: "blob1.tar", typ: tar.TypeReg, mode: 0o444, data: string(lower)},
		{name: "l1/layer.tar", typ: tar.TypeSymlink, link: "../blob1.tar"},
		{name: "blob2.tar", typ: tar.TypeReg, mode: 0o444, data: string(upper)},
		{name: "cfg.json", typ: tar.TypeReg, mode: 0o444, data: config},
		{name: "manifest.json", typ: tar.TypeReg, mode: 0o444, data: manifest},
	})
	file := filepath.Join(t.TempDir(), "image.tar")
	require.NoError(t, os.WriteFile(file, outer, 0o644))

	a, err := ReadArchive(file)
	require.NoError(t, err)
	assert.Equal(t, 2, a.Layers)
	assert.Equal(t, "arm64", a.Config.Architecture)
	assert.Equal(t, "linux", a.Config.OS)
	assert.Equal(t, "65532:65532", a.Config.Config.User)
	assert.Equal(t, []string{"/app"}, a.Config.Config.Entrypoint)
	assert.Contains(t, a.Config.Config.ExposedPorts, "8080/tcp")
	assert.Equal(t, map[string]string{"k": "v"}, a.Config.Config.Labels)

	assert.Equal(t, []string{"/app", "/etc", "/etc/passwd", "/lib", "/opt/a/new"}, a.Paths())
	assert.Equal(t, "nonroot:x:65532:65532::/:/sbin/nologin\n", string(a.Files["/etc/passwd"].Data))
	assert.Equal(t, int64(0o4755), a.Files["/app"].Mode)
	assert.Equal(t, 7, a.Files["/app"].UID)
	assert.Equal(t, byte(tar.TypeSymlink), a.Files["/lib"].Type)
	assert.Equal(t, "usr/lib", a.Files["/lib"].Linkname)
	assert.Equal(t, "new", string(a.Files["/opt/a/new"].Data))
}

// TestReadArchiveRefusesOtherShapes: a tar without manifest.json, and one
// whose manifest names a missing layer, are errors naming the problem.
func TestReadArchiveRefusesOtherShapes(t *testing.T) {
	dir := t.TempDir()
	noManifest := filepath.Join(dir, "a.tar")
	require.NoError(t, os.WriteFile(noManifest, buildTar(t, []tarEntry{{name: "index.json", typ: tar.TypeReg, data: "{}"}}), 0o644))
	_, err := ReadArchive(noManifest)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no manifest.json")

	missing := filepath.Join(dir, "b.tar")
	require.NoError(t, os.WriteFile(missing, buildTar(t, []tarEntry{
		{name: "cfg.json", typ: tar.TypeReg, data: "{}"},
		{name: "manifest.json", typ: tar.TypeReg, data: `[{"Config":"cfg.json","Layers":["gone.tar"]}]`},
	}), 0o644))
	_, err = ReadArchive(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "layer gone.tar missing")
}
