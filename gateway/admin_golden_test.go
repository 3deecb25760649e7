package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Golden admin answers: checkGolden compares a route's JSON answer, with
// its volatile fields masked, to testdata/admin/NAME.json. Set
// LLMGW_UPDATE_GOLDEN=1 to rewrite the files (then read the diff).

// maskJSON replaces the value of every object member named in keys, at
// any depth, with "<masked>", and indents the result.
func maskJSON(t *testing.T, data []byte, keys ...string) []byte {
	t.Helper()
	var v interface{}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, data)
	}
	mask := map[string]bool{}
	for i := 0; i < len(keys); i++ {
		mask[keys[i]] = true
	}
	v = maskValue(v, mask)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func maskValue(v interface{}, mask map[string]bool) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			if mask[k] {
				x[k] = "<masked>"
			} else {
				x[k] = maskValue(e, mask)
			}
		}
	case []interface{}:
		for i := 0; i < len(x); i++ {
			x[i] = maskValue(x[i], mask)
		}
	}
	return v
}

// checkGolden compares data (masked by maskJSON with keys) to the golden
// file testdata/admin/NAME.json.
func checkGolden(t *testing.T, name string, data []byte, keys ...string) {
	t.Helper()
	got := maskJSON(t, data, keys...)
	path := filepath.Join("testdata", "admin", name+".json")
	if os.Getenv("LLMGW_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (LLMGW_UPDATE_GOLDEN=1 writes it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from its golden file (LLMGW_UPDATE_GOLDEN=1 rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}
