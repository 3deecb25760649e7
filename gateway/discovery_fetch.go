package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// maxDiscoveryPages bounds pagination so a looping upstream cannot keep a
// refresh running forever.
const maxDiscoveryPages = 50

// fetchModels lists a provider's models through its own endpoint:
// GET /v1/models for openai and anthropic (following has_more/last_id),
// GET /v1beta/models for gemini (following nextPageToken, "models/"
// prefix removed). The result is sorted and de-duplicated.
func fetchModels(ctx context.Context, rt http.RoundTripper, p *providerRuntime) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	cursor := ""
	for page := 0; page < maxDiscoveryPages; page++ {
		ids, next, err := fetchModelPage(ctx, rt, p, cursor)
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(ids); i++ {
			if ids[i] != "" && !hasControlChar(ids[i]) && !seen[ids[i]] {
				seen[ids[i]] = true
				out = append(out, ids[i])
			}
		}
		if next == "" {
			sort.Strings(out)
			return out, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("model listing did not end after %d pages", maxDiscoveryPages)
}

// modelPage is the union of the three providers' listing shapes.
type modelPage struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
	HasMore       bool              `json:"has_more"`
	LastID        string            `json:"last_id"`
	Models        []modelPageGemini `json:"models"`
	NextPageToken string            `json:"nextPageToken"`
}

type modelPageGemini struct {
	Name string `json:"name"`
}

func fetchModelPage(ctx context.Context, rt http.RoundTripper, p *providerRuntime, cursor string) ([]string, string, error) {
	u := p.baseURL + "/v1/models"
	query := url.Values{}
	switch p.kind {
	case providerGemini:
		u = p.baseURL + "/v1beta/models"
		query.Set("pageSize", "1000")
		if cursor != "" {
			query.Set("pageToken", cursor)
		}
	case providerAnthropic:
		query.Set("limit", "1000")
		if cursor != "" {
			query.Set("after_id", cursor)
		}
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var page modelPage
	if err := getProviderJSON(ctx, rt, p, u, "model listing", &page); err != nil {
		return nil, "", err
	}
	var ids []string
	if p.kind == providerGemini {
		for i := 0; i < len(page.Models); i++ {
			ids = append(ids, strings.TrimPrefix(page.Models[i].Name, "models/"))
		}
		return ids, page.NextPageToken, nil
	}
	for i := 0; i < len(page.Data); i++ {
		ids = append(ids, page.Data[i].ID)
	}
	if p.kind == providerAnthropic && page.HasMore && page.LastID != "" && page.LastID != cursor {
		return ids, page.LastID, nil
	}
	return ids, "", nil
}

// lmStudioModels is LM Studio's /api/v0/models shape (the part used).
type lmStudioModels struct {
	Data []struct {
		ID                  string `json:"id"`
		LoadedContextLength int64  `json:"loaded_context_length"`
		MaxContextLength    int64  `json:"max_context_length"`
	} `json:"data"`
}

// fetchContextLengths reads per-model context lengths from a provider's
// metadataPath, preferring loaded_context_length (what is usable now)
// over max_context_length.
func fetchContextLengths(ctx context.Context, rt http.RoundTripper, p *providerRuntime) (map[string]int64, error) {
	var listing lmStudioModels
	if err := getProviderJSON(ctx, rt, p, p.baseURL+p.metadataPath, "metadata listing", &listing); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for i := 0; i < len(listing.Data); i++ {
		m := listing.Data[i]
		switch {
		case m.LoadedContextLength > 0:
			out[m.ID] = m.LoadedContextLength
		case m.MaxContextLength > 0:
			out[m.ID] = m.MaxContextLength
		}
	}
	return out, nil
}

// getProviderJSON GETs a provider URL with the provider's credential and
// decodes a 200 JSON answer (at most 8 MiB) into v; what names the
// listing in errors.
func getProviderJSON(ctx context.Context, rt http.RoundTripper, p *providerRuntime, u, what string, v interface{}) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	p.injectAuth(req.Header)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %d", what, resp.StatusCode)
	}
	data, tooBig, err := readCapped(resp.Body, 8<<20)
	if err != nil {
		return err
	}
	if tooBig {
		return errors.New(what + " is larger than 8 MiB")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errors.New(what + " is not the expected JSON")
	}
	return nil
}
