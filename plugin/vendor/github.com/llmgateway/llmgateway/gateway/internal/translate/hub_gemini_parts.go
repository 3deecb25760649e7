package translate

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// The parts of one OpenAI message → Gemini parts: content (text, images,
// audio, files), an assistant's tool calls and a tool message's output.

// geminiContentParts converts a message's content. User messages may carry
// image, audio and file parts, assistant messages refusal parts, system
// messages text only.
func geminiContentParts(raw json.RawMessage, where string, kind string) ([]geminiWirePart, *apierr.Error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		s, e := readString(raw, where+".content")
		if e != nil {
			return nil, e
		}
		if s == "" {
			return nil, nil
		}
		return []geminiWirePart{{Text: s}}, nil
	}
	arr, ok := parseJSONArray(raw)
	if !ok {
		return nil, errInvalidRequest(`"` + where + `.content" must be a string or an array of content parts`)
	}
	var parts []geminiWirePart
	for j := 0; j < len(arr); j++ {
		pw := where + ".content[" + strconv.Itoa(j) + "]"
		p, typ, e := readContentPart(arr[j], pw)
		if e != nil {
			return nil, e
		}
		part, keep, e := geminiContentPart(p, typ, pw, kind)
		if e != nil {
			return nil, e
		}
		if keep {
			parts = append(parts, part)
		}
	}
	return parts, nil
}

// geminiContentPart converts one content part of type typ in a message
// of kind (system, user or assistant); the bool is false for empty text,
// which makes no part.
func geminiContentPart(p map[string]json.RawMessage, typ, pw, kind string) (geminiWirePart, bool, *apierr.Error) {
	media := kind == "user"
	switch {
	case typ == "text":
		return geminiTextPart(p["text"], pw+".text")
	case typ == "refusal" && kind == "assistant":
		return geminiTextPart(p["refusal"], pw+".refusal")
	case typ == "image_url" && media:
		part, e := geminiImagePart(p["image_url"], pw)
		return part, e == nil, e
	case typ == "input_audio" && media:
		part, e := geminiAudioPart(p["input_audio"], pw)
		return part, e == nil, e
	case typ == "file" && media:
		part, e := geminiFilePart(p["file"], pw)
		return part, e == nil, e
	}
	return geminiWirePart{}, false, geminiUnsupported(`"` + pw + `.type" "` + typ + `" is not supported in this message for Gemini models`)
}

// geminiTextPart is a text part; the bool is false for empty text.
func geminiTextPart(raw json.RawMessage, path string) (geminiWirePart, bool, *apierr.Error) {
	s, e := readString(raw, path)
	if e != nil {
		return geminiWirePart{}, false, e
	}
	return geminiWirePart{Text: s}, s != "", nil
}

// geminiMimeTypeFromPath guesses a MIME type from a URL path or file name.
func geminiMimeTypeFromPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	dot := strings.LastIndexByte(p, '.')
	if dot < 0 || strings.IndexByte(p[dot:], '/') >= 0 {
		return ""
	}
	switch strings.ToLower(p[dot+1:]) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	case "gif":
		return "image/gif"
	case "heic":
		return "image/heic"
	case "heif":
		return "image/heif"
	case "pdf":
		return "application/pdf"
	case "txt":
		return "text/plain"
	case "wav":
		return "audio/wav"
	case "mp3":
		return "audio/mp3"
	}
	return ""
}

// geminiImagePart converts an image_url: a base64 data URL to inline
// data, an http(s) URL to file data Gemini fetches.
func geminiImagePart(raw json.RawMessage, where string) (geminiWirePart, *apierr.Error) {
	obj, ok := parseJSONObject(raw)
	if !ok {
		return geminiWirePart{}, errInvalidRequest(`"` + where + `.image_url" must be an object`)
	}
	url, e := readString(obj["url"], where+".image_url.url")
	if e != nil {
		return geminiWirePart{}, e
	}
	if hasDataScheme(url) {
		mime, data, ok := parseDataURL(url)
		if !ok {
			return geminiWirePart{}, errInvalidRequest(`"` + where + `.image_url.url" must be a base64 data URL ("data:<mime>;base64,<data>") or an http(s) URL`)
		}
		return geminiWirePart{InlineData: &geminiWireBlob{MimeType: mime, Data: data}}, nil
	}
	lower := strings.ToLower(url)
	if strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") {
		mime := geminiMimeTypeFromPath(url)
		if mime == "" {
			mime = "image/jpeg"
		}
		return geminiWirePart{FileData: &geminiWireFileData{MimeType: mime, FileURI: url}}, nil
	}
	return geminiWirePart{}, errInvalidRequest(`"` + where + `.image_url.url" must be a base64 data URL or an http(s) URL`)
}

// geminiAudioPart converts input_audio (wav or mp3) to inline data.
func geminiAudioPart(raw json.RawMessage, where string) (geminiWirePart, *apierr.Error) {
	obj, ok := parseJSONObject(raw)
	if !ok {
		return geminiWirePart{}, errInvalidRequest(`"` + where + `.input_audio" must be an object`)
	}
	data, e := readString(obj["data"], where+".input_audio.data")
	if e != nil {
		return geminiWirePart{}, e
	}
	format, e := readString(obj["format"], where+".input_audio.format")
	if e != nil {
		return geminiWirePart{}, e
	}
	mime := ""
	switch format {
	case "wav":
		mime = "audio/wav"
	case "mp3":
		mime = "audio/mp3"
	default:
		return geminiWirePart{}, geminiUnsupported(`"` + where + `.input_audio.format" "` + format + `" is not supported (use "wav" or "mp3")`)
	}
	if data == "" {
		return geminiWirePart{}, errInvalidRequest(`"` + where + `.input_audio.data" must not be empty`)
	}
	return geminiWirePart{InlineData: &geminiWireBlob{MimeType: mime, Data: data}}, nil
}

