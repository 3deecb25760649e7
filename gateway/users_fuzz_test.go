package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzUsersFileKeys: whatever a users file holds, an error never quotes
// a user's key (a literal apiKey that no other string of the file
// contains), and every loaded user's digest is the SHA-256 of its key as
// written (trimmed).
func FuzzUsersFileKeys(f *testing.F) {
	seeds := []string{
		`{"users":[{"name":"alice","group":"g","apiKey":"sk-fuzz-key-000001"}]}`,
		`{"users":[{"name":"a","group":"g","apiKey":"sk-fuzz-key-000001"},{"name":"b","group":"g","apiKey":" sk-fuzz-key-000001 "}]}`,
		`{"users":[{"name":"a","group":"nope","apiKey":"sk-fuzz-key-000002"}]}`,
		`{"users":[{"name":"a","group":"g","apiKey":"sk-fuzz-key-000003","limits":{"tokensPerDay":"x"}}]}`,
		`{"users":[{"name":"a","group":"g","apiKey":"sk-fuzz-key-000004","bogus":"sk-fuzz-key-000005"}]}`,
		`{"users":[{"name":"a","group":"g","APIKEY":"sk-fuzz-key-000006","apiKey":7}]}`,
		`{"users":[{"name":"a","group":"g","apiKey":"env:LLMGW_FUZZ_UNSET_0001"}]}`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	groups := map[string]*grant{"g": {name: "group g", group: "g"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		users, err := parseUsersFile("users.json", data, groups)
		keys, others := usersFileStrings(data)
		if err != nil {
			for i := 0; i < len(keys); i++ {
				k := strings.TrimSpace(keys[i])
				if len(k) < 8 || strings.HasPrefix(k, "env:") || strings.HasPrefix(k, "file:") || containedIn(k, others) {
					continue
				}
				if strings.Contains(err.Error(), k) {
					t.Fatalf("the error quotes the key %q: %v", k, err)
				}
			}
			return
		}
		for i := 0; i < len(users); i++ {
			found := false
			for j := 0; j < len(keys) && !found; j++ {
				found = users[i].digest == sha256.Sum256([]byte(strings.TrimSpace(keys[j])))
			}
			if !found && !strings.Contains(string(data), "env:") && !strings.Contains(string(data), "file:") {
				t.Fatalf("user %q has a digest of no key in the file: %q", users[i].user.name, data)
			}
		}
	})
}

// usersFileStrings lists a users file's apiKey values (keys matched
// case-insensitively, as the decoder matches them) and every other
// string of it, keys included.
func usersFileStrings(data []byte) ([]string, []string) {
	var doc interface{}
	if json.Unmarshal(data, &doc) != nil {
		return nil, nil
	}
	var keys, others []string
	collectUsersStrings(doc, false, &keys, &others)
	return keys, others
}

func collectUsersStrings(v interface{}, isKey bool, keys, others *[]string) {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, item := range t {
			*others = append(*others, k)
			collectUsersStrings(item, strings.EqualFold(k, "apiKey"), keys, others)
		}
	case []interface{}:
		for i := 0; i < len(t); i++ {
			collectUsersStrings(t[i], false, keys, others)
		}
	case string:
		if isKey {
			*keys = append(*keys, t)
		} else {
			*others = append(*others, t)
		}
	}
}

// containedIn reports whether some string of list contains s.
func containedIn(s string, list []string) bool {
	for i := 0; i < len(list); i++ {
		if strings.Contains(list[i], s) {
			return true
		}
	}
	return false
}
