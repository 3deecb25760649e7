package mockupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
)

// The OpenAI embeddings route: deterministic vectors per input.

// embeddingsRequest is the part of an embeddings request the mock reads.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

// embeddingInputs splits an input (string, string[], int[], int[][]) into
// one key per vector and the token count.
func embeddingInputs(raw json.RawMessage) ([]string, int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, 0, false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, len(strings.Fields(one)), true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		n := 0
		for _, s := range many {
			n += len(strings.Fields(s))
		}
		return many, n, len(many) > 0
	}
	var tokens []int64
	if json.Unmarshal(raw, &tokens) == nil {
		return []string{string(raw)}, len(tokens), len(tokens) > 0
	}
	var tokenLists [][]int64
	if json.Unmarshal(raw, &tokenLists) == nil {
		out := make([]string, len(tokenLists))
		n := 0
		for i, t := range tokenLists {
			b, _ := json.Marshal(t)
			out[i] = string(b)
			n += len(t)
		}
		return out, n, len(out) > 0
	}
	return nil, 0, false
}

type embeddingObject struct {
	Object    string      `json:"object"`
	Index     int         `json:"index"`
	Embedding interface{} `json:"embedding"`
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, body []byte) {
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "mock: invalid JSON body: "+err.Error(), "")
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "you must provide a model parameter", "")
		return
	}
	if s.opts.StrictModels && !s.knownModel(req.Model) {
		writeError(w, http.StatusNotFound, "The model '"+req.Model+"' does not exist", "model_not_found")
		return
	}
	inputs, tokens, ok := embeddingInputs(req.Input)
	if !ok {
		writeError(w, http.StatusBadRequest, "'input' must be a string, an array of strings or of token arrays", "")
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		writeError(w, http.StatusBadRequest, "'encoding_format' must be 'float' or 'base64'", "")
		return
	}
	dims := s.opts.Dimensions
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	data := make([]embeddingObject, len(inputs))
	for i, in := range inputs {
		v := Vector(in, dims)
		var emb interface{} = v
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = embeddingObject{Object: "embedding", Index: i, Embedding: emb}
	}
	resp := struct {
		Object string            `json:"object"`
		Model  string            `json:"model"`
		Data   []embeddingObject `json:"data"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model, Data: data}
	resp.Usage.PromptTokens = tokens
	resp.Usage.TotalTokens = tokens
	b, _ := json.Marshal(resp)
	writeJSON(w, http.StatusOK, b)
}
