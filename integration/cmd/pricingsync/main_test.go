package main

import (
	"strings"
	"testing"
)

func TestGenerateFiltersAndConverts(t *testing.T) {
	in := `{
		"sample_spec": {"litellm_provider": "openai", "mode": "chat", "max_tokens": "set to max"},
		"gpt-5-mini": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 272000, "input_cost_per_token": 2.5e-07, "output_cost_per_token": 2e-06},
		"claude-sonnet-4-5": {"litellm_provider": "anthropic", "mode": "chat", "max_tokens": 64000, "max_input_tokens": 200000, "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05},
		"gemini/gemini-2.5-pro": {"litellm_provider": "gemini", "mode": "chat", "max_input_tokens": 1048576},
		"text-embedding-3-small": {"litellm_provider": "openai", "mode": "embedding", "max_input_tokens": 8191, "input_cost_per_token": 2e-08, "output_cost_per_token": 0},
		"dall-e-3": {"litellm_provider": "openai", "mode": "image_generation"},
		"azure/gpt-4o": {"litellm_provider": "azure", "mode": "chat", "max_input_tokens": 128000}
	}`
	src, n, err := generate([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := string(src)
	want := []string{
		`"claude-sonnet-4-5\t200000\t3000000\t15000000\n"`,
		`"gemini-2.5-pro\t1048576\t-\t-\n"`,
		`"gpt-5-mini\t272000\t250000\t2000000\n"`,
		`"text-embedding-3-small\t8191\t20000\t0\n"`,
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %s in\n%s", w, out)
		}
	}
	if n != 4 || strings.Contains(out, "dall-e") || strings.Contains(out, "azure") {
		t.Fatalf("kept %d rows:\n%s", n, out)
	}
	again, _, _ := generate([]byte(in))
	if string(again) != out {
		t.Fatal("output is not deterministic")
	}
}
