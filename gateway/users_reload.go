package gateway

import (
	"crypto/sha256"
	"os"
	"sync/atomic"
	"time"
)

// usersFileCheckInterval is the most often the users file is checked
// (from the request path; there is no background timer).
const usersFileCheckInterval = 5 * time.Second

// userDirectory holds the current auth store and, when a users file is
// configured, swaps in a new one when the file changes. Reloads are
// best effort: a request that finds a reload already running skips it
// instead of waiting, and a bad file keeps the last good set.
type userDirectory struct {
	store     atomic.Value // *authStore
	path      string       // users file; "" when none
	inline    []compiledUser
	groups    map[string]*grant
	log       *logger
	now       func() time.Time
	lastCheck atomic.Int64 // unix nanoseconds of the last mtime check
	reloading atomic.Bool
	// Guarded by reloading:
	modTime time.Time
	size    int64
	hash    [sha256.Size]byte // of the content last loaded
	lastErr string
}

func newUserDirectory(c *compiledConfig, log *logger) *userDirectory {
	d := &userDirectory{path: c.usersFile, inline: c.inlineUsers, groups: c.groups, log: log, now: time.Now}
	d.store.Store(newAuthStore(c.users))
	d.modTime, d.size, d.hash = c.usersFileModTime, c.usersFileSize, c.usersFileHash
	if d.path != "" {
		d.lastCheck.Store(d.now().UnixNano())
	}
	return d
}

// current returns the auth store in force.
func (d *userDirectory) current() *authStore {
	s, _ := d.store.Load().(*authStore)
	return s
}

// maybeReload reloads the users file when the check interval has passed
// and the file changed: its mtime, its size, or its content (SHA-256 of
// the bytes: a key rotated to one of the same length by a tool that
// preserves the mtime is still seen). The file is read on every check.
func (d *userDirectory) maybeReload() {
	if d.path == "" {
		return
	}
	now := d.now().UnixNano()
	if now-d.lastCheck.Load() < int64(usersFileCheckInterval) {
		return
	}
	if !d.reloading.CompareAndSwap(false, true) {
		return
	}
	defer d.reloading.Store(false)
	d.lastCheck.Store(now)
	info, err := os.Stat(d.path)
	if err != nil {
		d.keepLastGood("cannot stat " + d.path + ": " + describeFileError(err))
		return
	}
	data, err := readUsersFile(d.path)
	if err != nil {
		d.keepLastGood(err.Error())
		return
	}
	sum := sha256.Sum256(data)
	if info.ModTime().Equal(d.modTime) && info.Size() == d.size && sum == d.hash {
		return
	}
	d.modTime = info.ModTime()
	d.size = info.Size()
	d.hash = sum
	fileUsers, err := parseUsersFile(d.path, data, d.groups)
	if err == nil {
		var merged []compiledUser
		if merged, err = mergeUsers(d.inline, fileUsers); err == nil {
			d.store.Store(newAuthStore(merged))
			d.lastErr = ""
			d.log.infof("users file %s reloaded: %d users", d.path, len(merged))
			return
		}
	}
	d.keepLastGood(err.Error())
}

// keepLastGood logs why a reload failed, once per distinct reason.
func (d *userDirectory) keepLastGood(reason string) {
	if reason == d.lastErr {
		return
	}
	d.lastErr = reason
	d.log.errorf("users file not reloaded, keeping the previous %d users: %s", len(d.current().users), reason)
}
