package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
)

// GET /admin/api/config: the configuration the gateway was built from,
// redacted, with the construction warnings and the features flags.
//
// The gateway keeps only the compiled form of its Config, so New takes
// the view once (captureConfigView): the Config marshalled to JSON,
// decoded into maps and slices, and walked. Only the redacted tree is
// kept. What the walk redacts, by JSON member name at any depth
// (compared without regard to case):
//
//   - secret members — apiKey (providers.*.apiKey, users.inline[].apiKey),
//     password (redis.password) and every value of a headers object
//     (mcpServers.*.headers, agents.*.headers): an "env:NAME" or "file:/path" form
//     names where the secret is and is kept verbatim; an empty value
//     stays empty; any other value (a literal) becomes "[redacted]".
//   - URL members — baseUrl (providers.*.baseUrl) and url: their userinfo
//     and query string are removed (stripURLSecrets).
//   - address (redis.address): stripped the same way, but only when it
//     carries userinfo (an '@'); a plain host:port is left as written.
//
// The members above are every secret-bearing field of config.go; the
// others (limits, timeouts, header names, CIDRs, the users-file path)
// are not secrets. modelAliases values are walked like everything else.
// The users file is never read here: the view shows users.file, the
// path, only — its users (and their keys) are not part of Config.

// redactedValue replaces a literal secret in the config view.
const redactedValue = "[redacted]"

// adminConfigAnswer is the config route's answer.
type adminConfigAnswer struct {
	Config          map[string]interface{} `json:"config"`
	Warnings        []string               `json:"warnings"`
	WarningsDropped int                    `json:"warningsDropped,omitempty"`
	Features        adminFeatures          `json:"features"`
}

// adminConfig is GET /admin/api/config. It reads no counter and takes no
// parameter.
func (g *Gateway) adminConfig() (interface{}, *apiError) {
	warnings, dropped := g.warnings.collected()
	view := g.configView
	if view == nil {
		view = map[string]interface{}{}
	}
	return adminConfigAnswer{Config: view, Warnings: warnings, WarningsDropped: dropped, Features: g.adminFeatures()}, nil
}

// captureConfigView is the redacted view of cfg the config route
// answers. It never fails: a view that cannot be built is an empty map
// and a construction warning (warnings must not be sealed yet).
func captureConfigView(cfg *Config, warnings *warningLog) map[string]interface{} {
	view, err := redactedConfigView(cfg)
	if err != nil {
		warnings.warnf("admin: the configuration view could not be built (%v); GET /admin/api/config answers an empty config", err)
		return map[string]interface{}{}
	}
	return view
}

// redactedConfigView is cfg round-tripped through JSON (numbers kept
// exact) with every secret redacted.
func redactedConfigView(cfg *Config) (map[string]interface{}, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree interface{}
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	view, ok := tree.(map[string]interface{})
	if !ok {
		return nil, errors.New("the configuration is not a JSON object")
	}
	redactMembers(view)
	return view, nil
}

// redactMembers redacts every member of obj, recursively, in place.
func redactMembers(obj map[string]interface{}) {
	for name, v := range obj {
		obj[name] = redactMember(name, v)
	}
}

// redactMember is the view of the value v of a member called name. An
// array's elements are judged by the member's name too.
func redactMember(name string, v interface{}) interface{} {
	switch {
	case isSecretMember(name):
		return redactSecretValue(v)
	case strings.EqualFold(name, "headers"):
		// A target's headers: every value may be a token.
		if m, ok := v.(map[string]interface{}); ok {
			for k, hv := range m {
				m[k] = redactSecretValue(hv)
			}
			return m
		}
	case strings.EqualFold(name, "baseUrl") || strings.EqualFold(name, "url"):
		if s, ok := v.(string); ok {
			return stripURLSecrets(s)
		}
	case strings.EqualFold(name, "address"):
		if s, ok := v.(string); ok && strings.Contains(s, "@") {
			return stripURLSecrets(s)
		}
	}
	switch x := v.(type) {
	case map[string]interface{}:
		redactMembers(x)
	case []interface{}:
		for i := 0; i < len(x); i++ {
			x[i] = redactMember(name, x[i])
		}
	}
	return v
}

func isSecretMember(name string) bool {
	return strings.EqualFold(name, "apiKey") || strings.EqualFold(name, "password")
}

// redactSecretValue keeps an empty value and an env:/file: reference
// and replaces anything else, of any type, with redactedValue.
func redactSecretValue(v interface{}) interface{} {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" || strings.HasPrefix(x, "env:") || strings.HasPrefix(x, "file:") {
			return x
		}
	case []interface{}:
		for i := 0; i < len(x); i++ {
			x[i] = redactSecretValue(x[i])
		}
		return x
	}
	return redactedValue
}

// stripURLSecrets is raw without its userinfo, query string and fragment: the
// form every admin answer echoes a configured URL in (provider baseUrl,
// target url, the config view). A value that does not parse as a
// hierarchical URL is cut by hand: everything from the first '?' or '#' goes,
// and so does everything between the scheme and the last '@' (all of
// it may be userinfo, since the authority's end cannot be trusted).
func stripURLSecrets(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Opaque == "" {
		u.User = nil
		u.RawQuery = ""
		u.ForceQuery = false
		u.Fragment = ""
		u.RawFragment = ""
		return u.String()
	}
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	if at := strings.LastIndexByte(s[start:], '@'); at >= 0 {
		s = s[:start] + s[start+at+1:]
	}
	return s
}