// geminiFilePart converts a file part's file_data (a base64 data URL,
// or bare base64 with a filename of a known type) to inline data.
func geminiFilePart(raw json.RawMessage, where string) (geminiWirePart, *apierr.Error) {
	obj, ok := parseJSONObject(raw)
	if !ok {
		return geminiWirePart{}, errInvalidRequest(`"` + where + `.file" must be an object`)
	}
	if !isJSONNull(obj["file_id"]) {
		return geminiWirePart{}, geminiUnsupported(`"` + where + `.file.file_id" is not supported for Gemini models; send "file_data"`)
	}
	data, e := readString(obj["file_data"], where+".file.file_data")
	if e != nil {
		return geminiWirePart{}, e
	}
	if hasDataScheme(data) {
		mime, b64, ok := parseDataURL(data)
		if !ok {
			return geminiWirePart{}, errInvalidRequest(`"` + where + `.file.file_data" is not a base64 data URL`)
		}
		return geminiWirePart{InlineData: &geminiWireBlob{MimeType: mime, Data: b64}}, nil
	}
	name := ""
	if raw := obj["filename"]; !isJSONNull(raw) {
		fn, fe := readString(raw, where+".file.filename")
		if fe != nil {
			return geminiWirePart{}, fe
		}
		name = fn
	}
	mime := geminiMimeTypeFromPath(name)
	if mime == "" || data == "" {
		return geminiWirePart{}, errInvalidRequest(`"` + where + `.file.file_data" must be a base64 data URL, or base64 with a "filename" of a known type`)
	}
	return geminiWirePart{InlineData: &geminiWireBlob{MimeType: mime, Data: data}}, nil
}

// geminiFunctionCallParts converts an assistant's tool_calls into
// functionCall parts (arguments must be a JSON object), restores each
// call's thought signature from its id, and records the function name of
// each id in names.
func geminiFunctionCallParts(raw json.RawMessage, where string, names map[string]string) ([]geminiWirePart, *apierr.Error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	arr, ok := parseJSONArray(raw)
	if !ok {
		return nil, errInvalidRequest(`"` + where + `.tool_calls" must be an array`)
	}
	var parts []geminiWirePart
	for j := 0; j < len(arr); j++ {
		cw := where + ".tool_calls[" + strconv.Itoa(j) + "]"
		call, ok := parseJSONObject(arr[j])
		if !ok {
			return nil, errInvalidRequest(`"` + cw + `" must be an object`)
		}
		if t := call["type"]; !isJSONNull(t) {
			typ, e := readString(t, cw+".type")
			if e != nil {
				return nil, e
			}
			if typ != "function" {
				return nil, geminiUnsupported(`"` + cw + `.type" "` + typ + `" is not supported for Gemini models`)
			}
		}
		fn, ok := parseJSONObject(call["function"])
		if !ok {
			return nil, errInvalidRequest(`"` + cw + `.function" must be an object`)
		}
		name, e := readString(fn["name"], cw+".function.name")
		if e != nil {
			return nil, e
		}
		if name == "" {
			return nil, errInvalidRequest(`"` + cw + `.function.name" must not be empty`)
		}
		args := json.RawMessage("{}")
		if raw := fn["arguments"]; !isJSONNull(raw) {
			s, e := readString(raw, cw+".function.arguments")
			if e != nil {
				return nil, e
			}
			s = strings.TrimSpace(s)
			if s != "" {
				if s[0] != '{' || !json.Valid([]byte(s)) {
					return nil, errInvalidRequest(`"` + cw + `.function.arguments" must be a JSON object encoded as a string`)
				}
				args = json.RawMessage(s)
			}
		}
		signature := ""
		if rawID := call["id"]; !isJSONNull(rawID) {
			id, e := readString(rawID, cw+".id")
			if e != nil {
				return nil, e
			}
			names[id] = name
			signature = geminiSignatureFromID(id)
		}
		parts = append(parts, geminiWirePart{FunctionCall: &geminiWireFunctionCall{Name: name, Args: args}, ThoughtSignature: signature})
	}
	return parts, nil
}

// geminiToolOutput turns a tool message's content into functionResponse
// output: a JSON object as is, anything else as a string.
func geminiToolOutput(raw json.RawMessage, where string) (json.RawMessage, *apierr.Error) {
	text := ""
	switch {
	case isJSONNull(raw):
	case raw[0] == '"':
		s, e := readString(raw, where+".content")
		if e != nil {
			return nil, e
		}
		text = s
	default:
		arr, ok := parseJSONArray(raw)
		if !ok {
			return nil, errInvalidRequest(`"` + where + `.content" must be a string or an array of text parts`)
		}
		var sb strings.Builder
		for j := 0; j < len(arr); j++ {
			pw := where + ".content[" + strconv.Itoa(j) + "]"
			p, typ, e := readContentPart(arr[j], pw)
			if e != nil {
				return nil, e
			}
			if typ != "text" {
				return nil, geminiUnsupported(`"` + pw + `.type" "` + typ + `" is not supported in a tool message for Gemini models`)
			}
			s, e := readString(p["text"], pw+".text")
			if e != nil {
				return nil, e
			}
			sb.WriteString(s)
		}
		text = sb.String()
	}
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed), nil
	}
	return quoteJSON(text), nil
}
