// Package imageproc builds the llmgateway container image with podman or
// docker (through the repository's make targets) and reads it back without
// running a container: the image is saved as a docker-archive tar, and
// ReadArchive returns its config and the files of its root filesystem.
package imageproc

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

// Tool is the container tool that works here: "podman" when it is on
// PATH, else "docker" when its daemon answers, else an error saying what
// is missing.
func Tool() (string, error) {
	if p, err := exec.LookPath("podman"); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("docker"); err == nil {
		if err := exec.Command(p, "version").Run(); err == nil {
			return p, nil
		}
		return "", errors.New("docker is on PATH but its daemon does not answer `docker version`, and podman is not installed (Debian: apt-get install -y podman)")
	}
	return "", errors.New("neither podman nor docker is installed (Debian: apt-get install -y podman)")
}

// Build is one `make image` or `make image-multiarch` run.
type Build struct {
	// Root is the repository's root directory (where the Makefile is).
	Root string
	// Tool is the container tool's path (from Tool).
	Tool string
	// Image is the tag (or manifest list name) to build.
	Image string
	// Version is stamped into the binary and the version label.
	Version string
	// Context is the directory the build context is staged in.
	Context string
	// Platforms, when set, builds a manifest list over them
	// (make image-multiarch); empty builds for the host (make image).
	Platforms string
}

// Run runs the make target and returns its combined output.
func (b Build) Run(ctx context.Context) (string, error) {
	target := "image"
	args := []string{"-C", b.Root, "--no-print-directory"}
	if b.Platforms != "" {
		target = "image-multiarch"
		args = append(args, "PLATFORMS="+b.Platforms)
	}
	args = append(args, target, "IMAGE="+b.Image, "VERSION="+b.Version,
		"IMAGE_CONTEXT="+b.Context, "IMAGE_TOOL="+toolName(b.Tool))
	cmd := exec.CommandContext(ctx, "make", args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("make %s: %v\n%s", target, err, out.String())
	}
	return out.String(), nil
}

// toolName is "podman" or "docker" for a tool's path.
func toolName(tool string) string { return path.Base(tool) }

