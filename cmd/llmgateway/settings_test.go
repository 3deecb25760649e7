package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string {
	return func(name string) string { return m[name] }
}

func TestSettingsDefaults(t *testing.T) {
	s, err := parseSettings(nil, envOf(nil), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, &settings{
		configPath:      "/etc/llmgateway/config.yaml",
		listen:          ":8080",
		name:            "gateway",
		logLevel:        levelInfo,
		shutdownTimeout: 30 * time.Second,
		drainDelay:      5 * time.Second,
		healthPath:      "/healthz",
		readyPath:       "/readyz",
	}, s)
}

func TestSettingsPrecedence(t *testing.T) {
	env := map[string]string{
		"LLMGW_CONFIG":           "/env/config.yaml",
		"LLMGW_LISTEN":           "127.0.0.1:9000",
		"LLMGW_NAME":             "from-env",
		"LLMGW_LOG_LEVEL":        "warn",
		"LLMGW_SHUTDOWN_TIMEOUT": "1m",
		"LLMGW_DRAIN_DELAY":      "0s",
		"LLMGW_HEALTH_PATH":      "/env-health",
		"LLMGW_READY_PATH":       "/env-ready",
	}

	t.Run("env beats default", func(t *testing.T) {
		s, err := parseSettings(nil, envOf(env), &bytes.Buffer{})
		require.NoError(t, err)
		assert.Equal(t, &settings{
			configPath:      "/env/config.yaml",
			listen:          "127.0.0.1:9000",
			name:            "from-env",
			logLevel:        levelWarn,
			shutdownTimeout: time.Minute,
			drainDelay:      0,
			healthPath:      "/env-health",
			readyPath:       "/env-ready",
		}, s)
	})

	t.Run("explicit flag beats env", func(t *testing.T) {
		args := []string{
			"-config", "/flag/config.json",
			"-listen", ":7000",
			"-name", "from-flag",
			"-log-level=debug",
			"-shutdown-timeout", "45s",
			"-drain-delay", "2s",
			"-health-path", "/live",
			"-ready-path", "/ready",
		}
		s, err := parseSettings(args, envOf(env), &bytes.Buffer{})
		require.NoError(t, err)
		assert.Equal(t, &settings{
			configPath:      "/flag/config.json",
			listen:          ":7000",
			name:            "from-flag",
			logLevel:        levelDebug,
			shutdownTimeout: 45 * time.Second,
			drainDelay:      2 * time.Second,
			healthPath:      "/live",
			readyPath:       "/ready",
		}, s)
	})

	t.Run("flag passed with the default value still beats env", func(t *testing.T) {
		s, err := parseSettings([]string{"-listen", ":8080", "-drain-delay", "5s"}, envOf(env), &bytes.Buffer{})
		require.NoError(t, err)
		assert.Equal(t, ":8080", s.listen)
		assert.Equal(t, 5*time.Second, s.drainDelay)
		assert.Equal(t, "from-env", s.name, "flags not passed still come from the env")
	})

	t.Run("empty env variable is unset", func(t *testing.T) {
		s, err := parseSettings(nil, envOf(map[string]string{"LLMGW_LISTEN": ""}), &bytes.Buffer{})
		require.NoError(t, err)
		assert.Equal(t, ":8080", s.listen)
	})
}

func TestSettingsInvalidValues(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantMsg []string
	}{
		{"bad duration flag", []string{"-shutdown-timeout", "soon"}, nil, []string{`"soon"`, "-shutdown-timeout", "duration"}},
		{"bad duration env", nil, map[string]string{"LLMGW_DRAIN_DELAY": "5"}, []string{`"5"`, "LLMGW_DRAIN_DELAY", "-drain-delay"}},
		{"negative duration", []string{"-drain-delay", "-1s"}, nil, []string{"-drain-delay", "negative"}},
		{"bad level flag", []string{"-log-level", "verbose"}, nil, []string{`"verbose"`, "-log-level", "debug, info, warn, error"}},
		{"bad level env", nil, map[string]string{"LLMGW_LOG_LEVEL": "trace"}, []string{"LLMGW_LOG_LEVEL", "-log-level"}},
		{"health path without slash", []string{"-health-path", "healthz"}, nil, []string{"-health-path", `must start with "/"`}},
		{"ready path without slash env", nil, map[string]string{"LLMGW_READY_PATH": "readyz"}, []string{"LLMGW_READY_PATH", "-ready-path"}},
		{"same probe paths", []string{"-health-path", "/probe", "-ready-path", "/probe"}, nil, []string{"-health-path", "-ready-path", "differ"}},
		{"empty listen", []string{"-listen", ""}, nil, []string{"-listen", "empty"}},
		{"unknown flag", []string{"-port", "80"}, nil, []string{"-port"}},
		{"positional argument", []string{"config.yaml"}, nil, []string{`"config.yaml"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSettings(tc.args, envOf(tc.env), &bytes.Buffer{})
			require.Error(t, err)
			var usage *usageError
			require.True(t, errors.As(err, &usage), "want a usageError, got %T", err)
			for _, want := range tc.wantMsg {
				assert.Contains(t, err.Error(), want)
			}
			var stderr bytes.Buffer
			assert.Equal(t, 2, exitCode(err, &stderr))
			assert.Contains(t, stderr.String(), "llmgateway: "+err.Error())
		})
	}
}

func TestSettingsHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := parseSettings([]string{"-help"}, envOf(nil), &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Equal(t, 0, exitCode(err, &bytes.Buffer{}))
	for _, o := range options {
		assert.Contains(t, out.String(), "-"+o.flag)
		assert.Contains(t, out.String(), o.env)
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]level{"debug": levelDebug, "INFO": levelInfo, "warn": levelWarn, "warning": levelWarn, " error ": levelError} {
		got, err := parseLevel(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := parseLevel("fatal")
	assert.Error(t, err)
}
