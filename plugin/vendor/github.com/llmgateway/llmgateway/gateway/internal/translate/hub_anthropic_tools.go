package translate

import (
	"encoding/json"
	"strconv"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// OpenAI tools, tool_choice and parallel_tool_calls → Anthropic tools
// and tool_choice.

// tools maps function tools, tool_choice and parallel_tool_calls.
func (b *anthropicRequestBuilder) tools() *apierr.Error {
	if raw, ok := b.field("tools"); ok {
		list, e := readArray(raw, "tools")
		if e != nil {
			return e
		}
		for i := 0; i < len(list); i++ {
			tool, e := b.tool(list[i], "tools["+strconv.Itoa(i)+"]")
			if e != nil {
				return e
			}
			b.req.Tools = append(b.req.Tools, tool)
		}
	}
	var choice *anthropicWireToolChoice
	if raw, ok := b.field("tool_choice"); ok {
		c, e := b.toolChoice(raw)
		if e != nil {
			return e
		}
		choice = c
	}
	if len(b.req.Tools) == 0 {
		if choice != nil && (choice.Type == "any" || choice.Type == "tool") {
			return errInvalidField("tools", "non-empty when tool_choice requires a tool call")
		}
		return nil
	}
	if raw, ok := b.field("parallel_tool_calls"); ok {
		parallel, e := readBool(raw, "parallel_tool_calls")
		if e != nil {
			return e
		}
		if !parallel {
			if choice == nil {
				choice = &anthropicWireToolChoice{Type: "auto"}
			}
			if choice.Type != "none" {
				choice.DisableParallelToolUse = true
			}
		}
	}
	b.req.ToolChoice = choice
	return nil
}

// tool converts one function tool; without parameters it takes an
// empty object.
func (b *anthropicRequestBuilder) tool(raw json.RawMessage, path string) (anthropicWireTool, *apierr.Error) {
	m, e := readObject(raw, path)
	if e != nil {
		return anthropicWireTool{}, e
	}
	if t := m["type"]; !isJSONNull(t) {
		kind, e := readString(t, path+".type")
		if e != nil {
			return anthropicWireTool{}, e
		}
		if kind != "function" {
			return anthropicWireTool{}, anthropicUnsupported(path+".type", "tool type \""+kind+"\"")
		}
	}
	fn, e := readObject(m["function"], path+".function")
	if e != nil {
		return anthropicWireTool{}, e
	}
	name, e := readString(fn["name"], path+".function.name")
	if e != nil || name == "" {
		return anthropicWireTool{}, errInvalidField(path+".function.name", "a non-empty string")
	}
	tool := anthropicWireTool{Name: name, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
	if raw := fn["description"]; !isJSONNull(raw) {
		d, e := readString(raw, path+".function.description")
		if e != nil {
			return anthropicWireTool{}, e
		}
		tool.Description = d
	}
	if raw := fn["parameters"]; !isJSONNull(raw) {
		if _, e := readObject(raw, path+".function.parameters"); e != nil {
			return anthropicWireTool{}, e
		}
		tool.InputSchema = raw
	}
	return tool, nil
}

// toolChoice maps tool_choice: auto, required (any), none, or a named
// function (tool).
func (b *anthropicRequestBuilder) toolChoice(raw json.RawMessage) (*anthropicWireToolChoice, *apierr.Error) {
	if raw[0] == '"' {
		s, e := readString(raw, "tool_choice")
		if e != nil {
			return nil, e
		}
		switch s {
		case "auto":
			return &anthropicWireToolChoice{Type: "auto"}, nil
		case "required":
			return &anthropicWireToolChoice{Type: "any"}, nil
		case "none":
			return &anthropicWireToolChoice{Type: "none"}, nil
		}
		return nil, errInvalidField("tool_choice", "\"auto\", \"required\", \"none\" or a named function")
	}
	m, e := readObject(raw, "tool_choice")
	if e != nil {
		return nil, e
	}
	kind, e := readString(m["type"], "tool_choice.type")
	if e != nil {
		return nil, e
	}
	if kind != "function" {
		return nil, anthropicUnsupported("tool_choice", "type \""+kind+"\"")
	}
	fn, e := readObject(m["function"], "tool_choice.function")
	if e != nil {
		return nil, e
	}
	name, e := readString(fn["name"], "tool_choice.function.name")
	if e != nil || name == "" {
		return nil, errInvalidField("tool_choice.function.name", "a non-empty string")
	}
	return &anthropicWireToolChoice{Type: "tool", Name: name}, nil
}
