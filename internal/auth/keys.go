package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/atomicfile"
)

// KeyPrefix starts every API key, so that keys are recognizable in a
// header (and by secret scanners).
const KeyPrefix = "rk_"

// KeysFile is the name of the key file in the data folder.
const KeysFile = "keys.json"

// KeysPath returns the key file of a data folder.
func KeysPath(dataDir string) string { return filepath.Join(dataDir, KeysFile) }

// Key is a stored API key: never the key itself, only its SHA-256.
type Key struct {
	ID         string            `json:"id"`
	Hash       string            `json:"sha256"` // hex SHA-256 of the key's 32 random bytes
	Principal  string            `json:"principal"`
	Roles      []string          `json:"roles,omitempty"`
	Tenant     string            `json:"tenant,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Created    time.Time         `json:"created"`
	Revoked    *time.Time        `json:"revoked,omitempty"`
}

// KeySpec describes a key to create.
type KeySpec struct {
	Principal  string
	Roles      []string
	Tenant     string
	Attributes map[string]string
}

// ErrNoKey is returned for an unknown key id.
var ErrNoKey = errors.New("no such key")

// Keys is the API key store: a JSON file (mode 0600) written atomically. It
// follows changes other processes make to the file (`reach keys create`
// while the gateway runs): a revocation applies within RecheckEvery. Safe
// for concurrent use within a process; between processes, each change
// reads the file just before writing it.
type Keys struct {
	path string
	// RecheckEvery is how often Authenticate looks at the file for changes;
	// if zero, 1s.
	RecheckEvery time.Duration

	mu      sync.Mutex
	keys    []Key
	byHash  map[[32]byte]int
	stamp   string
	checked time.Time
}

type keysFile struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

// OpenKeys opens the key file at path; a missing file is an empty store.
func OpenKeys(path string) (*Keys, error) {
	k := &Keys{path: path}
	if err := k.load(); err != nil {
		return nil, err
	}
	return k, nil
}

// load reads the file; k.mu is held or k is new.
func (k *Keys) load() error {
	var f keysFile
	stamp, err := atomicfile.ReadJSON(k.path, "keys", &f)
	if err != nil {
		return err
	}
	byHash := make(map[[32]byte]int, len(f.Keys))
	for i, key := range f.Keys {
		h, err := hex.DecodeString(key.Hash)
		if err != nil || len(h) != 32 {
			return fmt.Errorf("reading keys from %s: key %s has a malformed hash", k.path, key.ID)
		}
		byHash[[32]byte(h)] = i
	}
	k.keys, k.byHash, k.stamp, k.checked = f.Keys, byHash, stamp, time.Now()
	return nil
}

// refresh reloads the file if it changed, at most every RecheckEvery.
func (k *Keys) refresh(force bool) error {
	every := k.RecheckEvery
	if every == 0 {
		every = time.Second
	}
	if !force && time.Since(k.checked) < every {
		return nil
	}
	stamp, err := atomicfile.Stamp(k.path)
	if err != nil {
		return err
	}
	if stamp == k.stamp {
		k.checked = time.Now()
		return nil
	}
	return k.load()
}

func (k *Keys) save() error {
	b, err := json.MarshalIndent(keysFile{Version: 1, Keys: k.keys}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(k.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing keys: %w", err)
	}
	return k.load()
}

// Create makes a new key and returns it (shown once: only its hash is
// kept) with its record.
func (k *Keys) Create(spec KeySpec) (string, Key, error) {
	if strings.TrimSpace(spec.Principal) == "" {
		return "", Key{}, errors.New("creating a key: the principal is required")
	}
	if spec.Principal == "anonymous" {
		return "", Key{}, errors.New(`creating a key: "anonymous" is the name of nobody; choose another principal`)
	}
	if !shownAsIs(spec.Principal) || !shownAsIs(spec.Tenant) {
		// Shown to people as they are (approvals' prompts, the UI, the
		// logs), as a JWT's are refused: a pasted zero-width space made
		// another principal that looks the same.
		return "", Key{}, fmt.Errorf("creating a key: the principal %q or tenant %q holds a control or format character (a zero-width space, a right-to-left override, a line break) or is not UTF-8; type it again", spec.Principal, spec.Tenant)
	}
	var raw [32]byte
	rand.Read(raw[:])
	var idb [6]byte
	rand.Read(idb[:])
	sum := sha256.Sum256(raw[:])
	key := Key{ID: "key_" + hex.EncodeToString(idb[:]), Hash: hex.EncodeToString(sum[:]), Principal: spec.Principal,
		Roles: slices.Clone(spec.Roles), Tenant: spec.Tenant, Created: time.Now().UTC().Truncate(time.Second)}
	if len(spec.Attributes) > 0 {
		key.Attributes = spec.Attributes
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.refresh(true); err != nil {
		return "", Key{}, err
	}
	k.keys = append(slices.Clip(k.keys), key)
	if err := k.save(); err != nil {
		return "", Key{}, err
	}
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:]), key, nil
}

// List returns the stored keys (hashes only), oldest first.
func (k *Keys) List() ([]Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.refresh(true); err != nil {
		return nil, err
	}
	return slices.Clone(k.keys), nil
}

// Revoke revokes a key by id; revoking a revoked key does nothing.
func (k *Keys) Revoke(id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.refresh(true); err != nil {
		return err
	}
	i := slices.IndexFunc(k.keys, func(key Key) bool { return key.ID == id })
	if i < 0 {
		return fmt.Errorf("revoking %s: %w", id, ErrNoKey)
	}
	if k.keys[i].Revoked != nil {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	k.keys = slices.Clone(k.keys)
	k.keys[i].Revoked = &now
	return k.save()
}

// Len returns the number of keys that are not revoked.
func (k *Keys) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refresh(false)
	n := 0
	for _, key := range k.keys {
		if key.Revoked == nil {
			n++
		}
	}
	return n
}

// Authenticate returns the identity of a valid, unrevoked key.
func (k *Keys) Authenticate(secret string) (*Identity, bool) {
	enc, ok := strings.CutPrefix(secret, KeyPrefix)
	if !ok || len(enc) != base64.RawURLEncoding.EncodedLen(32) {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(raw) != 32 {
		return nil, false
	}
	sum := sha256.Sum256(raw)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refresh(false) // on error, the keys last read stay in force
	i, ok := k.byHash[sum]
	if !ok {
		return nil, false
	}
	key := k.keys[i]
	stored, _ := hex.DecodeString(key.Hash)
	if subtle.ConstantTimeCompare(stored, sum[:]) != 1 || key.Revoked != nil {
		return nil, false
	}
	return &Identity{Principal: key.Principal, Roles: slices.Clone(key.Roles), Tenant: key.Tenant,
		Attributes: maps.Clone(key.Attributes), Method: "api_key", KeyID: key.ID}, true
}

// Active reports whether the key with that id exists and is not revoked.
func (k *Keys) Active(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refresh(false) // on error, the keys last read stay in force
	for _, key := range k.keys {
		if key.ID == id {
			return key.Revoked == nil
		}
	}
	return false
}
