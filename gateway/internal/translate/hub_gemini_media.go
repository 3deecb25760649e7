package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Hub embeddings and images/generations ⇄ Gemini embedContent /
// batchEmbedContents and Imagen predict.

// GeminiEmbedRequest translates an OpenAI embeddings request into an
// :embedContent body (a string input) or a :batchEmbedContents body (an
// array input; the bool, batch, is then true). Token-array inputs are a
// 400; dimensions maps to outputDimensionality. encoding_format "float"
// and "base64" are accepted: Gemini returns floats, and for "base64" the
// pipeline re-encodes the translated response with GeminiEmbedBase64.
func GeminiEmbedRequest(body []byte, upstreamModel string) ([]byte, bool, *apierr.Error) {
	top, e := decodeRequestObject(body)
	if e != nil {
		return nil, false, e
	}
	model := upstreamModel
	if !strings.HasPrefix(model, "models/") && !strings.HasPrefix(model, "tunedModels/") {
		model = "models/" + model
	}
	var dims int64
	if raw := top["dimensions"]; !isJSONNull(raw) {
		d, de := readInteger(raw, "dimensions")
		if de != nil {
			return nil, false, de
		}
		dims = d
		if dims < 1 {
			return nil, false, errInvalidRequest(`"dimensions" must be at least 1`)
		}
	}
	if raw := top["encoding_format"]; !isJSONNull(raw) {
		f, e := readString(raw, "encoding_format")
		if e != nil {
			return nil, false, e
		}
		if f != "float" && f != "base64" {
			return nil, false, apierr.BadRequest("unsupported_value", `"encoding_format" must be "float" or "base64"`)
		}
	}
	one := func(text string) geminiWireEmbedRequest {
		return geminiWireEmbedRequest{Model: model, Content: geminiWireContent{Parts: []geminiWirePart{{Text: text}}}, OutputDimensionality: dims}
	}
	raw := top["input"]
	if isJSONNull(raw) {
		return nil, false, errInvalidRequest(`"input" is required`)
	}
	if raw[0] == '"' {
		s, e := readString(raw, "input")
		if e != nil {
			return nil, false, e
		}
		if s == "" {
			return nil, false, errInvalidRequest(`"input" must not be empty`)
		}
		return encodeJSON(one(s)), false, nil
	}
	arr, ok := parseJSONArray(raw)
	if !ok {
		return nil, false, errInvalidRequest(`"input" must be a string or an array of strings`)
	}
	if len(arr) == 0 {
		return nil, false, errInvalidRequest(`"input" must not be empty`)
	}
	reqs := make([]geminiWireEmbedRequest, 0, len(arr))
	for i := 0; i < len(arr); i++ {
		where := "input[" + strconv.Itoa(i) + "]"
		if len(arr[i]) == 0 || arr[i][0] != '"' {
			return nil, false, geminiUnsupported(`"input" as token arrays is not supported for Gemini models (` + where + ` is not a string)`)
		}
		s, e := readString(arr[i], where)
		if e != nil {
			return nil, false, e
		}
		if s == "" {
			return nil, false, errInvalidRequest(`"` + where + `" must not be empty`)
		}
		reqs = append(reqs, one(s))
	}
	return encodeJSON(geminiWireBatchEmbedRequest{Requests: reqs}), true, nil
}

// GeminiEmbedResponse translates an :embedContent (batch=false) or
// :batchEmbedContents (batch=true) response. The float values keep the
// exact text the upstream sent. Gemini reports no token counts, so the
// body's usage is zero and the returned Usage has Reported false.
func GeminiEmbedResponse(body []byte, tc Context, batch bool) ([]byte, Usage, *apierr.Error) {
	var r geminiWireEmbedResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, Usage{}, geminiBadResponse(err)
	}
	if !isJSONNull(r.Error) {
		return nil, Usage{}, geminiUpstreamError(r.Error, body)
	}
	var list []geminiWireEmbedding
	if batch {
		if len(r.Embeddings) == 0 {
			return nil, Usage{}, geminiBadResponse(nil)
		}
		list = r.Embeddings
	} else {
		if r.Embedding == nil {
			return nil, Usage{}, geminiBadResponse(nil)
		}
		list = []geminiWireEmbedding{*r.Embedding}
	}
	out := hubEmbeddingList{Object: "list", Model: tc.RequestedModel, Data: make([]hubEmbedding, 0, len(list)),
		Usage: encodeJSON(hubEmbeddingUsage{})}
	for i := 0; i < len(list); i++ {
		vals := list[i].Values
		if vals == nil {
			return nil, Usage{}, geminiBadResponse(nil)
		}
		for j := 0; j < len(vals); j++ {
			if vals[j] == "" {
				return nil, Usage{}, geminiBadResponse(nil)
			}
		}
		embedding := encodeJSON(vals)
		if embedding == nil {
			return nil, Usage{}, geminiBadResponse(nil)
		}
		out.Data = append(out.Data, hubEmbedding{Object: "embedding", Index: i, Embedding: embedding})
	}
	data := encodeJSON(out)
	if data == nil {
		return nil, Usage{}, geminiBadResponse(nil)
	}
	return data, Usage{}, nil
}

