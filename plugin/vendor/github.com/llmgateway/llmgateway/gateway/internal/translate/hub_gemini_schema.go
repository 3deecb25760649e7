package translate

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSON Schema → Gemini's Schema (an OpenAPI 3.0 subset), for function
// parameters and json_schema response formats.

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

// geminiSchemaType reads a schema's type: a type name, or a list of one
// type name and "null". It returns the upper-cased Gemini type, whether
// the list allowed null, and false for anything else.
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

// geminiMaxSchemaDepth bounds the nesting geminiConvertSchema follows;
// a deeper schema is sent verbatim as a JSON Schema.
const geminiMaxSchemaDepth = 32

// geminiConvertSchema converts a JSON Schema to Gemini's Schema, or
// reports false when the schema uses anything outside the subset (the
// caller then sends it verbatim as a JSON Schema). ordering adds
// propertyOrdering so Gemini keeps the declared property order.
func geminiConvertSchema(raw json.RawMessage, depth int, ordering bool) (json.RawMessage, bool) {
	if depth > geminiMaxSchemaDepth {
		return nil, false
	}
	keys, vals, ok := parseJSONOrderedObject(raw)
	if !ok {
		return nil, false
	}
	if !containsString(keys, "type") && !containsString(keys, "anyOf") {
		return nil, false
	}
	c := &geminiSchemaConverter{keys: keys, depth: depth, ordering: ordering}
	c.buf.WriteByte('{')
	for i := 0; i < len(keys); i++ {
		if !c.keyword(keys[i], vals[i]) {
			return nil, false
		}
	}
	if c.isObject && len(c.propNames) == 0 {
		return nil, false
	}
	if ordering && len(c.propNames) > 1 && !containsString(keys, "propertyOrdering") {
		c.write("propertyOrdering", encodeJSON(c.propNames))
	}
	c.buf.WriteByte('}')
	return json.RawMessage(c.buf.Bytes()), true
}

// geminiSchemaConverter writes one schema object, keyword by keyword in
// the source order.
type geminiSchemaConverter struct {
	keys      []string // the source schema's keywords
	depth     int
	ordering  bool
	buf       bytes.Buffer
	members   int // members written so far
	isObject  bool
	propNames []string // the properties, in the source order
}

// write appends the member "k":v.
func (c *geminiSchemaConverter) write(k string, v []byte) {
	if c.members > 0 {
		c.buf.WriteByte(',')
	}
	c.members++
	c.buf.Write(quoteJSON(k))
	c.buf.WriteByte(':')
	c.buf.Write(v)
}

// writeIf writes "k":v when valid, and reports valid.
func (c *geminiSchemaConverter) writeIf(valid bool, k string, v []byte) bool {
	if valid {
		c.write(k, v)
	}
	return valid
}

// keyword converts one keyword, reporting false when it (or its value)
// is outside Gemini's subset. Annotations Gemini does not take are
// dropped.
func (c *geminiSchemaConverter) keyword(k string, v json.RawMessage) bool {
	switch k {
	case "type":
		return c.typeKeyword(v)
	case "format":
		return c.format(v)
	case "description", "title", "pattern":
		return c.writeIf(len(v) > 0 && v[0] == '"', k, v)
	case "nullable":
		return c.writeIf(isJSONBool(v), k, v)
	case "enum", "required", "propertyOrdering":
		return c.writeIf(isJSONStringArray(v), k, v)
	case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minimum", "maximum":
		return c.writeIf(isJSONNumber(v), k, v)
	case "default", "example":
		c.write(k, v)
		return true
	case "items":
		conv, ok := geminiConvertSchema(v, c.depth+1, c.ordering)
		return c.writeIf(ok, k, conv)
	case "properties":
		return c.properties(v)
	case "anyOf":
		return c.anyOf(v)
	case "additionalProperties":
		return isJSONBool(v)
	case "$schema", "$id", "$comment", "examples", "readOnly", "writeOnly", "deprecated", "strict":
		return true
	}
	return false
}

// typeKeyword writes the upper-cased type; ["T","null"] also writes
// nullable, unless the schema sets nullable itself.
func (c *geminiSchemaConverter) typeKeyword(v json.RawMessage) bool {
	t, nullable, ok := geminiSchemaType(v)
	if !ok {
		return false
	}
	c.write("type", quoteJSON(t))
	if nullable && !containsString(c.keys, "nullable") {
		c.write("nullable", []byte("true"))
	}
	c.isObject = t == "OBJECT"
	return true
}

// format keeps the formats Gemini knows and drops the others.
func (c *geminiSchemaConverter) format(v json.RawMessage) bool {
	var f string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &f) != nil {
		return false
	}
	switch f {
	case "enum", "date-time", "float", "double", "int32", "int64":
		c.write("format", v)
	}
	return true
}

// properties converts every property's schema.
func (c *geminiSchemaConverter) properties(v json.RawMessage) bool {
	names, schemas, ok := parseJSONOrderedObject(v)
	if !ok {
		return false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i < len(names); i++ {
		conv, ok := geminiConvertSchema(schemas[i], c.depth+1, c.ordering)
		if !ok {
			return false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(quoteJSON(names[i]))
		b.WriteByte(':')
		b.Write(conv)
	}
	b.WriteByte('}')
	c.write("properties", b.Bytes())
	c.propNames = names
	return true
}

// anyOf converts every alternative's schema.
func (c *geminiSchemaConverter) anyOf(v json.RawMessage) bool {
	alternatives, ok := parseJSONArray(v)
	if !ok || len(alternatives) == 0 {
		return false
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < len(alternatives); i++ {
		conv, ok := geminiConvertSchema(alternatives[i], c.depth+1, c.ordering)
		if !ok {
			return false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(conv)
	}
	b.WriteByte(']')
	c.write("anyOf", b.Bytes())
	return true
}

// containsString reports whether list holds s.
func containsString(list []string, s string) bool {
	for i := 0; i < len(list); i++ {
		if list[i] == s {
			return true
		}
	}
	return false
}
