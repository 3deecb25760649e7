package examplecheck

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

const staleManifest = `# a comment that stays
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  config.yaml: |
    providers: {}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    metadata:
      annotations:
        checksum/config: 0000 # refreshed by make examples-checksum
`

func TestRefreshChecksumRewritesOnlyTheAnnotation(t *testing.T) {
	sum := sha256.Sum256([]byte("providers: {}\n"))
	want := hex.EncodeToString(sum[:])
	out, changed, err := RefreshChecksum([]byte(staleManifest))
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Fatal("a stale checksum was reported current")
	}
	expected := strings.Replace(staleManifest, "checksum/config: 0000 ", `checksum/config: "`+want+`" `, 1)
	if string(out) != expected {
		t.Fatalf("rewritten manifest:\n%s\nwant:\n%s", out, expected)
	}
	again, changed, err := RefreshChecksum(out)
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("a second refresh changed the manifest (changed=%v, err=%v)", changed, err)
	}
}

func TestRefreshChecksumRefusesAmbiguousManifests(t *testing.T) {
	cases := map[string]struct{ manifest, want string }{
		"two ConfigMaps": {
			manifest: staleManifest + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {config.yaml: x}\n",
			want:     "2 ConfigMaps",
		},
		"no annotation": {
			manifest: strings.Replace(staleManifest, "checksum/config", "other/config", 1),
			want:     "0 checksum/config annotation lines",
		},
		"two keys": {
			manifest: strings.Replace(staleManifest, "\ndata:\n", "\ndata:\n  extra: x\n", 1),
			want:     "exactly one key, config.yaml (it holds [config.yaml extra])",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := RefreshChecksum([]byte(tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSplitSkipsEmptyDocumentsAndNeedsKind(t *testing.T) {
	docs, err := Split([]byte("# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Kind != "Namespace" || docs[0].Name != "a" {
		t.Fatalf("documents: %+v", docs)
	}
	if _, err := Split([]byte("metadata: {name: a}\n")); err == nil || !strings.Contains(err.Error(), "no apiVersion or kind") {
		t.Fatalf("a document without kind: %v", err)
	}
}
