package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestGenerateFiltersAndConverts(t *testing.T) {
	in := `{
		"sample_spec": {"litellm_provider": "openai", "mode": "chat", "max_tokens": "set to max"},
		"gpt-5-mini": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 272000, "max_output_tokens": 128000, "input_cost_per_token": 2.5e-07, "output_cost_per_token": 2e-06},
		"claude-sonnet-4-5": {"litellm_provider": "anthropic", "mode": "chat", "max_tokens": 64000, "max_input_tokens": 200000, "max_output_tokens": 64000, "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05},
		"gemini/gemini-2.5-pro": {"litellm_provider": "gemini", "mode": "chat", "max_input_tokens": 1048576},
		"text-embedding-3-small": {"litellm_provider": "openai", "mode": "embedding", "max_input_tokens": 8191, "input_cost_per_token": 2e-08, "output_cost_per_token": 0},
		"dall-e-3": {"litellm_provider": "openai", "mode": "image_generation"},
		"azure/gpt-4o": {"litellm_provider": "azure", "mode": "chat", "max_input_tokens": 128000},
		"deepseek/deepseek-chat": {"litellm_provider": "deepseek", "mode": "chat", "max_input_tokens": 131072, "input_cost_per_token": 2.8e-07, "output_cost_per_token": 4.2e-07},
		"deepseek-chat": {"litellm_provider": "deepseek", "mode": "chat", "max_input_tokens": 1, "input_cost_per_token": 1, "output_cost_per_token": 1},
		"xai/grok-4": {"litellm_provider": "xai", "mode": "chat", "max_tokens": 256000, "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05},
		"moonshot/kimi-k2.5": {"litellm_provider": "moonshot", "mode": "chat", "max_input_tokens": 262144, "max_output_tokens": 0, "input_cost_per_token": 6e-07, "output_cost_per_token": 3e-06},
		"xai/grok-image": {"litellm_provider": "xai", "mode": "image_generation"},
		"groq/llama-3": {"litellm_provider": "groq", "mode": "chat", "max_input_tokens": 8192}
	}`
	src, n, err := generate([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := string(src)
	// The last column is max_output_tokens alone: grok-4's max_tokens is
	// its context (the fallback), never its output cap; a zero is unknown.
	want := []string{
		`"claude-sonnet-4-5\t200000\t3000000\t15000000\t64000\n"`,
		`"gemini-2.5-pro\t1048576\t-\t-\t-\n"`,
		`"gpt-5-mini\t272000\t250000\t2000000\t128000\n"`,
		`"text-embedding-3-small\t8191\t20000\t0\t-\n"`,
		`"deepseek-chat\t131072\t280000\t420000\t-\n"`,
		`"grok-4\t256000\t3000000\t15000000\t-\n"`,
		`"kimi-k2.5\t262144\t600000\t3000000\t-\n"`,
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %s in\n%s", w, out)
		}
	}
	if n != 7 || strings.Contains(out, "dall-e") || strings.Contains(out, "azure") || strings.Contains(out, "grok-image") || strings.Contains(out, "llama-3") {
		t.Fatalf("kept %d rows:\n%s", n, out)
	}
	if !strings.Contains(out, "// Input sha256: ") || regexp.MustCompile(`\d{4}-\d{2}-\d{2}`).MatchString(strings.SplitN(out, "package", 2)[0]) {
		t.Fatalf("header must carry the input digest and no date:\n%s", out)
	}
	for i := 0; i < 20; i++ {
		again, _, _ := generate([]byte(in))
		if string(again) != out {
			t.Fatal("output is not deterministic")
		}
	}
}

// TestGenerateCollisionIsDeterministic: two providers' rows stripping to
// the same id resolve by provider rank, never by map iteration order.
func TestGenerateCollisionIsDeterministic(t *testing.T) {
	in := `{
		"moonshot/shared-model": {"litellm_provider": "moonshot", "mode": "chat", "max_input_tokens": 2, "input_cost_per_token": 2e-06, "output_cost_per_token": 2e-06},
		"shared-model": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 1, "input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06},
		"xai/shared-model": {"litellm_provider": "xai", "mode": "chat", "max_input_tokens": 3, "input_cost_per_token": 3e-06, "output_cost_per_token": 3e-06}
	}`
	for i := 0; i < 20; i++ {
		src, n, err := generate([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || !strings.Contains(string(src), `"shared-model\t1\t1000000\t1000000\t-\n"`) {
			t.Fatalf("kept %d rows:\n%s", n, src)
		}
	}
}
