// Command examplechecksum keeps the checksum/config annotation of a
// Kubernetes manifest (examples/kubernetes-binary.yaml) equal to the
// SHA-256 of its ConfigMap's config.yaml, so that an edited config rolls
// the Deployment's pods on the next apply.
//
//	go run ./integration/cmd/examplechecksum examples/kubernetes-binary.yaml        # rewrite in place
//	go run ./integration/cmd/examplechecksum -check examples/kubernetes-binary.yaml # exit 1 when stale
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/llmgateway/llmgateway/integration/examplecheck"
)

func main() {
	check := flag.Bool("check", false, "only report whether the annotation is current (exit 1 when stale)")
	flag.Usage = func() {
		_, _ = fmt.Fprintf(flag.CommandLine.Output(), "usage: examplechecksum [-check] MANIFEST...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	stale := false
	for _, path := range flag.Args() {
		changed, err := refresh(path, *check)
		if err != nil {
			fmt.Fprintf(os.Stderr, "examplechecksum: %s: %v\n", path, err)
			os.Exit(1)
		}
		switch {
		case changed && *check:
			fmt.Printf("%s: %s is stale (run make examples-checksum)\n", path, examplecheck.ChecksumAnnotation)
			stale = true
		case changed:
			fmt.Printf("%s: %s updated\n", path, examplecheck.ChecksumAnnotation)
		default:
			fmt.Printf("%s: %s is current\n", path, examplecheck.ChecksumAnnotation)
		}
	}
	if stale {
		os.Exit(1)
	}
}

func refresh(path string, checkOnly bool) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	out, changed, err := examplecheck.RefreshChecksum(data)
	if err != nil || !changed || checkOnly {
		return changed, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(path, out, info.Mode().Perm())
}
