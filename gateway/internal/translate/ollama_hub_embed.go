package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Ollama embeddings ⇄ hub (OpenAI) embeddings.
//
//   - /api/embed {"model","input": a string or an array of strings,
//     "dimensions"} → {"model","input","dimensions","encoding_format":
//     "float"}; truncate, options and keep_alive are accepted and
//     ignored (the provider truncates, or refuses, as it does);
//   - legacy /api/embeddings {"model","prompt"} → {"model","input":
//     prompt,"encoding_format":"float"}; options and keep_alive ignored;
//   - the answer: /api/embed {"model","embeddings":[[…],…],
//     "total_duration","load_duration","prompt_eval_count"}, the vectors
//     in the hub's index order, each number's text exactly as the
//     upstream sent it; legacy {"embedding":[…]} (the first vector; []
//     when there is none). Base64 vectors (encoding_format "base64":
//     little-endian float32) are decoded to their shortest float32 text.
//     prompt_eval_count is the usage's prompt_tokens (Reported only when
//     the hub counted some tokens: a zero usage means "not counted");
//     total_duration is t.End−t.Start, load_duration 0.

// HubFromOllamaEmbed translates an /api/embed request body (legacy:
// an /api/embeddings body) into a hub embeddings request, and returns
// the client's model string. A body that is not a valid request is a
// 400 naming the field.
func HubFromOllamaEmbed(body []byte, legacy bool) ([]byte, string, *apierr.Error) {
	fields, e := decodeRequestObject(body)
	if e != nil {
		return nil, "", e
	}
	model, e := ollamaInModel(fields["model"])
	if e != nil {
		return nil, "", e
	}
	req := ollamaHubEmbedRequest{Model: model, EncodingFormat: "float"}
	if legacy {
		raw := fields["prompt"]
		if isJSONNull(raw) {
			return nil, "", errInvalidRequest(`"prompt" is required`)
		}
		if _, e := readString(raw, "prompt"); e != nil {
			return nil, "", e
		}
		req.Input = raw
	} else {
		input, e := ollamaEmbedInput(fields["input"])
		if e != nil {
			return nil, "", e
		}
		req.Input = input
		if raw := fields["dimensions"]; !isJSONNull(raw) {
			n, e := readInteger(raw, "dimensions")
			if e != nil {
				return nil, "", e
			}
			if n < 1 {
				return nil, "", errInvalidField("dimensions", "at least 1")
			}
			req.Dimensions = n
		}
	}
	data := encodeJSON(&req)
	if data == nil {
		return nil, "", errInvalidRequest("request could not be translated for the model's provider")
	}
	return data, model, nil
}

// ollamaEmbedInput reads /api/embed's input: a string, or a non-empty
// array of strings.
func ollamaEmbedInput(raw json.RawMessage) (json.RawMessage, *apierr.Error) {
	if isJSONNull(raw) {
		return nil, errInvalidRequest(`"input" is required`)
	}
	if raw[0] == '"' {
		return raw, nil
	}
	var list []string
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return nil, errInvalidField("input", "a string or an array of strings")
	}
	if len(list) == 0 {
		return nil, errInvalidRequest(`"input" must not be empty`)
	}
	return raw, nil
}

// OllamaFromHubEmbeddings translates a hub embeddings response into the
// /api/embed answer (legacy: the /api/embeddings answer) for the
// client's model, and reports its usage. A body that is not an
// embeddings list, or holds a vector that is not numbers, is a 502 of
// class ClassBadResponse; an error body is the provider's error.
func OllamaFromHubEmbeddings(hub []byte, legacy bool, model string, t OllamaTimes) ([]byte, Usage, *apierr.Error) {
	trimmed := bytes.TrimSpace(hub)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Usage{}, hubBadResponse("embeddings answer (not a JSON object)", nil)
	}
	var list ollamaHubEmbeddingList
	if err := json.Unmarshal(trimmed, &list); err != nil {
		return nil, Usage{}, hubBadResponse("embeddings answer", err)
	}
	if !isJSONNull(list.Error) {
		return nil, Usage{}, hubUpstreamError(list.Error, trimmed)
	}
	if list.Data == nil {
		return nil, Usage{}, hubBadResponse("embeddings answer (no data)", nil)
	}
	vectors := make([]json.RawMessage, len(list.Data))
	for i := 0; i < len(list.Data); i++ {
		v, ok := ollamaVector(list.Data[i].Embedding)
		if !ok {
			return nil, Usage{}, hubBadResponse("embedding (not an array of numbers)", nil)
		}
		vectors[i] = v
	}
	vectors = ollamaByIndex(list.Data, vectors)
	var u Usage
	if list.Usage != nil && (list.Usage.PromptTokens > 0 || list.Usage.TotalTokens > 0) {
		u = Usage{PromptTokens: list.Usage.PromptTokens, Reported: true}
		if u.PromptTokens == 0 {
			u.PromptTokens = list.Usage.TotalTokens
		}
	}
	var data []byte
	if legacy {
		first := json.RawMessage(`[]`)
		if len(vectors) > 0 {
			first = vectors[0]
		}
		data = encodeJSON(&ollamaOutLegacyEmbedding{Embedding: first})
	} else {
		total, _ := ollamaSpan(t)
		data = encodeJSON(&ollamaOutEmbed{Model: model, Embeddings: vectors, TotalDuration: total, PromptEvalCount: u.PromptTokens})
	}
	if data == nil {
		return nil, Usage{}, hubBadResponse("embeddings answer", nil)
	}
	return data, u, nil
}

// ollamaVector is one embedding as a JSON array of numbers: the hub's
// own array (checked, kept as it is), or a base64 string of
// little-endian float32s decoded.
func ollamaVector(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		return ollamaVectorFromBase64(jsonStringValue(raw))
	}
	items, ok := parseJSONArray(raw)
	if !ok {
		return nil, false
	}
	for j := 0; j < len(items); j++ {
		if !isJSONNumber(items[j]) {
			return nil, false
		}
	}
	return raw, true
}

// ollamaVectorFromBase64 decodes OpenAI's base64 encoding of a vector.
func ollamaVectorFromBase64(s string) (json.RawMessage, bool) {
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(buf)%4 != 0 {
		return nil, false
	}
	out := make([]byte, 0, 2+len(buf)*3)
	out = append(out, '[')
	for j := 0; j+4 <= len(buf); j += 4 {
		f := math.Float32frombits(binary.LittleEndian.Uint32(buf[j:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, false
		}
		if j > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendFloat(out, float64(f), 'g', -1, 32)
	}
	return json.RawMessage(append(out, ']')), true
}

// ollamaByIndex orders vectors by their data entries' index when the
// indexes are 0..n-1 in any order; otherwise they keep the hub's order.
func ollamaByIndex(data []hubEmbedding, vectors []json.RawMessage) []json.RawMessage {
	sorted := make([]json.RawMessage, len(vectors))
	for i := 0; i < len(data); i++ {
		k := data[i].Index
		if k < 0 || k >= len(sorted) || sorted[k] != nil {
			return vectors
		}
		sorted[k] = vectors[i]
	}
	return sorted
}
