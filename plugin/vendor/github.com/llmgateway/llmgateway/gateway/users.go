package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// compiledUser is one user ready for the auth store: its identity and the
// SHA-256 digest of its key (the key itself is not kept).
type compiledUser struct {
	user   *userRuntime
	digest [sha256.Size]byte
	field  string // where it was configured, for error messages
}

// compileUserList compiles the users of one source ("users.inline" or
// "users.file"), resolving their key secrets now.
func compileUserList(source string, list []*UserConfig, groups map[string]*grant) ([]compiledUser, error) {
	names := map[string]bool{}
	out := make([]compiledUser, 0, len(list))
	for i := 0; i < len(list); i++ {
		field := fmt.Sprintf("%s[%d]", source, i)
		uc := list[i]
		if uc == nil {
			return nil, fmt.Errorf("%s: nil value", field)
		}
		if strings.TrimSpace(uc.Name) == "" {
			return nil, fmt.Errorf("%s.name: required", field)
		}
		field = fmt.Sprintf("%s (%s)", field, uc.Name)
		if names[uc.Name] {
			return nil, fmt.Errorf("%s.name: duplicate user name %q", field, uc.Name)
		}
		names[uc.Name] = true
		cu, err := compileUser(field, uc, groups)
		if err != nil {
			return nil, err
		}
		out = append(out, cu)
	}
	return out, nil
}

// compileUser resolves one user's groups, personal grant and key.
func compileUser(field string, uc *UserConfig, groups map[string]*grant) (compiledUser, error) {
	u := &userRuntime{name: uc.Name, admin: uc.Admin}
	memberships := append([]string{uc.Group}, uc.Groups...)
	seen := map[string]bool{}
	for j := 0; j < len(memberships); j++ {
		name := memberships[j]
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		g, ok := groups[name]
		if !ok {
			return compiledUser{}, fmt.Errorf("%s: unknown group %q", field, name)
		}
		u.grants = append(u.grants, g)
	}
	if len(u.grants) == 0 {
		return compiledUser{}, fmt.Errorf("%s: at least one group is required (set group or groups)", field)
	}
	u.primary = u.grants[0]
	for j := 0; j < len(u.grants); j++ {
		u.groups = append(u.groups, u.grants[j].group)
	}
	personal, err := personalGrant(field, uc, u.primary)
	if err != nil {
		return compiledUser{}, err
	}
	if personal != nil {
		u.grants = append(u.grants, personal)
	}
	limits, err := compileLimits(field+".limits", uc.Limits)
	if err != nil {
		return compiledUser{}, fmt.Errorf("%v", strings.TrimPrefix(err.Error(), "config: "))
	}
	u.scopes = userScopes(u, limits)
	u.costBudget = hasCostBudget(u.scopes)
	u.budgeted = u.costBudget || hasTokenBudget(u.scopes)
	key, err := resolveSecret(uc.APIKey)
	if err != nil {
		return compiledUser{}, fmt.Errorf("%s.apiKey: %v", field, err)
	}
	if key == "" {
		return compiledUser{}, fmt.Errorf("%s.apiKey: required", field)
	}
	return compiledUser{user: u, digest: sha256.Sum256([]byte(key)), field: field}, nil
}

// userScopes lists the scopes a user's requests count in: the user's
// own (enforced when the user has limits), each member group's (enforced
// when the group has limits), and the synthetic total (never enforced).
func userScopes(u *userRuntime, limits *compiledLimits) []limitScope {
	scopes := []limitScope{newLimitScope("user", u.name, limits)}
	for i := 0; i < len(u.grants); i++ {
		if g := u.grants[i]; !g.personal {
			scopes = append(scopes, newLimitScope("group", g.group, g.limits))
		}
	}
	return append(scopes, newLimitScope("total", "all", nil))
}

// mergeUsers overlays file users on inline ones (a file user replaces the
// inline user of the same name) and checks that every key is unique
// across the merged set.
func mergeUsers(inline, file []compiledUser) ([]compiledUser, error) {
	replaced := map[string]bool{}
	for i := 0; i < len(file); i++ {
		replaced[file[i].user.name] = true
	}
	merged := make([]compiledUser, 0, len(inline)+len(file))
	for i := 0; i < len(inline); i++ {
		if !replaced[inline[i].user.name] {
			merged = append(merged, inline[i])
		}
	}
	merged = append(merged, file...)
	owners := map[string]string{}
	for i := 0; i < len(merged); i++ {
		d := string(merged[i].digest[:])
		if other, dup := owners[d]; dup {
			return nil, fmt.Errorf("%s.apiKey: duplicate key (user %q has the same key)", merged[i].field, other)
		}
		owners[d] = merged[i].user.name
	}
	return merged, nil
}

// usersFileDocument is the users file's shape.
type usersFileDocument struct {
	Users []*UserConfig `json:"users"`
}

// loadUsersFile reads and compiles the users file; unknown keys, a
// missing "users" list and trailing data are errors.
func loadUsersFile(path string, groups map[string]*grant) ([]compiledUser, [sha256.Size]byte, error) {
	data, err := readUsersFile(path)
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	users, err := parseUsersFile(path, data, groups)
	return users, sha256.Sum256(data), err
}

// readUsersFile reads the users file whole.
func readUsersFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.New("cannot read " + path + ": " + describeFileError(err))
	}
	return data, nil
}

// parseUsersFile compiles the users file's content.
func parseUsersFile(path string, data []byte, groups map[string]*grant) ([]compiledUser, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc usersFileDocument
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s is not a valid users file: %s", path, describeJSONError(err))
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, fmt.Errorf("%s has data after the users document", path)
	}
	if doc.Users == nil {
		return nil, fmt.Errorf(`%s has no "users" list`, path)
	}
	return compileUserList("users.file", doc.Users, groups)
}
