package integration_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmgateway/llmgateway/integration/mockupstream"
)

// metricsOddModel is a model id with a quote and a backslash, the label
// characters the exposition must escape that a model id can hold: the
// gateway refuses control characters (a newline) in a model id, from
// the configuration and from discovery alike, so none reaches a label
// (the escaping of a newline is unit-tested: TestMetricsLabelEscaping).
const metricsOddModel = "odd\"model\\with a backslash"

// The binary's /metrics, scraped after traffic, parses with Prometheus's
// own text parser, label values escaped (the odd model id round-trips),
// and its counters are the traffic's.
func TestMetricsParseWithExpfmt(t *testing.T) {
	bin := buildGatewayBinary(t)
	mock := mockupstream.New(mockupstream.Options{Models: []string{"gpt-4o-mini", metricsOddModel}, Chunks: 3})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	gw := startGateway(t, bin, map[string]interface{}{
		"providers": map[string]interface{}{
			"mock": map[string]interface{}{"type": "openai", "baseUrl": up.URL, "apiKey": "sk-up", "models": []string{"gpt-4o-mini", metricsOddModel}},
		},
		"groups":  map[string]interface{}{"team": map[string]interface{}{"limits": map[string]interface{}{"tokensPerDay": 1000000}}},
		"users":   map[string]interface{}{"inline": []map[string]interface{}{{"name": "alice", "group": "team", "apiKey": "sk-metrics-alice", "admin": true}}},
		"metrics": map[string]interface{}{"enabled": true, "modelLabel": true},
	})
	chat := func(model string, stream bool) {
		t.Helper()
		body := `{"model":` + jsonString(model) + `,"messages":[{"role":"user","content":"hi"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		req, err := http.NewRequest("POST", gw.URL+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-metrics-alice")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = readAll(resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, model)
	}
	chat("gpt-4o-mini", false)
	chat("gpt-4o-mini", true)
	chat(metricsOddModel, false)

	scrape := func() map[string]*dto.MetricFamily {
		t.Helper()
		req, err := http.NewRequest("GET", gw.URL+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-metrics-alice")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(resp.Body)
		require.NoError(t, err, "the exposition does not parse")
		return families
	}
	// oddAttempts is the odd model's attempt count, -1 when it has no
	// series.
	oddAttempts := func(families map[string]*dto.MetricFamily) float64 {
		if f := families["llmgateway_provider_model_attempts_total"]; f != nil {
			for _, m := range f.Metric {
				if labelOf(m, "model") == metricsOddModel && labelOf(m, "provider") == "mock" {
					return m.GetCounter().GetValue()
				}
			}
		}
		return -1
	}
	// The attempt counters reach the store in the background, within
	// about a second: scrape until they are there (bounded).
	families := scrape()
	for deadline := time.Now().Add(10 * time.Second); oddAttempts(families) != 1 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		families = scrape()
	}
	// The odd model id is one label value, unescaped back to itself.
	assert.Equal(t, 1.0, oddAttempts(families), "the odd model id did not round-trip through the exposition with its one attempt")

	// Three requests by alice: her scope counts them.
	reqs := families["llmgateway_requests_total"]
	require.NotNil(t, reqs)
	var aliceReqs float64
	for _, m := range reqs.Metric {
		if labelOf(m, "scope_kind") == "user" && labelOf(m, "scope_id") == "alice" {
			aliceReqs = m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, 3.0, aliceReqs)
	// The budget ratio is a gauge within [0, 1] for the configured limit.
	ratio := families["llmgateway_budget_consumed_ratio"]
	require.NotNil(t, ratio)
	require.Equal(t, dto.MetricType_GAUGE, ratio.GetType())
	for _, m := range ratio.Metric {
		v := m.GetGauge().GetValue()
		assert.True(t, v > 0 && v <= 1, "ratio %v", v)
	}
	// Histograms parse as histograms, with every request counted.
	dur := families["llmgateway_request_duration_seconds"]
	require.NotNil(t, dur)
	require.Equal(t, dto.MetricType_HISTOGRAM, dur.GetType())
	var n uint64
	for _, m := range dur.Metric {
		n += m.GetHistogram().GetSampleCount()
	}
	assert.Equal(t, uint64(3), n)

	// Prometheus's own linter accepts the exposition.
	promtoolCheck(t, gw.URL+"/metrics", "sk-metrics-alice")
}

// promtoolCheck runs `promtool check metrics` on the scrape of url: a
// failure on any problem it reports. Skipped when promtool is not
// installed, unless LLMGW_REQUIRE_PROMTOOL=1 (CI installs it).
func promtoolCheck(t *testing.T, url, key string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("LLMGW_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("promtool is not installed and LLMGW_REQUIRE_PROMTOOL=1")
		}
		t.Skip("promtool not installed (apt-get install prometheus); LLMGW_REQUIRE_PROMTOOL=1 makes this a failure")
	}
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := readAll(resp)
	require.NoError(t, err)
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s\nexposition:\n%s", out, body)
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func readAll(resp *http.Response) ([]byte, error) {
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b, nil
		}
	}
}
