package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// jsonRequest is a client's JSON request body, kept as the exact bytes
// it arrived as, plus the location of its top-level "model" value so the
// model can be rewritten without touching any other byte (an unknown
// field or a 20-digit integer reaches the upstream exactly as sent).
type jsonRequest struct {
	raw        []byte
	model      string
	modelStart int // byte span of the model value (including quotes)
	modelEnd   int
}

var errBodyNotObject = errors.New("request body must be a JSON object")

// parseJSONRequest validates that body is one JSON object and locates
// its top-level "model" string. A duplicate "model" key is refused: the
// gateway would authorize one value while an upstream might read the
// other.
func parseJSONRequest(body []byte) (*jsonRequest, *apiError) {
	req := &jsonRequest{raw: body, modelStart: -1}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, errBadRequest("invalid_json", "request body is not valid JSON: "+jsonErrorText(err))
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return nil, errBadRequest("invalid_json", errBodyNotObject.Error())
	}
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return nil, errBadRequest("invalid_json", "request body is not valid JSON: "+jsonErrorText(err))
		}
		key, _ := keyTok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, errBadRequest("invalid_json", "request body is not valid JSON: "+jsonErrorText(err))
		}
		if !strings.EqualFold(key, "model") {
			continue
		}
		if key != "model" {
			// Case-insensitive decoders (Go's encoding/json, used by Go
			// upstreams such as Ollama) would read this key as the model.
			return nil, errBadRequest("invalid_request", `request body has a "`+key+`" field; the model field is spelled "model"`)
		}
		if req.modelStart >= 0 {
			return nil, errBadRequest("invalid_request", `request body has more than one "model" field`)
		}
		var model string
		if err := json.Unmarshal(value, &model); err != nil {
			return nil, errBadRequest("invalid_model", `"model" must be a string`)
		}
		req.model = model
		req.modelEnd = int(dec.InputOffset())
		req.modelStart = req.modelEnd - len(value)
	}
	if _, err := dec.Token(); err != nil {
		return nil, errBadRequest("invalid_json", "request body is not valid JSON: "+jsonErrorText(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errBadRequest("invalid_json", "request body has data after the JSON object")
	}
	if req.modelStart < 0 || req.model == "" {
		return nil, errBadRequest("missing_model", `request body needs a non-empty "model" field`)
	}
	return req, nil
}

// withModel returns the body with the model value replaced by model,
// every other byte unchanged. When the model is unchanged the original
// slice is returned.
func (j *jsonRequest) withModel(model string) []byte {
	if model == j.model {
		return j.raw
	}
	quoted, _ := json.Marshal(model)
	out := make([]byte, 0, len(j.raw)-(j.modelEnd-j.modelStart)+len(quoted))
	out = append(out, j.raw[:j.modelStart]...)
	out = append(out, quoted...)
	out = append(out, j.raw[j.modelEnd:]...)
	return out
}

func jsonErrorText(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of input"
	}
	msg := err.Error()
	if len(msg) > 5 && msg[:5] == "json:" {
		return msg[6:]
	}
	return msg
}