// GeminiEmbedWantsBase64 reports whether an OpenAI embeddings request
// asked for encoding_format "base64".
func GeminiEmbedWantsBase64(body []byte) bool {
	var req struct {
		EncodingFormat string `json:"encoding_format"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	return req.EncodingFormat == "base64"
}

// GeminiEmbedBase64 rewrites an OpenAI embeddings response's float
// arrays as base64 of little-endian float32, OpenAI's
// encoding_format "base64".
func GeminiEmbedBase64(body []byte) ([]byte, *apierr.Error) {
	var in hubEmbeddingList
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, geminiBadResponse(err)
	}
	for i := 0; i < len(in.Data); i++ {
		var nums []json.Number
		if err := json.Unmarshal(in.Data[i].Embedding, &nums); err != nil {
			return nil, geminiBadResponse(err)
		}
		buf := make([]byte, 4*len(nums))
		for j := 0; j < len(nums); j++ {
			f, err := strconv.ParseFloat(string(nums[j]), 32)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, geminiBadResponse(err)
			}
			binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(float32(f)))
		}
		in.Data[i].Embedding = quoteJSON(base64.StdEncoding.EncodeToString(buf))
	}
	return encodeJSON(in), nil
}

// ---------------------------------------------------------------------
// Images (Imagen :predict)

// GeminiImageRequest translates an OpenAI images/generations request
// into an Imagen :predict body: n → sampleCount (default 1), size →
// aspectRatio (1024x1024/512x512 → 1:1, 1792x1024 → 16:9, 1024x1792 →
// 9:16, absent → 1:1, anything else a 400). response_format "url", a
// truthy quality or style, and a missing prompt are 400s; other fields
// are ignored.
func GeminiImageRequest(body []byte) ([]byte, *apierr.Error) {
	top, e := decodeRequestObject(body)
	if e != nil {
		return nil, e
	}
	raw := top["prompt"]
	if isJSONNull(raw) {
		return nil, errInvalidRequest(`"prompt" is required`)
	}
	prompt, e := readString(raw, "prompt")
	if e != nil {
		return nil, e
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, errInvalidRequest(`"prompt" must not be empty`)
	}
	if isJSONTruthy(top["quality"]) {
		return nil, geminiUnsupported(`"quality" is not supported for Gemini (Imagen) models`)
	}
	if isJSONTruthy(top["style"]) {
		return nil, geminiUnsupported(`"style" is not supported for Gemini (Imagen) models`)
	}
	if raw := top["response_format"]; !isJSONNull(raw) {
		f, e := readString(raw, "response_format")
		if e != nil {
			return nil, e
		}
		switch f {
		case "b64_json":
		case "url":
			return nil, geminiUnsupported(`"response_format": "url" is not supported for Gemini (Imagen) models; use "b64_json"`)
		default:
			return nil, apierr.BadRequest("unsupported_value", `"response_format" must be "b64_json" or "url"`)
		}
	}
	n := int64(1)
	if raw := top["n"]; !isJSONNull(raw) {
		v, ne := readInteger(raw, "n")
		if ne != nil {
			return nil, ne
		}
		n = v
		if n < 1 {
			return nil, errInvalidRequest(`"n" must be at least 1`)
		}
	}
	ratio := "1:1"
	if raw := top["size"]; !isJSONNull(raw) {
		size, e := readString(raw, "size")
		if e != nil {
			return nil, e
		}
		switch size {
		case "1024x1024", "512x512":
		case "1792x1024":
			ratio = "16:9"
		case "1024x1792":
			ratio = "9:16"
		default:
			return nil, apierr.BadRequest("unsupported_value", `"size" "`+size+`" is not supported for Gemini (Imagen) models (use 1024x1024, 512x512, 1792x1024 or 1024x1792)`)
		}
	}
	req := geminiWireImageRequest{
		Instances:  []geminiWireImageInstance{{Prompt: prompt}},
		Parameters: geminiWireImageParameters{SampleCount: n, AspectRatio: ratio},
	}
	return encodeJSON(req), nil
}

// GeminiImageResponse translates an Imagen :predict response into
// the hub's {"created","data":[{"b64_json"}]}. Predictions Imagen
// filtered (no image bytes) are skipped; when nothing is left the
// request was blocked, a 400 content_policy_violation.
func GeminiImageResponse(body []byte, created int64) ([]byte, *apierr.Error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, geminiBadResponse(nil)
	}
	var r geminiWirePredictResponse
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, geminiBadResponse(err)
	}
	if !isJSONNull(r.Error) {
		return nil, geminiUpstreamError(r.Error, body)
	}
	out := hubImageList{Created: created, Data: []hubImage{}}
	for i := 0; i < len(r.Predictions); i++ {
		p := r.Predictions[i]
		if p.BytesBase64Encoded == nil || *p.BytesBase64Encoded == "" {
			continue
		}
		out.Data = append(out.Data, hubImage{B64JSON: *p.BytesBase64Encoded})
	}
	if len(out.Data) == 0 {
		return nil, apierr.BadRequest("content_policy_violation",
			"the image request was blocked by the provider's safety filters (no image was returned)")
	}
	return encodeJSON(out), nil
}
