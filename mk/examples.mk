# Deployment examples (examples/): Kubernetes manifests, Traefik Helm values,
# compose files. Their tests (integration/examples*_test.go) also run in
# `make test`.
EXAMPLE_CHECKSUM_MANIFESTS := examples/kubernetes-binary.yaml

.PHONY: examples-check examples-checksum

examples-check: ## only the examples' tests: Kubernetes, Helm values and compose files decoded strictly by their real types, a gateway built from each config
	$(GO) test -count=1 -run 'TestExample' ./integration/
	$(GO) test -count=1 ./integration/examplecheck/

examples-checksum: ## refresh checksum/config in examples/kubernetes-binary.yaml after editing its ConfigMap
	$(GO) run ./integration/cmd/examplechecksum $(EXAMPLE_CHECKSUM_MANIFESTS)
