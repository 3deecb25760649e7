package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// DecodeConfigJSON decodes a JSON config document strictly: an unknown
// key (matched case-insensitively, as encoding/json does) is an error
// naming the key, and so is trailing data after the document.
func DecodeConfigJSON(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	cfg := &Config{}
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("config: %s", describeJSONError(err))
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, errors.New("config: unexpected data after the config document")
	}
	return cfg, nil
}

// describeJSONError turns encoding/json's messages into config-oriented
// ones ("unknown config key "x"" rather than "json: unknown field").
func describeJSONError(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown config key " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return strings.TrimPrefix(msg, "json: ")
}

// ConfigFromMap decodes a configuration delivered the way Traefik
// delivers a plugin's dynamic configuration: every scalar may arrive as a
// string ("true", "8080"), an empty {} or [] may arrive as "", and a
// comma-separated string may stand for a list. Keys match
// case-insensitively; an unknown key is an error naming its full path
// (for example "providers.openai.apiKeys").
func ConfigFromMap(raw map[string]interface{}) (*Config, error) {
	normalized, err := coerceValue("", raw, reflect.TypeOf(Config{}))
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	data, err := json.Marshal(normalized)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	return DecodeConfigJSON(data)
}

// coerceValue converts a loosely typed value into one whose JSON form
// decodes cleanly into a value of type t, using t as the schema.
func coerceValue(path string, value interface{}, t reflect.Type) (interface{}, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if value == nil {
		return nil, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return coerceStruct(path, value, t)
	case reflect.Map:
		return coerceMap(path, value, t)
	case reflect.Slice:
		return coerceSlice(path, value, t)
	case reflect.String:
		return coerceString(path, value)
	case reflect.Bool:
		return coerceBool(path, value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return coerceInt(path, value)
	case reflect.Float32, reflect.Float64:
		return coerceFloat(path, value)
	case reflect.Interface:
		// A field that takes several shapes (a modelAliases value) has
		// no schema here: it passes through as delivered (Traefik's
		// strings included), and the compile step reads each shape.
		return value, nil
	}
	return nil, fmt.Errorf("%s: unsupported config type %s", displayPath(path), t.Kind())
}

func coerceStruct(path string, value interface{}, t reflect.Type) (interface{}, error) {
	if s, ok := value.(string); ok && strings.TrimSpace(s) == "" {
		return map[string]interface{}{}, nil
	}
	m, ok := value.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: expected an object, got %s", displayPath(path), describeValue(value))
	}
	out := make(map[string]interface{}, len(m))
	for key, v := range m {
		field, found := fieldByJSONName(t, key)
		if !found {
			return nil, fmt.Errorf("%s: unknown config key %q", displayPath(path), key)
		}
		name := jsonName(field)
		converted, err := coerceValue(joinPath(path, name), v, field.Type)
		if err != nil {
			return nil, err
		}
		out[name] = converted
	}
	return out, nil
}

func coerceMap(path string, value interface{}, t reflect.Type) (interface{}, error) {
	if s, ok := value.(string); ok && strings.TrimSpace(s) == "" {
		return map[string]interface{}{}, nil
	}
	m, ok := value.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: expected a map, got %s", displayPath(path), describeValue(value))
	}
	out := make(map[string]interface{}, len(m))
	for key, v := range m {
		if v == nil {
			// Kept as null so validation reports "nil value" by name.
			out[key] = nil
			continue
		}
		converted, err := coerceValue(joinPath(path, key), v, t.Elem())
		if err != nil {
			return nil, err
		}
		out[key] = converted
	}
	return out, nil
}

func coerceSlice(path string, value interface{}, t reflect.Type) (interface{}, error) {
	var items []interface{}
	switch v := value.(type) {
	case []interface{}:
		items = v
	case []string:
		for i := 0; i < len(v); i++ {
			items = append(items, v[i])
		}
	case string:
		if strings.TrimSpace(v) == "" {
			return []interface{}{}, nil
		}
		parts := strings.Split(v, ",")
		for i := 0; i < len(parts); i++ {
			items = append(items, strings.TrimSpace(parts[i]))
		}
	default:
		return nil, fmt.Errorf("%s: expected a list, got %s", displayPath(path), describeValue(value))
	}
	out := make([]interface{}, 0, len(items))
	for i := 0; i < len(items); i++ {
		converted, err := coerceValue(fmt.Sprintf("%s[%d]", path, i), items[i], t.Elem())
		if err != nil {
			return nil, err
		}
		out = append(out, converted)
	}
	return out, nil
}

func coerceString(path string, value interface{}) (interface{}, error) {
	switch v := value.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	}
	return nil, fmt.Errorf("%s: expected a string, got %s", displayPath(path), describeValue(value))
}

func coerceBool(path string, value interface{}) (interface{}, error) {
	switch v := value.(type) {
	case bool:
		return v, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a boolean", displayPath(path), v)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s: expected a boolean, got %s", displayPath(path), describeValue(value))
}

func coerceInt(path string, value interface{}) (interface{}, error) {
	switch v := value.(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case float64:
		if v != float64(int64(v)) {
			return nil, fmt.Errorf("%s: %v is not an integer", displayPath(path), v)
		}
		return int64(v), nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", displayPath(path), v)
		}
		return n, nil
	}
	return nil, fmt.Errorf("%s: expected an integer, got %s", displayPath(path), describeValue(value))
}

func coerceFloat(path string, value interface{}) (interface{}, error) {
	switch v := value.(type) {
	case float64:
		return v, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", displayPath(path), v)
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: expected a number, got %s", displayPath(path), describeValue(value))
}

// fieldByJSONName finds the struct field whose JSON name matches key,
// case-insensitively (exact match preferred), as encoding/json does.
func fieldByJSONName(t reflect.Type, key string) (reflect.StructField, bool) {
	var folded reflect.StructField
	foundFolded := false
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			continue
		}
		if name == key {
			return f, true
		}
		if !foundFolded && strings.EqualFold(name, key) {
			folded = f
			foundFolded = true
		}
	}
	return folded, foundFolded
}

// jsonName is the field's JSON key, or "" when the field is not decoded.
func jsonName(f reflect.StructField) string {
	if f.PkgPath != "" {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name := tag
	if i := strings.Index(tag, ","); i >= 0 {
		name = tag[:i]
	}
	if name == "" {
		name = f.Name
	}
	return name
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func displayPath(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

func describeValue(v interface{}) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64:
		return "a number"
	case []interface{}:
		return "a list"
	case map[string]interface{}:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
