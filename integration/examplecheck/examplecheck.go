// Package examplecheck reads the Kubernetes manifests under examples/: it
// splits a multi-document YAML stream, decodes a document strictly into a
// Kubernetes or Traefik API type, and computes and refreshes the
// checksum/config annotation that rolls the binary's pods when its
// ConfigMap changes.
package examplecheck

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one object of a manifest stream: its raw YAML, the JSON it
// converts to, and its apiVersion and kind.
type Document struct {
	Index      int // position in the stream, from 0, empty documents skipped
	YAML       []byte
	JSON       []byte
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
}

// Split returns the non-empty documents of a "---"-separated YAML stream.
// A document with duplicate keys, or without apiVersion or kind, is an
// error.
func Split(data []byte) ([]Document, error) {
	reader := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []Document
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %v", len(docs), err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue // only comments or blank
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &head); err != nil {
			return nil, fmt.Errorf("document %d: %v", len(docs), err)
		}
		if head.APIVersion == "" || head.Kind == "" {
			return nil, fmt.Errorf("document %d: no apiVersion or kind", len(docs))
		}
		docs = append(docs, Document{
			Index: len(docs), YAML: raw, JSON: js,
			APIVersion: head.APIVersion, Kind: head.Kind,
			Name: head.Metadata.Name, Namespace: head.Metadata.Namespace,
		})
	}
}

// DecodeStrict decodes the document into obj the way the API server does
// with strict field validation: field names are case-sensitive, and an
// unknown or duplicated field is an error naming it.
func (d Document) DecodeStrict(obj interface{}) error {
	if err := decodeStrictJSON(d.JSON, obj); err != nil {
		return fmt.Errorf("%s %s: %v", d.Kind, d.Name, err)
	}
	return nil
}

// DecodeStrictYAML decodes one YAML document into obj with the same rules
// as Document.DecodeStrict (for a file that is not a Kubernetes object,
// such as Helm values).
func DecodeStrictYAML(data []byte, obj interface{}) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	return decodeStrictJSON(js, obj)
}

func decodeStrictJSON(data []byte, obj interface{}) error {
	strictErrs, err := kjson.UnmarshalStrict(data, obj)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// ConfigKey is the ConfigMap key holding the binary's config file.
const ConfigKey = "config.yaml"

// ChecksumAnnotation is the pod-template annotation carrying the
// ConfigMap's checksum.
const ChecksumAnnotation = "checksum/config"

// Checksum is the checksum/config value for a ConfigMap's data: the
// lowercase hex SHA-256 of its config.yaml, the same as
//
//	kubectl get configmap NAME -o jsonpath='{.data.config\.yaml}' | sha256sum
//
// Only a ConfigMap holding exactly that one key has a checksum.
func Checksum(data map[string]string) (string, error) {
	if _, ok := data[ConfigKey]; !ok || len(data) != 1 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "", fmt.Errorf("the ConfigMap must hold exactly one key, %s (it holds %v)", ConfigKey, keys)
	}
	sum := sha256.Sum256([]byte(data[ConfigKey]))
	return hex.EncodeToString(sum[:]), nil
}

var checksumLine = regexp.MustCompile(`(?m)^(\s*` + regexp.QuoteMeta(ChecksumAnnotation) + `:\s*)"?([0-9a-f]*)"?(\s*(#.*)?)$`)

// RefreshChecksum rewrites the one checksum/config annotation line of a
// manifest stream to the checksum of its one ConfigMap, quoted (an
// all-digit hash must stay a string), keeping every other byte. It
// reports whether the line changed.
func RefreshChecksum(manifest []byte) ([]byte, bool, error) {
	docs, err := Split(manifest)
	if err != nil {
		return nil, false, err
	}
	var data map[string]string
	found := 0
	for _, d := range docs {
		if d.APIVersion == "v1" && d.Kind == "ConfigMap" {
			var cm struct {
				Data map[string]string `json:"data"`
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(d.JSON, &cm); err != nil {
				return nil, false, fmt.Errorf("ConfigMap %s: %v", d.Name, err)
			}
			data = cm.Data
			found++
		}
	}
	if found != 1 {
		return nil, false, fmt.Errorf("the manifest has %d ConfigMaps, want exactly 1", found)
	}
	sum, err := Checksum(data)
	if err != nil {
		return nil, false, err
	}
	lines := checksumLine.FindAllSubmatchIndex(manifest, -1)
	if len(lines) != 1 {
		return nil, false, fmt.Errorf("the manifest has %d %s annotation lines, want exactly 1", len(lines), ChecksumAnnotation)
	}
	m := lines[0]
	quoted := `"` + sum + `"`
	if string(manifest[m[3]:m[6]]) == quoted {
		return manifest, false, nil
	}
	out := make([]byte, 0, len(manifest)+len(quoted))
	out = append(out, manifest[:m[3]]...)
	out = append(out, quoted...)
	out = append(out, manifest[m[6]:]...)
	return out, true, nil
}
