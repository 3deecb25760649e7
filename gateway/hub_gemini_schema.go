package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSON Schema → Gemini's schema subset.

// geminiEmptyObjectSchema reports whether a parameters schema is an object
// that declares no properties (Gemini rejects an OBJECT without
// properties; such a function takes no arguments).
func geminiEmptyObjectSchema(raw json.RawMessage) bool {
	keys, vals, ok := parseJSONOrderedObject(raw)
	if !ok {
		return false
	}
	isObject := false
	for i := 0; i < len(keys); i++ {
		var compact bytes.Buffer
		if json.Compact(&compact, vals[i]) != nil {
			return false
		}
		v := compact.String()
		switch keys[i] {
		case "type":
			if v != `"object"` {
				return false
			}
			isObject = true
		case "properties", "required":
			if v != "{}" && v != "[]" {
				return false
			}
		case "additionalProperties":
			if v != "false" && v != "true" {
				return false
			}
		case "$schema", "$id", "$comment", "title", "description", "strict":
		default:
			return false
		}
	}
	return isObject
}

func geminiSchemaType(raw json.RawMessage) (string, bool, bool) {
	upper := func(t string) string {
		switch t {
		case "string", "number", "integer", "boolean", "array", "object", "null":
			return strings.ToUpper(t)
		}
		return ""
	}
	if len(raw) > 0 && raw[0] == '"' {
		var t string
		if json.Unmarshal(raw, &t) != nil {
			return "", false, false
		}
		u := upper(t)
		return u, false, u != ""
	}
	arr, ok := parseJSONArray(raw)
	if !ok {
		return "", false, false
	}
	nullable := false
	typ := ""
	for i := 0; i < len(arr); i++ {
		var t string
		if len(arr[i]) == 0 || arr[i][0] != '"' || json.Unmarshal(arr[i], &t) != nil {
			return "", false, false
		}
		if t == "null" {
			nullable = true
			continue
		}
		if typ != "" {
			return "", false, false
		}
		typ = upper(t)
		if typ == "" {
			return "", false, false
		}
	}
	if typ == "" {
		return "", false, false
	}
	return typ, nullable, true
}

// geminiConvertSchema converts a JSON Schema to Gemini's Schema, or
// reports false when the schema uses anything outside the subset (the
// caller then sends it verbatim as a JSON Schema). ordering adds
// propertyOrdering so Gemini keeps the declared property order.
func geminiConvertSchema(raw json.RawMessage, depth int, ordering bool) (json.RawMessage, bool) {
	if depth > 32 {
		return nil, false
	}
	keys, vals, ok := parseJSONOrderedObject(raw)
	if !ok {
		return nil, false
	}
	hasKey := func(k string) bool {
		for i := 0; i < len(keys); i++ {
			if keys[i] == k {
				return true
			}
		}
		return false
	}
	if !hasKey("type") && !hasKey("anyOf") {
		return nil, false
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	write := func(k string, v []byte) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(quoteJSON(k))
		buf.WriteByte(':')
		buf.Write(v)
	}
	isObject := false
	var propNames []string
	for i := 0; i < len(keys); i++ {
		k, v := keys[i], vals[i]
		switch k {
		case "type":
			t, nullable, ok := geminiSchemaType(v)
			if !ok {
				return nil, false
			}
			write("type", quoteJSON(t))
			if nullable && !hasKey("nullable") {
				write("nullable", []byte("true"))
			}
			isObject = t == "OBJECT"
		case "format":
			var f string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &f) != nil {
				return nil, false
			}
			switch f {
			case "enum", "date-time", "float", "double", "int32", "int64":
				write(k, v)
			}
		case "description", "title", "pattern":
			if len(v) == 0 || v[0] != '"' {
				return nil, false
			}
			write(k, v)
		case "nullable":
			if string(v) != "true" && string(v) != "false" {
				return nil, false
			}
			write(k, v)
		case "enum", "required", "propertyOrdering":
			if !isJSONStringArray(v) {
				return nil, false
			}
			write(k, v)
		case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minimum", "maximum":
			if !isJSONNumber(v) {
				return nil, false
			}
			write(k, v)
		case "default", "example":
			write(k, v)
		case "items":
			conv, ok := geminiConvertSchema(v, depth+1, ordering)
			if !ok {
				return nil, false
			}
			write(k, conv)
		case "properties":
			pk, pv, ok := parseJSONOrderedObject(v)
			if !ok {
				return nil, false
			}
			var pb bytes.Buffer
			pb.WriteByte('{')
			for j := 0; j < len(pk); j++ {
				conv, ok := geminiConvertSchema(pv[j], depth+1, ordering)
				if !ok {
					return nil, false
				}
				if j > 0 {
					pb.WriteByte(',')
				}
				pb.Write(quoteJSON(pk[j]))
				pb.WriteByte(':')
				pb.Write(conv)
			}
			pb.WriteByte('}')
			write(k, pb.Bytes())
			propNames = pk
		case "anyOf":
			arr, ok := parseJSONArray(v)
			if !ok || len(arr) == 0 {
				return nil, false
			}
			var ab bytes.Buffer
			ab.WriteByte('[')
			for j := 0; j < len(arr); j++ {
				conv, ok := geminiConvertSchema(arr[j], depth+1, ordering)
				if !ok {
					return nil, false
				}
				if j > 0 {
					ab.WriteByte(',')
				}
				ab.Write(conv)
			}
			ab.WriteByte(']')
			write(k, ab.Bytes())
		case "additionalProperties":
			if string(v) != "true" && string(v) != "false" {
				return nil, false
			}
		case "$schema", "$id", "$comment", "examples", "readOnly", "writeOnly", "deprecated", "strict":
		default:
			return nil, false
		}
	}
	if isObject && len(propNames) == 0 {
		return nil, false
	}
	if ordering && len(propNames) > 1 && !hasKey("propertyOrdering") {
		write("propertyOrdering", encodeJSON(propNames))
	}
	buf.WriteByte('}')
	return json.RawMessage(buf.Bytes()), true
}

// ---------------------------------------------------------------------
// Gemini response shapes
