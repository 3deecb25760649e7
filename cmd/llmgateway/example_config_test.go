package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/gateway"
)

// The shipped example must stay a valid configuration: decoded by the
// binary's loader and accepted by the gateway.
func TestQuickstartExampleIsValid(t *testing.T) {
	loaded, err := loadConfig("../../examples/quickstart.yaml")
	require.NoError(t, err)
	g, err := gateway.New(nil, loaded.config, gateway.Options{LogOutput: io.Discard})
	require.NoError(t, err)
	require.NoError(t, g.Close())
}
