//go:build yaegi
// +build yaegi

package store

import "testing"

// startRedisServer skips under the interpreter, which has no os/exec:
// the scripts run against a real redis-server in the compiled run, and
// interpreted through the plugin in integration/yaegigate.
func startRedisServer(t *testing.T) string {
	t.Helper()
	t.Skip("no os/exec under yaegi: the compiled run tests the hold scripts against redis-server")
	return ""
}
