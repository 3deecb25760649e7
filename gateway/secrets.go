package gateway

import (
	"bytes"
	"errors"
	"os"
	"strings"
)

// resolveSecret resolves a secret form: "env:VAR" reads the environment
// variable VAR (unset or empty is an error), "file:/path" reads the file
// (unreadable or empty is an error), anything else is the literal value.
// Every form is trimmed of surrounding whitespace: a key can never carry
// it over HTTP (header values are trimmed), so "sk-x\n" from an env var
// means "sk-x". Errors never contain the secret.
func resolveSecret(value string) (string, error) {
	switch {
	case strings.HasPrefix(value, "env:"):
		name := strings.TrimPrefix(value, "env:")
		if name == "" {
			return "", errors.New(`"env:" names no variable`)
		}
		v := strings.TrimSpace(os.Getenv(name))
		if v == "" {
			return "", errors.New("environment variable " + name + " is unset or empty")
		}
		return v, nil
	case strings.HasPrefix(value, "file:"):
		p := strings.TrimPrefix(value, "file:")
		if p == "" {
			return "", errors.New(`"file:" names no path`)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", errors.New("cannot read secret file " + p + ": " + describeFileError(err))
		}
		v := strings.TrimSpace(string(data))
		if v == "" {
			return "", errors.New("secret file " + p + " is empty")
		}
		return v, nil
	}
	return strings.TrimSpace(value), nil
}

func describeFileError(err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no such file"
	case errors.Is(err, os.ErrPermission):
		return "permission denied"
	}
	return "read failed"
}

// redactSecret replaces every occurrence of secret in data.
func redactSecret(data []byte, secret string) []byte {
	if secret == "" || len(data) < len(secret) {
		return data
	}
	return bytes.ReplaceAll(data, []byte(secret), []byte("[REDACTED]"))
}