// command runs tool with args and returns its stdout; stderr is in the
// error.
func command(ctx context.Context, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", toolName(tool), strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// Save writes ref as a docker-archive tar to file.
func Save(ctx context.Context, tool, ref, file string) error {
	args := []string{"image", "save", "-o", file, ref}
	if toolName(tool) == "podman" {
		args = []string{"image", "save", "--format", "docker-archive", "-o", file, ref}
	}
	_, err := command(ctx, tool, args...)
	return err
}

// ImageID is the local id of ref.
func ImageID(ctx context.Context, tool, ref string) (string, error) {
	out, err := command(ctx, tool, "image", "inspect", "--format", "{{.Id}}", ref)
	return strings.TrimSpace(string(out)), err
}

// Remove removes the images (by tag or id), ignoring ones already gone;
// it returns the first other failure.
func Remove(ctx context.Context, tool string, refs ...string) error {
	var first error
	for _, ref := range refs {
		if _, err := command(ctx, tool, "image", "rm", ref); err != nil && first == nil &&
			!strings.Contains(strings.ToLower(err.Error()), "no such image") &&
			!strings.Contains(strings.ToLower(err.Error()), "image not known") {
			first = err
		}
	}
	return first
}

// ManifestEntry is one platform's image in a manifest list.
type ManifestEntry struct {
	Digest   string `json:"digest"`
	Platform struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

// InspectManifest lists the entries of the manifest list name (podman).
func InspectManifest(ctx context.Context, tool, name string) ([]ManifestEntry, error) {
	out, err := command(ctx, tool, "manifest", "inspect", name)
	if err != nil {
		return nil, err
	}
	var list struct {
		Manifests []ManifestEntry `json:"manifests"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("manifest inspect %s: %v", name, err)
	}
	return list.Manifests, nil
}

// RemoveManifest removes the manifest list name (podman), not the images
// it lists.
func RemoveManifest(ctx context.Context, tool, name string) error {
	_, err := command(ctx, tool, "manifest", "rm", name)
	return err
}

// Config is the part of an OCI/Docker image config the tests read.
type Config struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Env          []string            `json:"Env"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		WorkingDir   string              `json:"WorkingDir"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
}

// File is one entry of the image's root filesystem.
type File struct {
	// Type is the tar type flag (tar.TypeReg, tar.TypeDir, tar.TypeSymlink...).
	Type byte
	// Mode holds the permission bits.
	Mode int64
	// UID and GID own the entry.
	UID, GID int
	// Linkname is a link's target.
	Linkname string
	// Data is a regular file's content.
	Data []byte
}

// Archive is a saved image: its config, its layers' count and its root
// filesystem with every layer applied in order (whiteouts included).
type Archive struct {
	Config Config
	Layers int
	// Files maps each absolute path ("/etc/passwd") to its entry.
	Files map[string]File
}

// Paths is every path in the root filesystem, sorted.
func (a *Archive) Paths() []string {
	out := make([]string, 0, len(a.Files))
	for p := range a.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ReadArchive reads a docker-archive tar (what `podman image save
// --format docker-archive` and `docker image save` write).
func ReadArchive(file string) (*Archive, error) {
	entries, err := readOuter(file)
	if err != nil {
		return nil, err
	}
	raw, ok := entries["manifest.json"]
	if !ok {
		return nil, fmt.Errorf("%s: no manifest.json (not a docker-archive?)", file)
	}
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return nil, fmt.Errorf("%s: manifest.json: %v", file, err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("%s: manifest.json lists %d images, want 1", file, len(manifest))
	}
	a := &Archive{Layers: len(manifest[0].Layers), Files: map[string]File{}}
	if err := json.Unmarshal(entries[manifest[0].Config], &a.Config); err != nil {
		return nil, fmt.Errorf("%s: config %s: %v", file, manifest[0].Config, err)
	}
	for _, layer := range manifest[0].Layers {
		data, ok := entries[layer]
		if !ok {
			return nil, fmt.Errorf("%s: layer %s missing", file, layer)
		}
		if err := a.apply(data); err != nil {
			return nil, fmt.Errorf("%s: layer %s: %v", file, layer, err)
		}
	}
	return a, nil
}

// readOuter returns the archive's regular files by name, with symlinked
// entries (podman links dir/layer.tar to the layer's blob) resolved.
func readOuter(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries := map[string][]byte{}
	links := map[string]string{}
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		name := path.Clean(h.Name)
		switch h.Typeflag {
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %v", file, name, err)
			}
			entries[name] = data
		case tar.TypeSymlink:
			links[name] = path.Join(path.Dir(name), h.Linkname)
		}
	}
	for name, target := range links {
		if data, ok := entries[target]; ok {
			entries[name] = data
		}
	}
	return entries, nil
}

// apply adds one layer's entries to the filesystem: a ".wh.name" entry
// removes name (and what is under it), ".wh..wh..opq" empties its
// directory from the lower layers. A gzip-compressed layer is accepted.
func (a *Archive) apply(layer []byte) error {
	var r io.Reader = bytes.NewReader(layer)
	if len(layer) > 2 && layer[0] == 0x1f && layer[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Join("/", h.Name)
		dir, base := path.Split(name)
		if base == ".wh..wh..opq" {
			a.removeUnder(path.Clean(dir), false)
			continue
		}
		if strings.HasPrefix(base, ".wh.") {
			a.removeUnder(path.Join(dir, strings.TrimPrefix(base, ".wh.")), true)
			continue
		}
		entry := File{Type: h.Typeflag, Mode: h.Mode & 0o7777, UID: h.Uid, GID: h.Gid, Linkname: h.Linkname}
		if h.Typeflag == tar.TypeReg {
			if entry.Data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		a.Files[name] = entry
	}
}

// removeUnder removes every path below dir, and dir itself when self.
func (a *Archive) removeUnder(dir string, self bool) {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for p := range a.Files {
		if (self && p == dir) || strings.HasPrefix(p, prefix) {
			delete(a.Files, p)
		}
	}
}
