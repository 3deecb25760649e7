package gateway

import "testing"

func TestConfigFromMapLimitsRedisCachePricing(t *testing.T) {
	m := map[string]interface{}{
		"providers":                   map[string]interface{}{"p": map[string]interface{}{"type": "openai", "baseUrl": "http://127.0.0.1:1"}},
		"redis":                       map[string]interface{}{"address": "127.0.0.1:6379", "failOpen": "false", "db": "2", "poolSize": "5", "tls": "true"},
		"cache":                       map[string]interface{}{"enabled": "true", "ttl": "30s", "maxBodyBytes": "2048"},
		"pricing":                     map[string]interface{}{"p/m": map[string]interface{}{"inputPerM": "1.5", "outputPerM": "2"}},
		"retry":                       map[string]interface{}{"enabled": "true", "attempts": "2"},
		"maxInFlightBodyRequests":     "10",
		"allowUnpricedWithCostBudget": "true",
		"groups":                      map[string]interface{}{"g": map[string]interface{}{"cache": "true", "cacheTTL": "10s", "limits": map[string]interface{}{"requestsPerMinute": "5", "costPerDayUSD": "0.5"}}},
	}
	cfg, err := ConfigFromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis.FailOpen == nil || *cfg.Redis.FailOpen || cfg.Redis.DB != 2 || !cfg.Redis.TLS || cfg.Cache.MaxBodyBytes != 2048 || cfg.Pricing["p/m"].InputPerM != 1.5 ||
		cfg.Groups["g"].Limits.CostPerDayUSD != 0.5 || cfg.Groups["g"].Cache == nil || !*cfg.Groups["g"].Cache || cfg.MaxInFlightBodyRequests != 10 || !cfg.AllowUnpricedWithCostBudget || cfg.Retry.Attempts != 2 {
		t.Fatalf("%+v", cfg)
	}
}
